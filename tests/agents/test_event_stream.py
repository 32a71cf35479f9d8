"""The events an agent's run yields and stores, field by field, as google-adk 2.13.0's
(probed with the same scenario and a scripted model through its Runner and session
services): what a client reading `run_async` or `get_session` sees."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from pydantic import Field

from baton import App, ResumabilityConfig, RunConfig, Runner, StreamingMode, types
from baton.agents import LlmAgent
from baton.events import Event
from baton.models import BaseLlm, LlmRequest, LlmResponse
from baton.sessions.services import BaseSessionService
from baton.sessions.store import Session
from baton.tools import LongRunningFunctionTool
from baton.types import Content, FunctionCall, Part
from tests.conftest import StoreFactory


class TwoPieceModel(BaseLlm):
    """Says `reply`, in two pieces before the whole when asked to stream; the whole is
    marked `turn_complete` as a model ends its turn."""

    model: str = "two-piece"
    reply: str = "hello"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        del llm_request
        if stream:
            for piece in (self.reply[:2], self.reply[2:]):
                yield LlmResponse(content=_model_says(Part(text=piece)), partial=True)
        yield LlmResponse(content=_model_says(Part(text=self.reply)), turn_complete=True)


class CallingModel(BaseLlm):
    """Calls `call` with `args` in its first turn and says `then` once a function response
    is in its request, each turn complete (by default: `add(1, 2)`, then "three")."""

    model: str = "calling"
    call: str = "add"
    args: dict[str, int] = Field(default_factory=lambda: {"a": 1, "b": 2})
    then: str = "three"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        del stream
        answered = any(c.function_responses for c in llm_request.contents)
        part = (
            Part(text=self.then)
            if answered
            else Part(function_call=FunctionCall(id="c1", name=self.call, args=dict(self.args)))
        )
        yield LlmResponse(content=_model_says(part), turn_complete=True)


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def _model_says(part: Part) -> Content:
    return Content(role="model", parts=[part])


async def _start(
    stores: StoreFactory, agent: LlmAgent, *, resumable: bool
) -> tuple[Runner, BaseSessionService, Session]:
    """A Runner of `agent` as app "app" on a store of `stores`, and a new session of "u"."""
    service = BaseSessionService(stores.open())
    app = App(
        name="app",
        root_agent=agent,
        resumability_config=ResumabilityConfig(is_resumable=resumable),
    )
    runner = Runner(app=app, session_service=service)
    return runner, service, await service.create_session(app_name="app", user_id="u")


async def _run(
    stores: StoreFactory, agent: LlmAgent, *, resumable: bool, stream: bool = False
) -> tuple[list[Event], list[Event]]:
    """The events `run_async` yields for "go", and the session's events after it."""
    runner, service, session = await _start(stores, agent, resumable=resumable)
    config = RunConfig(streaming_mode=StreamingMode.SSE if stream else StreamingMode.NONE)
    message = types.Content(role="user", parts=[types.Part(text="go")])
    yielded = [
        e
        async for e in runner.run_async(
            user_id="u", session_id=session.id, new_message=message, run_config=config
        )
    ]
    stored = await service.get_session(app_name="app", user_id="u", session_id=session.id)
    assert stored is not None
    return yielded, stored.events


def _said(events: list[Event]) -> list[tuple[str | None, bool, bool]]:
    """(what, partial, turn_complete) of the events with content."""
    return [
        (e.content.text or e.content.function_calls[0].name, bool(e.partial), bool(e.turn_complete))
        for e in events
        if e.content and (e.content.text or e.content.function_calls)
    ]


async def test_a_model_turn_s_turn_complete_reaches_its_event(stores: StoreFactory) -> None:
    for resumable in (False, True):
        agent = LlmAgent(name="a", model=CallingModel(), tools=[add])
        yielded, stored = await _run(stores, agent, resumable=resumable)
        turns = [("add", False, True), ("three", False, True)]
        assert _said(yielded) == turns
        assert _said(stored) == [("go", False, False), *turns]


async def test_a_streamed_reply_s_pieces_and_whole_keep_the_model_s_turn_complete(
    stores: StoreFactory,
) -> None:
    yielded, stored = await _run(
        stores, LlmAgent(name="a", model=TwoPieceModel()), resumable=False, stream=True
    )
    assert _said(yielded) == [("he", True, False), ("llo", True, False), ("hello", False, True)]
    assert _said(stored) == [("go", False, False), ("hello", False, True)]


async def test_a_streamed_reply_s_pieces_name_the_agent_s_node_run(stores: StoreFactory) -> None:
    agent = LlmAgent(name="a", model=TwoPieceModel())
    yielded, _ = await _run(stores, agent, resumable=False, stream=True)
    pieces = [e for e in yielded if e.partial]
    assert len(pieces) == 2
    assert [(e.node_info.path, e.node_info.run_id) for e in pieces if e.node_info] == [
        ("a@1", "1"),
        ("a@1", "1"),
    ]


def _shape(events: list[Event]) -> list[tuple[str, str | None, bool]]:
    """(author, text, end_of_agent) of each event."""
    return [
        (e.author, e.content.text if e.content else None, bool(e.actions.end_of_agent))
        for e in events
    ]


async def test_a_non_resumable_run_stores_no_end_mark_of_its_agent(stores: StoreFactory) -> None:
    yielded, stored = await _run(stores, LlmAgent(name="a", model=TwoPieceModel()), resumable=False)
    assert _shape(yielded) == [("a", "hello", False)]
    assert _shape(stored) == [("user", "go", False), ("a", "hello", False)]


async def test_a_resumable_run_stores_and_shows_its_agent_s_end_mark(stores: StoreFactory) -> None:
    yielded, stored = await _run(stores, LlmAgent(name="a", model=TwoPieceModel()), resumable=True)
    assert _shape(yielded) == [("a", "hello", False), ("a", None, True)]
    assert _shape(stored) == [("user", "go", False), ("a", "hello", False), ("a", None, True)]


def _kinds(events: list[Event]) -> list[tuple[str, str, bool]]:
    """(author, what it says: its text, "call", "response" or "", end_of_agent) of each event."""

    def said(event: Event) -> str:
        if event.content is None:
            return ""
        if event.content.function_calls:
            return "call"
        return "response" if event.content.function_responses else event.content.text or ""

    return [(e.author, said(e), bool(e.actions.end_of_agent)) for e in events]


async def test_a_long_running_call_that_returns_nothing_stores_no_checkpoint_event(
    stores: StoreFactory,
) -> None:
    # As google-adk 2.13.0's, in both modes: the call, the user's answer and the reply
    # (then the agent's end mark, when resumable); the tool runs once.
    asked: list[int] = []

    def ask_approval(amount: int) -> None:
        """Asks a person to approve the amount."""
        asked.append(amount)

    for resumable in (False, True):
        asked.clear()
        agent = LlmAgent(
            name="a",
            model=CallingModel(call="ask_approval", args={"amount": 5}, then="approved"),
            tools=[LongRunningFunctionTool(ask_approval)],
        )
        runner, service, session = await _start(stores, agent, resumable=resumable)
        go = types.Content(role="user", parts=[types.Part(text="go")])
        first = [
            e async for e in runner.run_async(user_id="u", session_id=session.id, new_message=go)
        ]
        answer = types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="c1", name="ask_approval", response={"ok": True}
                    )
                )
            ],
        )
        invocation_id = first[0].invocation_id if resumable else None
        second = [
            e
            async for e in runner.run_async(
                user_id="u", session_id=session.id, new_message=answer, invocation_id=invocation_id
            )
        ]
        stored = await service.get_session(app_name="app", user_id="u", session_id=session.id)
        assert stored is not None
        end = [("a", "", True)] if resumable else []
        assert _kinds(first) == [("a", "call", False)]
        assert _kinds(second) == [("a", "approved", False), *end]
        assert _kinds(stored.events) == [
            ("user", "go", False),
            ("a", "call", False),
            ("user", "response", False),
            ("a", "approved", False),
            *end,
        ]
        assert [e.actions.agent_state for e in first] == [None]
        assert asked == [5]
