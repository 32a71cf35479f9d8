"""A resumed custom agent re-executes its code from its last checkpoint; the sub-agent
runs that ended after that checkpoint are not run again."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import pytest
from pydantic import InstanceOf

from baton import BaseAgent, BaseAgentState, Event, InvocationContext, LoopAgent
from baton.sessions.store import InvocationStatus
from tests.agents.agents import Boom, Runs, Step, texts
from tests.agents.conftest import MakeRunner


class Twice(BaseAgent):
    """Runs `step` twice, then `last`; fails where `runs` says ("between" after the first)."""

    step: Step
    last: Step
    runs: InstanceOf[Runs]

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        async for event in self.step.run_async(ctx):
            yield event
        self.runs.bump("between")
        async for event in self.step.run_async(ctx):
            yield event
        async for event in self.last.run_async(ctx):
            yield event


def twice(runs: Runs, name: str = "twice") -> Twice:
    step, last = Step(name=f"{name}_step", runs=runs), Step(name=f"{name}_last", runs=runs)
    return Twice(name=name, step=step, last=last, runs=runs, sub_agents=[step, last])


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_sub_agent_runs_that_ended_before_a_failure_are_not_run_again(
    make: MakeRunner, resumable: bool
) -> None:
    runs = Runs(fail={"twice_last": {1}})
    h = await make(twice(runs), resumable=resumable)

    with pytest.raises(Boom):
        await h.start()
    events = await h.collect(invocation_id=(await h.invocation()).id)

    assert runs.count == {"twice_step": 2, "between": 2, "twice_last": 2}
    assert texts(events) == [("twice_last", "twice_last done")]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_failure_between_two_runs_of_one_sub_agent_runs_only_the_second(
    make: MakeRunner,
) -> None:
    runs = Runs(fail={"between": {1}})
    h = await make(twice(runs))

    with pytest.raises(Boom):
        await h.start()
    events = await h.collect(invocation_id=(await h.invocation()).id)

    assert runs.count == {"twice_step": 2, "between": 2, "twice_last": 1}
    assert texts(events) == [("twice_step", "twice_step done"), ("twice_last", "twice_last done")]


class Stepped(BaseAgent):
    """Checkpoints before each of its two sub-agents, as seed 002's recipe does."""

    class State(BaseAgentState):
        step: int

    first: Step
    second: Step
    runs: InstanceOf[Runs]

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        state = self._load_agent_state(ctx, Stepped.State) or Stepped.State(step=1)
        yield self._create_agent_state_event(ctx, state)
        if state.step <= 1:
            async for event in self.first.run_async(ctx):
                yield event
            self.runs.bump("after_first")  # fails after `first` ended, before the checkpoint
        yield self._create_agent_state_event(ctx, Stepped.State(step=2))
        async for event in self.second.run_async(ctx):
            yield event


async def test_a_step_whose_sub_agent_ended_before_the_next_checkpoint_is_not_redone(
    make: MakeRunner,
) -> None:
    runs = Runs(fail={"after_first": {1}})
    first, second = Step(name="first", runs=runs), Step(name="second", runs=runs)
    h = await make(
        Stepped(name="stepped", first=first, second=second, runs=runs, sub_agents=[first, second])
    )

    with pytest.raises(Boom):
        await h.start()
    events = await h.collect(invocation_id=(await h.invocation()).id)

    assert runs.count == {"first": 1, "after_first": 2, "second": 1}
    assert texts(events) == [("second", "second done")]


async def test_each_loop_iteration_runs_the_custom_agent_sub_agents_anew(
    make: MakeRunner,
) -> None:
    runs = Runs(fail={"between": {2}})  # in the second iteration
    h = await make(LoopAgent(name="loop", max_iterations=2, sub_agents=[twice(runs)]))

    with pytest.raises(Boom):
        await h.start()
    assert runs.count == {"twice_step": 3, "between": 2, "twice_last": 1}
    await h.collect(invocation_id=(await h.invocation()).id)

    assert runs.count == {"twice_step": 4, "between": 3, "twice_last": 2}
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
