"""The `baton` command: run apps in the terminal, serve them, and operate their sessions."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, TypeVar, final

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from baton.errors import (
    BatonError,
    InvalidResponseError,
    InvocationFinishedError,
    SessionNotFoundError,
)
from baton.runner import Runner
from baton.server.catalog import (
    AppCatalog,
    default_db_path,
    find_app_folders,
    load_app,
    open_session_service,
)
from baton.server.security import keys_from_env
from baton.server.timeline import Timeline, build_timeline
from baton.sessions.store import Interrupt, InvocationStatus, Session, SessionKey
from baton.terminal import Outcome, Terminal, ask_answers, drive, format_event, parse_answer
from baton.types import Content, FunctionResponse, InvocationId, Part, SessionId

__all__ = ["cli", "main"]

_T = TypeVar("_T")

cli = typer.Typer(
    name="baton",
    help=(
        "Durable, resumable agent workflows with human-in-the-loop.\n\n"
        "An app is a folder whose agent.py exports `app` (a baton App) or `root_agent`; an "
        "agents folder holds app folders. Sessions live in AGENTS_DIR/.baton/sessions.db "
        "unless --db names another database, so `baton run`, `baton web` and the session "
        "commands see the same runs.\n\n"
        'Try: [bold]baton run examples/expense_approval "120 taxi"[/], then '
        "[bold]baton web examples/[/]."
    ),
    rich_markup_mode="rich",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
sessions_cli = typer.Typer(
    help="List, show and delete sessions.\n\nExample: [bold]baton sessions list -p examples/[/]",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
cli.add_typer(sessions_cli, name="sessions")

_console = Console()

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database: a SQLite file, sqlite:///file.db, postgresql+asyncpg://user@host/db, "
        "or memory:// (default: AGENTS_DIR/.baton/sessions.db).",
        show_default=False,
    ),
]
UserOption = Annotated[str, typer.Option("--user", "-u", help="The user the sessions belong to.")]
PathOption = Annotated[
    Path,
    typer.Option("--path", "-p", help="An app folder, or an agents folder holding app folders."),
]
HostOption = Annotated[str, typer.Option(help="Interface to listen on.")]
PortOption = Annotated[int, typer.Option(help="Port to listen on (0: any free port).")]
KeyOption = Annotated[
    list[str] | None,
    typer.Option(
        "--api-key",
        help="Require this API key (repeatable). `SECRET` may act for any user, "
        "`USER:SECRET` only for USER. Also read from $BATON_API_KEY (comma-separated).",
        show_default=False,
    ),
]


def main() -> None:
    """Entry point of the `baton` script."""
    cli()


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
async def _catalog(path: Path, db: str | None) -> AsyncIterator[AppCatalog]:
    target = _Target.of(path)
    service = open_session_service(db, default=default_db_path(target.agents_dir))
    try:
        yield AppCatalog.of([load_app(f) for f in target.folders], service)
    finally:
        await service.close()


def _execute(work: Coroutine[object, object, _T]) -> _T:
    """Run a command's coroutine; a baton error is printed (no traceback) and exits 1."""
    try:
        return asyncio.run(work)
    except BatonError as error:
        _console.print(Text(f"{type(error).__name__}: {error}", style="red"))
        raise typer.Exit(1) from None


# -- run ------------------------------------------------------------------------------------


@cli.command()
def run(
    path: Annotated[Path, typer.Argument(help="The app folder (it holds agent.py).")],
    message: Annotated[
        str | None, typer.Argument(help="The message that starts the run.", show_default=False)
    ] = None,
    db: DbOption = None,
    session: Annotated[
        str | None,
        typer.Option(help="Run in this session (created if missing); default: a new one."),
    ] = None,
    user: UserOption = "user",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print events as JSON lines (the wire format).")
    ] = False,
) -> None:
    """Run an app in the terminal: print its events and ask its questions.

    Each question shows its message, payload and expected answer; type the answer as JSON or
    text (y/n for yes/no questions). It is checked against the schema before the run resumes.
    When stdin is not a terminal, each line of stdin answers one question. If input ends
    while the run waits, it stays paused (exit code 2): answer later with `baton resume` or
    in `baton web`.

    Examples:

      baton run examples/expense_approval "120 taxi to the airport"

      printf '{"approved": true}\\n' | baton run examples/expense_approval "80 lunch"

      baton run examples/expense_approval --db postgresql+asyncpg://localhost/baton "9 pens"
    """
    if not (path / "agent.py").is_file():
        _console.print(Text(f"'{path}' has no agent.py; pass an app folder.", style="red"))
        raise typer.Exit(1)
    outcome = _execute(_run(path, message, db, session, user, as_json))
    raise typer.Exit(int(outcome))


async def _run(
    path: Path, message: str | None, db: str | None, session: str | None, user: str, as_json: bool
) -> Outcome:
    async with _catalog(path, db) as catalog:
        runner = catalog.runner(catalog.names[0])
        session_id = await _ensure_session(runner, user, session)
        terminal = Terminal.standard(as_json=as_json)
        terminal.console.print(
            Text(f"{runner.app_name}: session {session_id} (user {user})", style="dim")
        )
        content = Content(role="user", parts=[Part(text=message)]) if message else None
        return await drive(runner, terminal, user_id=user, session_id=session_id, message=content)


async def _ensure_session(runner: Runner, user: str, session: str | None) -> str:
    session_id = session or str(uuid.uuid4())
    key = SessionKey(runner.app_name, user, SessionId(session_id))
    if await runner.store.get_session(key, with_events=False) is None:
        await runner.store.create_session(runner.app_name, user, session_id=key.session_id)
    return session_id


# -- servers --------------------------------------------------------------------------------


@cli.command("api_server")
def api_server(
    agents_dir: Annotated[Path, typer.Argument(help="The folder of app folders to serve.")],
    db: DbOption = None,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    api_key: KeyOption = None,
) -> None:
    """Serve the apps of AGENTS_DIR over HTTP: the reference API plus pending inputs.

    Routes: /list-apps, /apps/{app}/users/{user}/sessions (and /{id}), /run, /run_sse,
    /apps/{app}/users/{user}/pending, .../interrupts/{id}/respond; OpenAPI at /docs.

    Examples:

      baton api_server examples/

      baton api_server examples/ --db postgresql+asyncpg://localhost/baton --port 9000

      BATON_API_KEY=alice:s3cret baton api_server examples/
    """
    _execute(_serve(agents_dir, db, host, port, api_key or [], web=False))


@cli.command()
def web(
    agents_dir: Annotated[Path, typer.Argument(help="The folder of app folders to serve.")],
    db: DbOption = None,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    api_key: KeyOption = None,
) -> None:
    """Serve the apps and the web inbox: answer pending inputs in a browser.

    The page lists every question waiting across sessions, with a form built from its
    response schema, updates live, starts runs, and shows each session's timeline.

    Example:

      baton web examples/        then open the URL it prints
    """
    _execute(_serve(agents_dir, db, host, port, api_key or [], web=True))


async def _serve(
    agents_dir: Path, db: str | None, host: str, port: int, keys: list[str], *, web: bool
) -> None:
    # FastAPI and uvicorn are the `server` extra; `baton run` must work without them.
    import uvicorn

    from baton.server.app import create_app
    from baton.server.security import ApiKeys

    every_key = [*keys, *keys_from_env(os.environ.get("BATON_API_KEY"))]
    async with _catalog(agents_dir, db) as catalog:
        app = create_app(catalog, api_keys=ApiKeys.parse(every_key), web=web)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, ws="none"))
        async with asyncio.TaskGroup() as group:
            serving = group.create_task(server.serve())
            while not server.started and not serving.done():  # noqa: ASYNC110 - uvicorn offers a flag, not an event
                await asyncio.sleep(0.05)
            if server.started:
                bound = server.servers[0].sockets[0].getsockname()
                what = "web inbox" if web else "API"
                apps = ", ".join(catalog.names) or "none"
                _console.print(
                    f"baton {what} at [bold]http://{bound[0]}:{bound[1]}/[/] (apps: {apps}; "
                    f"keys {'required' if every_key else 'off'})",
                    highlight=False,
                    soft_wrap=True,  # one line, so the URL is never broken
                )


# -- sessions -------------------------------------------------------------------------------


@sessions_cli.command("list")
def sessions_list(
    path: PathOption = Path("."),
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="Only this user's sessions.")
    ] = None,
    db: DbOption = None,
) -> None:
    """List sessions with their latest run's status and open questions.

    Example: baton sessions list -p examples/
    """
    _execute(_sessions_list(path, user, db))


async def _sessions_list(path: Path, user: str | None, db: str | None) -> None:
    table = _table("app", "user", "session", "updated", "last run", "open")
    async with _catalog(path, db) as catalog:
        store = catalog.session_service.store
        for name in catalog.names:
            for session in await store.list_sessions(name, user):
                invocations = await store.list_invocations(session.key)
                last = invocations[-1].status.value if invocations else "-"
                rows = await store.list_interrupts(
                    name, session.user_id, session_id=session.key.session_id
                )
                table.add_row(
                    name,
                    session.user_id,
                    session.id,
                    _when(session.last_update_time),
                    last,
                    str(len(rows)),
                )
    _console.print(table)


@sessions_cli.command("show")
def sessions_show(
    session: Annotated[str, typer.Argument(help="The session id.")],
    path: PathOption = Path("."),
    user: UserOption = "user",
    db: DbOption = None,
) -> None:
    """Print a session's state and its events, one line each.

    Example: baton sessions show 4b1c... -p examples/
    """
    _execute(_sessions_show(session, path, user, db))


async def _sessions_show(session_id: str, path: Path, user: str, db: str | None) -> None:
    async with _catalog(path, db) as catalog:
        session = await _find_session(catalog, user, session_id)
    _console.print(Text(f"{session.app_name}/{session.user_id}/{session.id}", style="bold"))
    _console.print_json(data=session.state)
    for event in session.events:
        line = format_event(event)
        if line is not None:
            _console.print(Text(_when(event.timestamp) + "  ", style="dim"), line, sep="")


@sessions_cli.command("delete")
def sessions_delete(
    session: Annotated[str, typer.Argument(help="The session id.")],
    path: PathOption = Path("."),
    user: UserOption = "user",
    db: DbOption = None,
) -> None:
    """Delete a session with its events, runs and questions.

    Example: baton sessions delete 4b1c... -p examples/
    """
    _execute(_sessions_delete(session, path, user, db))


async def _sessions_delete(session_id: str, path: Path, user: str, db: str | None) -> None:
    async with _catalog(path, db) as catalog:
        session = await _find_session(catalog, user, session_id)
        await catalog.session_service.store.delete_session(session.key)
    _console.print(f"deleted session {session_id} of {session.app_name}")


async def _find_session(catalog: AppCatalog, user: str, session_id: str) -> Session:
    store = catalog.session_service.store
    for name in catalog.names:
        found = await store.get_session(SessionKey(name, user, SessionId(session_id)))
        if found is not None:
            return found
    raise SessionNotFoundError(
        f"no session '{session_id}' of user '{user}' in apps {', '.join(catalog.names)}; "
        "list them with `baton sessions list` (and pass --user / --path / --db to match)."
    )


# -- pending, resume, inspect ---------------------------------------------------------------


@cli.command()
def pending(
    path: PathOption = Path("."),
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="Only this user's questions.")
    ] = None,
    db: DbOption = None,
) -> None:
    """List the questions runs are waiting on, oldest first.

    Example: baton pending -p examples/   then   baton resume SESSION -p examples/
    """
    _execute(_pending(path, user, db))


async def _pending(path: Path, user: str | None, db: str | None) -> None:
    table = _table("app", "user", "session", "interrupt", "message", "waiting since")
    async with _catalog(path, db) as catalog:
        for name in catalog.names:
            for row in await catalog.session_service.store.list_interrupts(name, user):
                table.add_row(
                    name,
                    row.user_id,
                    row.session_id,
                    row.interrupt_id,
                    row.message or "",
                    _when(row.created_at),
                )
    _console.print(table)


@cli.command()
def resume(
    session: Annotated[str, typer.Argument(help="The session whose run to resume.")],
    path: PathOption = Path("."),
    invocation: Annotated[
        str | None, typer.Option(help="The run (invocation id); default: the open one.")
    ] = None,
    answer: Annotated[
        str | None,
        typer.Option(help="The answer, as JSON or text; without it you are asked."),
    ] = None,
    interrupt: Annotated[
        str | None, typer.Option(help="Which question --answer answers, when several are open.")
    ] = None,
    user: UserOption = "user",
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")] = False,
) -> None:
    """Answer a paused run's questions, or continue a run that stopped (crash, failure).

    Examples:

      baton resume 4b1c... -p examples/ --answer '{"approved": true}'

      baton resume 4b1c... -p examples/               (asks each open question)

      baton resume 4b1c... -p examples/ --invocation e-93...   (recover after a crash)
    """
    request = _Resume(session, invocation, answer, interrupt, user)
    outcome = _execute(_resume(request, path, db, as_json))
    raise typer.Exit(int(outcome))


@final
@dataclass(frozen=True)
class _Resume:
    session_id: str
    invocation_id: str | None
    answer: str | None
    interrupt_id: str | None
    user: str


async def _resume(request: _Resume, path: Path, db: str | None, as_json: bool) -> Outcome:
    async with _catalog(path, db) as catalog:
        session = await _find_session(catalog, request.user, request.session_id)
        runner = catalog.runner(session.app_name)
        terminal = Terminal.standard(as_json=as_json)
        rows = await runner.store.list_interrupts(
            session.app_name,
            request.user,
            session_id=session.key.session_id,
            invocation_id=InvocationId(request.invocation_id) if request.invocation_id else None,
        )
        if rows:
            message = (
                _given_answer(rows, request)
                if request.answer is not None
                else await ask_answers(terminal, rows)
            )
            if message is None:
                return Outcome.PAUSED
            invocation_id = rows[0].invocation_id
        else:
            invocation_id = await _unfinished(runner, session, request.invocation_id)
            message = None
        return await drive(
            runner,
            terminal,
            user_id=request.user,
            session_id=session.id,
            message=message,
            invocation_id=invocation_id,
        )


def _given_answer(rows: list[Interrupt], request: _Resume) -> Content:
    chosen = [r for r in rows if request.interrupt_id in (None, r.interrupt_id)]
    if len(chosen) != 1:
        listed = ", ".join(r.interrupt_id for r in rows)
        raise InvalidResponseError(
            f"--answer needs one question, and {len(chosen)} match (open: {listed}); "
            "pick one with --interrupt ID."
        )
    row = chosen[0]
    assert request.answer is not None
    value = parse_answer(row, request.answer)
    response = FunctionResponse(
        id=row.interrupt_id, name=row.function_name, response={"result": value}
    )
    return Content(role="user", parts=[Part(function_response=response)])


async def _unfinished(runner: Runner, session: Session, invocation_id: str | None) -> str:
    invocations = await runner.store.list_invocations(session.key)
    candidates = [
        i
        for i in invocations
        if i.status is not InvocationStatus.COMPLETED and invocation_id in (None, i.id)
    ]
    if not candidates:
        raise InvocationFinishedError(
            f"session '{session.id}' has no unfinished run"
            f"{f' with id {invocation_id!r}' if invocation_id else ''}; nothing to resume. "
            f"Start one with `baton run`."
        )
    return candidates[-1].id


@cli.command()
def inspect(
    session: Annotated[str, typer.Argument(help="The session id.")],
    path: PathOption = Path("."),
    user: UserOption = "user",
    db: DbOption = None,
) -> None:
    """Show a session's timeline: runs, node statuses, and every step with who answered.

    Example: baton inspect 4b1c... -p examples/
    """
    _execute(_inspect(session, path, user, db))


async def _inspect(session_id: str, path: Path, user: str, db: str | None) -> None:
    async with _catalog(path, db) as catalog:
        session = await _find_session(catalog, user, session_id)
        store = catalog.session_service.store
        timeline = build_timeline(
            session,
            await store.list_invocations(session.key),
            await store.list_interrupts(
                session.app_name, user, session_id=session.key.session_id, status=None
            ),
        )
    for table in _timeline_tables(timeline):
        _console.print(table)


def _timeline_tables(timeline: Timeline) -> list[Table]:
    runs = _table("run", "status", "started", "updated", "error", title="Runs")
    for inv in timeline.invocations:
        runs.add_row(
            inv.id, inv.status, _when(inv.created_at), _when(inv.updated_at), inv.error or ""
        )
    nodes = _table("node", "status", "output", title="Nodes")
    for node in timeline.nodes:
        nodes.add_row(node.path, node.status, _short(node.output))
    steps = _table("time", "node", "what", "detail", "by", title="Timeline")
    for entry in timeline.entries:
        steps.add_row(
            _when(entry.time), entry.node, entry.kind, _short(entry.detail), entry.by or ""
        )
    return [runs, nodes, steps]


def _table(*names: str, title: str | None = None) -> Table:
    """A table whose cells fold rather than truncate, so ids stay whole and copyable."""
    table = Table(title=title, title_justify="left")
    for name in names:
        table.add_column(name, overflow="fold")
    return table


def _short(value: object, limit: int = 80) -> str:
    text = "" if value is None else json.dumps(value, default=str)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def _when(seconds: float) -> str:
    if seconds <= 0:
        return "-"
    age = time.time() - seconds
    if age < 120:
        return f"{max(int(age), 0)}s ago"
    if age < 7200:
        return f"{int(age // 60)}m ago"
    return f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%d %H:%M}Z"
