"""A person's inbox across apps, as one snapshot, and the one stream that keeps it current.

A browser allows six connections per host: a page that opened one stream per app froze
once six were open. The page opens this one stream instead; it carries everything the
page shows that can change (open questions and recently updated sessions, of every app),
and ends when the server drains.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Final

from pydantic import Field, JsonValue

from baton.server.catalog import AppCatalog
from baton.server.sse import ChangeSignal, frame, keepalive_frame
from baton.sessions.store import Interrupt, SessionKey
from baton.types import SessionId, WireModel

__all__ = [
    "MAX_SESSIONS",
    "InboxSnapshot",
    "SessionSummary",
    "chosen_apps",
    "read_inbox",
    "watch",
]

MAX_SESSIONS: Final = 20
"""How many recently updated sessions a snapshot lists."""


class SessionSummary(WireModel):
    """A session in the recent list: which app, which session, when it last changed, and
    how its latest run stands (`none` before the first run)."""

    app_name: str
    id: str
    last_update_time: float
    status: str = "none"


class InboxSnapshot(WireModel):
    """Everything the inbox page shows that can change, for one user across apps."""

    pending: list[Interrupt] = Field(default_factory=list[Interrupt])
    sessions: list[SessionSummary] = Field(default_factory=list[SessionSummary])


def chosen_apps(catalog: AppCatalog, apps: Sequence[str]) -> list[str]:
    """The apps a request names (all when none).

    Raises:
        AppNotFoundError: a name is not served.
    """
    for name in apps:
        catalog.runner(name)
    return list(dict.fromkeys(apps)) or list(catalog.names)


async def read_inbox(catalog: AppCatalog, user_id: str, apps: Sequence[str]) -> InboxSnapshot:
    """The user's open questions in `apps` (with those assigned to them), oldest first,
    and their recent sessions."""
    store = catalog.session_service.store
    pending: list[Interrupt] = []
    sessions: list[SessionSummary] = []
    for name in apps:
        # The user's own questions and those assigned to them in others' sessions.
        pending += await catalog.runner(name).pending(user_id=user_id, include_assigned=True)
        sessions += [
            SessionSummary(app_name=name, id=s.id, last_update_time=s.last_update_time)
            for s in await store.list_sessions(name, user_id)
        ]
    pending.sort(key=lambda row: row.created_at)
    sessions.sort(key=lambda s: s.last_update_time, reverse=True)
    recent = sessions[:MAX_SESSIONS]
    for summary in recent:
        runs = await store.list_invocations(
            SessionKey(summary.app_name, user_id, SessionId(summary.id))
        )
        summary.status = runs[-1].status.value if runs else "none"
    return InboxSnapshot(pending=pending, sessions=recent)


async def watch(
    read: Callable[[], Awaitable[JsonValue]],
    *,
    changes: ChangeSignal,
    interval: float,
    stopping: asyncio.Event,
) -> AsyncIterator[bytes]:
    """SSE frames of `read()`: the first at once, then each time it differs.

    `read` is called again on every change signal, and every `interval` seconds to see
    changes made by other processes; when nothing changed a keep-alive comment is sent
    instead, so a client can tell a live stream from a dead one. Ends once `stopping`
    is set (the server is draining).
    """
    sent: JsonValue = None
    first = True
    while not stopping.is_set():
        current = await read()
        if first or current != sent:
            first, sent = False, current
            yield frame(current)
        else:
            yield keepalive_frame()
        await changes.wait(interval)
