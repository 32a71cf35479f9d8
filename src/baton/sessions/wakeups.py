"""Wake-ups inside one process: a store tells its subscribers that something happened.

A commit that opens or answers an interrupt, a released running invocation, or (on
PostgreSQL) a NOTIFY from another process sets the flags of the subscriptions it
concerns; a worker or a pending stream waiting on one then looks at the store again. A
wake-up says "look", not what changed, so several coalesce into one and none is ever
stale.

Two kinds of change: *work* (a running invocation released, a question with a deadline
opened: what a worker acts on) wakes every subscription; any other change to questions
wakes only the subscriptions that asked for `questions` (pending streams, webhooks). A
worker so sleeps through a busy server's answers, and on PostgreSQL a process with no
pending stream open does not even hear of them (see `listener`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import final

__all__ = ["Wakeups"]


@final
class Wakeups:
    """The subscriptions of one store."""

    def __init__(self) -> None:
        self._subscriptions: set[_Subscription] = set()
        self._watching_questions = 0  # subscriptions that asked for every question change
        # Called when `wants_questions` changes (a listener LISTENs to question changes
        # only while someone here wants them).
        self.on_interest_change: Callable[[], None] = _nothing

    def notify(self, *, questions_only: bool = False) -> None:
        """Wake every subscription or, with `questions_only` (a change to questions that
        is no work), those that asked for `questions` (cheap when there is none)."""
        for subscription in self._subscriptions:
            if subscription.wants_questions or not questions_only:
                subscription.flag.set()

    def subscribe(self, *, questions: bool = True) -> _Subscription:
        """A new subscription (`questions`: woken by every change to questions, not only
        by work); `close` it when done."""
        subscription = _Subscription(self, questions=questions)
        self._subscriptions.add(subscription)
        if questions:
            self._watching_questions += 1
            if self._watching_questions == 1:
                self.on_interest_change()
        return subscription

    def discard(self, subscription: _Subscription) -> None:
        if subscription not in self._subscriptions:
            return
        self._subscriptions.discard(subscription)
        if subscription.wants_questions:
            self._watching_questions -= 1
            if self._watching_questions == 0:
                self.on_interest_change()

    @property
    def has_subscribers(self) -> bool:
        return bool(self._subscriptions)

    @property
    def wants_questions(self) -> bool:
        """True while some subscription asked for every change to questions."""
        return self._watching_questions > 0


def _nothing() -> None:
    pass


@final
class _Subscription:
    def __init__(self, hub: Wakeups, *, questions: bool) -> None:
        self._hub = hub
        self.wants_questions = questions
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
