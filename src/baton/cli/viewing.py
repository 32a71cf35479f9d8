"""Looking at sessions: `baton sessions list|show|delete`, `baton pending`, `baton inspect`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from baton.cli.base import (
    AppOption,
    DbOption,
    OwnerOption,
    PathOption,
    app_names,
    cli,
    console,
    execute,
    find_session,
    open_catalog,
    sessions_cli,
)
from baton.listings import pending_across, sessions_across
from baton.reports import folding_table, timeline_tables, until, when
from baton.server.timeline import build_timeline
from baton.sessions.ids import check_id
from baton.sessions.paging import DEFAULT_PAGE, MAX_PAGE
from baton.sessions.store import Interrupt
from baton.terminal import (
    format_event,
)

__all__ = ["inspect", "pending", "sessions_delete", "sessions_list", "sessions_show"]

LimitOption = Annotated[
    int,
    typer.Option(
        "--limit",
        "-n",
        min=1,
        max=MAX_PAGE,
        help="Rows per page; a longer list ends with the command for the next page.",
    ),
]
CursorOption = Annotated[
    str | None,
    typer.Option("--cursor", help="Show the page after this one (printed under the page before)."),
]


@dataclass(frozen=True)
class _Paging:
    limit: int
    cursor: str | None


def _print_next(cursor: str | None) -> None:
    """Under a page that is not the last: how to see the next one."""
    if cursor is not None:
        console.print(Text(f"more: add --cursor {cursor}", style="dim"), soft_wrap=True)


@sessions_cli.command("list")
def sessions_list(
    path: PathOption = Path("."),
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="Only this user's sessions.", metavar="NAME")
    ] = None,
    app: AppOption = None,
    db: DbOption = None,
    limit: LimitOption = DEFAULT_PAGE,
    cursor: CursorOption = None,
) -> None:
    """List sessions (app by app, then by user and id) with their latest run's status and
    open questions, a page at a time.

    Example: baton sessions list -p examples/
    """
    execute(_sessions_list(path, app, user, db, _Paging(limit, cursor)))


async def _sessions_list(
    path: Path, app: str | None, user: str | None, db: str | None, paging: _Paging
) -> None:
    listing = folding_table("app", "user", "session", "updated", "last run", "open")
    async with open_catalog(path, db) as catalog:
        store = catalog.session_service.store
        names = app_names(catalog, app)
        page = await sessions_across(
            store, names, user_id=user, limit=paging.limit, cursor=paging.cursor
        )
        for session in page.items:
            invocations = await store.list_invocations(session.key)
            last = invocations[-1].status.value if invocations else "-"
            rows = await store.list_interrupts(
                session.app_name, session.user_id, session_id=session.key.session_id
            )
            listing.add_row(
                session.app_name,
                session.user_id,
                session.id,
                when(session.last_update_time),
                last,
                str(len(rows)),
            )
    console.print(listing)
    _print_next(page.next_cursor)


@sessions_cli.command("show")
def sessions_show(
    session: Annotated[str, typer.Argument(help="The session id.", metavar="SESSION")],
    path: PathOption = Path("."),
    user: OwnerOption = None,
    db: DbOption = None,
) -> None:
    """Print a session's state and its events, one line each.

    Example: baton sessions show 4b1c... -p examples/
    """
    execute(_sessions_show(session, path, user, db))


async def _sessions_show(session_id: str, path: Path, user: str | None, db: str | None) -> None:
    async with open_catalog(path, db) as catalog:
        session = await find_session(catalog, user, session_id)
    console.print(Text(f"{session.app_name}/{session.user_id}/{session.id}", style="bold"))
    console.print_json(data=session.state)
    for event in session.events:
        line = format_event(event)
        if line is not None:
            console.print(Text(when(event.timestamp) + "  ", style="dim"), line, sep="")


@sessions_cli.command("delete")
def sessions_delete(
    session: Annotated[str, typer.Argument(help="The session id.", metavar="SESSION")],
    path: PathOption = Path("."),
    user: OwnerOption = None,
    db: DbOption = None,
) -> None:
    """Delete a session with its events, runs and questions.

    Example: baton sessions delete 4b1c... -p examples/
    """
    execute(_sessions_delete(session, path, user, db))


async def _sessions_delete(session_id: str, path: Path, user: str | None, db: str | None) -> None:
    async with open_catalog(path, db) as catalog:
        session = await find_session(catalog, user, session_id)
        await catalog.session_service.store.delete_session(session.key)
    console.print(f"deleted session {session_id} of {session.app_name}")


@cli.command()
def pending(
    path: PathOption = Path("."),
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            "-u",
            help="Only this user's questions (their sessions', and those assigned to them).",
            metavar="NAME",
        ),
    ] = None,
    assignee: Annotated[
        str | None,
        typer.Option(help="Only the questions assigned to this person.", metavar="NAME"),
    ] = None,
    app: AppOption = None,
    db: DbOption = None,
    limit: LimitOption = DEFAULT_PAGE,
    cursor: CursorOption = None,
) -> None:
    """List the questions runs are waiting on, oldest first, with whom each waits on, a
    page at a time.

    \b
    Example: baton pending -p examples/   then   baton resume SESSION -p examples/
             baton pending -p examples/ --assignee bob   (what bob must answer)
    """
    execute(_pending(path, app, _Asking(user, assignee), db, _Paging(limit, cursor)))


@dataclass(frozen=True)
class _Asking:
    """Whose questions `baton pending` lists."""

    user: str | None
    assignee: str | None


async def _pending(
    path: Path, app: str | None, asking: _Asking, db: str | None, paging: _Paging
) -> None:
    if asking.assignee is not None:
        check_id("--assignee", asking.assignee)
    listing = folding_table(
        "app", "user", "session", "interrupt", "message", "waiting since", "expires"
    )
    async with open_catalog(path, db) as catalog:
        page = await pending_across(
            catalog.session_service.store,
            app_names(catalog, app),
            user_id=asking.user,
            assignee=asking.assignee,
            include_assigned=asking.user is not None,
            limit=paging.limit,
            cursor=paging.cursor,
        )
    for row in page.items:
        listing.add_row(
            row.app_name,
            # Whom the question waits on, when that is not the session's user.
            row.user_id if row.assignee is None else f"{row.user_id} for {row.assignee}",
            row.session_id,
            row.interrupt_id,
            row.message or "",
            when(row.created_at),
            "" if row.expires_at is None else _deadline(row),
        )
    console.print(listing)
    _print_next(page.next_cursor)


def _deadline(row: Interrupt) -> str:
    """When the question expires, and what happens then."""
    assert row.expires_at is not None  # the caller checked
    then = "answered by on_timeout" if row.answers_on_timeout else "the run fails"
    return f"{until(row.expires_at)} ({then})"


@cli.command()
def inspect(
    session: Annotated[str, typer.Argument(help="The session id.", metavar="SESSION")],
    path: PathOption = Path("."),
    user: OwnerOption = None,
    db: DbOption = None,
) -> None:
    """Show a session's timeline: runs, node statuses, and every step with who answered.

    Example: baton inspect 4b1c... -p examples/
    """
    execute(_inspect(session, path, user, db))


async def _inspect(session_id: str, path: Path, user: str | None, db: str | None) -> None:
    async with open_catalog(path, db) as catalog:
        session = await find_session(catalog, user, session_id)
        store = catalog.session_service.store
        timeline = build_timeline(
            session,
            await store.list_invocations(session.key),
            await store.list_interrupts(
                session.app_name,
                session.user_id,
                session_id=session.key.session_id,
                status=None,
            ),
        )
    for part in timeline_tables(timeline):
        console.print(part)
