"""What events a node run emits, as the reference emits them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import JsonValue

from baton import (
    Context,
    Event,
    FunctionNode,
    LlmAgent,
    RequestInput,
    Workflow,
    types,
)
from baton.errors import WorkflowConfigurationError
from baton.events import EventActions, NodeInfo, to_json_value
from baton.models import ScriptedModel
from baton.workflow import NodeTimeoutError
from tests.harness import MakeHarness, outputs


async def test_a_node_returning_content_emits_a_message_not_an_output(
    make_harness: MakeHarness,
) -> None:
    def reply(node_input: str) -> types.Content:
        return types.Content(role="model", parts=[types.Part(text=f"hello {node_input}")])

    h = await make_harness(Workflow(name="wf", edges=[("START", reply)]))
    events = await h.start("ann")
    assert outputs(events) == []
    messages = [e for e in events if e.node_info and e.node_info.name == "reply"]
    assert [e.author for e in messages] == ["wf"]  # a function node's events: its workflow's
    assert messages[0].content is not None
    assert messages[0].content.text == "hello ann"


async def test_a_node_that_only_writes_state_emits_an_event_with_the_delta(
    make_harness: MakeHarness,
) -> None:
    def remember(ctx: Context, node_input: str) -> None:
        ctx.state["seen"] = node_input

    h = await make_harness(Workflow(name="wf", edges=[("START", remember)]))
    events = await h.start("x")
    written = [e for e in events if e.node_info and e.node_info.name == "remember"]
    assert [e.author for e in written] == ["wf"]
    assert [e.actions.state_delta for e in written] == [{"seen": "x"}]
    assert written[0].node_info is not None
    assert written[0].node_info.name == "remember"
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state == {"seen": "x"}


async def test_a_node_that_writes_nothing_emits_nothing(make_harness: MakeHarness) -> None:
    def quiet(node_input: str) -> None:
        return None

    h = await make_harness(Workflow(name="wf", edges=[("START", quiet)]))
    assert [e for e in await h.start("x") if e.author == "quiet"] == []


async def test_events_are_signed_by_the_enclosing_workflow_as_in_the_reference(
    make_harness: MakeHarness,
) -> None:
    def note(ctx: Context, node_input: str) -> str:
        ctx.state["noted"] = node_input
        return f"noted {node_input}"

    def ask(node_input: str) -> RequestInput:
        return RequestInput(interrupt_id="ok", message=f"{node_input}?")

    inner = Workflow(name="inner", edges=[("START", note, ask)])
    h = await make_harness(Workflow(name="outer", edges=[("START", inner)]))
    events = await h.start("x")
    signed = [(e.author, e.node_info.path) for e in events if e.node_info]
    assert signed == [
        ("inner", "outer@1/inner@1/note@1"),
        ("inner", "outer@1/inner@1/ask@1"),
    ]
    assert outputs(events) == [("note", "noted x")]  # people still read the node's name


async def test_an_event_names_the_node_that_wrote_it_and_a_checkpoint_none(
    make_harness: MakeHarness,
) -> None:
    def draft(node_input: str) -> str:
        return f"draft {node_input}"

    writer = LlmAgent(name="writer", model=ScriptedModel(["done"]))
    h = await make_harness(Workflow(name="wf", edges=[("START", draft, writer)]), resumable=True)
    events = await h.start("x")

    # A resumable run streams the agent's end-of-agent checkpoint: it names no node.
    assert [(e.author, e.node_name) for e in events] == [
        ("wf", "draft"),
        ("writer", "writer"),
        ("writer", ""),
    ]
    assert events[-1].actions.end_of_agent
    # Stored, the agent's reply carries its checkpoint too: it still names its node.
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    stored = [(e.author, e.node_name) for e in session.events if e.author == "writer"]
    assert stored == [("writer", "writer"), ("writer", "")]
    assert Event(author="user").node_name == ""


async def test_a_failure_is_signed_by_the_workflow_and_a_lone_node_by_itself(
    make_harness: MakeHarness,
) -> None:
    def boom(node_input: str) -> str:
        raise ValueError(f"bad {node_input}")

    h = await make_harness(Workflow(name="wf", edges=[("START", boom)]))
    with pytest.raises(ValueError, match="bad x"):
        await h.start("x")
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    failed = [e for e in session.events if e.error_code]
    assert [(e.author, e.error_code) for e in failed] == [("wf", "ValueError")]

    def alone(node_input: str) -> str:
        return "alone"

    h = await make_harness(FunctionNode(alone, name="solo"))
    assert [(e.author, e.output) for e in await h.start("x")] == [("solo", "alone")]


async def test_a_nested_workflow_signs_its_own_failure_as_in_the_reference(
    make_harness: MakeHarness,
) -> None:
    # google-adk 2.13.0: a node failing inside `inner` is signed 'inner' (its workflow);
    # `inner`'s own failure (two terminal outputs, its timeout) is signed 'inner' too.
    def b(node_input: str) -> str:
        return "B"

    def c(node_input: str) -> str:
        return "C"

    def boom(node_input: str) -> str:
        raise ValueError("bad")

    async def slow(node_input: str) -> str:
        await asyncio.Event().wait()  # never set: only the timeout ends it
        return "late"

    def after(node_input: str) -> str:
        return "after"

    cases: list[tuple[Workflow, type[Exception], str]] = [
        (
            Workflow(name="inner", edges=[("START", b), ("START", c)]),
            WorkflowConfigurationError,
            "wf@1/inner@1",
        ),
        (Workflow(name="inner", edges=[("START", boom)]), ValueError, "wf@1/inner@1/boom@1"),
        (
            Workflow(name="inner", edges=[("START", slow)], timeout=0.05),
            NodeTimeoutError,
            "wf@1/inner@1",
        ),
    ]
    for inner, error, path in cases:
        h = await make_harness(Workflow(name="wf", edges=[("START", inner, after)]))
        with pytest.raises(error):
            await h.start("x")
        session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
        assert session is not None
        failed = [e for e in session.events if e.error_code]
        assert [(e.author, e.error_code, e.node_info and e.node_info.path) for e in failed] == [
            ("inner", error.__name__, path)
        ]


async def test_an_agents_reply_is_said_once_and_is_its_output(
    make_harness: MakeHarness,
) -> None:
    agent = LlmAgent(name="helper", model=ScriptedModel(responses=["hello there"]))

    def after(node_input: str) -> str:
        return f"after {node_input}"

    h = await make_harness(Workflow(name="wf", edges=[("START", agent, after)]))
    events = await h.start("hi")

    replies = [e for e in events if e.content and e.content.text == "hello there"]
    assert [e.author for e in replies] == ["helper"]  # an agent signs its own events
    [reply] = replies
    assert reply.node_info is not None
    assert reply.node_info.message_as_output is True
    assert reply.node_info.output_for == ["wf@1/helper@1"]
    assert [e.output for e in events if e.output is not None] == ["after hello there"]
    assert outputs(events) == [("helper", "hello there"), ("after", "after hello there")]
    wire = reply.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert wire["nodeInfo"]["messageAsOutput"] is True


Shown = tuple[str, JsonValue, dict[str, JsonValue], JsonValue]


def shown_actions(events: list[Event]) -> list[Shown]:
    """(node, output, state delta, route) of each event of a node run."""
    return [
        (e.node_info.name, e.output, dict(e.actions.state_delta), to_json_value(e.actions.route))
        for e in events
        if e.node_info and e.node_info.path
    ]


async def test_state_written_after_a_nodes_last_event_gets_an_event_of_its_own(
    make_harness: MakeHarness,
) -> None:
    async def late(ctx: Context, node_input: str) -> Any:
        yield types.Content(role="model", parts=[types.Part(text="hi")])
        ctx.state["late"] = 1

    h = await make_harness(Workflow(name="wf", edges=[("START", late)]))

    events = await h.start()

    # As the reference: the session's events show every write (a rewind undoes what
    # they show).
    assert shown_actions(events) == [("late", None, {}, None), ("late", None, {"late": 1}, None)]


def branch_b(node_input: JsonValue) -> str:
    return f"b:{node_input}"


async def test_a_route_set_on_ctx_is_on_an_event(make_harness: MakeHarness) -> None:
    def returns_then_routes(ctx: Context, node_input: JsonValue) -> str:
        ctx.state["s"] = 1
        ctx.route = "b"
        return "v"

    def sets_output_and_route(ctx: Context, node_input: JsonValue) -> None:
        ctx.output = "o"
        ctx.route = "b"

    def routes_only(ctx: Context, node_input: JsonValue) -> None:
        ctx.route = "b"

    expected: dict[Callable[..., object], list[Shown]] = {
        # The returned value's event first, then the route's, as the reference emits them.
        returns_then_routes: [
            ("returns_then_routes", "v", {"s": 1}, None),
            ("returns_then_routes", None, {}, "b"),
        ],
        sets_output_and_route: [("sets_output_and_route", "o", {}, "b")],
        routes_only: [("routes_only", None, {}, "b")],
    }
    for node_fn, first_events in expected.items():
        b = FunctionNode(branch_b, name="b")
        h = await make_harness(Workflow(name="wf", edges=[("START", node_fn, {"b": b})]))

        events = await h.start()

        assert shown_actions(events)[:-1] == first_events
        assert events[-1].output is not None


def branch_a(node_input: JsonValue) -> str:
    return f"a:{node_input}"


async def test_a_route_set_on_ctx_after_an_event_with_another_route_is_on_an_event(
    make_harness: MakeHarness,
) -> None:
    async def decide(ctx: Context, node_input: JsonValue) -> Any:
        yield Event(output="x", route="a")
        ctx.route = "b"

    async def keep(ctx: Context, node_input: JsonValue) -> Any:
        yield Event(output="x", route="b")
        ctx.route = "b"

    # The later route wins, on an event of its own (none when it is the same one), as in
    # the reference: the session's events show where the run went.
    expected: dict[Callable[..., object], list[Shown]] = {
        decide: [("decide", "x", {}, "a"), ("decide", None, {}, "b")],
        keep: [("keep", "x", {}, "b")],
    }
    for node_fn, first_events in expected.items():
        a = FunctionNode(branch_a, name="a")
        b = FunctionNode(branch_b, name="b")
        h = await make_harness(Workflow(name="wf", edges=[("START", node_fn, {"a": a, "b": b})]))

        events = await h.start()

        assert shown_actions(events) == [*first_events, ("b", "b:x", {}, None)]


def test_an_empty_agent_state_names_its_node_as_the_references_does() -> None:
    """The reference leaves the node's name out for an event that carries an agent's
    state, tested by truth: an empty state (a BaseAgentState without fields) names it."""
    where = NodeInfo(path="wf@1/seq@1")

    empty = Event(author="seq", actions=EventActions(agent_state={}), node_info=where)
    held = Event(author="seq", actions=EventActions(agent_state={"n": 1}), node_info=where)

    assert (empty.node_name, held.node_name) == ("seq", "")
