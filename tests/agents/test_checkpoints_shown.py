"""Which events carry agent checkpoints (`agent_state`, `end_of_agent`), as the reference
streams them: its LlmAgent writes no `agent_state` (only its end, in a resumable run), its
SequentialAgent, LoopAgent and ParallelAgent write theirs. baton's LlmAgent keeps its own
checkpoint (where its run began, the long-running calls it started) with its events in the
store, where it resumes from it, and shows it to no caller.

The expected lists are what google-adk 2.13.0 yields for the same agents and model turns.
"""

from __future__ import annotations

from typing import cast

import pytest
from pydantic import JsonValue

from baton import Event, InvocationContext, ResumabilityConfig
from baton.agents import LlmAgent, SequentialAgent
from baton.models import ScriptedModel
from baton.sessions.services import InMemorySessionService
from baton.sessions.store import InvocationStatus
from baton.tools import LongRunningFunctionTool
from baton.types import Content, FunctionCall, Part
from tests.agents.conftest import MakeRunner


def shapes(events: list[Event]) -> list[tuple[str, str, JsonValue]]:
    """(author, what the event says, its checkpoint) per event."""
    found: list[tuple[str, str, JsonValue]] = []
    for e in events:
        said = ""
        if e.content:
            said = e.content.text or ",".join(
                [f"call {c.name}" for c in e.function_calls]
                + [f"result {r.name}" for r in e.content.function_responses]
            )
        mark: JsonValue = "end" if e.actions.end_of_agent else e.actions.agent_state
        found.append((e.author, said, mark))
    return found


def add(x: int) -> int:
    """Adds one."""
    return x + 1


def approve(x: int) -> None:
    """Waits for a person's approval."""


def agent_with_tools(name: str = "a") -> LlmAgent:
    model = ScriptedModel(
        [
            ["thinking", FunctionCall(id="c1", name="add", args={"x": 1})],
            [FunctionCall(id="c2", name="approve", args={"x": 1})],
            "approved",
        ]
    )
    return LlmAgent(name=name, model=model, tools=[add, LongRunningFunctionTool(approve)])


def answer(call_id: str, name: str) -> Content:
    response = {"id": call_id, "name": name, "response": {"ok": True}}
    return Content(role="user", parts=[Part.model_validate({"function_response": response})])


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_an_llm_agent_streams_no_checkpoint_of_its_own(
    make: MakeRunner, resumable: bool
) -> None:
    h = await make(agent_with_tools(), resumable=resumable)

    paused = await h.start()
    invocation = await h.invocation()
    resumed = await h.collect(
        new_message=answer("c2", "approve"), invocation_id=invocation.id if resumable else None
    )

    assert shapes(paused) == [
        ("a", "thinking", None),
        ("a", "result add", None),
        ("a", "call approve", None),
    ]
    end = [("a", "", "end")] if resumable else []
    assert shapes(resumed) == [("a", "approved", None), *end]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
    # Stored all the same: the run resumed from it.
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    stored = [e.actions.agent_state for e in session.events if e.author == "a"]
    assert any(isinstance(s, dict) and "run_start" in s for s in stored)


async def test_llm_agents_in_a_sequence_stream_only_the_sequence_checkpoints(
    make: MakeRunner,
) -> None:
    seq = SequentialAgent(
        name="seq",
        sub_agents=[
            LlmAgent(name="a", model=ScriptedModel(["A"])),
            LlmAgent(name="b", model=ScriptedModel(["B"])),
        ],
    )
    h = await make(seq)

    events = await h.start()

    assert shapes(events) == [
        ("seq", "", {"current_sub_agent": "a"}),
        ("a", "A", None),
        ("a", "", "end"),
        ("seq", "", {"current_sub_agent": "b"}),
        ("b", "B", None),
        ("b", "", "end"),
        ("seq", "", "end"),
    ]


async def test_an_llm_agent_driven_directly_shows_no_checkpoint_of_its_own() -> None:
    agent = agent_with_tools()
    service = InMemorySessionService()
    session = await service.create_session(app_name="app", user_id="u")
    ctx = InvocationContext(
        invocation_id="inv",
        agent=agent,
        session=session,
        session_service=service,
        user_content=Content(role="user", parts=[Part(text="go")]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )

    events = [e async for e in agent.run_async(ctx)]

    assert shapes(events) == [
        ("a", "thinking", None),
        ("a", "result add", None),
        ("a", "call approve", None),
    ]
    # The run's own checkpoint is where a second call resumes from.
    state = cast(dict[str, JsonValue], ctx.agent_states["a"])
    assert state["started_calls"] == ["c2"]
