"""Time travel in the terminal: `baton sessions rewind`."""

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

__all__ = ["sessions_rewind"]


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
