"""`baton run` and `baton resume`: runs in the terminal."""

from __future__ import annotations

import shlex
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, final

import typer
from rich.text import Text

from baton.cli.base import (
    DbOption,
    OwnerOption,
    PathOption,
    UserOption,
    cli,
    console,
    execute,
    find_session,
    open_catalog,
)
from baton.errors import UnknownInterruptError
from baton.runner import Runner
from baton.sessions.services import GetSessionConfig
from baton.terminal import (
    Outcome,
    Terminal,
    answerable,
    ask_answers,
    drive,
    print_waiting_on,
    typed_answer,
    unfinished_invocation,
)
from baton.types import Content, Part

__all__ = ["resume", "run"]


@cli.command()
def run(
    path: Annotated[
        Path, typer.Argument(help="The app folder (it holds agent.py).", metavar="PATH")
    ],
    message: Annotated[
        str | None,
        typer.Argument(
            help="The message that starts the run.", show_default=False, metavar="MESSAGE"
        ),
    ] = None,
    db: DbOption = None,
    session: Annotated[
        str | None,
        typer.Option(
            help="Run in this session (created if missing); default: a new one.", metavar="ID"
        ),
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

    \b
      baton run examples/expense_approval "120 taxi to the airport"
      printf '{"approved": true}\\n' | baton run examples/expense_approval "80 lunch"
      baton run examples/expense_approval --db postgresql+asyncpg://localhost/baton "9 pens"
    """
    if not (path / "agent.py").is_file():
        console.print(Text(f"'{path}' has no agent.py; pass an app folder.", style="red"))
        raise typer.Exit(1)
    outcome = execute(_run(path, message, db, session, user, as_json))
    raise typer.Exit(int(outcome))


async def _run(
    path: Path, message: str | None, db: str | None, session: str | None, user: str, as_json: bool
) -> Outcome:
    async with open_catalog(path, db) as catalog:
        runner = catalog.runner(catalog.names[0])
        session_id = await _ensure_session(runner, user, session)
        terminal = Terminal.standard(as_json=as_json)
        terminal.resume_flags = resume_flags(path, db)
        terminal.console.print(
            Text(f"{runner.app_name}: session {session_id} (user {user})", style="dim")
        )
        content = Content(role="user", parts=[Part(text=message)]) if message else None
        return await drive(runner, terminal, user_id=user, session_id=session_id, message=content)


async def _ensure_session(runner: Runner, user: str, session: str | None) -> str:
    session_id = session or str(uuid.uuid4())
    service = runner.session_service
    found = await service.get_session(
        app_name=runner.app_name,
        user_id=user,
        session_id=session_id,
        config=GetSessionConfig(num_recent_events=0),  # only whether it exists
    )
    if found is None:
        await service.create_session(app_name=runner.app_name, user_id=user, session_id=session_id)
    return session_id


def resume_flags(path: Path, db: str | None) -> str:
    """The options `baton resume` needs to open the same apps and database."""
    return f" -p {shlex.quote(str(path))}" + (f" --db {shlex.quote(db)}" if db else "")


@cli.command()
def resume(
    session: Annotated[
        str, typer.Argument(help="The session whose run to resume.", metavar="SESSION")
    ],
    path: PathOption = Path("."),
    invocation: Annotated[
        str | None,
        typer.Option(help="The run (invocation id); default: the open one.", metavar="ID"),
    ] = None,
    answer: Annotated[
        str | None,
        typer.Option(help="The answer, as JSON or text; without it you are asked.", metavar="JSON"),
    ] = None,
    interrupt: Annotated[
        str | None,
        typer.Option(help="Which question --answer answers, when several are open.", metavar="ID"),
    ] = None,
    user: OwnerOption = None,
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")] = False,
    answered_by: Annotated[
        str | None,
        typer.Option(
            "--as",
            help="Answer as this person (a question assigned to someone only takes "
            "their answer); default: the session's user.",
            metavar="NAME",
        ),
    ] = None,
) -> None:
    """Answer a paused run's questions, or continue a run that stopped (crash, failure).

    Examples:

    \b
      baton resume 4b1c... -p examples/ --answer '{"approved": true}'
      baton resume 4b1c... -p examples/                        (asks each open question)
      baton resume 4b1c... -p examples/ --invocation e-93...   (recover after a crash)
      baton resume 4b1c... -p examples/ --as bob               (bob answers his question)
    """
    request = _Resume(session, invocation, answer, interrupt, user, answered_by)
    outcome = execute(_resume(request, path, db, as_json))
    raise typer.Exit(int(outcome))


@final
@dataclass(frozen=True)
class _Resume:
    session_id: str
    invocation_id: str | None
    answer: str | None
    interrupt_id: str | None
    user: str | None
    answered_by: str | None


async def _resume(request: _Resume, path: Path, db: str | None, as_json: bool) -> Outcome:
    async with open_catalog(path, db) as catalog:
        session = await find_session(catalog, request.user, request.session_id)
        runner = catalog.runner(session.app_name)
        terminal = Terminal.standard(as_json=as_json)
        terminal.resume_flags = resume_flags(path, db)
        terminal.answered_by = request.answered_by
        asked = await runner.pending(
            user_id=session.user_id, session_id=session.id, invocation_id=request.invocation_id
        )
        # Typed --answer goes to the Runner, which refuses it unless it is the assignee's;
        # asked at the prompt are only the questions this person may answer.
        rows = asked if request.answer is not None else answerable(terminal, session.key, asked)
        if asked and not rows:
            print_waiting_on(terminal, session.id, asked)
            return Outcome.PAUSED
        if rows:
            answers = (
                typed_answer(rows, request.answer, interrupt_id=request.interrupt_id)
                if request.answer is not None
                else await ask_answers(terminal, rows)
            )
            if answers is None:
                return Outcome.PAUSED
            invocation_id = rows[0].invocation_id
        else:
            invocation_id = await unfinished_invocation(runner, session.key, request.invocation_id)
            if request.answer is not None:
                raise UnknownInterruptError(
                    f"run '{invocation_id}' of session '{session.id}' asks no open question, "
                    "so --answer has nothing to answer; drop --answer to continue the run."
                )
            answers = None
        return await drive(
            runner,
            terminal,
            user_id=session.user_id,
            session_id=session.id,
            answers=answers,
            invocation_id=invocation_id,
        )
