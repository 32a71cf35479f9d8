"""`baton sessions prune`: delete sessions nobody has touched for a while."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Final, final

import typer

from baton.cli.base import (
    AppOption,
    DbOption,
    PathOption,
    app_names,
    console,
    execute,
    open_catalog,
    sessions_cli,
)
from baton.reports import folding_table, when

__all__ = ["parse_age", "sessions_prune"]

_AGE: Final = re.compile(r"(\d+)([dhms])")
_UNITS: Final = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}


def parse_age(text: str) -> timedelta:
    """An age such as "30d", "12h", "45m" or "90s".

    Raises:
        typer.BadParameter: anything else, or zero; the message shows the form.
    """
    found = _AGE.fullmatch(text.strip())
    age = timedelta(**{_UNITS[found.group(2)]: int(found.group(1))}) if found else None
    if age is None or age <= timedelta(0):
        raise typer.BadParameter(
            f"'{text}' is not an age; give a positive number with a unit: 30d, 12h, 45m or 90s.",
            param_hint="--older-than",
        )
    return age


@sessions_cli.command("prune")
def sessions_prune(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Delete sessions untouched for longer than this: 30d, 12h, 45m or 90s.",
        ),
    ],
    path: PathOption = Path("."),
    app: AppOption = None,
    user: Annotated[
        str | None,
        typer.Option("--user", "-u", help="Only this user's sessions.", metavar="NAME"),
    ] = None,
    include_unfinished: Annotated[
        bool,
        typer.Option(
            "--include-unfinished",
            help="Also delete old sessions whose runs wait for an answer, failed or stopped.",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be deleted; delete nothing.")
    ] = False,
    db: DbOption = None,
) -> None:
    """Delete old sessions with their events, runs and questions.

    A session whose runs have not all completed is kept (someone may still answer or
    resume it) unless --include-unfinished.

    Example: baton sessions prune -p examples/ --older-than 30d --dry-run
    """
    age = parse_age(older_than)
    choice = _Choice(app, user, age, include_unfinished=include_unfinished, dry_run=dry_run)
    execute(_prune(path, db, choice))


@final
@dataclass(frozen=True)
class _Choice:
    app: str | None
    user: str | None
    age: timedelta
    include_unfinished: bool
    dry_run: bool


async def _prune(path: Path, db: str | None, choice: _Choice) -> None:
    listing = folding_table("app", "user", "session", "updated")
    async with open_catalog(path, db) as catalog:
        for name in app_names(catalog, choice.app):
            pruned = await catalog.session_service.prune_sessions(
                app_name=name,
                user_id=choice.user,
                older_than=choice.age,
                include_unfinished=choice.include_unfinished,
                dry_run=choice.dry_run,
            )
            for session in pruned:
                listing.add_row(name, session.user_id, session.id, when(session.last_update_time))
    if listing.row_count:
        console.print(listing)
    verb = "would delete" if choice.dry_run else "deleted"
    console.print(f"{verb} {listing.row_count} session(s) untouched for over {choice.age}")
