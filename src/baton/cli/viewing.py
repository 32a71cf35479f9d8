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
from baton.reports import folding_table, timeline_tables, until, when
from baton.server.timeline import build_timeline
from baton.sessions.ids import check_id
from baton.sessions.store import Interrupt
from baton.terminal import (
    format_event,
)

__all__ = ["inspect", "pending", "sessions_delete", "sessions_list", "sessions_show"]


@sessions_cli.command("list")
def sessions_list(
    path: PathOption = Path("."),
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="Only this user's sessions.", metavar="NAME")
    ] = None,
    app: AppOption = None,
    db: DbOption = None,
) -> None:
    """List sessions with their latest run's status and open questions.

    Example: baton sessions list -p examples/
    """
    execute(_sessions_list(path, app, user, db))


async def _sessions_list(path: Path, app: str | None, user: str | None, db: str | None) -> None:
    listing = folding_table("app", "user", "session", "updated", "last run", "open")
    async with open_catalog(path, db) as catalog:
        store = catalog.session_service.store
        for name in app_names(catalog, app):
            for session in await store.list_sessions(name, user):
                invocations = await store.list_invocations(session.key)
                last = invocations[-1].status.value if invocations else "-"
                rows = await store.list_interrupts(
                    name, session.user_id, session_id=session.key.session_id
                )
                listing.add_row(
                    name,
                    session.user_id,
                    session.id,
                    when(session.last_update_time),
                    last,
                    str(len(rows)),
                )
    console.print(listing)


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
) -> None:
    """List the questions runs are waiting on, oldest first, with whom each waits on.

    \b
    Example: baton pending -p examples/   then   baton resume SESSION -p examples/
             baton pending -p examples/ --assignee bob   (what bob must answer)
    """
    execute(_pending(path, app, _Asking(user, assignee), db))


@dataclass(frozen=True)
class _Asking:
    """Whose questions `baton pending` lists."""

    user: str | None
    assignee: str | None


async def _pending(path: Path, app: str | None, asking: _Asking, db: str | None) -> None:
    if asking.assignee is not None:
        check_id("--assignee", asking.assignee)
    listing = folding_table(
        "app", "user", "session", "interrupt", "message", "waiting since", "expires"
    )
    async with open_catalog(path, db) as catalog:
        for name in app_names(catalog, app):
            rows = await catalog.runner(name).pending(
                user_id=asking.user,
                assignee=asking.assignee,
                include_assigned=asking.user is not None,
            )
            for row in rows:
                listing.add_row(
                    name,
                    # Whom the question waits on, when that is not the session's user.
                    row.user_id if row.assignee is None else f"{row.user_id} for {row.assignee}",
                    row.session_id,
                    row.interrupt_id,
                    row.message or "",
                    when(row.created_at),
                    "" if row.expires_at is None else _deadline(row),
                )
    console.print(listing)


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
