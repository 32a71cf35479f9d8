"""validate_answer from several threads at once: each Runner's sync calls have a loop
thread of their own, and they share the process's validators."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from pydantic import JsonValue

from baton.answers import validate_answer
from baton.errors import InvalidResponseError
from baton.sessions.store import Interrupt

THREADS = 8
SCHEMAS = 400
"""Per thread, more than the validators kept, so every thread keeps replacing them."""


def question(field: str) -> Interrupt:
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": {field: {"type": "integer"}},
        "required": [field],
    }
    return Interrupt(
        app_name="app",
        user_id="u",
        session_id="s",
        invocation_id="inv",
        interrupt_id=field,
        node_path="wf@1/ask@1",
        function_name="adk_request_input",
        message="How many?",
        response_schema=schema,
    )


@pytest.fixture
def switching_often() -> Iterator[None]:
    """Threads switch as often as the interpreter allows, so they interleave everywhere."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.mark.usefixtures("switching_often")
def test_answers_checked_in_several_threads_at_once_are_each_checked_against_their_schema() -> None:
    failures: list[str] = []

    def answer_all(thread: int) -> None:
        rows = [question(f"n{thread}_{i}") for i in range(SCHEMAS)]
        try:
            for _ in range(3):
                for i, row in enumerate(rows):
                    assert validate_answer(row, {row.interrupt_id: i}) == {row.interrupt_id: i}
                    with pytest.raises(InvalidResponseError, match=row.interrupt_id):
                        validate_answer(row, {"other": i})
        except Exception as error:  # reported below, with the thread that hit it
            failures.append(f"thread {thread}: {error!r}")

    threads = [threading.Thread(target=answer_all, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def _asking(schema: dict[str, JsonValue]) -> Interrupt:
    return Interrupt(
        app_name="app",
        user_id="u",
        session_id="s",
        invocation_id="inv",
        interrupt_id="ask",
        node_path="wf@1/ask@1",
        function_name="adk_request_input",
        response_schema=schema,
    )


def _outcome(schema: dict[str, JsonValue], value: JsonValue) -> tuple[str, JsonValue | str]:
    try:
        return "accepted", validate_answer(_asking(schema), value)
    except InvalidResponseError as error:
        return "refused", str(error)


_ANSWERS: list[JsonValue] = [
    True, False, 0, 1, -3, 2**70, 1.0, -2.0, 1.5, 1e300, "yes", "", "true", "42", "4.0",
    "1.5", "null", "[1]", '{"a": 1}', "not json", None, [], [1, "a"], {}, {"a": None},
]  # fmt: skip


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "boolean"},
        {"type": "integer"},
        {"type": "number"},
        {"type": "string"},
        {"type": "null"},
        {"type": "array"},
        {"type": "object"},
        {"type": "boolean", "title": "Approved", "description": "Is it approved?"},
    ],
)
def test_a_schema_naming_only_a_type_accepts_and_refuses_as_the_full_validator_does(
    schema: dict[str, JsonValue],
) -> None:
    # "$comment" changes nothing a validator decides, and sends the answer through
    # jsonschema's full validator: the two must agree on every answer, message included.
    full = {**schema, "$comment": "checked by the full validator"}
    outcomes = [_outcome(schema, value) for value in _ANSWERS]
    assert outcomes == [_outcome(full, value) for value in _ANSWERS]
    decisions = {decision for decision, _ in outcomes}
    assert decisions == {"accepted", "refused"}, "the table holds good and bad answers"


def test_answering_a_question_that_only_names_a_type_loads_no_json_schema_validator() -> None:
    script = """
import subprocess
import sys
from baton.answers import validate_answer
from baton.errors import InvalidResponseError
from baton.sessions.store import Interrupt
row = Interrupt(app_name="a", user_id="u", session_id="s", invocation_id="i",
    interrupt_id="ask", node_path="wf@1/ask@1", function_name="adk_request_input",
    response_schema={"type": "boolean"})
assert validate_answer(row, "true") is True
try:
    validate_answer(row, "yes")
except InvalidResponseError as error:
    print(error)
print("jsonschema" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.splitlines() == [
        "answer to interrupt 'ask' does not match its response_schema: the answer: 'yes' is "
        "not of type 'boolean'. Nothing was stored; correct the answer and send it again.",
        "False",
    ]
