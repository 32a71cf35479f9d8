"""A person's inbox across apps, as one snapshot, and the one stream that keeps it current.

A browser allows six connections per host: a page that opened one stream per app froze
once six were open. The page opens this one stream instead; it carries everything the
page shows that can change (every open question and the recently updated sessions, of
every app), and ends when the server drains.

Its first frames are the whole view, a page of questions each (see `first_frames`);
each later frame holds only what changed (see `view_changes`), so a busy inbox does not
resend every question on every step.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Final, cast

from pydantic import Field, JsonValue

from baton.listings import pending_across
from baton.server.catalog import AppCatalog
from baton.server.sse import ChangeSignal, frame, keepalive_frame
from baton.sessions.paging import DEFAULT_PAGE, MAX_PAGE, Page, read_every_page
from baton.sessions.store import Interrupt
from baton.types import WireModel

__all__ = [
    "MAX_SESSIONS",
    "InboxSnapshot",
    "SessionSummary",
    "chosen_apps",
    "first_frames",
    "read_inbox",
    "view_changes",
    "watch",
    "watched_inbox",
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
    """Everything the inbox page shows that can change, for one user across apps: a page
    of open questions (oldest first; `next_cursor` names the next page) and the recently
    updated sessions."""

    pending: list[Interrupt] = Field(default_factory=list[Interrupt])
    sessions: list[SessionSummary] = Field(default_factory=list[SessionSummary])
    next_cursor: str | None = None


def chosen_apps(catalog: AppCatalog, apps: Sequence[str]) -> list[str]:
    """The apps a request names (all when none).

    Raises:
        AppNotFoundError: a name is not served.
    """
    for name in apps:
        catalog.runner(name)
    return list(dict.fromkeys(apps)) or list(catalog.names)


async def read_inbox(
    catalog: AppCatalog,
    user_id: str,
    apps: Sequence[str],
    *,
    limit: int = DEFAULT_PAGE,
    cursor: str | None = None,
) -> InboxSnapshot:
    """A page of the user's open questions in `apps` (with those assigned to them),
    oldest first, and their recent sessions: a page read and `MAX_SESSIONS` per app,
    however big the store.

    Raises:
        InvalidLimitError, InvalidCursorError: before anything is read.
    """
    page = await _pending(catalog, user_id, apps, limit, cursor)
    sessions = await _recent(catalog, user_id, apps)
    return InboxSnapshot(pending=page.items, sessions=sessions, next_cursor=page.next_cursor)


async def watched_inbox(
    catalog: AppCatalog, user_id: str, apps: Sequence[str]
) -> dict[str, JsonValue]:
    """The view the inbox stream shows: every open question of the user's in `apps` (with
    those assigned to them), oldest first, read a page at a time, and their recent
    sessions."""

    async def read(cursor: str | None) -> Page[Interrupt]:
        return await _pending(catalog, user_id, apps, MAX_PAGE, cursor)

    snapshot = InboxSnapshot(
        pending=await read_every_page(read), sessions=await _recent(catalog, user_id, apps)
    )
    return snapshot.to_wire()


async def _pending(
    catalog: AppCatalog, user_id: str, apps: Sequence[str], limit: int, cursor: str | None
) -> Page[Interrupt]:
    """A page of the user's own questions and those assigned to them in others' sessions."""
    store = catalog.session_service.store
    return await pending_across(
        store, apps, user_id=user_id, include_assigned=True, limit=limit, cursor=cursor
    )


async def _recent(catalog: AppCatalog, user_id: str, apps: Sequence[str]) -> list[SessionSummary]:
    """The user's `MAX_SESSIONS` most recently updated sessions across `apps`."""
    store = catalog.session_service.store
    recent = [
        [
            SessionSummary(
                app_name=name,
                id=found.session.id,
                last_update_time=found.session.last_update_time,
                status=found.latest_run.value if found.latest_run else "none",
            )
            for found in await store.recent_sessions(name, user_id, limit=MAX_SESSIONS)
        ]
        for name in apps
    ]
    sessions = heapq.merge(*recent, key=lambda s: -s.last_update_time)
    return list(sessions)[:MAX_SESSIONS]


async def watch(
    read: Callable[[], Awaitable[dict[str, JsonValue]]],
    *,
    changes: ChangeSignal,
    interval: float,
    stopping: asyncio.Event,
) -> AsyncGenerator[bytes, None]:
    """SSE frames of the view `read()` returns: all of it (in `first_frames`), then what
    changed.

    `read` is called again on every change signal, and every `interval` seconds to see
    changes made by other processes; when nothing changed a keep-alive comment is sent
    instead, so a client can tell a live stream from a dead one. Ends once `stopping`
    is set (the server is draining).
    """
    sent: dict[str, JsonValue] | None = None
    while not stopping.is_set():
        current = await read()
        if sent is None:
            for part in first_frames(current):
                yield frame(part)
        else:
            change = view_changes(sent, current)
            yield frame(change) if change else keepalive_frame()
        sent = current
        await changes.wait(interval)


def first_frames(
    view: Mapping[str, JsonValue], page: int = DEFAULT_PAGE
) -> list[dict[str, JsonValue]]:
    """The whole view as frames a client applies in turn: the view with the first `page`
    of its questions (`pending`), then the rest a page a frame, as `changed` ones. The
    page shows the first questions at once however many are open."""
    rows = cast(list[JsonValue], view.get("pending") or [])
    head: dict[str, JsonValue] = {**view, "pending": rows[:page]}
    rest: list[dict[str, JsonValue]] = [
        {"changed": rows[start : start + page]} for start in range(page, len(rows), page)
    ]
    return [head, *rest]


def view_changes(
    before: Mapping[str, JsonValue], after: Mapping[str, JsonValue]
) -> dict[str, JsonValue]:
    """What a client holding the view `before` needs to hold `after` (empty: nothing).

    Questions (`pending`) are sent one by one: `changed` holds those new or changed,
    `removed` the keys (app, session, invocation, interrupt, occurrence) of those gone
    (answered, expired, rewound). Any other part of the view is sent whole when it
    changed, and left out when not (a part that went away is sent as null).
    """
    change: dict[str, JsonValue] = {}
    old = _by_key(before.get("pending"))
    new = _by_key(after.get("pending"))
    changed: list[JsonValue] = [row for key, row in new.items() if old.get(key) != row]
    removed: list[JsonValue] = [_key_fields(old[key]) for key in old if key not in new]
    if changed:
        change["changed"] = changed
    if removed:
        change["removed"] = removed
    for part in (after.keys() | before.keys()) - {"pending"}:
        if before.get(part) != after.get(part):
            change[part] = after.get(part)
    return change


# A question's key on the page: a loop asking one id again asks a new occurrence.
_KEY_FIELDS: Final = ("appName", "sessionId", "invocationId", "interruptId", "occurrence")


def _by_key(rows: JsonValue) -> dict[tuple[str, ...], dict[str, JsonValue]]:
    found = cast(list[dict[str, JsonValue]], rows or [])
    return {tuple(str(row.get(name)) for name in _KEY_FIELDS): row for row in found}


def _key_fields(row: dict[str, JsonValue]) -> dict[str, JsonValue]:
    return {name: row.get(name) for name in _KEY_FIELDS}
