"""Wake-ups inside one process: a store tells every subscriber that something happened.

A commit that opens or answers an interrupt, a released running invocation, or (on
PostgreSQL) a NOTIFY from another process sets every subscription's flag; a worker
or a pending stream waiting on it then looks at the store again. A wake-up says
"look", not what changed, so several coalesce into one and none is ever stale.
"""

from __future__ import annotations

import asyncio
from typing import final

__all__ = ["Wakeups"]


@final
class Wakeups:
    """The subscriptions of one store."""

    def __init__(self) -> None:
        self._subscriptions: set[_Subscription] = set()

    def notify(self) -> None:
        """Wake every subscription (cheap when there is none)."""
        for subscription in self._subscriptions:
            subscription.flag.set()

    def subscribe(self) -> _Subscription:
        """A new subscription; `close` it when done."""
        subscription = _Subscription(self)
        self._subscriptions.add(subscription)
        return subscription

    def discard(self, subscription: _Subscription) -> None:
        self._subscriptions.discard(subscription)

    @property
    def has_subscribers(self) -> bool:
        return bool(self._subscriptions)


@final
class _Subscription:
    def __init__(self, hub: Wakeups) -> None:
        self._hub = hub
        self.flag = asyncio.Event()

    async def wait(self, within: float) -> bool:
        """Wait for the next wake-up, at most `within` seconds; False when none came."""
        if not self.flag.is_set():
            try:
                async with asyncio.timeout(max(0.0, within)):
                    await self.flag.wait()
            except TimeoutError:
                return False
        self.flag.clear()
        return True

    def close(self) -> None:
        self._hub.discard(self)
