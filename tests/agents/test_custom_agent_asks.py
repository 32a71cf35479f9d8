"""A custom agent asks a person with RequestInput, as a function node does."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from pydantic import BaseModel

from baton import BaseAgent, Event, InvocationContext, RequestInput, Workflow
from tests.harness import MakeHarness, asked, outputs


class Approval(BaseModel):
    approved: bool


class Gatekeeper(BaseAgent):
    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        answer = ctx.resume_inputs.get("gate")
        if answer is None:
            yield RequestInput(  # pyright: ignore[reportReturnType] -- agents may yield RequestInput
                interrupt_id="gate", message="Let it through?", response_schema=Approval
            )
            return
        yield Event(author=self.name, output="open" if answer["approved"] else "closed")


async def test_custom_agent_request_input_is_indexed_and_answered(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(Workflow(name="wf", edges=[("START", Gatekeeper(name="gate_agent"))]))
    events = await h.start()
    assert asked(events) == ["gate"]
    [row] = await h.service.store.list_interrupts("app", "u")
    assert (row.message, row.response_schema) == ("Let it through?", Approval.model_json_schema())
    done = await h.answer(("gate", {"approved": True}), wrap=False)
    assert ("gate_agent", "open") in outputs(done)
