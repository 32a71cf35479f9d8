"""BaseAgent: a pydantic model, a node, and the ctx custom agents receive."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import pytest
from pydantic import JsonValue

from baton import BaseAgent, Event, InvocationContext, SequentialAgent, Workflow
from baton.agents import LlmAgent
from baton.models import ScriptedModel
from tests.agents.agents import Boom, Runs, Step, texts
from tests.agents.conftest import MakeRunner


class Reader(BaseAgent):
    """Reads what earlier sub-agents wrote, through `ctx.session.state`."""

    writer: Step

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        assert "w" not in ctx.session.state
        async for event in self.writer.run_async(ctx):
            yield event
        yield Event(
            author=self.name,
            message=f"{ctx.invocation_id[:2]} read w={ctx.session.state['w']}",
        )


async def test_a_custom_agent_reads_committed_state_of_its_sub_agents(make: MakeRunner) -> None:
    writer = Step(name="w", runs=Runs())
    h = await make(Reader(name="reader", writer=writer, sub_agents=[writer]))

    events = await h.start()

    assert texts(events) == [("w", "w done"), ("reader", "e- read w=1")]
    assert events[-2].actions.end_of_agent  # ended for it: it returned without waiting
    assert events[-1].output == "e- read w=1"


async def test_an_agent_is_a_workflow_node_and_its_reply_the_output(make: MakeRunner) -> None:
    seq = SequentialAgent(name="seq", sub_agents=[Step(name="a", runs=Runs())])

    def shout(node_input: str) -> str:
        return node_input.upper()

    h = await make(Workflow(name="wf", edges=[("START", seq, shout)]))
    events = await h.start()

    assert [(e.author, e.output) for e in events if e.output is not None] == [
        ("seq", "a done"),
        ("shout", "A DONE"),
    ]


def test_sub_agents_get_their_parent_and_names_are_checked() -> None:
    runs = Runs()
    a, b = Step(name="a", runs=runs), Step(name="b", runs=runs)
    seq = SequentialAgent(name="seq", sub_agents=[a, b], description="two steps")

    assert a.parent_agent is seq
    assert seq.find_sub_agent("b") is b
    assert seq.find_agent("seq") is seq
    assert seq.find_sub_agent("seq") is None
    with pytest.raises(ValueError, match="agent 'a' already has parent 'seq'"):
        SequentialAgent(name="other", sub_agents=[a])
    with pytest.raises(ValueError, match="used more than once: x"):
        SequentialAgent(
            name="top", sub_agents=[Step(name="x", runs=runs), Step(name="x", runs=runs)]
        )
    with pytest.raises(ValueError, match="must be a Python identifier"):
        Step(name="not valid", runs=runs)
    with pytest.raises(ValueError, match="'user' is reserved"):
        Step(name="user", runs=runs)


def test_agents_declare_their_own_fields_and_refuse_unknown_ones() -> None:
    agent = LlmAgent(name="a", model=ScriptedModel(), output_key="k")

    assert agent.output_key == "k"
    assert agent.rerun_on_resume
    with pytest.raises(ValueError, match="nonsense"):
        LlmAgent(name="a", nonsense=1)  # pyright: ignore[reportCallIssue] -- the point of the test


async def test_run_async_needs_the_ctx_an_agent_was_given() -> None:
    step = Step(name="a", runs=Runs())
    fake: JsonValue = None

    events = step.run_async(fake)  # pyright: ignore[reportArgumentType] -- wrong on purpose

    with pytest.raises(TypeError, match="pass that ctx on to sub-agents"):
        await anext(events)


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_an_agent_node_resumes_inside_its_workflow(make: MakeRunner, resumable: bool) -> None:
    runs = Runs(fail={"c": {1}})
    seq = SequentialAgent(name="seq", sub_agents=[Step(name=n, runs=runs) for n in "abc"])

    def shout(node_input: str) -> str:
        runs.bump("shout")
        return node_input.upper()

    h = await make(Workflow(name="wf", edges=[("START", seq, shout)]), resumable=resumable)
    with pytest.raises(Boom):
        await h.start()
    events = await h.collect(invocation_id=(await h.invocation()).id)

    assert runs.count == {"a": 1, "b": 1, "c": 2, "shout": 1}
    assert events[-1].output == "C DONE"


def test_an_agent_class_without_run_async_impl_is_refused_when_built() -> None:
    class Forgetful(BaseAgent):
        note: str = ""

    with pytest.raises(TypeError, match="Forgetful 'f' cannot run: it does not implement"):
        Forgetful(name="f")
    with pytest.raises(TypeError, match="BaseAgent 'b' cannot run"):
        BaseAgent(name="b")


def test_a_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout"):
        Step(name="a", runs=Runs(), timeout=0)
