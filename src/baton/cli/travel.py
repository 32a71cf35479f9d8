"""Time travel in the terminal: `baton sessions checkpoints|rewind|fork`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from baton.cli.base import (
    DbOption,
    OwnerOption,
    PathOption,
    console,
    execute,
    find_session,
    open_catalog,
    sessions_cli,
)
from baton.cli.running import resume_flags
from baton.history import compact
from baton.reports import folding_table, when
from baton.sessions.store import InvocationStatus

__all__ = ["sessions_checkpoints", "sessions_fork", "sessions_rewind"]


@sessions_cli.command("checkpoints")
def sessions_checkpoints(
    session: Annotated[str, typer.Argument(help="The session id.", metavar="SESSION")],
    path: PathOption = Path("."),
    user: OwnerOption = None,
    db: DbOption = None,
) -> None:
    """List the points a session can be taken back to: before each run (rewind or fork
    there), after each step of a workflow run (fork there to re-run from it), at each
    question (fork there to answer it differently), after each ended run.

    Example: baton sessions checkpoints 4b1c... -p examples/
    """
    execute(_sessions_checkpoints(session, path, user, db))


async def _sessions_checkpoints(
    session_id: str, path: Path, user: str | None, db: str | None
) -> None:
    listing = folding_table("checkpoint", "when", "what", "answered")
    async with open_catalog(path, db) as catalog:
        session = await find_session(catalog, user, session_id)
        runner = catalog.runner(session.app_name)
        points = await runner.checkpoints(user_id=session.user_id, session_id=session.id)
    for point in points:
        answered = ", ".join(
            f"{iid}={compact(value, 40)}"
            + (f" by {point.answered_by[iid]}" if iid in point.answered_by else "")
            for iid, value in point.answers.items()
        )
        listing.add_row(point.id, when(point.time), point.label, answered)
    console.print(listing)


@sessions_cli.command("fork")
def sessions_fork(
    session: Annotated[str, typer.Argument(help="The session id.", metavar="SESSION")],
    checkpoint: Annotated[
        str,
        typer.Argument(help="Where to fork (`baton sessions checkpoints`).", metavar="CHECKPOINT"),
    ],
    path: PathOption = Path("."),
    user: OwnerOption = None,
    db: DbOption = None,
    new_session: Annotated[
        str | None, typer.Option("--new-session", help="The fork's id (default: a new one).")
    ] = None,
) -> None:
    """Copy a session up to a checkpoint into a new session; a run waiting at that
    question waits there again (answer it with `baton resume`), a run forked after a step
    continues from there with `baton resume --invocation`. The session is unchanged.

    Example: baton sessions fork 4b1c... question:9f2a... -p examples/
    """
    execute(_sessions_fork(session, checkpoint, path, user, db, new_session))


async def _sessions_fork(
    session_id: str,
    checkpoint_id: str,
    path: Path,
    user: str | None,
    db: str | None,
    new_session: str | None,
) -> None:
    async with open_catalog(path, db) as catalog:
        session = await find_session(catalog, user, session_id)
        runner = catalog.runner(session.app_name)
        forked = await runner.fork(
            user_id=session.user_id,
            session_id=session.id,
            checkpoint_id=checkpoint_id,
            new_session_id=new_session,
        )
        waiting = await runner.pending(user_id=session.user_id, session_id=forked.id)
        runs = await runner.invocations(user_id=session.user_id, session_id=forked.id)
    flags = resume_flags(path, db)
    asks = ", ".join(r.interrupt_id for r in waiting)
    going = [r.id for r in runs if r.status is InvocationStatus.RUNNING]
    then = ""
    if asks:
        then = f"; it waits on {asks}: baton resume {forked.id}{flags}"
    elif going:
        then = f"; continue it from there: baton resume {forked.id}{flags} --invocation {going[0]}"
    console.print(f"forked session {session.id} at {checkpoint_id} into session {forked.id}{then}")


@sessions_cli.command("rewind")
def sessions_rewind(
    session: Annotated[str, typer.Argument(help="The session id.", metavar="SESSION")],
    invocation: Annotated[
        str, typer.Argument(help="The first run to undo (its id).", metavar="INVOCATION")
    ],
    path: PathOption = Path("."),
    user: OwnerOption = None,
    db: DbOption = None,
) -> None:
    """Rewind a session to before a run: its state as it was then, that run and every
    later one undone (nothing is deleted; `baton inspect` lists the runs).

    Example: baton sessions rewind 4b1c... e-9f2a... -p examples/
    """
    execute(_sessions_rewind(session, invocation, path, user, db))


async def _sessions_rewind(
    session_id: str, invocation_id: str, path: Path, user: str | None, db: str | None
) -> None:
    async with open_catalog(path, db) as catalog:
        session = await find_session(catalog, user, session_id)
        runner = catalog.runner(session.app_name)
        event = await runner.rewind_async(
            user_id=session.user_id,
            session_id=session.id,
            rewind_before_invocation_id=invocation_id,
        )
    restored = ", ".join(sorted(event.actions.state_delta)) or "none"
    console.print(
        f"rewound session {session.id} of {session.app_name} to before run {invocation_id} "
        f"(state keys restored: {restored})"
    )
