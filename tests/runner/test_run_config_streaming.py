"""`RunConfig(streaming_mode=StreamingMode.SSE)`: model replies reach the caller in pieces.

The pieces are `partial=True` events, handed over as the model yields them; the whole
turn commits after them. Pieces are never stored, so a resume never shows them again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from pydantic import PrivateAttr

from baton import RunConfig, StreamingMode, types
from baton.agents import LlmAgent
from baton.events import Event
from baton.models import BaseLlm, LlmRequest, LlmResponse
from baton.tools import FunctionTool, LongRunningFunctionTool
from baton.types import Content, FunctionCall, Part
from tests.harness import Harness, MakeHarness

_SSE = RunConfig(streaming_mode=StreamingMode.SSE, custom_metadata={"tenant": "acme"})


def _model_says(*parts: Part) -> Content:
    return Content(role="model", parts=list(parts))


class ChunkedModel(BaseLlm):
    """Answers in two turns: a call of `tool` (after the text "let me check"), then "hello
    world". Asked to stream, it yields pieces first, waiting on `gate` after the first
    piece of the last turn."""

    model: str = "chunked"
    tool: str = "tool"
    _streamed: list[bool] = PrivateAttr(default_factory=list[bool])
    _gate: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)

    @property
    def streamed(self) -> list[bool]:
        return list(self._streamed)

    def open_gate(self) -> None:
        self._gate.set()

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self._streamed.append(stream)
        if len(self._streamed) == 1:
            call = Part(function_call=FunctionCall(id="c1", name=self.tool, args={"x": 1}))
            if stream:
                yield LlmResponse(content=_model_says(Part(text="let me check")), partial=True)
                yield LlmResponse(content=_model_says(call), partial=True)
            yield LlmResponse(content=_model_says(Part(text="let me check"), call))
            return
        if stream:
            yield LlmResponse(content=_model_says(Part(text="hello ")), partial=True)
            await self._gate.wait()
            yield LlmResponse(content=_model_says(Part(text="world")), partial=True)
        yield LlmResponse(content=_model_says(Part(text="hello world")), turn_complete=True)


def _go() -> types.Content:
    return types.Content(role="user", parts=[types.Part(text="go")])


# What ChunkedModel's two turns look like to the caller, (partial, what), in order: each
# turn's pieces, then the whole turn; between them the tool's result.
STREAMED = [
    (True, "let me check"),
    (True, "call:tool"),
    (False, "let me check|call:tool"),
    (False, "result:tool"),
    (True, "hello "),
    (True, "world"),
    (False, "hello world"),
]


def _shape(events: list[Event]) -> list[tuple[bool, str]]:
    """Each event as (partial, what it holds: texts, `call:name`, `result:name`)."""
    shapes: list[tuple[bool, str]] = []
    for event in events:
        if event.content is None:
            continue
        held = [
            p.text or (f"call:{p.function_call.name}" if p.function_call else "")
            for p in event.content.parts or []
        ]
        held += [f"result:{r.name}" for r in event.content.function_responses]
        shapes.append((bool(event.partial), "|".join(h for h in held if h)))
    return shapes


async def _stored(h: Harness) -> list[Event]:
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    return session.events


async def _read_opening_the_gate(h: Harness, model: ChunkedModel) -> list[Event]:
    """The call's events; the model's last turn goes on only once its first piece is here."""
    events: list[Event] = []
    async with asyncio.timeout(30):  # a hang guard: a piece held back would wait forever
        async for event in h.runner.run_async(
            user_id="u", session_id=h.session_id, new_message=_go(), run_config=_SSE
        ):
            events.append(event)
            if event.partial and event.content and event.content.text == "hello ":
                model.open_gate()
    return events


async def test_sse_streams_pieces_as_they_come_and_stores_only_whole_turns(
    make_harness: MakeHarness,
) -> None:
    tool_runs: list[int] = []

    def tool(x: int) -> int:
        tool_runs.append(x)
        return x

    model = ChunkedModel()
    h = await make_harness(LlmAgent(name="agent", model=model, tools=[FunctionTool(tool)]))

    events = await _read_opening_the_gate(h, model)

    assert model.streamed == [True, True]
    assert _shape(events) == STREAMED
    assert tool_runs == [1]  # a call in a piece is not run; the whole turn's is, once
    assert all(e.custom_metadata == {"tenant": "acme"} for e in events)
    stored = await _stored(h)
    stored_ids = {e.id for e in stored}
    assert [e.id in stored_ids for e in events] == [not e.partial for e in events]
    assert not any(e.partial for e in stored)


async def test_without_streaming_the_model_is_not_asked_to_stream(
    make_harness: MakeHarness,
) -> None:
    model = ChunkedModel()
    model.open_gate()
    h = await make_harness(LlmAgent(name="agent", model=model, tools=[FunctionTool(abs)]))
    model.tool = "abs"

    events = await h.collect(new_message=_go())

    assert model.streamed == [False, False]
    assert not any(e.partial for e in events)


async def test_pieces_are_not_shown_again_when_a_paused_run_resumes(
    make_harness: MakeHarness,
) -> None:
    def approve(x: int) -> None:
        """Asks a person."""

    model = ChunkedModel(tool="approve")
    model.open_gate()
    agent = LlmAgent(name="agent", model=model, tools=[LongRunningFunctionTool(approve)])
    h = await make_harness(agent)
    first = await h.collect(new_message=_go(), run_config=_SSE)
    assert _shape(first)[:3] == [
        (True, "let me check"),
        (True, "call:approve"),
        (False, "let me check|call:approve"),
    ]
    answer = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id="c1", name="approve", response={"ok": True}
                )
            )
        ],
    )

    resumed = await h.collect(new_message=answer, run_config=_SSE)

    assert _shape(resumed) == [(True, "hello "), (True, "world"), (False, "hello world")]
    assert not any(e.partial for e in await _stored(h))
