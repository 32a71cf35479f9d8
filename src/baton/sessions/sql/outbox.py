"""The notification outbox in SQL: recorded with a step, claimed and settled by a sender.

A sender claims the oldest rows, in order, only while no other sender's claim runs:
the head rows are locked first (FOR UPDATE where the database has it; SQLite's writing
transaction already excludes every other writer), then other claims are looked for,
so two processes asking at once never both claim. A dead sender's claim lapses.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection

from baton.sessions.notifications import notifications_of
from baton.sessions.sql.schema import notifications
from baton.sessions.store import Notification, StepCommit

__all__ = [
    "claim_notifications",
    "defer_notification",
    "finish_notification",
    "record_notifications",
    "release_notifications",
]

_n = notifications.c


def record_notifications(connection: Connection, commit: StepCommit, now: float) -> None:
    """Add the notifications `commit` causes, in the commit's own transaction."""
    rows: list[dict[str, Any]] = [
        {
            "id": n.id,
            "body": n.body,
            "created_at": n.created_at,
            "attempts": 0,
            "next_at": n.next_at,
            "delivered_to": list[str](),
            "claimed_by": None,
            "claimed_until": 0.0,
        }
        for n in notifications_of(commit, now)
    ]
    if rows:
        connection.execute(notifications.insert(), rows)


def claim_notifications(
    connection: Connection, owner: str, until: float, now: float, limit: int
) -> list[Notification]:
    """See `Store.claim_notifications`; runs in a writing transaction."""
    head = connection.execute(
        select(notifications).order_by(_n.seq).limit(limit).with_for_update()
    ).mappings()
    rows = list(head)
    if not rows or rows[0]["next_at"] > now:
        return []
    held = connection.execute(
        select(_n.seq).where(_n.claimed_by != owner, _n.claimed_until > now).limit(1)
    ).first()
    if held is not None:
        return []
    connection.execute(
        update(notifications)
        .where(_n.seq.in_([row["seq"] for row in rows]))
        .values(claimed_by=owner, claimed_until=until)
    )
    return [_to_notification(row) for row in rows]


def finish_notification(connection: Connection, notification_id: str, owner: str) -> None:
    """Delete a delivered notification, if `owner` still claims it."""
    connection.execute(
        delete(notifications).where(_n.id == notification_id, _n.claimed_by == owner)
    )


def defer_notification(connection: Connection, notification: Notification, owner: str) -> None:
    """Record a failed round on `notification` and release `owner`'s claims."""
    connection.execute(
        update(notifications)
        .where(_n.id == notification.id, _n.claimed_by == owner)
        .values(
            attempts=notification.attempts,
            next_at=notification.next_at,
            delivered_to=list(notification.delivered_to),
        )
    )
    release_notifications(connection, owner)


def release_notifications(connection: Connection, owner: str) -> None:
    """Clear `owner`'s claims."""
    connection.execute(
        update(notifications)
        .where(_n.claimed_by == owner)
        .values(claimed_by=None, claimed_until=0.0)
    )


def _to_notification(row: Any) -> Notification:
    return Notification(
        id=row["id"],
        body=dict(row["body"]),
        created_at=row["created_at"],
        attempts=row["attempts"],
        next_at=row["next_at"],
        delivered_to=list(row["delivered_to"]),
    )
