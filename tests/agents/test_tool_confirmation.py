"""Tool confirmation (seed 002's "Confirmations") on every backend: the reference's
`adk_request_confirmation` call, approve or reject after a restart, a confirmed call runs
once, bad answers are refused with nothing stored."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from baton.agents import LlmAgent
from baton.errors import InvalidResponseError
from baton.events import REQUEST_CONFIRMATION_FUNCTION
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InterruptStatus, InvocationStatus
from baton.tools import FunctionTool, ToolContext
from baton.types import FunctionCall
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, asked, attach_harness, build_harness

CALL = FunctionCall(id="call-1", name="transfer", args={"amount": 500, "to": "bob"})


def responses(request: LlmRequest) -> dict[str, object]:
    return {r.id or "": r.response for c in request.contents for r in c.function_responses}


def build_agent(counter: Counter, model: ScriptedModel, *, rule: Any = True) -> LlmAgent:
    def transfer(amount: int, to: str) -> dict[str, JsonValue]:
        """Transfer money.

        Args:
            amount: how much.
            to: to whom.
        """
        counter.bump("transfer")
        return {"sent": amount, "to": to}

    tool = FunctionTool(transfer, require_confirmation=rule)
    return LlmAgent(name="bank", model=model, tools=[tool])


async def start(stores: StoreFactory, agent: LlmAgent) -> Harness:
    return await build_harness(agent, BaseSessionService(stores.open()), resumable=True)


def restarted(h: Harness, stores: StoreFactory, agent: LlmAgent) -> Harness:
    return attach_harness(agent, BaseSessionService(stores.open()), h.session_id, resumable=True)


async def test_a_confirmed_call_runs_once_after_a_restart(stores: StoreFactory) -> None:
    counter = Counter()
    model = ScriptedModel(responses=[[CALL], "sent"])
    h = await start(stores, build_agent(counter, model))

    first = await h.start("pay bob 500")

    [request] = [c for e in first for c in e.function_calls if c.name != "transfer"]
    assert request.model_dump(by_alias=True, exclude_none=True) == {
        "id": "adk-confirm-call-1",
        "name": REQUEST_CONFIRMATION_FUNCTION,
        "args": {
            "originalFunctionCall": {
                "id": "call-1",
                "name": "transfer",
                "args": {"amount": 500, "to": "bob"},
            },
            "toolConfirmation": {
                "hint": "Please approve or reject the tool call transfer() by responding with a "
                "FunctionResponse with an expected ToolConfirmation payload.",
                "confirmed": False,
            },
        },
    }
    assert asked(first) == ["adk-confirm-call-1"]
    assert counter.runs == {}
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    [row] = await h.service.store.list_interrupts("app", "u", session_id=h.key.session_id)
    assert row.function_name == REQUEST_CONFIRMATION_FUNCTION
    assert row.payload == request.args
    again = restarted(h, stores, build_agent(counter, model))

    await again.answer(
        ("adk-confirm-call-1", {"confirmed": True}), name=REQUEST_CONFIRMATION_FUNCTION, wrap=False
    )

    assert counter.runs == {"transfer": 1}
    assert responses(model.requests[-1]) == {"call-1": {"sent": 500, "to": "bob"}}
    # The confirmation exchange is between the agent and a person; the model never sees it.
    names = {
        p.function_call.name
        for c in model.requests[-1].contents
        for p in c.parts or []
        if p.function_call
    }
    assert names == {"transfer"}
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


async def test_a_rejected_call_reports_the_rejection_to_the_model(stores: StoreFactory) -> None:
    counter = Counter()
    model = ScriptedModel(responses=[[CALL], "not sent"])
    h = await start(stores, build_agent(counter, model))
    await h.start("pay bob 500")

    await h.answer(
        ("adk-confirm-call-1", {"response": '{"confirmed": false}'}),
        name=REQUEST_CONFIRMATION_FUNCTION,
        wrap=False,
    )

    assert counter.runs == {}
    assert responses(model.requests[-1]) == {"call-1": {"error": "This tool call is rejected."}}
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_rule_of_the_arguments_decides_which_calls_wait(stores: StoreFactory) -> None:
    counter = Counter()
    small = FunctionCall(id="call-2", name="transfer", args={"amount": 5, "to": "amy"})
    model = ScriptedModel(responses=[[small, CALL], "done"])

    async def over_100(amount: int) -> bool:
        return amount > 100

    h = await start(stores, build_agent(counter, model, rule=over_100))

    first = await h.start("pay both")

    assert asked(first) == ["adk-confirm-call-1"]
    assert counter.runs == {"transfer": 1}  # the small one ran at once
    await h.answer(
        ("adk-confirm-call-1", {"confirmed": True}), name=REQUEST_CONFIRMATION_FUNCTION, wrap=False
    )
    assert counter.runs == {"transfer": 2}
    assert responses(model.requests[-1]) == {
        "call-2": {"sent": 5, "to": "amy"},
        "call-1": {"sent": 500, "to": "bob"},
    }


async def test_request_confirmation_from_inside_a_tool_gets_the_payload(
    stores: StoreFactory,
) -> None:
    counter = Counter()
    seen: list[Any] = []

    def book(room: str, tool_context: ToolContext) -> str:
        """Book a room.

        Args:
            room: which room.
        """
        counter.bump("book")
        confirmation = tool_context.tool_confirmation
        if confirmation is None:
            tool_context.request_confirmation(hint=f"Book {room}?", payload={"nights": 1})
            return "waiting"
        seen.append(confirmation.payload)
        return f"booked {room} for {confirmation.payload['nights']} nights"

    model = ScriptedModel(
        responses=[[FunctionCall(id="c", name="book", args={"room": "blue"})], "ok"]
    )
    h = await start(stores, LlmAgent(name="hotel", model=model, tools=[book]))

    first = await h.start("book blue")
    [row] = await h.service.store.list_interrupts("app", "u", session_id=h.key.session_id)
    assert row.message == "Book blue?"
    assert asked(first) == ["adk-confirm-c"]
    await h.answer(
        ("adk-confirm-c", {"confirmed": True, "payload": {"nights": 3}}),
        name=REQUEST_CONFIRMATION_FUNCTION,
        wrap=False,
    )

    assert seen == [{"nights": 3}]
    assert counter.runs == {"book": 2}
    assert responses(model.requests[-1]) == {"c": {"result": "booked blue for 3 nights"}}


@pytest.mark.parametrize(
    "answer",
    [{"confirmed": "yes"}, {"approved": True}, {"confirmed": True, "extra": 1}],
)
async def test_a_bad_confirmation_answer_is_refused_and_stores_nothing(
    stores: StoreFactory, answer: dict[str, JsonValue]
) -> None:
    counter = Counter()
    model = ScriptedModel(responses=[[CALL], "sent"])
    h = await start(stores, build_agent(counter, model))
    await h.start("pay bob 500")
    before = await h.service.store.get_session(h.key)
    assert before is not None

    with pytest.raises(InvalidResponseError, match="adk-confirm-call-1"):
        await h.answer(
            ("adk-confirm-call-1", answer), name=REQUEST_CONFIRMATION_FUNCTION, wrap=False
        )

    after = await h.service.store.get_session(h.key)
    assert after is not None
    assert [e.id for e in after.events] == [e.id for e in before.events]
    open_rows = await h.service.store.list_interrupts(
        "app", "u", session_id=h.key.session_id, status=InterruptStatus.OPEN
    )
    assert [r.interrupt_id for r in open_rows] == ["adk-confirm-call-1"]
    assert counter.runs == {}


def test_require_confirmation_must_be_a_bool_or_a_function() -> None:
    def tool(x: int) -> int:
        return x

    with pytest.raises(TypeError, match="require_confirmation of tool 'tool'"):
        FunctionTool(tool, require_confirmation="always")  # pyright: ignore[reportArgumentType] -- the bad input under test


async def test_after_tool_callbacks_see_what_a_call_waiting_for_confirmation_gave(
    stores: StoreFactory,
) -> None:
    # As in the reference: each before_tool_callback has its after_tool_callback, which
    # sees the placeholder (or the tool's own return) of a call that waits for a person;
    # neither is sent to the model, which gets only the confirmed call's result.
    seen: list[tuple[str, str, JsonValue]] = []

    def before(tool: Any, args: dict[str, Any], tool_context: ToolContext) -> None:
        seen.append(("before", tool.name, None))

    def after(
        tool: Any, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
    ) -> None:
        seen.append(("after", tool.name, tool_response))

    def book(room: str, tool_context: ToolContext) -> str:
        """Book a room.

        Args:
            room: which room.
        """
        if tool_context.tool_confirmation is None:
            tool_context.request_confirmation(hint=f"Book {room}?")
            return "waiting"
        return f"booked {room}"

    def transfer(amount: int, to: str) -> dict[str, JsonValue]:
        """Transfer money.

        Args:
            amount: how much.
            to: to whom.
        """
        return {"sent": amount, "to": to}

    model = ScriptedModel(
        [[CALL, FunctionCall(id="c", name="book", args={"room": "blue"})], "done"]
    )
    agent = LlmAgent(
        name="bank",
        model=model,
        tools=[FunctionTool(transfer, require_confirmation=True), book],
        before_tool_callback=before,
        after_tool_callback=after,
    )
    h = await start(stores, agent)

    await h.start("pay bob 500 and book blue")
    asked_first = list(seen)
    await h.answer(
        ("adk-confirm-call-1", {"confirmed": True}),
        ("adk-confirm-c", {"confirmed": True}),
        name=REQUEST_CONFIRMATION_FUNCTION,
        wrap=False,
    )

    # The two calls run at once: each one's callbacks come in order, the two interleaved.
    def of(tool: str, entries: list[tuple[str, str, JsonValue]]) -> list[tuple[str, JsonValue]]:
        return [(when, response) for when, name, response in entries if name == tool]

    assert len(asked_first) == 4
    assert of("transfer", asked_first) == [("before", None), ("after", PLACEHOLDER)]
    assert of("book", asked_first) == [("before", None), ("after", "waiting")]
    assert of("transfer", seen[4:]) == [("before", None), ("after", {"sent": 500, "to": "bob"})]
    assert of("book", seen[4:]) == [("before", None), ("after", "booked blue")]
    assert responses(model.requests[-1]) == {
        "call-1": {"sent": 500, "to": "bob"},
        "c": {"result": "booked blue"},
    }


PLACEHOLDER = {"error": "This tool call requires confirmation, please approve or reject."}
