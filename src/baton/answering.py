"""Answers by interrupt id, turned into the message `Runner.run_async` takes.

`Runner.answer` is the one door answers come through (the server, the inbox, the CLI,
users' code): each answer is wrapped in a FunctionResponse with the question's id; the
Runner's checks name it after the question's function (`adk_request_input`, or the
agent's tool) as they find the question in the interrupt index.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from pydantic import JsonValue

from baton.errors import InvalidMessageError
from baton.types import Content, FunctionResponse, Part

__all__ = ["answers_message"]


def answers_message(answers: Mapping[str, JsonValue], *, progress: Collection[str] = ()) -> Content:
    """The user message carrying `answers` (interrupt id -> the value a node receives).
    The answers to the ids in `progress` are progress updates (`will_continue`).

    Raises:
        InvalidMessageError: `answers` is empty.
    """
    if not answers:
        raise InvalidMessageError(
            "an answer needs at least one question: pass answers={interrupt_id: value}."
        )
    parts: list[Part] = []
    for interrupt_id, value in answers.items():
        # Always wrapped, so an object answer with a lone "result" key is not unwrapped.
        response = FunctionResponse(
            id=interrupt_id,
            response={"result": value},
            will_continue=True if interrupt_id in progress else None,
        )
        parts.append(Part(function_response=response))
    return Content(role="user", parts=parts)
