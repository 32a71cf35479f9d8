"""Agents driven directly, as the reference's own tests drive them (seed 003's pattern).

The caller builds an `InvocationContext` (agent, session, session service,
invocation id, resumability) and iterates `agent.run_async(parent_ctx)`: the
agent's events come back with its state checkpoints when resumable, and a second
call resumes from the checkpoints in the context, or from the session's events
after `populate_invocation_agent_states()`. Only the imports differ from the
reference's code.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable

import pytest

from baton import Event, EventActions, InvocationContext, ResumabilityConfig, types
from baton.agents import (
    BaseAgent,
    BaseAgentState,
    LlmAgent,
    LoopAgent,
    ParallelAgent,
    SequentialAgent,
)
from baton.agents.loop_agent import LoopAgentState
from baton.models import ScriptedModel
from baton.sessions.services import BaseSessionService, InMemorySessionService
from baton.sessions.store import Session
from baton.tools import exit_loop
from baton.types import FunctionCall
from tests.agents.agents import Boom, Runs, Step
from tests.conftest import StoreFactory


class _TestingAgent(BaseAgent):
    """Says hello; escalates when told to (as the reference's tests' agent does)."""

    escalate: bool = False

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.Content(parts=[types.Part(text=f"Hello, async {self.name}!")]),
            actions=EventActions(escalate=self.escalate or None),
        )


async def _create_parent_invocation_context(
    test_name: str, agent: BaseAgent, resumable: bool = False
) -> InvocationContext:
    session_service = InMemorySessionService()
    session = await session_service.create_session(app_name="test_app", user_id="test_user")
    return InvocationContext(
        invocation_id=f"{test_name}_invocation_id",
        agent=agent,
        session=session,
        session_service=session_service,
        resumability_config=ResumabilityConfig(is_resumable=resumable),
    )


def _simplify(events: list[Event]) -> list[tuple[str, object]]:
    """(author, text or checkpoint) per event, as the reference's tests compare them."""
    simple: list[tuple[str, object]] = []
    for e in events:
        if e.content and e.content.parts and e.content.parts[0].text:
            simple.append((e.author, e.content.parts[0].text))
        elif e.actions.end_of_agent:
            simple.append((e.author, "end_of_agent"))
        else:
            simple.append((e.author, e.actions.agent_state))
    return simple


@pytest.mark.parametrize("resumable", [True, False])
async def test_run_async(resumable: bool) -> None:
    agent = _TestingAgent(name="agent")
    loop_agent = LoopAgent(name="test_loop", max_iterations=2, sub_agents=[agent])
    parent_ctx = await _create_parent_invocation_context(
        "test_run_async", loop_agent, resumable=resumable
    )
    events = [e async for e in loop_agent.run_async(parent_ctx)]

    hello = ("agent", "Hello, async agent!")
    if resumable:
        assert _simplify(events) == [
            ("test_loop", {"current_sub_agent": "agent", "times_looped": 0}),
            hello,
            ("test_loop", {"current_sub_agent": "agent", "times_looped": 1}),
            hello,
            ("test_loop", "end_of_agent"),
        ]
    else:
        assert _simplify(events) == [hello, hello]
    assert parent_ctx.end_of_agents["test_loop"] is True
    assert parent_ctx.session.events == []  # driving an agent directly stores nothing


@pytest.mark.parametrize("resumable", [True, False])
async def test_run_async_with_escalate_action(
    resumable: bool,
) -> None:
    non_escalating = _TestingAgent(name="non_escalating")
    escalating = _TestingAgent(name="escalating", escalate=True)
    ignored = _TestingAgent(name="ignored")
    loop_agent = LoopAgent(name="test_loop", sub_agents=[non_escalating, escalating, ignored])
    parent_ctx = await _create_parent_invocation_context(
        "test_run_async_with_escalate_action", loop_agent, resumable=resumable
    )
    events = [e async for e in loop_agent.run_async(parent_ctx)]

    said = [(a, t) for a, t in _simplify(events) if isinstance(t, str) and t != "end_of_agent"]
    assert said == [
        ("non_escalating", "Hello, async non_escalating!"),
        ("escalating", "Hello, async escalating!"),
    ]
    assert [e.actions.escalate for e in events if e.author == "escalating"] == [True]
    assert (_simplify(events)[-1] == ("test_loop", "end_of_agent")) is resumable


async def test_resume_async() -> None:
    agent_1 = _TestingAgent(name="agent_1")
    agent_2 = _TestingAgent(name="agent_2")
    loop_agent = LoopAgent(name="test_loop", max_iterations=2, sub_agents=[agent_1, agent_2])
    parent_ctx = await _create_parent_invocation_context(
        "test_resume_async", loop_agent, resumable=True
    )
    parent_ctx.agent_states[loop_agent.name] = LoopAgentState(
        current_sub_agent=agent_2.name, times_looped=1
    ).model_dump(mode="json")

    events = [e async for e in loop_agent.run_async(parent_ctx)]

    assert _simplify(events) == [
        ("agent_2", "Hello, async agent_2!"),
        ("test_loop", "end_of_agent"),
    ]


@pytest.mark.parametrize("resumable", [True, False])
async def test_an_llm_agent_ends_the_loop_with_the_exit_loop_tool(
    resumable: bool,
) -> None:
    model = ScriptedModel(
        responses=["draft one", FunctionCall(id="x", name="exit_loop", args={}), "never said"]
    )
    writer = LlmAgent(name="writer", model=model, instruction="Write, then exit the loop.")
    critic = LlmAgent(
        name="critic",
        model=ScriptedModel(responses=[FunctionCall(id="e", name="exit_loop", args={})]),
        tools=[exit_loop],
    )
    loop_agent = LoopAgent(name="refine", max_iterations=5, sub_agents=[writer, critic])
    parent_ctx = await _create_parent_invocation_context(
        "test_an_llm_agent_ends_the_loop_with_the_exit_loop_tool", loop_agent, resumable=resumable
    )
    events = [e async for e in loop_agent.run_async(parent_ctx)]

    texts = [(e.author, e.content.text) for e in events if e.content and e.content.text]
    assert texts == [("writer", "draft one")]
    responses = [r for e in events if e.content for r in e.content.function_responses]
    assert [(r.name, r.id) for r in responses] == [("exit_loop", "e")]
    assert [e.actions.escalate for e in events if e.actions.escalate] == [True]
    assert len(model.requests) == 1  # the loop ended: the writer was not asked again
    assert parent_ctx.end_of_agents["refine"] is True


@pytest.mark.parametrize("resumable", [True, False])
async def test_sequential_and_parallel_agents(
    resumable: bool,
) -> None:
    seq = SequentialAgent(
        name="seq", sub_agents=[_TestingAgent(name="s1"), _TestingAgent(name="s2")]
    )
    ctx = await _create_parent_invocation_context(
        "test_sequential_and_parallel_agents", seq, resumable=resumable
    )
    events = [e async for e in seq.run_async(ctx)]
    said = [("s1", "Hello, async s1!"), ("s2", "Hello, async s2!")]
    if resumable:
        assert _simplify(events) == [
            ("seq", {"current_sub_agent": "s1"}),
            said[0],
            ("seq", {"current_sub_agent": "s2"}),
            said[1],
            ("seq", "end_of_agent"),
        ]
    else:
        assert _simplify(events) == said

    par = ParallelAgent(name="par", sub_agents=[_TestingAgent(name="p1"), _TestingAgent(name="p2")])
    ctx = await _create_parent_invocation_context(
        "test_sequential_and_parallel_agents", par, resumable=resumable
    )
    events = [e async for e in par.run_async(ctx)]
    # baton tags a custom agent's events with its branch (the reference leaves them
    # without one); as the reference, it is not ended with an event, only the parallel
    # agent is (which the reference's never is for custom sub-agents).
    assert sorted((e.author, e.branch) for e in events if e.content) == [
        ("p1", "par.p1"),
        ("p2", "par.p2"),
    ]
    assert [e.author for e in events if e.actions.end_of_agent] == (["par"] if resumable else [])


async def _drive(agent: BaseAgent, ctx: InvocationContext, take: Callable[[Event], None]) -> None:
    async for event in agent.run_async(ctx):
        take(event)


class _StepState(BaseAgentState):
    step: int = 0


class _TwoSteps(BaseAgent):
    """A custom agent that checkpoints each step; step 2 fails the first time."""

    failures: list[str]

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        state = self._load_agent_state(ctx, _StepState) or _StepState()
        for step in range(state.step + 1, 3):
            if step == 2 and not self.failures:
                self.failures.append("step 2")
                raise RuntimeError("step 2 failed")
            yield Event(
                author=self.name,
                invocation_id=ctx.invocation_id,
                content=types.Content(parts=[types.Part(text=f"step {step}")]),
            )
            yield self._create_agent_state_event(ctx, _StepState(step=step))


async def test_a_custom_agent_resumes_from_its_checkpoint_on_a_second_call() -> None:
    agent = _TwoSteps(name="two_steps", failures=[])
    parent_ctx = await _create_parent_invocation_context(
        "test_a_custom_agent_resumes_from_its_checkpoint_on_a_second_call", agent, resumable=True
    )
    first: list[Event] = []
    with pytest.raises(RuntimeError, match="step 2 failed"):
        await _drive(agent, parent_ctx, first.append)
    assert parent_ctx.agent_states == {"two_steps": {"step": 1}}

    second = [e async for e in agent.run_async(parent_ctx)]

    assert _simplify(first) == [("two_steps", "step 1"), ("two_steps", {"step": 1})]
    assert _simplify(second) == [("two_steps", "step 2"), ("two_steps", {"step": 2})]


async def test_a_second_call_after_a_failed_branch_runs_only_that_branch() -> None:
    # A sequence around a parallel agent: on the second call the finished branch and the
    # sub-agent before it are not run again (the reference runs both branches again).
    runs = Runs(fail={"x2": {1}})
    par = ParallelAgent(name="par", sub_agents=[Step(name=n, runs=runs) for n in ("x1", "x2")])
    outer = SequentialAgent(
        name="outer", sub_agents=[Step(name="o1", runs=runs), par, Step(name="o3", runs=runs)]
    )
    parent_ctx = await _create_parent_invocation_context(
        "test_a_second_call_after_a_failed_branch_runs_only_that_branch", outer, resumable=True
    )
    first: list[Event] = []
    with pytest.raises(Boom):
        await _drive(outer, parent_ctx, first.append)
    assert runs.count == {"o1": 1, "x1": 1, "x2": 1}
    assert ("x1", "x1 done") in _simplify(first)

    second = [e async for e in outer.run_async(parent_ctx)]

    assert runs.count == {"o1": 1, "x1": 1, "x2": 2, "o3": 1}
    assert _simplify(second) == [
        ("x2", "x2 done"),
        ("par", "end_of_agent"),
        ("outer", {"current_sub_agent": "o3"}),
        ("o3", "o3 done"),
        ("outer", "end_of_agent"),
    ]


async def test_checkpoints_stored_in_the_session_are_read_back(stores: StoreFactory) -> None:
    """The seed's other half: the caller stores the events, a new context reads them back."""
    service = BaseSessionService(stores.open())
    agent = _TwoSteps(name="two_steps", failures=[])
    session = await service.create_session(app_name="test_app", user_id="test_user")

    def context(on: Session) -> InvocationContext:
        return InvocationContext(
            invocation_id="inv-1",
            agent=agent,
            session=on,
            session_service=service,
            resumability_config=ResumabilityConfig(is_resumable=True),
        )

    ctx = context(session)
    stored_events: list[Event] = []
    with pytest.raises(RuntimeError, match="step 2 failed"):
        await _drive(agent, ctx, stored_events.append)
    for event in stored_events:  # the caller stores what it was given
        await service.append_event(session, event)

    stored = await service.get_session(
        app_name="test_app", user_id="test_user", session_id=session.id
    )
    assert stored is not None
    resumed = context(stored)
    resumed.populate_invocation_agent_states()
    assert resumed.agent_states == {"two_steps": {"step": 1}}
    events = [e async for e in agent.run_async(resumed)]
    assert _simplify(events) == [("two_steps", "step 2"), ("two_steps", {"step": 2})]


@pytest.mark.parametrize("resumable", [True, False])
async def test_the_user_s_message_comes_before_the_agent_s_tool_turn(resumable: bool) -> None:
    def lookup(city: str) -> str:
        """Look the weather up.

        Args:
            city: where.
        """
        return "rain"

    call = FunctionCall(id="c1", name="lookup", args={"city": "Oslo"})
    model = ScriptedModel(responses=[[call], "It rains."])
    agent = LlmAgent(name="weather", model=model, tools=[lookup])
    ctx = await _create_parent_invocation_context(
        "test_the_user_s_message_comes_before_the_agent_s_tool_turn", agent, resumable=resumable
    )
    ctx.user_content = types.Content(role="user", parts=[types.Part(text="Weather in Oslo?")])
    events = [e async for e in agent.run_async(ctx)]

    def shown(content: types.Content) -> str:
        part = content.parts[0] if content.parts else types.Part()
        answer = part.function_response.response if part.function_response else None
        said = part.text or (part.function_call and part.function_call.name) or answer
        return f"{content.role}: {said}"

    assert [[shown(c) for c in r.contents] for r in model.requests] == [
        ["user: Weather in Oslo?"],
        ["user: Weather in Oslo?", "model: lookup", "user: {'result': 'rain'}"],
    ]
    assert [e.content.text for e in events if e.content and e.content.text] == ["It rains."]
