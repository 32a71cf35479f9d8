"""The terminal front end's pieces: reading answers, showing schemas and events."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import threading
from pathlib import Path

import pytest
from pydantic import JsonValue
from rich.console import Console

from baton import App, Runner, Workflow
from baton.errors import InvalidResponseError
from baton.events import CONFIRMATION_SCHEMA, Event
from baton.server.catalog import load_app
from baton.server.security import ApiKeys
from baton.server.settings import keys_from_env
from baton.sessions.services import InMemorySessionService
from baton.sessions.store import Interrupt
from baton.terminal import (
    Outcome,
    Terminal,
    describe_schema,
    drive,
    format_event,
    parse_answer,
    prompt_reader,
)
from baton.types import Content, FunctionCall, Part
from tests.cli.test_cli import APP


def question(schema: dict[str, JsonValue] | None) -> Interrupt:
    return Interrupt(
        app_name="a",
        user_id="u",
        session_id="s",
        invocation_id="i",
        interrupt_id="q1",
        node_path="wf@1/ask@1",
        function_name="adk_request_input",
        response_schema=schema,
    )


@pytest.mark.parametrize(
    ("schema", "line", "value"),
    [
        ({"type": "string"}, "123", "123"),
        ({"type": "string"}, "  spaced  ", "  spaced  "),
        ({"type": "integer"}, "42", 42),
        ({"type": "boolean"}, "y", True),
        ({"type": "boolean"}, "No", False),
        ({"type": "boolean"}, "true", True),
        (None, '{"a": 1}', {"a": 1}),
        (None, "plain words", "plain words"),
        ({"enum": ["a", "b"]}, '"b"', "b"),
        (CONFIRMATION_SCHEMA, "y", {"confirmed": True}),
        (CONFIRMATION_SCHEMA, " No ", {"confirmed": False}),
        (
            CONFIRMATION_SCHEMA,
            '{"confirmed": true, "payload": 3}',
            {"confirmed": True, "payload": 3},
        ),
    ],
)
def test_typed_lines_become_answers(
    schema: dict[str, JsonValue] | None, line: str, value: JsonValue
) -> None:
    assert parse_answer(question(schema), line) == value


def test_an_answer_that_fails_its_schema_is_refused_with_the_reason() -> None:
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}},
        "required": ["approved"],
    }
    with pytest.raises(InvalidResponseError, match=r"'q1'.*'approved' is a required property"):
        parse_answer(question(schema), "{}")


def render(renderable: object) -> str:
    console = Console(width=120, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_object_schemas_are_shown_as_a_field_table() -> None:
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": {
            "approved": {"type": "boolean"},
            "kind": {"$ref": "#/$defs/Kind", "default": "a"},
            "amount": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
        },
        "required": ["approved"],
        "$defs": {"Kind": {"enum": ["a", "b"], "type": "string"}},
    }
    rows = [" ".join(line.split()) for line in render(describe_schema(schema)).splitlines()]
    assert rows == [
        "field type required default",
        "approved boolean yes",
        'kind "a" | "b" "a"',
        "amount number | null null",
    ]
    assert "expects: integer" in render(describe_schema({"type": "integer"}))


def test_events_read_as_one_line_each() -> None:
    ask = Event(
        author="review",
        content=Content(
            role="model",
            parts=[
                Part(
                    function_call=FunctionCall(
                        id="r0", name="adk_request_input", args={"message": "OK?"}
                    )
                )
            ],
        ),
        long_running_tool_ids={"r0"},
    )
    assert str(format_event(ask)) == "? review asks [r0]: OK?"
    assert str(format_event(Event(author="pay", output={"x": 1}))) == '✓ pay → {"x":1}'
    failed = Event(author="pay", error_code="ValueError", error_message="no")
    assert str(format_event(failed)) == "✗ pay failed: ValueError: no"
    assert format_event(Event(author="x")) is None


def test_api_keys_from_the_environment() -> None:
    assert keys_from_env(" a , alice:b ,, ") == ["a", "alice:b"]
    assert keys_from_env(None) == []
    keys = ApiKeys.parse(["a", "alice:b"])
    assert keys.users_by_secret == {"a": "*", "b": "alice"}


async def drive_expense(terminal: Terminal) -> tuple[Outcome, str]:
    """Run the expense example for "12 lunch" in a new session, asking at `terminal`."""
    service = InMemorySessionService()
    runner = Runner(app=load_app(Path(APP)), session_service=service)
    session = await service.create_session(app_name=runner.app_name, user_id="u")
    message = Content(role="user", parts=[Part(text="12 lunch")])
    outcome = await drive(runner, terminal, user_id="u", session_id=session.id, message=message)
    return outcome, session.id


async def test_a_person_at_a_terminal_can_retry_and_fill_fields_one_by_one() -> None:
    typed = iter(['{"approved": "nah"}', "", "y", "looks fine", "travel", "", ""])
    asked: list[str] = []

    def read_line(prompt: str) -> str | None:
        asked.append(prompt)
        return next(typed, None)

    console = Console(width=120, record=True, color_system=None)
    terminal = Terminal(console, read_line, interactive=True)
    outcome, _ = await drive_expense(terminal)
    assert outcome is Outcome.COMPLETED
    assert asked[:3] == ["review_0>", "review_0>", "  approved (boolean; required)>"]
    assert asked[4] == '  category ("travel" | "meals" | "equipment" | "other"; Enter: "other")>'
    text = console.export_text()
    assert "'nah' is not of type 'boolean'" in text
    assert "paid 12.00 for 'lunch' via payroll (travel)" in text
    # One instruction, then one more way: no second "type it as JSON" beside "y or n".
    assert "Answer y or n (or the whole answer as JSON)." in text
    assert "Or press Enter to fill it in field by field." in text
    assert "Type the answer as JSON" not in text


async def test_a_terminal_shows_progress_while_nodes_run() -> None:
    written = io.StringIO()
    console = Console(file=written, force_terminal=True, width=100, color_system=None)

    async def shown(line: str) -> None:
        """Wait until the spinner has drawn `line` (its thread redraws ~12 times a second)."""
        async with asyncio.timeout(10):
            while line not in written.getvalue():  # noqa: ASYNC110 - rich's thread draws it
                await asyncio.sleep(0.01)

    async def wait_then_a(node_input: object) -> str:
        await shown("running slow…")
        return "a"

    async def wait_then_b(node_input: object) -> str:
        await shown("running slow: after wait_then_a…")
        return "b"

    terminal = Terminal(console, lambda _: None, interactive=False)
    service = InMemorySessionService()
    workflow = Workflow(name="wf", edges=[("START", wait_then_a, wait_then_b)])
    runner = Runner(app=App(name="slow", root_agent=workflow), session_service=service)
    session = await service.create_session(app_name="slow", user_id="u")
    outcome = await drive(runner, terminal, user_id="u", session_id=session.id)
    assert outcome is Outcome.COMPLETED
    text = written.getvalue()
    # The spinner names the app, then the last node that finished, while the next one works.
    assert "running slow…" in text
    assert "running slow: after wait_then_a…" in text
    assert text.index("running slow: after wait_then_a…") < text.index('wait_then_b → "b"')
    # It is transient: the last line left on the screen is the run's outcome.
    assert text.rstrip().endswith("completed.")


async def test_fields_are_checked_as_they_are_typed_and_ctrl_c_leaves_the_run_paused() -> None:
    # adjusted_amount must be >= 0: the field is asked again at once, not after the last one.
    typed = iter(["", "y", "", "", "-5", "7", "", ""])
    asked: list[str] = []

    def read_line(prompt: str) -> str | None:
        asked.append(prompt)
        return next(typed, None)

    console = Console(width=160, record=True, color_system=None)
    terminal = Terminal(console, read_line, interactive=True, resume_flags=" -p examples/")
    outcome, _ = await drive_expense(terminal)
    assert outcome is Outcome.COMPLETED
    amount = [i for i, p in enumerate(asked) if p.startswith("  adjusted_amount")]
    assert len(amount) == 2  # asked again right after the bad value
    assert amount[1] == amount[0] + 1
    text = console.export_text()
    assert "adjusted_amount: -5 is less than the minimum of 0; type it again." in text
    assert "paid 7.00 for 'lunch'" in text

    # Input ends (Ctrl-C or Ctrl-D at the prompt): the run stays paused, and the message
    # says how to resume it, with the options that find it again.
    console = Console(width=200, record=True, color_system=None)
    quits = Terminal(console, lambda _: None, interactive=True, resume_flags=" -p examples/")
    outcome, session_id = await drive_expense(quits)
    assert outcome is Outcome.PAUSED
    assert f"`baton resume {session_id} -p examples/`" in console.export_text()


def test_a_prompt_reads_typed_lines_and_ctrl_c_ends_input_even_in_another_thread() -> None:
    """A line typed is the answer; Ctrl-C ends input (None) at once, also when the SIGINT
    lands in another thread, which interrupts no read of this one (input() waited on)."""
    shown = threading.Event()

    class Screen(io.StringIO):
        def write(self, text: str) -> int:
            shown.set()
            return super().write(text)

    read_end, write_end = os.pipe()
    with open(read_end, encoding="utf-8") as stdin, open(write_end, "wb", 0) as keys:
        read = prompt_reader(Console(file=Screen(), color_system=None), stdin)
        keys.write(b"yes\n")
        assert read("review_0>") == "yes"
        shown.clear()
        ctrl_c = threading.Thread(
            target=lambda: shown.wait()
            and signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        )
        ctrl_c.start()
        assert read("review_0>") is None
        ctrl_c.join()


def test_field_descriptions_are_shown_with_the_schema() -> None:
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": {"approved": {"type": "boolean", "description": "Refund the customer?"}},
        "required": ["approved"],
    }
    console = Console(width=120, record=True, color_system=None)
    console.print(describe_schema(schema))
    assert "Refund the customer?" in console.export_text()
