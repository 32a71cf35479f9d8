"""Webhooks: the store's recorded notifications POSTed to receivers, signed, in order.

Every step that opens a question, answers one, lets one expire or ends a run, and every
rewind, records a notification in the store's outbox in the same transaction (see
`baton.sessions.notifications`). A `Notifier` delivers them to each receiver on its
own: it claims the receiver's oldest notifications it has not accepted (one sender per
receiver across processes, a dead sender's claim lapses) and POSTs them in order. A
receiver that fails or cannot be reached is tried again after a growing delay (1 s,
2 s, 4 s, ... up to 5 min), and its later notifications wait for it, so each receiver
sees them in order; the other receivers are not held back. A notification every
receiver accepted is deleted, so the outbox holds only what some receiver still waits
for. Delivery is at least once: a receiver drops repeats by the notification's `id`.

Each POST is signed with HMAC-SHA256 under a shared secret: header
`Baton-Signature: v1=<hex of HMAC(secret, "<timestamp>.<body>")>`, with
`Baton-Timestamp: <unix seconds>` (refuse old ones to stop replays; `verify` does both).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import math
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Final, final
from urllib.parse import urlsplit

from baton.errors import StoreUnavailableError
from baton.sessions.store import Clock, Store

if TYPE_CHECKING:
    # Read where a notifier POSTs: httpx is a sixth of `baton api_server`'s and `baton
    # worker`'s imports, which `baton --help` and a server without --notify-url never use.
    import httpx

__all__ = [
    "ID_HEADER",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "Notifier",
    "NotifySettings",
    "sign",
    "verify",
]

SIGNATURE_HEADER: Final = "Baton-Signature"
TIMESTAMP_HEADER: Final = "Baton-Timestamp"
ID_HEADER: Final = "Baton-Notification-Id"

_BATCH: Final = 8
"""Notifications claimed for one receiver at a time."""


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The `Baton-Signature` value of `body` sent at `timestamp` (unix seconds)."""
    signed = f"{timestamp}.".encode() + body
    return "v1=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float | None = None,
    tolerance: float = 300.0,
) -> bool:
    """Whether a received POST is genuine: its signature matches `body` under `secret`
    and its timestamp is within `tolerance` seconds of `now` (a replay is older).

    `headers` is matched case-insensitively when it is an HTTP library's headers object;
    a plain dict must use the exact header names.
    """
    stamp = headers.get(TIMESTAMP_HEADER, "")
    given = headers.get(SIGNATURE_HEADER, "")
    if not stamp.isdigit():
        return False
    moment = time.time() if now is None else now
    if abs(moment - int(stamp)) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, int(stamp), body), given)


@final
@dataclass(frozen=True)
class NotifySettings:
    """Where notifications go and how they are signed.

    Args:
        urls: the receivers (http or https); each gets every notification.
        secret: the shared HMAC-SHA256 key receivers verify signatures with.
        timeout: seconds a receiver has to answer one POST.
        first_retry: seconds before the first retry; each next one waits twice as long,
            up to `longest_retry`.
    """

    urls: tuple[str, ...]
    secret: str
    timeout: float = 10.0
    first_retry: float = 1.0
    longest_retry: float = 300.0

    def __post_init__(self) -> None:
        if not self.urls:
            raise ValueError("notifications need at least one receiver URL (--notify-url).")
        for url in self.urls:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(
                    f"notify URL '{url}' is not an http(s) URL; give it as "
                    "https://hooks.example.com/baton."
                )
        if not self.secret:
            raise ValueError(
                "notifications are signed: give a secret (--notify-secret or "
                "BATON_NOTIFY_SECRET) that receivers verify with."
            )
        if (
            not (self.timeout > 0 and math.isfinite(self.timeout))
            or not 0 < self.first_retry <= self.longest_retry
        ):
            raise ValueError(
                f"timeout ({self.timeout}) must be a finite number of seconds above 0 "
                f"(--notify-timeout), and first_retry ({self.first_retry}) positive and "
                f"at most longest_retry ({self.longest_retry})."
            )

    def retry_delay(self, attempts: int) -> float:
        """Seconds to wait after the `attempts`-th failed round."""
        return min(self.longest_retry, self.first_retry * 2 ** min(attempts - 1, 30))


@final
class Notifier:
    """Delivers a store's notifications to `settings.urls` until cancelled.

    Args:
        store: the store whose outbox to deliver (every process may run one; they take
            turns).
        settings: receivers, secret, timeouts.
        owner: this sender's name in claims (unique by default).
        clock: seconds since the epoch.
        poll: seconds between looks for notifications recorded by other processes.
    """

    def __init__(
        self,
        store: Store,
        settings: NotifySettings,
        *,
        owner: str | None = None,
        clock: Clock = time.time,
        poll: float = 1.0,
    ) -> None:
        self.store = store
        self.settings = settings
        self.owner = owner or f"notifier-{uuid.uuid4().hex[:12]}"
        self.clock = clock
        self.poll = poll
        # A claim outlives its slowest POST, and each accepted one renews it. A sender
        # that died holds back that receiver no longer than this.
        self._ttl = timedelta(seconds=settings.timeout + 5)

    async def run(self) -> None:
        """Deliver as notifications are recorded, until cancelled."""
        import httpx

        subscription = self.store.subscribe()
        try:
            async with httpx.AsyncClient(timeout=self.settings.timeout) as client:
                while True:
                    try:
                        delivered = await self.deliver_due(client)
                    except StoreUnavailableError:
                        delivered = 0  # the database is away: look again in a moment
                    if delivered == 0:
                        await subscription.wait(self.poll)
        finally:
            subscription.close()
            await asyncio.shield(self._release())

    async def deliver_due(self, client: httpx.AsyncClient) -> int:
        """Deliver the due notifications to every receiver at once, each its own oldest
        first, stopping at the first it refuses (tried again later, before any newer
        one); then delete what all accepted. The number of POSTs accepted."""
        async with asyncio.TaskGroup() as group:
            rounds = [group.create_task(self._deliver_to(client, u)) for u in self.settings.urls]
        delivered = sum(r.result() for r in rounds)
        if delivered:
            await self.store.prune_notifications(self.settings.urls)
        return delivered

    async def _deliver_to(self, client: httpx.AsyncClient, url: str) -> int:
        """Deliver `url`'s due notifications, a claimed batch at a time."""
        delivered = 0
        try:
            while claimed := await self.store.claim_notifications(
                url, self.owner, ttl=self._ttl, limit=_BATCH
            ):
                for notification in claimed.notifications:
                    body = json.dumps(notification.body, separators=(",", ":")).encode()
                    if not await self._post(client, url, notification.id, body):
                        await self._defer(url, claimed.attempts + 1)
                        return delivered
                    seq = notification.seq
                    await self.store.accept_notification(url, self.owner, seq, ttl=self._ttl)
                    delivered += 1
        except StoreUnavailableError:
            pass  # the database is away: the next round tries again
        return delivered

    async def _defer(self, url: str, attempts: int) -> None:
        next_at = self.clock() + self.settings.retry_delay(attempts)
        await self.store.defer_notifications(url, self.owner, attempts=attempts, next_at=next_at)

    async def _post(self, client: httpx.AsyncClient, url: str, ident: str, body: bytes) -> bool:
        import httpx  # loaded by `run`, which made the client

        stamp = int(self.clock())
        headers = {
            "Content-Type": "application/json",
            ID_HEADER: ident,
            TIMESTAMP_HEADER: str(stamp),
            SIGNATURE_HEADER: sign(self.settings.secret, stamp, body),
        }
        try:
            reply = await client.post(url, content=body, headers=headers)
        except httpx.HTTPError:
            return False  # down, refused, timed out: tried again later
        return reply.is_success

    async def _release(self) -> None:
        try:
            await self.store.release_notifications(self.owner)
        except Exception:
            return
