"""The terminal front end: run an app, print its events, ask its questions, resume.

`drive` loops until the run completes: run, print what happened, look up the open
interrupts of the invocation in the store, ask each one (a terminal prompt, or a
line of stdin when it is not a terminal), check the answer against its schema here
— so a typo costs a retry, not a round trip — and resume with the answers.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import signal
import sys
import termios
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass
from typing import Final, TextIO, final

from pydantic import JsonValue
from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from baton.answers import schema_problem, validate_answer
from baton.auth.credential_asking import CredentialAsk, credential_ask
from baton.errors import (
    BatonError,
    InvalidResponseError,
    InvocationFinishedError,
    InvocationNotFoundError,
)
from baton.events import REQUEST_CREDENTIAL_FUNCTION, REQUEST_INPUT_FUNCTION, Event
from baton.history import EntryKind, TimelineEntry, acting_node, describe_event
from baton.keyboard import read_typed_line
from baton.runner import Runner
from baton.sessions.store import Interrupt, InvocationStatus, SessionKey
from baton.types import Content, SessionId

__all__ = [
    "Answers",
    "Outcome",
    "Terminal",
    "answerable",
    "ask_answers",
    "describe_schema",
    "drive",
    "format_entry",
    "format_event",
    "parse_answer",
    "print_waiting_on",
    "prompt_reader",
    "typed_answer",
    "unfinished_invocation",
]

Answers = dict[str, JsonValue]
"""Answers by interrupt id, as `Runner.answer` takes them."""

ReadLine = Callable[[str], str | None]
"""Shows a prompt and returns the line typed, or None at end of input."""


class Outcome(enum.IntEnum):
    """How `drive` ended; the value is the process exit code."""

    COMPLETED = 0
    FAILED = 1
    PAUSED = 2


@final
@dataclass
class Terminal:
    """Where events are printed and answers read."""

    console: Console
    read_line: ReadLine
    interactive: bool
    as_json: bool = False
    resume_flags: str = ""
    """What `baton resume SESSION` needs to find the session again (e.g. `-p examples/`)."""
    answered_by: str | None = None
    """Who answers at this terminal (`--as`); None: the session's user."""
    read_secret: ReadLine | None = None
    """Reads a secret (a credential request's key or token) without showing it; None:
    `read_line`."""

    @classmethod
    def standard(cls, *, as_json: bool = False) -> Terminal:
        """stdout for events; stdin for answers (prompting only when it is a terminal)."""
        interactive = sys.stdin.isatty()
        console = Console(stderr=as_json)
        if not interactive:
            return cls(console, _stdin_reader, interactive, as_json)
        secret = prompt_reader(console, secret=True)
        return cls(console, prompt_reader(console), interactive, as_json, read_secret=secret)


def _stdin_reader(_: str) -> str | None:
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else None


def prompt_reader(
    console: Console, stdin: TextIO | None = None, *, secret: bool = False
) -> ReadLine:
    """Reads answers at a terminal prompt (`stdin`, default sys.stdin); Ctrl-C or Ctrl-D
    ends input (None), at once. A `secret` reader turns the terminal's echo off while
    the line is typed, as `getpass` does, so the key or token is never on the screen."""

    def read(prompt: str) -> str | None:
        # The command's asyncio.Runner takes SIGINT to cancel its task, which can only
        # happen once this blocking read returns (after Enter): while reading, Ctrl-C
        # raises KeyboardInterrupt here instead, wherever it lands (see baton.keyboard).
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        stream = stdin or sys.stdin
        try:
            console.print(f"[bold cyan]{prompt}[/] ", end="")
            with unechoed(stream) if secret else contextlib.nullcontext():
                line = read_typed_line(stream)
        except KeyboardInterrupt:
            line = None
        finally:
            signal.signal(signal.SIGINT, previous)
        if line is None or secret:  # Ctrl-C or Ctrl-D: stop asking, stay paused
            console.print()  # (a secret's Enter was not echoed either)
        return line

    return read


@contextlib.contextmanager
def unechoed(stream: TextIO) -> Iterator[None]:
    """The terminal `stream` does not echo what is typed meanwhile (and is restored after,
    whatever happens); a stream that is no terminal is left as it is."""
    fd = stream.fileno()
    if not os.isatty(fd):
        yield
        return
    before = termios.tcgetattr(fd)
    quiet = termios.tcgetattr(fd)
    quiet[3] &= ~termios.ECHO  # lflag
    termios.tcsetattr(fd, termios.TCSAFLUSH, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSAFLUSH, before)


_STYLES: Final = {
    EntryKind.ERROR: ("✗ ", "red"),
    EntryKind.ASKED: ("? ", "yellow"),
    EntryKind.CALLED: ("→ ", ""),
    EntryKind.RESULT: ("← ", ""),
    EntryKind.ANSWERED: ("← ", "cyan"),
    EntryKind.OUTPUT: ("✓ ", "green"),
    EntryKind.STATE: ("· ", "dim"),
    EntryKind.WIDGET: ("▣ ", ""),
    EntryKind.MESSAGE: ("", ""),
}


def format_entry(entry: TimelineEntry) -> Text:
    """One line for a history entry: its mark, who, and the summary `baton.history` wrote."""
    mark, style = _STYLES[entry.kind]
    who = Text(entry.node or "?", style="bold")
    by = f" (by {entry.by})" if entry.by else ""
    joiner = ": " if entry.kind is EntryKind.MESSAGE else " "
    return Text.assemble(mark, who, joiner, entry.summary, by, style=style)


def format_event(event: Event) -> Text | None:
    """The lines of an event's history entries (None for events that carry nothing to show)."""
    lines = [format_entry(entry) for entry in describe_event(event)]
    return Text("\n").join(lines) if lines else None


def describe_schema(schema: dict[str, JsonValue] | None) -> Table | Text:
    """A response schema for people: a table of an object's fields, or the type in a line."""
    if schema is None:
        return Text("any answer (JSON or text)", style="dim")
    props = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(props, dict):
        return Text(f"expects: {_type_of(schema, schema)}")
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set[JsonValue]()
    specs = {n: p if isinstance(p, dict) else {} for n, p in props.items()}
    described = any(isinstance(spec.get("description"), str) for spec in specs.values())
    columns = ["field", "type", "required", "default"] + (["description"] if described else [])
    table = Table(*columns, box=None, pad_edge=False)
    for name, spec in specs.items():
        default = json.dumps(spec["default"]) if "default" in spec else ""
        about = spec.get("description")
        cells = [name, _type_of(spec, schema), "yes" if name in needed else "", default]
        table.add_row(
            *cells, *([Text(about if isinstance(about, str) else "")] if described else [])
        )
    return table


def _type_of(spec: dict[str, JsonValue], root: dict[str, JsonValue]) -> str:
    ref = spec.get("$ref")
    if isinstance(ref, str):
        defs = root.get("$defs")
        target = defs.get(ref.rsplit("/", 1)[-1]) if isinstance(defs, dict) else None
        return _type_of(target, root) if isinstance(target, dict) else ref
    choices = spec.get("enum")
    if isinstance(choices, list):
        return " | ".join(json.dumps(v) for v in choices)
    options = spec.get("anyOf")
    if isinstance(options, list):
        return " | ".join(_type_of(o, root) for o in options if isinstance(o, dict))
    kind = spec.get("type")
    return str(kind) if kind is not None else "any"


def parse_answer(row: Interrupt, line: str) -> JsonValue:
    """A typed line as the answer to `row`, checked against its schema.

    Text for a string schema; y/yes/n/no for a boolean, or for an object whose one
    required field is a boolean (an approval: "y" is `{"approved": true}`); JSON (else
    the text itself) otherwise.

    Raises:
        InvalidResponseError: the answer does not match the schema.
    """
    schema = row.response_schema
    kind = schema.get("type") if schema else None
    value: JsonValue = line
    said = line.strip().lower()
    decision = _yes_no_field(schema)
    if kind == "boolean" and said in _YES_NO:
        value = _YES_NO[said]
    elif decision is not None and said in _YES_NO:
        value = {decision: _YES_NO[said]}  # y/n decides an approval's one required yes/no
    elif kind != "string":
        with contextlib.suppress(ValueError):
            value = json.loads(line)
    return validate_answer(row, value)


_YES_NO: dict[str, JsonValue] = {"y": True, "yes": True, "n": False, "no": False}


def _yes_no_field(schema: dict[str, JsonValue] | None) -> str | None:
    """The field of an object schema whose only required field is a boolean, else None;
    of `anyOf` alternatives, the first one's that has such a field (a tool's confirmation:
    "y" is `{"confirmed": true}`)."""
    alternatives = schema.get("anyOf") if schema else None
    if isinstance(alternatives, list):
        found = (_yes_no_field(a) for a in alternatives if isinstance(a, dict))
        return next((name for name in found if name is not None), None)
    fields = _object_fields(schema)
    required = [f for f in fields or [] if f.required]
    if len(required) == 1 and required[0].kind == "boolean":
        return required[0].name
    return None


async def drive(
    runner: Runner,
    terminal: Terminal,
    *,
    user_id: str,
    session_id: str,
    message: Content | None = None,
    answers: Answers | None = None,
    invocation_id: str | None = None,
) -> Outcome:
    """Run (or continue) until the run completes, asking every question it pauses on.

    `message` starts a run; `answers` (interrupt id -> value) answer a paused one
    through `Runner.answer`; neither continues `invocation_id`.
    """
    key = SessionKey(runner.app_name, user_id, SessionId(session_id))
    while True:
        try:
            started = await _run_once(runner, terminal, key, (message, answers), invocation_id)
        except BatonError:
            raise  # refused before anything changed; the caller reports it
        except Exception as error:  # a node raised; its error event is stored
            _print_failed(terminal, session_id, f"{type(error).__name__}: {error}")
            return Outcome.FAILED
        invocation_id = invocation_id or started
        if invocation_id is None:
            return Outcome.COMPLETED
        status = await _status(runner, key, invocation_id)
        if status is InvocationStatus.FAILED:
            _print_failed(terminal, session_id, "a node failed")
            return Outcome.FAILED
        rows = await runner.pending(
            user_id=key.user_id, session_id=key.session_id, invocation_id=invocation_id
        )
        if not rows:
            terminal.console.print(Text(f"run {invocation_id} {status.value}.", style="bold"))
            return Outcome.COMPLETED
        mine = answerable(terminal, key, rows)
        if not mine:
            print_waiting_on(terminal, session_id, rows)
            return Outcome.PAUSED
        message, answers = None, await ask_answers(terminal, mine)
        if answers is None:
            _print_paused(terminal, runner.app_name, session_id)
            return Outcome.PAUSED


async def _run_once(
    runner: Runner,
    terminal: Terminal,
    key: SessionKey,
    sent: tuple[Content | None, Answers | None],
    invocation_id: str | None,
) -> str | None:
    status = (
        terminal.console.status(f"running {runner.app_name}…")
        if terminal.console.is_terminal
        else contextlib.nullcontext()
    )
    first: str | None = None
    with status as spinner:
        async for event in _events(runner, key, sent, invocation_id, terminal.answered_by):
            first = first or event.invocation_id
            _show(terminal, event)
            if spinner is not None:
                spinner.update(f"running {runner.app_name}: after {acting_node(event)}…")
    return first


def _show(terminal: Terminal, event: Event) -> None:
    if terminal.as_json:
        print(event.to_json(), flush=True)
        return
    line = format_event(event)
    if line is not None:
        terminal.console.print(line)


def _events(
    runner: Runner,
    key: SessionKey,
    sent: tuple[Content | None, Answers | None],
    invocation_id: str | None,
    answered_by: str | None,
) -> AsyncGenerator[Event, None]:
    """Answers go through `Runner.answer`, the one door; anything else is a run call."""
    message, answers = sent
    if answers:
        return runner.answer(
            user_id=key.user_id,
            session_id=key.session_id,
            answers=answers,
            invocation_id=invocation_id,
            answered_by=answered_by,
        )
    return runner.run_async(
        user_id=key.user_id,
        session_id=key.session_id,
        new_message=message,
        invocation_id=invocation_id,
    )


async def _status(runner: Runner, key: SessionKey, invocation_id: str) -> InvocationStatus:
    runs = await runner.invocations(user_id=key.user_id, session_id=key.session_id)
    found = [run.status for run in runs if run.id == invocation_id]
    return found[0] if found else InvocationStatus.COMPLETED


async def ask_answers(terminal: Terminal, rows: list[Interrupt]) -> Answers | None:
    """Ask each question; the checked answers by interrupt id, or None when input ended."""
    answers: Answers = {}
    for row in rows:
        answer = await _ask(terminal, row)
        if answer is None:
            return None
        answers[row.interrupt_id] = answer[0]
    return answers


async def _ask(terminal: Terminal, row: Interrupt) -> tuple[JsonValue] | None:
    """The checked answer (in a 1-tuple, as it may be null), or None at end of input."""
    if row.function_name == REQUEST_CREDENTIAL_FUNCTION:
        return _ask_credential(terminal, row)
    terminal.console.print(_question_panel(row))
    fields = _object_fields(row.response_schema) if terminal.interactive else None
    if fields:
        # After the panel's "Answer y or n (or the whole answer as JSON)", one more way.
        said = (
            "Or press Enter to fill it in field by field."
            if _yes_no_field(row.response_schema) is not None
            else "Type the answer as JSON, or press Enter to fill it in field by field."
        )
        terminal.console.print(Text(said, "dim"))
    while True:
        line = _read(terminal, f"{row.interrupt_id}>")
        if line is None:
            return None
        try:
            if line == "" and fields:
                filled = await _fill_fields(terminal, fields)
                return None if filled is None else (validate_answer(row, filled),)
            return (parse_answer(row, line),)
        except InvalidResponseError as error:
            if not terminal.interactive:
                raise  # piped input cannot be retyped: refuse, the run stays paused
            terminal.console.print(Text(str(error), style="red"))


def _ask_credential(terminal: Terminal, row: Interrupt) -> tuple[JsonValue] | None:
    """A credential request asked in a person's words (see `baton.auth.credential_asking`):
    the key or token read without echo, or the sign-in link and the address it sent the
    person to; the checked answer, or None at end of input. Piped input may also give the
    whole answer as JSON."""
    ask = credential_ask(row.payload)
    terminal.console.print(_credential_panel(row, ask))
    read = (terminal.read_secret or terminal.read_line) if ask.is_secret else terminal.read_line
    prompt = f"{ask.typed[0].upper()}{ask.typed[1:]} (not shown)>" if ask.is_secret else "Address>"
    while True:
        line = read(prompt)
        if line is None:
            return None
        try:
            if not terminal.interactive and line.lstrip().startswith("{"):
                return (parse_answer(row, line),)
            if not line.strip():
                raise InvalidResponseError(f"type the {ask.typed} first; nothing was sent.")
            return (validate_answer(row, ask.answer(line)),)
        except InvalidResponseError as error:
            if not terminal.interactive:
                raise  # piped input cannot be retyped: refuse, the run stays paused
            terminal.console.print(Text(str(error), style="red"))


def _credential_panel(row: Interrupt, ask: CredentialAsk) -> Panel:
    parts = [Text(f"Asks for: {ask.what}", style="bold")]
    if row.message and not (ask.link and ask.link in row.message):
        parts.append(Text(row.message))
    if ask.link:
        parts.append(Text(f"Sign in at {ask.provider}: ", style="bold").append(ask.link, "link"))
        parts.append(Text("Then paste the address the sign-in sent you to.", style="dim"))
    else:
        parts.append(Text(f"Type the {ask.typed}; it is not shown as you type.", style="dim"))
    asker = row.node_path.rsplit("/", 1)[-1]
    title = Text(f"{asker} asks [{row.interrupt_id}]")
    return Panel(Group(*parts), title=title, title_align="left", border_style="yellow")


@dataclass(frozen=True)
class _Field:
    name: str
    schema: dict[str, JsonValue]
    kind: str
    required: bool
    root: dict[str, JsonValue]


def _object_fields(schema: dict[str, JsonValue] | None) -> list[_Field] | None:
    """An object schema's fields, for asking one by one (None for any other schema)."""
    props = schema.get("properties") if schema else None
    if schema is None or schema.get("type") != "object" or not isinstance(props, dict):
        return None
    required = schema.get("required")
    needed = required if isinstance(required, list) else []
    return [
        _Field(name, spec, _type_of(spec, schema), name in needed, schema)
        for name, spec in props.items()
        if isinstance(spec, dict)
    ]


async def _fill_fields(terminal: Terminal, fields: list[_Field]) -> JsonValue | None:
    """Ask each field, checking it against its own schema as soon as it is typed."""
    answer: dict[str, JsonValue] = {}
    for field in fields:
        default = field.schema.get("default", "")
        hint = "required" if field.required else f"Enter: {json.dumps(default)}"
        prompt = f"  {field.name} ({field.kind}; {hint})>"
        while True:
            line = _read(terminal, prompt)
            if line is None:
                return None
            if line == "":
                break
            value = _field_value(field, line)
            problem = _field_problem(field, value)
            if problem is None:
                answer[field.name] = value
                break
            terminal.console.print(Text(f"  {field.name}: {problem}; type it again.", "red"))
    return answer


def _field_problem(field: _Field, value: JsonValue) -> str | None:
    """Why `value` does not fit the field's schema, or None."""
    schema: dict[str, JsonValue] = {**field.schema, "$defs": field.root.get("$defs", {})}
    return schema_problem(schema, value)


def _read(terminal: Terminal, prompt: str) -> str | None:
    """A line typed at `prompt`, read in this thread so Ctrl-C interrupts it at once."""
    return terminal.read_line(prompt)


def _field_value(field: _Field, line: str) -> JsonValue:
    if field.kind == "boolean" and line.strip().lower() in _YES_NO:
        return _YES_NO[line.strip().lower()]
    if field.kind == "string" or f'"{line}"' in field.kind.split(" | "):
        return line
    try:
        value: JsonValue = json.loads(line)
    except ValueError:
        return line
    return value


def _question_title(row: Interrupt) -> str:
    """The question's heading, in the web inbox's words (its `title`)."""
    if row.message:
        return row.message
    if row.function_name != REQUEST_INPUT_FUNCTION:  # an agent's tool call, by its tool
        return f"{row.function_name} is waiting for your answer"
    return "Input requested"


def _question_panel(row: Interrupt) -> Panel:
    parts: list[Text | Table | Syntax] = [Text(_question_title(row), style="bold")]
    if row.payload is not None:
        parts.append(Syntax(json.dumps(row.payload, indent=2), "json", background_color="default"))
    parts.append(describe_schema(row.response_schema))
    if _yes_no_field(row.response_schema) is not None:
        parts.append(Text("Answer y or n (or the whole answer as JSON).", style="dim"))
    asker = row.node_path.rsplit("/", 1)[-1]
    title = Text(f"{asker} asks [{row.interrupt_id}]")
    if row.assignee is not None:
        title.append(f" for {row.assignee}")
    return Panel(Group(*parts), title=title, title_align="left", border_style="yellow")


def _print_failed(terminal: Terminal, session_id: str, what: str) -> None:
    terminal.console.print(
        Text(
            f"failed: {what}. Finished steps are kept; fix the cause, then continue with "
            f"`baton resume {session_id}{terminal.resume_flags}`.",
            style="red",
        )
    )


def answerable(terminal: Terminal, key: SessionKey, rows: list[Interrupt]) -> list[Interrupt]:
    """The questions the person at this terminal may answer: those assigned to nobody
    or to them (`--as`, else the session's user)."""
    here = terminal.answered_by or key.user_id
    return [row for row in rows if row.assignee is None or row.assignee == here]


def print_waiting_on(terminal: Terminal, session_id: str, rows: list[Interrupt]) -> None:
    people = sorted({row.assignee for row in rows if row.assignee is not None})
    first = people[0] if people else ""
    terminal.console.print(
        Text(
            f"paused: session {session_id} waits on {', '.join(people)}, who must answer "
            f"(`baton resume {session_id}{terminal.resume_flags} --as {first}`, or their "
            "inbox with their API key).",
            style="yellow",
        )
    )


def _print_paused(terminal: Terminal, app_name: str, session_id: str) -> None:
    terminal.console.print(
        Text(
            f"paused: session {session_id} of {app_name} waits for input. Answer it later with "
            f"`baton resume {session_id}{terminal.resume_flags}`, or in the web inbox "
            "(`baton web`).",
            style="yellow",
        )
    )


def typed_answer(rows: list[Interrupt], answer: str, *, interrupt_id: str | None = None) -> Answers:
    """`answer` (JSON or text) to the one open question, or to `interrupt_id`, checked.

    Raises:
        InvalidResponseError: not exactly one question matches, or the answer fails its schema.
    """
    chosen = [r for r in rows if interrupt_id in (None, r.interrupt_id)]
    if len(chosen) != 1:
        listed = ", ".join(r.interrupt_id for r in rows)
        raise InvalidResponseError(
            f"an answer needs one question, and {len(chosen)} match (open: {listed}); "
            "pick one with --interrupt ID."
        )
    row = chosen[0]
    return {row.interrupt_id: parse_answer(row, answer)}


async def unfinished_invocation(
    runner: Runner, key: SessionKey, invocation_id: str | None = None
) -> str:
    """The newest run of the session that did not complete (or `invocation_id`, if unfinished).

    Raises:
        InvocationNotFoundError: the session has no run `invocation_id`.
        InvocationFinishedError: there is none unfinished; nothing to resume.
    """
    invocations = await runner.invocations(user_id=key.user_id, session_id=key.session_id)
    if invocation_id is not None and all(i.id != invocation_id for i in invocations):
        runs = ", ".join(i.id for i in invocations[-5:]) or "none"
        raise InvocationNotFoundError(
            f"session '{key.session_id}' has no run '{invocation_id}' (its latest runs: {runs}); "
            "check the id with `baton inspect`."
        )
    over = (InvocationStatus.COMPLETED, InvocationStatus.REWOUND)  # ended, or rewound
    candidates = [i for i in invocations if i.status not in over and invocation_id in (None, i.id)]
    if not candidates:
        which = f" with id {invocation_id!r}" if invocation_id else ""
        raise InvocationFinishedError(
            f"session '{key.session_id}' has no unfinished run{which}; nothing to resume. "
            "Start one with `baton run`."
        )
    return candidates[-1].id
