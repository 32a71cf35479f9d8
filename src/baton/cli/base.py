"""What every command shares: the Typer apps, options, the app catalog, error handling."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Annotated, TypeVar, final

import typer
from rich.console import Console
from rich.text import Text

from baton.errors import (
    BatonError,
    SessionNotFoundError,
)
from baton.server.catalog import (
    AppCatalog,
    AppLoadError,
    check_database,
    default_db_path,
    find_app_folders,
    load_app,
    open_session_service,
)
from baton.sessions.store import Session, SessionKey
from baton.types import SessionId

__all__ = [
    "AppOption",
    "DbOption",
    "HostOption",
    "KeyOption",
    "OwnerOption",
    "PathOption",
    "PortOption",
    "UserOption",
    "app_names",
    "cli",
    "console",
    "execute",
    "find_session",
    "open_catalog",
    "sessions_cli",
]

_T = TypeVar("_T")


cli = typer.Typer(
    name="baton",
    help=(
        "Durable, resumable agent workflows with human-in-the-loop.\n\n"
        "An app is a folder whose agent.py exports `app` (a baton App) or `root_agent`; an "
        "agents folder holds app folders. Sessions live in AGENTS_DIR/.baton/sessions.db "
        "unless --db names another database, so `baton run`, `baton web` and the session "
        "commands see the same runs.\n\n"
        'Try: baton run examples/expense_approval "120 taxi", then baton web examples/.'
    ),
    rich_markup_mode=None,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
sessions_cli = typer.Typer(
    help="List, show and delete sessions.\n\nExample: baton sessions list -p examples/",
    no_args_is_help=True,
    rich_markup_mode=None,
)
cli.add_typer(sessions_cli, name="sessions")

console = Console()

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="URL",
        help="Database: a SQLite file, sqlite:///file.db, postgresql+asyncpg://user@host/db, "
        "or memory:// (default: AGENTS_DIR/.baton/sessions.db).",
        show_default=False,
    ),
]
UserOption = Annotated[
    str, typer.Option("--user", "-u", help="The user the sessions belong to.", metavar="NAME")
]
OwnerOption = Annotated[
    str | None,
    typer.Option(
        "--user", "-u", help="The session's user (default: whoever it belongs to).", metavar="NAME"
    ),
]
PathOption = Annotated[
    Path,
    typer.Option(
        "--path",
        "-p",
        help="An app folder, or an agents folder holding app folders.",
        metavar="PATH",
    ),
]
AppOption = Annotated[
    str | None,
    typer.Option(
        "--app",
        "-a",
        help="Only this app (default: every app found).",
        show_default=False,
        metavar="APP",
    ),
]
HostOption = Annotated[str, typer.Option(help="Interface to listen on.", metavar="HOST")]
PortOption = Annotated[
    int, typer.Option(help="Port to listen on (0: any free port).", metavar="PORT")
]
KeyOption = Annotated[
    list[str] | None,
    typer.Option(
        "--api-key",
        metavar="KEY",
        help="Require this API key (repeatable). `SECRET` may act for any user, "
        "`USER:SECRET` only for USER. Also read from $BATON_API_KEY (comma-separated).",
        show_default=False,
    ),
]


@final
@dataclass(frozen=True)
class _Target:
    """Where the apps are, and where their sessions are kept."""

    agents_dir: Path
    folders: tuple[Path, ...]

    @classmethod
    def of(cls, path: Path) -> _Target:
        if (path / "agent.py").is_file():
            return cls(path.resolve().parent, (path,))
        return cls(path, tuple(find_app_folders(path)))


@asynccontextmanager
async def open_catalog(
    path: Path,
    db: str | None,
    *,
    lease_ttl: timedelta = timedelta(seconds=30),
    worker_id: str | None = None,
) -> AsyncIterator[AppCatalog]:
    """The apps at `path` (an app folder or an agents folder) over the `--db` database."""
    target = _Target.of(path)
    if not target.folders:
        raise AppLoadError(
            f"'{path}' holds no app folders (folders with an agent.py); pass an app folder or "
            "an agents folder with --path/-p, e.g. -p examples/."
        )
    service = open_session_service(db, default=default_db_path(target.agents_dir))
    try:
        catalog = AppCatalog.of(
            [load_app(f) for f in target.folders],
            service,
            lease_ttl=lease_ttl,
            worker_id=worker_id,
        )
        await check_database(service, catalog.names[0])
        yield catalog
    finally:
        await service.close()


def execute(
    work: Coroutine[object, object, _T],
    *,
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
) -> _T:
    """Run a command's coroutine (on a loop `loop_factory` makes, else asyncio's); a baton
    error is printed (no traceback) and exits 1."""
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(work)
    except BatonError as error:
        console.print(Text(f"{type(error).__name__}: {error}", style="red"))
        raise typer.Exit(1) from None


def app_names(catalog: AppCatalog, app: str | None) -> list[str]:
    """The served app names, or just `app`.

    Raises:
        AppNotFoundError: `app` is not among them.
    """
    if app is None:
        return catalog.names
    return [catalog.runner(app).app_name]


async def find_session(catalog: AppCatalog, user: str | None, session_id: str) -> Session:
    """The session with that id (of `user`, or of whichever user has it) in any served app.

    Raises:
        SessionNotFoundError: no app holds it, or several users have a session of that id.
    """
    store = catalog.session_service.store
    found: list[Session] = []
    for name in catalog.names:
        if user is not None:
            session = await store.get_session(SessionKey(name, user, SessionId(session_id)))
            found += [session] if session is not None else []
        else:
            found += await store.list_sessions(name, session_id=SessionId(session_id))
    # MySQL before 8.0.17 ignores trailing spaces (migration 23): 's1 ' finds 's1'.
    found = [s for s in found if s.id == session_id]
    if len(found) > 1:
        owners = ", ".join(sorted(f"{s.app_name}/{s.user_id}" for s in found))
        raise SessionNotFoundError(
            f"session id '{session_id}' is used by several (app/user: {owners}); "
            "pick one with --user NAME."
        )
    if found and user is not None:
        return found[0]
    if found:
        loaded = await store.get_session(found[0].key)
        if loaded is not None:
            return loaded
    whose = f"of user '{user}' " if user is not None else ""
    raise SessionNotFoundError(
        f"no session '{session_id}' {whose}in apps {', '.join(catalog.names)}; "
        "list them with `baton sessions list` (and pass --user / --path / --db to match)."
    )
