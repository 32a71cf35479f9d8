"""`agent.clone()`: the reference's way of reusing an agent's configuration."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import pytest

from baton import (
    BaseAgent,
    Event,
    InMemoryRunner,
    InvocationContext,
    LlmAgent,
    LoopAgent,
    SequentialAgent,
)
from baton.agents import CallbackContext
from baton.models import ScriptedModel


def lookup(x: int) -> int:
    return x


class Counting(BaseAgent):
    calls: int = 0

    def count(self, callback_context: CallbackContext) -> None:
        self.calls += 1

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        yield Event(author=self.name, message="from the clone")


async def test_a_clone_is_a_new_tree_that_runs_on_its_own() -> None:
    first = LlmAgent(name="a", model=ScriptedModel(responses=[]), instruction="hi", tools=[lookup])
    counting = Counting(name="b")
    counting.before_agent_callback = counting.count
    pipeline = SequentialAgent(name="seq", sub_agents=[first, counting])

    copy = pipeline.clone(update={"name": "seq2", "sub_agents": [counting.clone()]})
    assert (copy.name, [a.name for a in copy.sub_agents]) == ("seq2", ["b"])
    assert copy.parent_agent is None
    assert copy.sub_agents[0].parent_agent is copy
    assert counting.parent_agent is pipeline

    whole = pipeline.clone()
    cloned_first = whole.sub_agents[0]
    assert isinstance(cloned_first, LlmAgent)
    assert cloned_first is not first
    assert (cloned_first.parent_agent, cloned_first.instruction) == (whole, "hi")
    assert cloned_first.tools == first.tools
    assert cloned_first.tools is not first.tools

    runner = InMemoryRunner(agent=copy)
    events = await runner.run_debug("go", quiet=True)
    assert [e.content.text for e in events if e.content] == ["from the clone"]
    cloned = copy.sub_agents[0]
    assert isinstance(cloned, Counting)
    # Its own method callback acts on the clone, as in the reference.
    assert (cloned.calls, counting.calls) == (1, 0)


def test_a_loop_clone_takes_updated_fields_and_refuses_what_it_cannot_set() -> None:
    loop = LoopAgent(name="l", max_iterations=3, sub_agents=[LlmAgent(name="x", model="m")])
    again = loop.clone({"max_iterations": 5})
    assert (again.max_iterations, loop.max_iterations) == (5, 3)
    with pytest.raises(ValueError, match="clone cannot set parent_agent"):
        loop.clone(update={"parent_agent": again})
    with pytest.raises(ValueError, match="LoopAgent has no field 'nope' to update in clone"):
        loop.clone(update={"nope": 1})
