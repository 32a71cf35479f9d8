"""validate_answer from several threads at once: each Runner's sync calls have a loop
thread of their own, and they share the process's validators."""

from __future__ import annotations

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
