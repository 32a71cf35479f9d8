"""Answers by interrupt id, turned into the message `Runner.run_async` takes.

`Runner.answer` is the one door answers come through (the server, the inbox, the CLI,
users' code): each answer is wrapped in a FunctionResponse named after the question's
function — `adk_request_input`, or the agent's tool — found through the interrupt index.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from pydantic import JsonValue

from baton.errors import InvalidMessageError
from baton.events import REQUEST_INPUT_FUNCTION
from baton.sessions.store import SessionKey, Store
from baton.types import Content, FunctionResponse, InterruptId, Part

__all__ = ["answers_message"]


async def answers_message(
    store: Store,
    key: SessionKey,
    answers: Mapping[str, JsonValue],
    *,
    progress: Collection[str] = (),
) -> Content:
    """The user message carrying `answers` (interrupt id -> the value a node receives).

    An id the index does not know still gets a message (named `adk_request_input`), so
    the Runner's checks refuse it with the error that names the open questions. The
    answers to the ids in `progress` are progress updates (`will_continue`).

    Raises:
        InvalidMessageError: `answers` is empty.
    """
    if not answers:
        raise InvalidMessageError(
            "an answer needs at least one question: pass answers={interrupt_id: value}."
        )
    parts: list[Part] = []
    for interrupt_id, value in answers.items():
        rows = await store.find_interrupts(key, InterruptId(interrupt_id))
        name = rows[-1].function_name if rows else REQUEST_INPUT_FUNCTION
        # Always wrapped, so an object answer with a lone "result" key is not unwrapped.
        response = FunctionResponse(
            id=interrupt_id,
            name=name,
            response={"result": value},
            will_continue=True if interrupt_id in progress else None,
        )
        parts.append(Part(function_response=response))
    return Content(role="user", parts=parts)
