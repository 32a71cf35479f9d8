"""Agent transfer on every backend and in both modes: an LlmAgent hands the conversation
to a sub-agent with `transfer_to_agent`; a pause inside the sub-agent resumes there after
a restart, and nothing that committed is asked or run again."""

from __future__ import annotations

import pytest

from baton.agents import LlmAgent
from baton.events import Event
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus
from baton.tools import LongRunningFunctionTool
from baton.types import FunctionCall
from tests.agents.examples import load_example
from tests.agents.quoting import PREAMBLE, called, returned, said, turns
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
            "description": "the name of the agent to hand the conversation to.",
            "enum": ["refunds", "sales"],
        }
    }
    [refusal] = [r.response for c in second.contents for r in c.function_responses]
    assert refusal == {
        "error": (
            "there is no agent 'nobody' that 'triage' can transfer to; choose one of: "
            "refunds, sales."
        )
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


def family(
    counter: Counter,
    scripts: dict[str, list[object]],
    *,
    to_parent: bool = True,
    to_peers: bool = True,
) -> LlmAgent:
    """triage over refunds and sales, each model answering from its script in turn;
    `approve_refund` is a long-running tool of refunds and of triage."""

    def approve_refund(order: str) -> None:
        """Ask a person to approve a refund.

        Args:
            order: the order.
        """
        counter.bump("approve_refund")

    def scripted(name: str) -> ScriptedModel:
        def respond(request: LlmRequest) -> object:
            counter.bump(name)
            return scripts[name][counter.runs[name] - 1]

        return ScriptedModel(responder=respond)  # pyright: ignore[reportArgumentType] -- script items

    refunds = LlmAgent(
        name="refunds",
        description="Handles refunds.",
        model=scripted("refunds"),
        tools=[LongRunningFunctionTool(approve_refund)],
        disallow_transfer_to_parent=not to_parent,
        disallow_transfer_to_peers=not to_peers,
    )
    sales = LlmAgent(name="sales", description="Answers sales questions.", model=scripted("sales"))
    return LlmAgent(
        name="triage",
        description="Routes questions.",
        model=scripted("triage"),
        tools=[LongRunningFunctionTool(approve_refund)],
        sub_agents=[refunds, sales],
    )


def approve(call_id: str) -> FunctionCall:
    return FunctionCall(id=call_id, name="approve_refund", args={"order": "42"})


async def approve_after_restart(
    h: Harness, root: LlmAgent, stores: StoreFactory, resumable: bool
) -> tuple[Harness, list[Event]]:
    """A new process (a new Runner and store) approves the paused call 'r1'."""
    again = attach_harness(
        root, BaseSessionService(stores.open()), h.session_id, resumable=resumable
    )
    return again, await again.answer(("r1", {"approved": True}), name="approve_refund")


def replies(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.author, e.content.text) for e in events if e.content and e.content.text]


def offered(agent: LlmAgent, call: int = 0) -> list[str]:
    """The agent names the agent's model was offered in its `call`-th request."""
    model = agent.canonical_model
    assert isinstance(model, ScriptedModel)
    [declaration] = [
        d
        for t in model.requests[call].config.tools or []
        for d in t.function_declarations or []
        if d.name == "transfer_to_agent"
    ]
    assert declaration.parameters is not None
    properties = declaration.parameters["properties"]
    assert isinstance(properties, dict)
    agent_name = properties["agent_name"]
    assert isinstance(agent_name, dict)
    enum = agent_name["enum"]
    assert isinstance(enum, list)
    return [str(name) for name in enum]


async def test_a_sub_agent_may_transfer_to_its_peer_which_keeps_the_next_message(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()
    scripts: dict[str, list[object]] = {
        "triage": [[transfer("refunds")]],
        "refunds": [[transfer("sales", "t2")]],
        "sales": ["Sales here.", "Still sales."],
    }
    root = family(counter, scripts)
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=resumable)

    first = await h.start("how much is it?")
    second = await h.start("and with tax?")

    assert replies(first) == [("sales", "Sales here.")]
    assert replies(second) == [("sales", "Still sales.")]
    assert counter.runs == {"triage": 1, "refunds": 1, "sales": 2}
    refunds, sales = root.sub_agents
    assert isinstance(refunds, LlmAgent)
    assert isinstance(sales, LlmAgent)
    assert offered(root) == ["refunds", "sales"]
    assert offered(refunds) == ["triage", "sales"]
    assert offered(sales) == ["triage", "refunds"]


async def test_a_transfer_back_to_the_parent_asks_the_parent_again_with_what_was_said(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()
    scripts: dict[str, list[object]] = {
        "triage": [[transfer("refunds")], "Triage again."],
        "refunds": [["Not a refund.", transfer("triage", "t2")]],
    }
    root = family(counter, scripts)
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=resumable)

    events = await h.start("how much is it?")

    assert replies(events) == [("refunds", "Not a refund."), ("triage", "Triage again.")]
    assert counter.runs == {"triage": 2, "refunds": 1}
    model = root.canonical_model
    assert isinstance(model, ScriptedModel)
    # As google-adk 2.13.0 shows them: refunds' reply and transfer, quoted.
    assert turns(model.requests[1]) == [
        ("user", ["how much is it?"]),
        ("model", ["call transfer_to_agent({'agent_name': 'refunds'})"]),
        ("user", ["result transfer_to_agent={'result': None}"]),
        (
            "user",
            [
                PREAMBLE,
                said("refunds", "Not a refund."),
                called("refunds", "transfer_to_agent", "{'agent_name': 'triage'}"),
            ],
        ),
        ("user", [PREAMBLE, returned("refunds", "transfer_to_agent", "{'result': None}")]),
    ]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_pause_inside_a_peer_resumes_there_after_a_restart(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()
    scripts: dict[str, list[object]] = {
        "triage": [[transfer("sales")]],
        "sales": [[transfer("refunds", "t2")]],
        "refunds": [[approve("r1")], "Refund of order 42 done."],
    }
    h = await build_harness(
        family(counter, scripts), BaseSessionService(stores.open()), resumable=resumable
    )

    first = await h.start("refund order 42 please")

    assert asked(first) == ["r1"]
    assert (await h.invocation()).status == InvocationStatus.PAUSED

    again, last = await approve_after_restart(h, family(counter, scripts), stores, resumable)

    assert replies(last) == [("refunds", "Refund of order 42 done.")]
    assert counter.runs == {"triage": 1, "sales": 1, "refunds": 2, "approve_refund": 1}
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


async def test_a_pause_inside_the_parent_handed_back_to_resumes_there_after_a_restart(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()
    scripts: dict[str, list[object]] = {
        "triage": [[transfer("refunds")], [approve("r1")], "Approved, refunding."],
        "refunds": [["Triage must approve.", transfer("triage", "t2")]],
    }
    h = await build_harness(
        family(counter, scripts), BaseSessionService(stores.open()), resumable=resumable
    )

    first = await h.start("refund order 42 please")

    assert asked(first) == ["r1"]

    again, last = await approve_after_restart(h, family(counter, scripts), stores, resumable)

    assert replies(last) == [("triage", "Approved, refunding.")]
    assert counter.runs == {"triage": 3, "refunds": 1, "approve_refund": 1}
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


async def test_the_next_message_pauses_in_the_agent_it_went_to_and_resumes_there(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()
    scripts: dict[str, list[object]] = {
        "triage": [[transfer("refunds")]],
        "refunds": ["Which order?", [approve("r1")], "Refund of order 42 done."],
    }
    h = await build_harness(
        family(counter, scripts), BaseSessionService(stores.open()), resumable=resumable
    )
    await h.start("refund please")

    second = await h.start("order 42")

    assert asked(second) == ["r1"]
    _, last = await approve_after_restart(h, family(counter, scripts), stores, resumable)

    assert replies(last) == [("refunds", "Refund of order 42 done.")]
    assert counter.runs == {"triage": 1, "refunds": 3, "approve_refund": 1}


async def test_an_agent_that_may_not_go_back_up_leaves_the_next_message_to_the_root(
    stores: StoreFactory,
) -> None:
    counter = Counter()
    scripts: dict[str, list[object]] = {
        "triage": [[transfer("refunds")], "Triage here."],
        "refunds": ["Refunded."],
    }
    root = family(counter, scripts, to_parent=False)
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=True)
    await h.start("refund please")

    second = await h.start("thanks")

    assert replies(second) == [("triage", "Triage here.")]
    refunds = root.sub_agents[0]
    assert isinstance(refunds, LlmAgent)
    assert offered(refunds) == ["sales"]


@pytest.mark.parametrize(
    ("to_parent", "to_peers", "target", "error"),
    [
        (
            True,
            False,
            "sales",
            "agent 'refunds' may not transfer to its peer 'sales' (disallow_transfer_to_peers "
            "is set); choose one of: triage.",
        ),
        (
            False,
            True,
            "triage",
            "agent 'refunds' may not transfer to its parent 'triage' (disallow_transfer_to_parent "
            "is set); choose one of: sales.",
        ),
        (
            True,
            True,
            "refunds",
            "agent 'refunds' cannot transfer to itself; choose one of: triage, sales.",
        ),
    ],
    ids=["peer", "parent", "itself"],
)
async def test_a_transfer_the_agent_may_not_make_is_refused_to_its_model(
    stores: StoreFactory, to_parent: bool, to_peers: bool, target: str, error: str
) -> None:
    counter = Counter()
    scripts: dict[str, list[object]] = {
        "triage": [[transfer("refunds")]],
        "refunds": [[transfer(target, "t2")], "Refunds still here."],
    }
    root = family(counter, scripts, to_parent=to_parent, to_peers=to_peers)
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=True)

    events = await h.start("refund please")

    refunds = root.sub_agents[0]
    assert isinstance(refunds, LlmAgent)
    model = refunds.canonical_model
    assert isinstance(model, ScriptedModel)
    [refusal] = [r.response for c in model.requests[1].contents for r in c.function_responses]
    assert refusal == {"error": error}
    assert [e.actions.transfer_to_agent for e in events if e.actions.transfer_to_agent] == [
        "refunds"
    ]
    assert replies(events) == [("refunds", "Refunds still here.")]
    assert counter.runs == {"triage": 1, "refunds": 2}


async def test_the_help_desk_example_hands_down_across_and_back_up_after_a_restart(
    stores: StoreFactory,
) -> None:
    example = load_example("help_desk")
    h = await build_harness(example.root_agent, BaseSessionService(stores.open()), resumable=True)

    first = await h.start("Please refund order 42, it arrived broken")

    assert [e.actions.transfer_to_agent for e in first if e.actions.transfer_to_agent] == [
        "billing",
        "refunds",
    ]
    [call] = [c for e in first for c in e.function_calls if c.name == "approve_refund"]
    assert call.args == {"order": "42"}
    again = attach_harness(
        load_example("help_desk").root_agent,
        BaseSessionService(stores.open()),
        h.session_id,
        resumable=True,
    )
    last = await again.answer(
        (call.id or "", {"approved": True}), name="approve_refund", wrap=False
    )

    assert replies(last) == [
        ("refunds", "Your refund was approved and is on its way."),
        ("triage", "Glad that is sorted. Anything else I can do?"),
    ]
    assert (await again.invocation()).status == InvocationStatus.COMPLETED
