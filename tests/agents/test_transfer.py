"""Agent transfer on every backend and in both modes: an LlmAgent hands the conversation
to a sub-agent with `transfer_to_agent`; a pause inside the sub-agent resumes there after
a restart, and nothing that committed is asked or run again."""

from __future__ import annotations

import pytest

from baton.agents import LlmAgent
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus
from baton.tools import LongRunningFunctionTool
from baton.types import FunctionCall
from tests.agents.examples import load_example
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, asked, attach_harness, build_harness


@pytest.fixture(params=[True, False], ids=["resumable", "replay"])
def resumable(request: pytest.FixtureRequest) -> bool:
    return request.param


def transfer(name: str, call_id: str = "t1") -> FunctionCall:
    return FunctionCall(id=call_id, name="transfer_to_agent", args={"agent_name": name})


def build(counter: Counter, triage_script: list[object]) -> LlmAgent:
    def approve_refund(order: str) -> None:
        """Ask a person to approve a refund.

        Args:
            order: the order.
        """
        counter.bump("approve_refund")

    def refunds_model(request: LlmRequest) -> object:
        counter.bump("refunds model")
        answered = [r for c in request.contents for r in c.function_responses]
        if not answered:
            return [FunctionCall(id="r1", name="approve_refund", args={"order": "42"})]
        return "Refund of order 42 done."

    def sales_model(request: LlmRequest) -> object:
        counter.bump("sales model")
        return "Sales here."

    def triage_model(request: LlmRequest) -> object:
        counter.bump("triage model")
        return triage_script[counter.runs["triage model"] - 1]

    refunds = LlmAgent(
        name="refunds",
        description="Handles refunds.",
        model=ScriptedModel(responder=refunds_model),  # pyright: ignore[reportArgumentType] -- script items
        tools=[LongRunningFunctionTool(approve_refund)],
    )
    sales = LlmAgent(
        name="sales",
        description="Answers sales questions.",
        model=ScriptedModel(responder=sales_model),  # pyright: ignore[reportArgumentType] -- script items
    )
    return LlmAgent(
        name="triage",
        model=ScriptedModel(responder=triage_model),  # pyright: ignore[reportArgumentType] -- script items
        sub_agents=[refunds, sales],
    )


async def test_a_pause_inside_the_transferred_to_agent_resumes_there_after_a_restart(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()
    h = await build_harness(
        build(counter, [[transfer("refunds")]]),
        BaseSessionService(stores.open()),
        resumable=resumable,
    )

    first = await h.start("refund order 42 please")

    assert asked(first) == ["r1"]
    assert [e.actions.transfer_to_agent for e in first if e.actions.transfer_to_agent] == [
        "refunds"
    ]
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    again: Harness = attach_harness(
        build(counter, [[transfer("refunds")]]),
        BaseSessionService(stores.open()),
        h.session_id,
        resumable=resumable,
    )

    last = await again.answer(("r1", {"approved": True}), name="approve_refund")

    replies = [(e.author, e.content.text) for e in last if e.content and e.content.text]
    assert replies == [("refunds", "Refund of order 42 done.")]
    assert counter.runs == {"triage model": 1, "refunds model": 2, "approve_refund": 1}
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


async def test_the_model_sees_the_transfer_tool_and_an_unknown_name_is_refused(
    stores: StoreFactory,
) -> None:
    counter = Counter()
    agent = build(counter, [[transfer("nobody")], [transfer("sales", "t2")]])
    h = await build_harness(agent, BaseSessionService(stores.open()), resumable=True)

    events = await h.start("how much is it?")

    model = agent.canonical_model
    assert isinstance(model, ScriptedModel)
    first, second = model.requests
    [declaration] = [
        d
        for t in first.config.tools or []
        for d in t.function_declarations or []
        if d.name == "transfer_to_agent"
    ]
    assert declaration.parameters is not None
    assert declaration.parameters["properties"] == {
        "agent_name": {
            "type": "string",
            "description": "the agent name to transfer to.",
            "enum": ["refunds", "sales"],
        }
    }
    [refusal] = [r.response for c in second.contents for r in c.function_responses]
    assert refusal == {
        "error": "there is no agent 'nobody' to transfer to; choose one of: refunds, sales."
    }
    assert [(e.author, e.content.text) for e in events if e.content and e.content.text] == [
        ("sales", "Sales here.")
    ]
    assert counter.runs == {"triage model": 2, "sales model": 1}


async def test_the_bank_desk_example_transfers_confirms_and_records(stores: StoreFactory) -> None:
    example = load_example("bank_desk")
    h = await build_harness(example.root_agent, BaseSessionService(stores.open()), resumable=True)

    first = await h.start("Please send 250 to Bob")

    [iid] = asked(first)
    assert iid.startswith("adk-confirm-")
    last = await h.answer((iid, {"confirmed": True}), name="adk_request_confirmation", wrap=False)

    assert [e.content.text for e in last if e.content and e.content.text] == [
        "Done: 250 sent to Bob."
    ]
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state == {"ledger": ["250 to Bob"]}
