"""A workflow's runs after a fan-out are on conversation branches of their own, as in the
reference: agents on parallel paths do not see each other's replies.

A run whose predecessor triggers several nodes (START included) is on the lane
`<branch>.<node>@<run id>`; a single successor stays on its predecessor's branch; a
JoinNode runs on the branch its arrivals share; a nested workflow's runs start from
the workflow's own branch. The expected lists are what google-adk 2.13.0 yields for
the same workflows and model replies (its events' `branch` and `node_info.path`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from pydantic import JsonValue

from baton import Context, Event, FunctionNode, JoinNode, LlmAgent, Workflow
from baton.models import LlmRequest, ScriptedModel
from baton.types import Content, FunctionCall, Part
from tests.harness import MakeHarness

Shown = tuple[str, str | None, str | None, JsonValue]


class Models:
    """Each agent's model: replies '<name> says', keeps what each request showed."""

    def __init__(self) -> None:
        self.seen: dict[str, list[list[str]]] = {}
        # What a `tool_first` agent's first turn waits for before it calls its tool.
        self.before_tool: Callable[[], Awaitable[None]] | None = None

    def agent(self, name: str, *, tool_first: bool = False) -> LlmAgent:
        """An agent; with `tool_first`, its first turn calls `add` (once `before_tool`
        is done, so the agents beside it can reply first) and its second replies."""

        async def respond(request: LlmRequest) -> str | list[FunctionCall]:
            turns = self.seen.setdefault(name, [])
            turns.append(said(request))
            if tool_first and len(turns) == 1:
                if self.before_tool is not None:
                    await self.before_tool()
                return [FunctionCall(id="c1", name="add", args={"x": 1})]
            return f"{name} says"

        model = ScriptedModel(responder=respond)
        return LlmAgent(name=name, model=model, tools=[add] if tool_first else [])


def add(x: int) -> int:
    """Adds one."""
    return x + 1


def said(request: LlmRequest) -> list[str]:
    """A request's contents as '<role>:<what>' lines."""
    lines: list[str] = []
    for content in request.contents:
        for part in content.parts or []:
            if part.text:
                lines.append(f"{content.role}:{part.text}")
            if part.function_call:
                lines.append(f"{content.role}:call {part.function_call.name}")
            if part.function_response:
                lines.append(f"{content.role}:resp {part.function_response.name}")
    return lines


def shown(events: list[Event]) -> list[Shown]:
    """(author, branch, node path, text or output) of each event with content or output."""
    return [
        (
            e.author,
            e.branch,
            e.node_info.path if e.node_info else None,
            e.content.text if e.content else e.output,
        )
        for e in events
        if e.content is not None or e.output is not None
    ]


def done(node_input: JsonValue) -> None:
    """Ends a path without output, so the workflow has one terminal output at most."""


def end() -> FunctionNode:
    return FunctionNode(done, name="done")


def split(node_input: JsonValue) -> str:
    return "topic"


def short(node_input: JsonValue) -> str:
    return "t"


def two_from_start(m: Models) -> Workflow:
    a, b = m.agent("a"), m.agent("b")
    return Workflow(name="wf", edges=[("START", (a, b)), ((a, b), end())])


def a_path_goes_on(m: Models) -> Workflow:
    a, b, a2 = m.agent("a"), m.agent("b"), m.agent("a2")
    return Workflow(name="wf", edges=[("START", (a, b)), (a, a2), ((a2, b), end())])


def after_a_node(m: Models) -> Workflow:
    a, b = m.agent("a"), m.agent("b")
    first = FunctionNode(split, name="split")
    return Workflow(name="wf", edges=[("START", first, (a, b)), ((a, b), end())])


def joined(m: Models) -> Workflow:
    join = JoinNode(name="j")
    return Workflow(name="wf", edges=[("START", (m.agent("a"), m.agent("b")), join, m.agent("c"))])


def fan_in_without_join(m: Models) -> Workflow:
    a, b, c = m.agent("a"), m.agent("b"), m.agent("c")
    return Workflow(name="wf", edges=[("START", (a, b)), (a, c), (b, c), (c, end())])


def fan_out_on_a_lane(m: Models) -> Workflow:
    x, y, z = m.agent("x"), m.agent("y"), m.agent("z")
    s = FunctionNode(short, name="s")
    return Workflow(name="wf", edges=[("START", (x, s)), (s, (y, z)), ((x, y, z), end())])


def nested_workflow(m: Models) -> Workflow:
    y, z = m.agent("y"), m.agent("z")
    inner = Workflow(name="inner", edges=[("START", (y, z)), ((y, z), end())])
    a = m.agent("a")
    return Workflow(name="wf", edges=[("START", (a, inner)), ((a, inner), end())])


CASES: dict[str, tuple[Callable[[Models], Workflow], list[Shown]]] = {
    "two-from-start": (
        two_from_start,
        [("a", "a@1", "wf@1/a@1", "a says"), ("b", "b@1", "wf@1/b@1", "b says")],
    ),
    "a-path-goes-on": (
        a_path_goes_on,
        [
            ("a", "a@1", "wf@1/a@1", "a says"),
            ("b", "b@1", "wf@1/b@1", "b says"),
            ("a2", "a@1", "wf@1/a2@1", "a2 says"),
        ],
    ),
    "after-a-node": (
        after_a_node,
        [
            ("wf", None, "wf@1/split@1", "topic"),
            ("a", "a@1", "wf@1/a@1", "a says"),
            ("b", "b@1", "wf@1/b@1", "b says"),
        ],
    ),
    "joined": (
        joined,
        [
            ("a", "a@1", "wf@1/a@1", "a says"),
            ("b", "b@1", "wf@1/b@1", "b says"),
            ("wf", None, "wf@1/j@1", {"a": "a says", "b": "b says"}),
            ("c", None, "wf@1/c@1", "c says"),
        ],
    ),
    "fan-in-without-join": (
        fan_in_without_join,
        [
            ("a", "a@1", "wf@1/a@1", "a says"),
            ("b", "b@1", "wf@1/b@1", "b says"),
            ("c", "a@1", "wf@1/c@1", "c says"),
            ("c", "b@1", "wf@1/c@2", "c says"),
        ],
    ),
    "fan-out-on-a-lane": (
        fan_out_on_a_lane,
        [
            ("x", "x@1", "wf@1/x@1", "x says"),
            ("wf", "s@1", "wf@1/s@1", "t"),
            ("y", "s@1.y@1", "wf@1/y@1", "y says"),
            ("z", "s@1.z@1", "wf@1/z@1", "z says"),
        ],
    ),
    "nested-workflow": (
        nested_workflow,
        [
            ("a", "a@1", "wf@1/a@1", "a says"),
            ("y", "inner@1.y@1", "wf@1/inner@1/y@1", "y says"),
            ("z", "inner@1.z@1", "wf@1/inner@1/z@1", "z says"),
        ],
    ),
}


@pytest.mark.parametrize("case", CASES)
async def test_runs_after_a_fan_out_are_on_branches_as_the_reference_names_them(
    make_harness: MakeHarness, case: str
) -> None:
    build, expected = CASES[case]
    h = await make_harness(build(Models()))

    events = await h.start()

    assert shown(events) == expected
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert shown(session.events) == [("user", None, None, "go"), *expected]


async def test_an_agent_does_not_see_the_reply_of_an_agent_on_a_parallel_path(
    make_harness: MakeHarness,
) -> None:
    m = Models()
    a, b, a2 = m.agent("a", tool_first=True), m.agent("b"), m.agent("a2")
    edges = [("START", (a, b)), (a, a2), ((a2, b), end())]
    h = await make_harness(Workflow(name="wf", edges=edges))

    b_stored = asyncio.Event()  # set as the run streams b's reply, once it is stored

    async def b_replied() -> None:
        async with asyncio.timeout(10):
            await b_stored.wait()

    m.before_tool = b_replied
    go = Content(role="user", parts=[Part(text="go")])
    events: list[Event] = []
    async for event in h.runner.run_async(user_id="u", session_id=h.session_id, new_message=go):
        events.append(event)
        if event.author == "b" and event.content:
            b_stored.set()

    # b replied before a called its tool, so before a2, after a on a's path, ran: a2, a
    # single-turn node as in the reference, sees its input (a's reply), not b's reply.
    assert shown(events)[0] == ("b", "b@1", "wf@1/b@1", "b says")
    assert m.seen == {
        "a": [["user:go"], ["user:go", "model:call add", "user:resp add"]],
        "b": [["user:go"]],
        "a2": [["user:a says"]],
    }


async def test_each_run_of_a_fan_in_sees_only_the_path_it_came_from(
    make_harness: MakeHarness,
) -> None:
    m = Models()
    await (await make_harness(fan_in_without_join(m))).start()

    first, second = m.seen["c"]
    # Each run's input is its predecessor's reply; the other path's reply is not shown.
    assert first[-1] == "user:a says"
    assert second[-1] == "user:b says"
    assert not [line for line in first if "b says" in line]
    assert not [line for line in second if "a says" in line]


def child(node_input: str) -> str:
    return f"child out {node_input}"


async def claims(ctx: Context, node_input: JsonValue) -> None:
    """Its output is its child's, whose events are on a branch of their own."""
    await ctx.run_node(child, "x", use_sub_branch=True, use_as_output=True)


async def claims_a_claim(ctx: Context, node_input: JsonValue) -> None:
    await ctx.run_node(
        FunctionNode(claims, name="mid"), "m", use_sub_branch=True, use_as_output=True
    )


async def uses(ctx: Context, node_input: JsonValue) -> str:
    return "q " + await ctx.run_node(child, "y", use_sub_branch=True)


async def test_an_output_that_stands_for_its_callers_goes_on_the_outermost_callers_branch(
    make_harness: MakeHarness,
) -> None:
    s = FunctionNode(claims, name="s")
    p, q = FunctionNode(claims_a_claim, name="p"), FunctionNode(uses, name="q")
    h = await make_harness(Workflow(name="wf", edges=[("START", s, (p, q)), ((p, q), end())]))

    events = await h.start()

    # As the reference: a claimed output is on its claimer's branch (the outermost
    # claimer's, through a claim of a claim); an unclaimed child's stays on its own.
    assert sorted(shown(events), key=lambda e: e[2] or "") == [
        ("wf", "p@1", "wf@1/p@1/mid@1/child@1", "child out x"),
        ("wf", "q@1", "wf@1/q@1", "q child out y"),
        ("wf", "q@1.child@1", "wf@1/q@1/child@1", "child out y"),
        ("wf", None, "wf@1/s@1/child@1", "child out x"),
    ]


async def test_an_agents_reply_that_stands_for_its_callers_goes_on_the_callers_branch(
    make_harness: MakeHarness,
) -> None:
    agent = Models().agent("ag")

    async def asks_agent(ctx: Context, node_input: JsonValue) -> str:
        return await ctx.run_node(agent, "hi", use_sub_branch=True, use_as_output=True)

    p, q = FunctionNode(asks_agent, name="p"), FunctionNode(done, name="q")
    h = await make_harness(Workflow(name="wf", edges=[("START", (p, q))]))

    events = await h.start()

    assert shown(events) == [("ag", "p@1", "wf@1/p@1/ag@1", "ag says")]


async def test_a_join_runs_on_the_branch_of_each_predecessors_latest_arrival(
    make_harness: MakeHarness,
) -> None:
    # p arrives at j twice before r does: first from lane a@1, then from the workflow's
    # branch (after k, which joins a@1 and g@1). As in the reference, j runs on the branch
    # of p's latest arrival and r's: their shared part is the workflow's (None), not a@1.
    # Each run waits for the output meant to be stored before its own, so the order
    # holds whatever order the event loop runs them in.

    def go_on(node_input: JsonValue) -> str:
        return "on"

    async def p(node_input: JsonValue) -> str:
        if not isinstance(node_input, dict):
            return "p1"  # the run on lane a@1, from a
        await stored("p1")  # the run on the workflow's branch, from k
        return "p2"

    async def r(node_input: JsonValue) -> str:
        await stored("p2")
        return "r"

    async def stored(output: str) -> None:
        # No signal tells a node that an event was stored: look every millisecond.
        while not any(e.output == output for e in await events_stored()):  # noqa: ASYNC110
            await asyncio.sleep(0.001)

    async def events_stored() -> list[Event]:
        session = await h.service.store.get_session(h.key)
        return session.events if session is not None else []

    a, g = FunctionNode(go_on, name="a"), FunctionNode(go_on, name="g")
    pn, rn = FunctionNode(p, name="p"), FunctionNode(r, name="r")
    k, j = JoinNode(name="k"), JoinNode(name="j")
    edges = [("START", (a, g)), (a, (pn, rn, k)), (g, k), (k, pn), ((pn, rn), j)]
    h = await make_harness(Workflow(name="wf", edges=edges))

    events = await h.start()

    assert [(e.branch, e.node_info.path if e.node_info else None) for e in events][-1] == (
        None,
        "wf@1/j@1",
    )
    assert events[-1].output == {"p": "p2", "r": "r"}
