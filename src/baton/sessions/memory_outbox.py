"""The memory store's notification outbox: notifications in the order recorded, and
each receiver's place in it (what it accepted, its failed rounds, who is sending to it).

The rules are the SQL outbox's (see `baton.sessions.sql.outbox`), on dicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import final

from baton.sessions.store import Delivery, Notification

__all__ = ["MemoryOutbox"]


@dataclass(slots=True)
class _Receiver:
    accepted: int = 0  # the seq of the last notification it accepted
    attempts: int = 0
    next_at: float = 0.0
    owner: str | None = None
    until: float = 0.0


@final
@dataclass
class MemoryOutbox:
    """Notifications by seq (ascending), and the receivers by URL."""

    waiting: dict[int, Notification] = field(default_factory=dict[int, Notification])
    receivers: dict[str, _Receiver] = field(default_factory=dict[str, _Receiver])
    last_seq: int = 0

    def record(self, notification: Notification) -> None:
        self.last_seq += 1
        notification.seq = self.last_seq
        self.waiting[notification.seq] = notification

    def claim(
        self, receiver: str, owner: str, until: float, now: float, limit: int
    ) -> Delivery | None:
        place = self.receivers.setdefault(receiver, _Receiver())
        if place.owner not in (None, owner) and place.until > now:
            return None  # another sender is delivering to it
        if place.next_at > now:
            return None
        due = [n for seq, n in self.waiting.items() if seq > place.accepted][:limit]
        if not due:
            return None
        place.owner, place.until = owner, until
        copies = [replace(n, body=dict(n.body)) for n in due]
        return Delivery(receiver, copies, place.attempts)

    def accept(self, receiver: str, owner: str, seq: int, until: float) -> None:
        place = self.receivers.get(receiver)
        if place is not None and place.owner == owner:
            place.accepted = max(place.accepted, seq)
            place.attempts, place.next_at, place.until = 0, 0.0, until

    def defer(self, receiver: str, owner: str, attempts: int, next_at: float) -> None:
        place = self.receivers.get(receiver)
        if place is not None and place.owner == owner:
            place.attempts, place.next_at = attempts, next_at
            place.owner, place.until = None, 0.0

    def prune(self, receivers: Sequence[str]) -> int:
        places = [self.receivers.get(url) for url in receivers]
        if not places or None in places:
            return 0  # a receiver that never claimed has accepted nothing
        upto = min(p.accepted for p in places if p is not None)
        gone = [seq for seq in self.waiting if seq <= upto]
        for seq in gone:
            del self.waiting[seq]
        return len(gone)

    def release(self, owner: str) -> None:
        for place in self.receivers.values():
            if place.owner == owner:
                place.owner, place.until = None, 0.0
