"""BaseAgent: a pydantic model, a node, and the ctx custom agents receive."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import pytest
from pydantic import InstanceOf, JsonValue

from baton import (
    App,
    BaseAgent,
    BaseAgentState,
    Event,
    InvocationContext,
    ResumabilityConfig,
    Runner,
    SequentialAgent,
    Workflow,
)
from baton.agents import LlmAgent
from baton.errors import WorkflowChangedError
from baton.models import ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus
from tests.agents.agents import Boom, Runs, Step, texts
from tests.agents.conftest import MakeRunner
from tests.harness import Harness, outputs


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
    # Ended for it (it returned without waiting): stored, and shown to no caller, as the
    # reference ends no custom agent with an event.
    assert not [e for e in events if e.actions.end_of_agent]
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert [e.author for e in session.events if e.actions.end_of_agent] == ["w", "reader"]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_an_agent_is_a_workflow_node_and_its_reply_the_output(make: MakeRunner) -> None:
    seq = SequentialAgent(name="seq", sub_agents=[Step(name="a", runs=Runs())])

    def shout(node_input: str) -> str:
        return node_input.upper()

    h = await make(Workflow(name="wf", edges=[("START", seq, shout)]))
    events = await h.start()

    # The reply is said once (by the sub-agent); it is the node's output, which shout gets.
    assert texts(events) == [("a", "a done")]
    assert outputs(events) == [("shout", "A DONE")]


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
    assert outputs(events)[-1][1] == "C DONE"


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


class Checkpointed(BaseAgent):
    """Checkpoints `{"step": 1}`, then fails on its first run; reads it back as `state_type`."""

    state_type: type[BaseAgentState]
    runs: InstanceOf[Runs]

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        if self._load_agent_state(ctx, self.state_type) is None:
            yield self._create_agent_state_event(ctx, StepState(step=1))
        self.runs.bump(self.name)
        yield Event(author=self.name, message="done")


class StepState(BaseAgentState):
    step: int


class StageState(BaseAgentState):
    stage: str


async def resume_with(h: Harness, service: BaseSessionService, root: BaseAgent) -> None:
    """Resume the harness's last invocation with another version of the app's code."""
    app = App(
        name="app", root_agent=root, resumability_config=ResumabilityConfig(is_resumable=True)
    )
    changed = Harness(Runner(app=app, session_service=service), service, h.session_id)
    await changed.collect(invocation_id=(await h.invocation()).id)


async def test_a_checkpoint_that_no_longer_fits_its_state_class_is_reported(
    make: MakeRunner, service: BaseSessionService
) -> None:
    runs = Runs(fail={"agent": {1}})
    h = await make(Checkpointed(name="agent", state_type=StepState, runs=runs))
    with pytest.raises(Boom):
        await h.start()

    with pytest.raises(WorkflowChangedError, match=r"checkpoint \{'step': 1\}.*StageState"):
        await resume_with(h, service, Checkpointed(name="agent", state_type=StageState, runs=runs))
    await resume_with(h, service, Checkpointed(name="agent", state_type=StepState, runs=runs))

    assert runs.count == {"agent": 2}
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_sequence_resumed_at_a_sub_agent_it_no_longer_has_is_reported(
    make: MakeRunner, service: BaseSessionService
) -> None:
    runs = Runs(fail={"b": {1}})

    def tree(*names: str) -> SequentialAgent:
        inner = SequentialAgent(name="inner", sub_agents=[Step(name=n, runs=runs) for n in names])
        return SequentialAgent(name="top", sub_agents=[inner])

    h = await make(tree("a", "b", "c"))
    with pytest.raises(Boom):
        await h.start()

    with pytest.raises(WorkflowChangedError, match="sub-agent 'b' of 'top/inner' was removed"):
        await resume_with(h, service, tree("a", "c"))
    await resume_with(h, service, tree("a", "b", "c"))

    assert runs.count == {"a": 1, "b": 2, "c": 1}
