"""An LlmAgent subclass, as code written for the reference declares one: its own field
and its own `_run_async_impl` around the inherited one, run for real."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from baton import Workflow, types
from baton.agents import LlmAgent
from baton.context import InvocationContext
from baton.events import Event
from baton.models import ScriptedModel
from tests.agents.conftest import MakeRunner


class SignedAgent(LlmAgent):
    """Replies as an LlmAgent does, then adds a signature of its own."""

    signature: str = "--"

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        async for event in super()._run_async_impl(ctx):
            yield event
        yield Event(author=self.name, message=types.ModelContent(self.signature))


async def test_an_llm_agent_subclass_runs_its_own_code_around_the_inherited_run(
    make: MakeRunner,
) -> None:
    model = ScriptedModel(responses=["hello"])
    h = await make(SignedAgent(name="signed", model=model, signature="-- signed"))

    events = await h.start()

    said = [(e.author, e.content.text) for e in events if e.content and e.content.text]
    assert said == [("signed", "hello"), ("signed", "-- signed")]
    assert len(model.requests) == 1


async def test_an_llm_agent_subclass_runs_as_a_workflow_node_keeping_its_class(
    make: MakeRunner,
) -> None:
    model = ScriptedModel(responses=["hello"])
    agent = SignedAgent(name="signed", model=model, signature="-- node")
    h = await make(Workflow(name="wf", edges=[("START", agent)]))

    events = await h.start()

    said = [e.content.text for e in events if e.content and e.content.text]
    assert said[-2:] == ["hello", "-- node"]
