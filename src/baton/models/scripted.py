"""ScriptedModel: a deterministic model for tests and examples without an API key."""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import TypeAlias, final

from pydantic import BaseModel, Field, PrivateAttr

from baton.models.llm import BaseLlm, LlmRequest, LlmResponse
from baton.types import Content, FunctionCall, Part

__all__ = ["Responder", "ScriptItem", "ScriptedModel", "to_llm_response"]

ScriptItem: TypeAlias = (
    LlmResponse | Content | str | FunctionCall | Sequence[str | FunctionCall | Part]
)
"""One model turn: a response, a message, a text, a call, or a list of texts/calls/parts."""

Responder: TypeAlias = Callable[[LlmRequest], ScriptItem | Awaitable[ScriptItem]]
"""Computes a turn from the request (sync or async)."""


def to_llm_response(item: ScriptItem) -> LlmResponse:
    """Turn a script item into the response a model would yield.

    Args:
        item: a response (kept as is), a Content, a text, a FunctionCall, or a list
            of texts / FunctionCalls / Parts forming one model message (several
            calls in one turn).

    Returns:
        The response, its content in the "model" role.
    """
    if isinstance(item, LlmResponse):
        return item
    if isinstance(item, Content):
        return LlmResponse(content=item, turn_complete=True)
    pieces: Sequence[str | FunctionCall | Part] = (
        [item] if isinstance(item, str | FunctionCall) else item
    )
    parts = [_to_part(piece) for piece in pieces]
    return LlmResponse(content=Content(role="model", parts=parts), turn_complete=True)


def _to_part(piece: str | FunctionCall | Part) -> Part:
    if isinstance(piece, Part):
        return piece
    if isinstance(piece, FunctionCall):
        return Part(function_call=piece)
    return Part(text=piece)


@final
class ScriptedModel(BaseLlm):
    """Replays canned turns in order, or asks a responder, and records every request.

    Each call to `generate_content_async` consumes one turn and yields one response.
    Ids of scripted function calls are kept as given (give them ids when a test
    needs to answer a call by id).

    Args:
        responses: the turns, in order (see `to_llm_response` for the forms).
        responder: called with each request once `responses` is used up.
        model: a name for events and logs.

    Raises:
        RuntimeError: (when generating) the script is used up and there is no responder.
    """

    model: str = "scripted"
    responses: list[LlmResponse] = Field(default_factory=list[LlmResponse])
    responder: Responder | None = None
    _requests: list[LlmRequest] = PrivateAttr(default_factory=list[LlmRequest])

    def __init__(
        self,
        responses: Sequence[ScriptItem] = (),
        *,
        responder: Responder | None = None,
        model: str = "scripted",
    ) -> None:
        # BaseModel's own __init__: the type checker's view of BaseLlm's lacks these fields.
        BaseModel.__init__(
            self,
            model=model,
            responses=[to_llm_response(i) for i in responses],
            responder=responder,
        )

    @property
    def requests(self) -> list[LlmRequest]:
        """Copies of the requests received so far, in order."""
        return list(self._requests)

    @property
    def remaining(self) -> int:
        """How many scripted turns have not been played yet."""
        return max(len(self.responses) - self._played, 0)

    @property
    def _played(self) -> int:
        return min(len(self._requests), len(self.responses))

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Yield the next scripted turn (the same with or without `stream`).

        Args:
            llm_request: recorded (a deep copy), then answered.
            stream: ignored; a scripted turn is one complete response.

        Returns:
            One response.
        """
        turn = len(self._requests)
        self._requests.append(llm_request.model_copy(deep=True))
        yield await self._respond(turn, llm_request)

    async def _respond(self, turn: int, llm_request: LlmRequest) -> LlmResponse:
        if turn < len(self.responses):
            return self.responses[turn].model_copy(deep=True)
        if self.responder is None:
            raise RuntimeError(
                f"ScriptedModel '{self.model}' was called {turn + 1} times but has "
                f"{len(self.responses)} scripted responses; add responses or a responder."
            )
        item = self.responder(llm_request)
        if inspect.isawaitable(item):
            item = await item
        return to_llm_response(item)
