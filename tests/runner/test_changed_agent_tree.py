"""DESIGN §3, changed code is detected, for agent trees: a run that failed or paused is
refused when its agents' tree changed below the root, the refusal names the change and
leaves the store as it was, and the code the run started with still resumes it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from pydantic import JsonValue

from baton import (
    App,
    BaseAgent,
    Context,
    LoopAgent,
    RequestInput,
    ResumabilityConfig,
    Runner,
    SequentialAgent,
    Workflow,
)
from baton.errors import WorkflowChangedError
from baton.sessions.store import InvocationStatus
from baton.workflow.nodes import Node
from tests.agents.agents import Boom, Runs, Step
from tests.harness import Harness, MakeHarness, asked
from tests.runner.test_guarantees import snapshot


def with_code(h: Harness, root: Node) -> Harness:
    """A client of the same session whose Runner runs other code for app 'app'."""
    app = App(
        name="app", root_agent=root, resumability_config=ResumabilityConfig(is_resumable=True)
    )
    return Harness(Runner(app=app, session_service=h.service), h.service, h.session_id)


def refusal(invocation: str, workflow: str, difference: str) -> str:
    return (
        f"workflow '{workflow}' changed since invocation '{invocation}' started: {difference}. "
        "Resume with the code it started with, or start a new run."
    )


def pipeline(
    runs: Runs,
    *,
    refine: tuple[str, ...] = ("draft", "critic", "polish"),
    critic: type[BaseAgent] = LoopAgent,
    checks: tuple[str, ...] = ("check",),
) -> SequentialAgent:
    """pipeline[a, refine[draft, critic[check], polish]], or a variant of it."""
    checkers: list[BaseAgent] = [Step(name=n, runs=runs) for n in checks]
    critic_agent = (
        LoopAgent(name="critic", sub_agents=checkers, max_iterations=1)
        if critic is LoopAgent
        else critic(name="critic", sub_agents=checkers)
    )
    steps = [critic_agent if n == "critic" else Step(name=n, runs=runs) for n in refine]
    return SequentialAgent(
        name="pipeline",
        sub_agents=[Step(name="a", runs=runs), SequentialAgent(name="refine", sub_agents=steps)],
    )


async def test_removing_a_sub_agent_of_the_root_names_it(make_harness: MakeHarness) -> None:
    runs = Runs(fail={"b": {1}})

    def sequence(*names: str) -> SequentialAgent:
        return SequentialAgent(name="pipeline", sub_agents=[Step(name=n, runs=runs) for n in names])

    h = await make_harness(sequence("a", "b", "c"))
    with pytest.raises(Boom):
        await h.start()
    invocation = (await h.invocation()).id
    before = await snapshot(h.service, h.key)

    with pytest.raises(WorkflowChangedError) as caught:
        await with_code(h, sequence("a", "c")).collect(invocation_id=invocation)

    assert str(caught.value) == refusal(
        invocation, "pipeline", "sub-agent 'b' of 'pipeline' was removed"
    )
    assert await snapshot(h.service, h.key) == before
    await h.collect(invocation_id=invocation)
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
    assert runs.count == {"a": 1, "b": 2, "c": 1}


@pytest.mark.parametrize(
    ("changes", "difference"),
    [
        (
            {"critic": SequentialAgent},
            "sub-agent 'critic' of 'pipeline/refine' changed (LoopAgent -> SequentialAgent)",
        ),
        (
            {"refine": ("sketch", "critic", "polish")},
            "sub-agent 'sketch' of 'pipeline/refine' was added; "
            "sub-agent 'draft' of 'pipeline/refine' was removed",
        ),
        (
            {"checks": ("check", "verify")},
            "sub-agent 'verify' of 'pipeline/refine/critic' was added",
        ),
        (
            {"refine": ("critic", "draft", "polish")},
            "the sub-agents of 'pipeline/refine' were reordered "
            "(draft, critic, polish -> critic, draft, polish)",
        ),
    ],
    ids=["kind", "renamed", "depth-3-added", "reordered"],
)
async def test_a_change_deep_in_the_agent_tree_is_refused_and_named(
    make_harness: MakeHarness, changes: dict[str, object], difference: str
) -> None:
    runs = Runs(fail={"polish": {1}})
    h = await make_harness(pipeline(runs))
    with pytest.raises(Boom):
        await h.start()
    invocation = (await h.invocation()).id
    before = await snapshot(h.service, h.key)

    changed = pipeline(runs, **changes)  # pyright: ignore[reportArgumentType] -- each case passes one keyword of its type
    with pytest.raises(WorkflowChangedError) as caught:
        await with_code(h, changed).collect(invocation_id=invocation)

    assert str(caught.value) == refusal(invocation, "pipeline", difference)
    assert await snapshot(h.service, h.key) == before
    await with_code(h, pipeline(runs)).collect(invocation_id=invocation)
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
    assert runs.count == {"a": 1, "draft": 1, "check": 1, "polish": 2}


async def ask(ctx: Context, node_input: JsonValue) -> AsyncIterator[RequestInput]:
    yield RequestInput(interrupt_id="approve", message="Ship it?")


def review(runs: Runs, checks: tuple[str, ...]) -> SequentialAgent:
    """review[a, checks[...]]: an agent node whose tree is two levels deep."""
    inner = SequentialAgent(name="checks", sub_agents=[Step(name=n, runs=runs) for n in checks])
    return SequentialAgent(name="review", sub_agents=[Step(name="a", runs=runs), inner])


def nested(runs: Runs, checks: tuple[str, ...] = ("x", "y")) -> Workflow:
    """outer: START -> inner (START -> review) -> ask."""
    inner = Workflow(name="inner", edges=[("START", review(runs, checks))])
    return Workflow(name="outer", edges=[("START", inner, ask)])


async def test_an_agent_tree_inside_a_nested_workflow_is_checked_on_resume(
    make_harness: MakeHarness,
) -> None:
    runs = Runs()
    h = await make_harness(nested(runs))
    assert asked(await h.start()) == ["approve"]
    invocation = (await h.invocation()).id
    before = await snapshot(h.service, h.key)

    with pytest.raises(WorkflowChangedError) as caught:
        await with_code(h, nested(runs, ("x",))).answer(("approve", "yes"))

    assert str(caught.value) == refusal(
        invocation, "outer", "sub-agent 'y' of 'inner/review/checks' was removed"
    )
    assert await snapshot(h.service, h.key) == before
    await h.answer(("approve", "yes"))
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
    assert runs.count == {"a": 1, "x": 1, "y": 1}


async def test_a_workflow_whose_agent_node_changed_kind_and_gained_a_node_names_both(
    make_harness: MakeHarness,
) -> None:
    runs = Runs()
    h = await make_harness(Workflow(name="expenses", edges=[("START", review(runs, ("x",)), ask)]))
    assert asked(await h.start()) == ["approve"]
    invocation = (await h.invocation()).id
    before = await snapshot(h.service, h.key)
    looped = LoopAgent(name="review", sub_agents=[Step(name="a", runs=runs)], max_iterations=1)

    def notify(node_input: JsonValue) -> JsonValue:
        return node_input

    changed = Workflow(name="expenses", edges=[("START", looped, ask, notify)])
    with pytest.raises(WorkflowChangedError) as caught:
        await with_code(h, changed).answer(("approve", "yes"))

    assert str(caught.value) == refusal(
        invocation,
        "expenses",
        "node 'notify' was added; node 'review' changed (SequentialAgent(rerun) -> "
        "LoopAgent(rerun)); sub-agent 'checks' of 'review' was removed; "
        "edge ask -> notify was added",
    )
    assert await snapshot(h.service, h.key) == before
    await h.answer(("approve", "yes"))
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
