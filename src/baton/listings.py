"""Pages of an app's questions, sessions and runs, read off the store a page at a time.

The Runner's `pending_page`, `sessions_page` and `invocations_page` are these; the
server's listings and the CLI call them, so every listing pages the same way (see
`baton.sessions.paging`) and none reads a store wholesale.
"""

from __future__ import annotations

import heapq
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from baton.sessions.paging import DEFAULT_PAGE, Page, Position, read_page
from baton.sessions.store import (
    Interrupt,
    InterruptStatus,
    Invocation,
    Session,
    SessionKey,
    Store,
)
from baton.types import InvocationId, SessionId

__all__ = [
    "Listing",
    "invocations_page",
    "pending_across",
    "pending_page",
    "sessions_across",
    "sessions_page",
]

_T = TypeVar("_T")

Fetch = Callable[[int, Position | None], Awaitable[list[_T]]]
"""Reads up to n rows of a listing after a position (from the start when None)."""


@dataclass(frozen=True)
class Listing(Generic[_T]):
    """A listing's name (which its cursors carry), its rows' sort key and that key's types."""

    name: str
    position: Callable[[_T], Position]
    kinds: tuple[type, ...]

    async def page(self, fetch: Fetch[_T], *, limit: int, cursor: str | None) -> Page[_T]:
        """The page after `cursor` (see `read_page`).

        Raises:
            InvalidLimitError, InvalidCursorError: before anything is read.
        """
        return await read_page(
            fetch, self.position, listing=self.name, kinds=self.kinds, limit=limit, cursor=cursor
        )


_PENDING: Final = Listing[Interrupt]("pending", lambda row: row.position, (float, str, str))
_SESSIONS: Final = Listing[Session]("sessions", lambda s: s.position, (str, str))
_INVOCATIONS: Final = Listing[Invocation]("invocations", lambda run: run.position, (float, str))
# Across apps, sessions run app by app: (app, user, id).
_APP_SESSIONS: Final = Listing[Session](
    "sessions", lambda s: (s.app_name, *s.position), (str, str, str)
)


async def pending_page(
    store: Store,
    app_name: str,
    *,
    user_id: str | None = None,
    session_id: str | None = None,
    invocation_id: str | None = None,
    status: InterruptStatus | None = InterruptStatus.OPEN,
    assignee: str | None = None,
    include_assigned: bool = False,
    limit: int = DEFAULT_PAGE,
    cursor: str | None = None,
) -> Page[Interrupt]:
    """A page of the app's questions (the open ones by default), oldest first, filtered
    as `Store.list_interrupts` filters.

    Raises:
        InvalidLimitError, InvalidCursorError: before anything is read.
    """

    async def fetch(count: int, after: Position | None) -> list[Interrupt]:
        return await store.list_interrupts(
            app_name,
            user_id,
            session_id=SessionId(session_id) if session_id else None,
            invocation_id=InvocationId(invocation_id) if invocation_id else None,
            status=status,
            assignee=assignee,
            include_assigned=include_assigned,
            limit=count,
            after=after,
        )

    return await _PENDING.page(fetch, limit=limit, cursor=cursor)


async def sessions_page(
    store: Store,
    app_name: str,
    *,
    user_id: str | None = None,
    limit: int = DEFAULT_PAGE,
    cursor: str | None = None,
) -> Page[Session]:
    """A page of the app's sessions (of one user, or everyone's), by user then id,
    without their events.

    Raises:
        InvalidLimitError, InvalidCursorError: before anything is read.
    """

    async def fetch(count: int, after: Position | None) -> list[Session]:
        return await store.list_sessions(app_name, user_id, limit=count, after=after)

    return await _SESSIONS.page(fetch, limit=limit, cursor=cursor)


async def invocations_page(
    store: Store, key: SessionKey, *, limit: int = DEFAULT_PAGE, cursor: str | None = None
) -> Page[Invocation]:
    """A page of the session's runs, oldest first, each with its status.

    Raises:
        InvalidLimitError, InvalidCursorError: before anything is read.
    """

    async def fetch(count: int, after: Position | None) -> list[Invocation]:
        return await store.list_invocations(key, limit=count, after=after)

    return await _INVOCATIONS.page(fetch, limit=limit, cursor=cursor)


async def pending_across(
    store: Store,
    apps: Sequence[str],
    *,
    user_id: str | None = None,
    status: InterruptStatus | None = InterruptStatus.OPEN,
    assignee: str | None = None,
    include_assigned: bool = False,
    limit: int = DEFAULT_PAGE,
    cursor: str | None = None,
) -> Page[Interrupt]:
    """A page of the questions of several apps, oldest first, as one listing (filtered
    as `Store.list_interrupts` filters).

    A question's position does not depend on its app, so each app's page after the
    cursor is read and the pages merged: `len(apps)` index reads, never a whole table.

    Raises:
        InvalidLimitError, InvalidCursorError: before anything is read.
    """

    async def fetch(count: int, after: Position | None) -> list[Interrupt]:
        pages = [
            await store.list_interrupts(
                name,
                user_id,
                status=status,
                assignee=assignee,
                include_assigned=include_assigned,
                limit=count,
                after=after,
            )
            for name in apps
        ]
        return list(heapq.merge(*pages, key=lambda row: row.position))[:count]

    return await _PENDING.page(fetch, limit=limit, cursor=cursor)


async def sessions_across(
    store: Store,
    apps: Sequence[str],
    *,
    user_id: str | None = None,
    limit: int = DEFAULT_PAGE,
    cursor: str | None = None,
) -> Page[Session]:
    """A page of the sessions of several apps: app by app (in the order given), each by
    user then id.

    Raises:
        InvalidLimitError, InvalidCursorError: before anything is read.
    """
    order = {name: index for index, name in enumerate(apps)}

    async def fetch(count: int, after: Position | None) -> list[Session]:
        found: list[Session] = []
        for name in apps:
            read, start = _start_in_app(order, name, after)
            if read and len(found) < count:
                found += await store.list_sessions(
                    name, user_id, limit=count - len(found), after=start
                )
        return found

    return await _APP_SESSIONS.page(fetch, limit=limit, cursor=cursor)


def _start_in_app(
    order: dict[str, int], app_name: str, after: Position | None
) -> tuple[bool, Position | None]:
    """Whether app `app_name`'s part of an app-by-app listing is read after `after` (not
    when the listing passed it), and after which of its positions (None: all of it)."""
    if after is None:
        return True, None
    last = order.get(str(after[0]), -1)
    here = order[app_name]
    return here >= last, after[1:] if here == last else None
