"""The notification outbox in SQL: recorded with a step; each receiver's place in it.

Notifications keep the order they were recorded in (`seq`). Each receiver has a row of
its own: the last notification it accepted, its failed rounds and the sender delivering
to it now. A sender claims a receiver's next notifications only while no other
sender's claim on that receiver runs: the receiver's row is locked first (FOR UPDATE
where the database has it; SQLite's writing transaction already excludes every other
writer), so two processes asking at once never both claim. A dead sender's claim
lapses. A notification every receiver accepted is deleted (`prune_notifications`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from pydantic import JsonValue
from sqlalchemy import delete, func, select, update
from sqlalchemy.engine import Connection

from baton.sessions.notifications import may_notify, notifications_of
from baton.sessions.sql.dialect import SqlDialect
from baton.sessions.sql.schema import notification_receivers, notifications
from baton.sessions.store import Delivery, Notification, StepCommit

__all__ = [
    "accept_notification",
    "claim_notifications",
    "defer_notifications",
    "prune_notifications",
    "record_notifications",
    "release_notifications",
    "stored_body",
]

_n = notifications.c
_r = notification_receivers.c


# One statement object, so that `dialect.run` compiles it once (see `direct`).
_RECORD = notifications.insert()
# The row has columns for a notification's id and time: its body is stored without them
# (about 70 of a notification's ~480 bytes, three notifications a HITL run), and reading
# puts them back in their places.
_IN_COLUMNS = frozenset(("id", "createdAt"))


def stored_body(notification: Notification) -> dict[str, JsonValue]:
    """What a notification's row keeps in its `body` column (see `_IN_COLUMNS`)."""
    # A copy less the two keys, in its order: a comprehension tested every key in Python
    # (about 90 bytecodes a notification, two on every resume).
    body = dict(notification.body)
    for name in _IN_COLUMNS:
        body.pop(name, None)
    return body


def record_notifications(
    connection: Connection, dialect: SqlDialect, commit: StepCommit, now: float
) -> None:
    """Add the notifications `commit` causes, in the commit's own transaction.

    Through `dialect.run`, as the step's other statements: on SQLite, SQLAlchemy's own
    `execute` cost 5-7% of a busy api_server's CPU here (a HITL run records three).
    """
    if not may_notify(commit):
        return
    rows: list[dict[str, Any]] = [
        {"id": n.id, "body": stored_body(n), "created_at": n.created_at}
        for n in notifications_of(commit, now)
    ]
    if rows:
        dialect.run(connection, _RECORD, rows)


def claim_notifications(
    connection: Connection,
    dialect: SqlDialect,
    receiver: str,
    owner: str,
    window: tuple[float, float],
    limit: int,
) -> Delivery | None:
    """See `Store.claim_notifications`; runs in a writing transaction. `window` is
    (now, the claim's end)."""
    now, until = window
    key = _key(receiver)
    fresh = {"receiver": key, "url": receiver, "accepted_seq": 0, "attempts": 0}
    dialect.insert_new(
        connection,
        notification_receivers,
        {**fresh, "next_at": 0.0, "claimed_by": None, "claimed_until": 0.0},
    )
    query = select(notification_receivers).where(_r.receiver == key)
    place = connection.execute(dialect.lock_rows(query, of=notification_receivers)).mappings()
    row = place.one()
    held = row["claimed_by"] not in (None, owner) and row["claimed_until"] > now
    if held or row["next_at"] > now:
        return None
    due = connection.execute(
        select(notifications).where(_n.seq > row["accepted_seq"]).order_by(_n.seq).limit(limit)
    ).mappings()
    found = [_to_notification(n) for n in due]
    if not found:
        return None
    connection.execute(
        update(notification_receivers)
        .where(_r.receiver == key)
        .values(claimed_by=owner, claimed_until=until)
    )
    return Delivery(receiver, found, row["attempts"])


def accept_notification(
    connection: Connection, receiver: str, owner: str, accepted: tuple[int, float]
) -> None:
    """Move the receiver's place to `accepted` (its seq) and renew the claim until its
    second part, if `owner` still claims it."""
    seq, until = accepted
    connection.execute(
        update(notification_receivers)
        .where(_r.receiver == _key(receiver), _r.claimed_by == owner, _r.accepted_seq < seq)
        .values(accepted_seq=seq, attempts=0, next_at=0.0, claimed_until=until)
    )


def defer_notifications(
    connection: Connection, receiver: str, owner: str, retry: tuple[int, float]
) -> None:
    """Record a failed round (`retry`: attempts in a row, next due time) and release."""
    attempts, next_at = retry
    connection.execute(
        update(notification_receivers)
        .where(_r.receiver == _key(receiver), _r.claimed_by == owner)
        .values(attempts=attempts, next_at=next_at, claimed_by=None, claimed_until=0.0)
    )


def prune_notifications(connection: Connection, receivers: Sequence[str]) -> int:
    """Delete what every one of `receivers` accepted; how many rows."""
    keys = list(dict.fromkeys(_key(url) for url in receivers))
    known, upto = connection.execute(
        select(func.count(), func.min(_r.accepted_seq)).where(_r.receiver.in_(keys))
    ).one()
    if not keys or known < len(keys):
        return 0  # a receiver that never claimed has accepted nothing
    return connection.execute(delete(notifications).where(_n.seq <= upto)).rowcount


def release_notifications(connection: Connection, owner: str) -> None:
    """Clear `owner`'s claims."""
    connection.execute(
        update(notification_receivers)
        .where(_r.claimed_by == owner)
        .values(claimed_by=None, claimed_until=0.0)
    )


def _key(receiver: str) -> str:
    """A receiver's row key: URLs are too long for some databases' keys."""
    return hashlib.sha256(receiver.encode()).hexdigest()


def _to_notification(row: Any) -> Notification:
    """The notification a row holds, its body whole again (see `stored_body`); rows
    written before hold the whole body, the same values."""
    stored = dict(row["body"])
    ident, created_at = row["id"], row["created_at"]
    body = {"id": ident, "type": stored.pop("type"), "createdAt": created_at, **stored}
    return Notification(id=ident, body=body, created_at=created_at, seq=row["seq"])
