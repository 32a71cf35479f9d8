"""Webhooks: the store's recorded notifications POSTed to receivers, signed, in order.

Every step that opens a question, answers one, lets one expire or ends a run, and every
rewind, records a notification in the store's outbox in the same transaction (see
`baton.sessions.notifications`). A `Notifier` claims the oldest ones (one sender at a
time across processes, a dead sender's claim lapses), POSTs each to every receiver and
forgets it once all accepted (2xx). A receiver that fails or cannot be reached is
tried again after a growing delay (1 s, 2 s, 4 s, ... up to 5 min), and later
notifications wait for it, so each receiver sees them in order. Delivery is at least
once: a receiver drops repeats by the notification's `id`.

Each POST is signed with HMAC-SHA256 under a shared secret: header
`Baton-Signature: v1=<hex of HMAC(secret, "<timestamp>.<body>")>`, with
`Baton-Timestamp: <unix seconds>` (refuse old ones to stop replays; `verify` does both).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Final, final
from urllib.parse import urlsplit

import httpx

from baton.errors import StoreUnavailableError
from baton.sessions.store import Clock, Notification, Store

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
        if not (self.timeout > 0 and 0 < self.first_retry <= self.longest_retry):
            raise ValueError(
                f"timeout ({self.timeout}) and first_retry ({self.first_retry}) must be "
                f"positive, and first_retry at most longest_retry ({self.longest_retry})."
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
        # A claim (of one notification) outlives its slowest delivery: every receiver
        # timing out. A sender that died holds back the others no longer than this.
        self._ttl = timedelta(seconds=settings.timeout * len(settings.urls) + 5)

    async def run(self) -> None:
        """Deliver as notifications are recorded, until cancelled."""
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
        """Deliver the due notifications, oldest first, one claim each, stopping at the
        first a receiver refuses (it is tried again later, before any newer one); the
        number delivered."""
        delivered = 0
        while True:
            claimed = await self.store.claim_notifications(self.owner, ttl=self._ttl, limit=1)
            if not claimed:
                return delivered
            notification = claimed[0]
            if not await self._deliver(client, notification):
                await self.store.defer_notification(notification, self.owner)
                return delivered
            await self.store.finish_notification(notification.id, self.owner)
            delivered += 1

    async def _deliver(self, client: httpx.AsyncClient, notification: Notification) -> bool:
        body = json.dumps(notification.body, separators=(",", ":")).encode()
        for url in self._waiting(notification.delivered_to):
            if not await self._post(client, url, notification.id, body):
                notification.attempts += 1
                delay = self.settings.retry_delay(notification.attempts)
                notification.next_at = self.clock() + delay
                return False
            notification.delivered_to.append(url)
        return True

    def _waiting(self, delivered: Sequence[str]) -> list[str]:
        return [url for url in self.settings.urls if url not in delivered]

    async def _post(self, client: httpx.AsyncClient, url: str, ident: str, body: bytes) -> bool:
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
