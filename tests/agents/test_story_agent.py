"""Seed 002's StoryFlowAgent, as written: it resumes at the step after its last checkpoint."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import cast

import pytest

from baton import BaseAgent, BaseAgentState
from baton.agents import LlmAgent
from baton.models import BaseLlm
from baton.sessions.store import InvocationStatus
from tests.agents.agents import Boom, Runs, counting_model, texts
from tests.agents.conftest import MakeRunner
from tests.agents.examples import load_example

story = load_example("story_agent")
SCRIPT = cast(dict[str, str], story.SCRIPT)


def build(runs: Runs, **replies: str) -> BaseAgent:
    build_agent = cast(
        Callable[[Callable[[str], BaseLlm | str]], BaseAgent], story.build_story_agent
    )
    return build_agent(lambda name: counting_model(name, runs, replies.get(name, SCRIPT[name])))


async def test_the_story_flow_runs_each_step_once(make: MakeRunner) -> None:
    runs = Runs()
    h = await make(build(runs))

    events = await h.start("a cat who sails")

    assert runs.count == {
        "StoryGenerator": 1,
        "Critic": 2,
        "Reviser": 2,
        "GrammarCheck": 1,
        "ToneCheck": 1,
    }
    assert [a for a, _ in texts(events)] == [
        "StoryGenerator", "Critic", "Reviser", "Critic", "Reviser", "GrammarCheck", "ToneCheck",
    ]  # fmt: skip
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_failed_step_resumes_after_the_last_checkpoint(make: MakeRunner) -> None:
    runs = Runs(fail={"GrammarCheck": {1}})
    h = await make(build(runs))

    with pytest.raises(Boom):
        await h.start("a cat who sails")
    invocation = await h.invocation()
    [checkpoint] = [
        v for k, v in invocation_states(invocation.checkpoint).items() if k == "StoryFlowAgent"
    ]
    assert checkpoint == {"step": 3}
    events = await h.collect(invocation_id=invocation.id)

    assert runs.count == {
        "StoryGenerator": 1,
        "Critic": 2,
        "Reviser": 2,
        "GrammarCheck": 2,
        "ToneCheck": 1,
    }
    assert [a for a, _ in texts(events)] == ["GrammarCheck", "ToneCheck"]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_failed_regeneration_redoes_only_the_regeneration(make: MakeRunner) -> None:
    runs = Runs(fail={"StoryGenerator": {2}})
    h = await make(build(runs, ToneCheck="negative"))

    with pytest.raises(Boom):
        await h.start("a cat who sails")
    events = await h.collect(invocation_id=(await h.invocation()).id)

    assert runs.count == {
        "StoryGenerator": 3,
        "Critic": 2,
        "Reviser": 2,
        "GrammarCheck": 1,
        "ToneCheck": 1,
    }
    assert [a for a, _ in texts(events)] == ["StoryGenerator"]


async def test_the_example_app_runs_offline(
    make: MakeRunner, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("BATON_MODEL", raising=False)
    module = load_example("story_agent")
    assert "BATON_MODEL is not set" in capsys.readouterr().err

    h = await make(cast(BaseAgent, module.root_agent))
    events = await h.start("a cat who sails")

    assert texts(events)[-1][1] == "positive"


class WorkflowStep(int, Enum):
    FIRST = 1
    SECOND = 2


def test_a_state_field_declared_by_its_type_alone_is_a_field() -> None:
    class StepState(BaseAgentState):
        step = WorkflowStep

    state = StepState(step=WorkflowStep.SECOND)  # pyright: ignore[reportCallIssue] -- declared as `step = WorkflowStep`

    assert state.model_dump(mode="json") == {"step": 2}
    assert StepState.model_validate({"step": 1}).step is WorkflowStep.FIRST  # pyright: ignore[reportAttributeAccessIssue] -- as above


def test_a_state_read_with_its_step_enum_converts_the_values() -> None:
    from baton.agents.state import parse_agent_state

    state = parse_agent_state({"step": 2, "note": "x"}, WorkflowStep)

    assert state.step is WorkflowStep.SECOND  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType] -- a loose state
    assert state.note == "x"  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType] -- a loose state


def test_a_story_sub_agent_knows_its_parent() -> None:
    agent = build(Runs())
    critic = agent.find_agent("Critic")

    assert isinstance(critic, LlmAgent)
    assert critic.parent_agent is not None
    assert critic.parent_agent.name == "CriticReviserLoop"
    assert critic.root_agent is agent


def invocation_states(checkpoint: object) -> dict[str, object]:
    assert isinstance(checkpoint, dict)
    states = cast(dict[str, object], checkpoint).get("agent_states")
    assert isinstance(states, dict)
    return cast(dict[str, object], states)
