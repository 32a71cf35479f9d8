"""A node that yields an event naming a conversation branch moves its run there, as in
the reference: its later events and its successors go on that branch ("" : back to the
root), durably, so a run paused there resumes there. A rerun or a retry executes the
node from the top, on the branch it started on.

The expected lists are what google-adk 2.13.0 yields for the same workflows (its
events' `author`, `branch`, `node_info.path` and state delta or output), except where
a test says otherwise.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest
from pydantic import JsonValue

from baton import (
    BaseAgent,
    Context,
    Event,
    FunctionNode,
    InvocationContext,
    JoinNode,
    ParallelAgent,
    RequestInput,
    RetryConfig,
    Workflow,
)
from baton.sessions.services import BaseSessionService
from baton.types import Content, Part
from tests.conftest import StoreFactory
from tests.harness import Harness, MakeHarness, asked, attach_harness, build_harness

Shown = tuple[str, str | None, str | None, JsonValue]


def shown(events: list[Event]) -> list[Shown]:
    """(author, branch, node path, output or else state delta or text) of each event."""
    return [
        (
            e.author,
            e.branch,
            e.node_info.path if e.node_info else None,
            e.output
            if e.output is not None
            else dict(e.actions.state_delta)
            if e.actions.state_delta
            else e.content.text
            if e.content
            else None,
        )
        for e in events
    ]


async def moves(ctx: Context) -> Any:
    yield Event(state={"k": 1}, branch="side")
    yield Event(state={"k2": 2})
    yield "a"


branches_seen: list[str | None] = []


async def then(ctx: Context, node_input: str) -> Any:
    branches_seen.append(ctx.branch)
    yield Event(state={"b": 1})
    yield f"{node_input}+b"


def plus_c(node_input: str) -> str:
    return f"{node_input}+c"


def plus_d(node_input: str) -> str:
    return f"{node_input}+d"


async def test_a_node_that_names_a_branch_moves_its_later_events_and_successors_there(
    make_harness: MakeHarness,
) -> None:
    branches_seen.clear()
    a, b = FunctionNode(moves, name="a"), FunctionNode(then, name="b")
    h = await make_harness(Workflow(name="wf", edges=[("START", a, b)]))

    events = await h.start()

    assert shown(events) == [
        ("wf", "side", "wf@1/a@1", {"k": 1}),
        ("wf", "side", "wf@1/a@1", {"k2": 2}),
        ("wf", "side", "wf@1/a@1", "a"),
        ("wf", "side", "wf@1/b@1", {"b": 1}),
        ("wf", "side", "wf@1/b@1", "a+b"),
    ]
    assert branches_seen == ["side"]


async def test_a_fan_out_after_a_moved_run_puts_lanes_below_its_branch(
    make_harness: MakeHarness,
) -> None:
    a = FunctionNode(moves, name="a")
    c, d = FunctionNode(plus_c, name="c"), FunctionNode(plus_d, name="d")
    h = await make_harness(Workflow(name="wf", edges=[("START", a, (c, d), JoinNode(name="j"))]))

    events = await h.start()

    seen = shown(events)
    # c and d run at once (sync nodes, each on a worker thread): in any order.
    seen[3:5] = sorted(seen[3:5], key=lambda e: e[2] or "")
    assert seen[2:] == [
        ("wf", "side", "wf@1/a@1", "a"),
        ("wf", "side.c@1", "wf@1/c@1", "a+c"),
        ("wf", "side.d@1", "wf@1/d@1", "a+d"),
        ("wf", "side", "wf@1/j@1", {"c": "a+c", "d": "a+d"}),
    ]


async def test_an_empty_branch_moves_the_run_back_to_the_root(make_harness: MakeHarness) -> None:
    async def there_and_back(ctx: Context) -> Any:
        yield Event(state={"x": 1}, branch="side")
        yield Event(state={"y": 1}, branch="")
        yield "r"

    r, b = FunctionNode(there_and_back, name="r"), FunctionNode(then, name="b")
    h = await make_harness(Workflow(name="wf", edges=[("START", r, b)]))

    events = await h.start()

    assert shown(events) == [
        ("wf", "side", "wf@1/r@1", {"x": 1}),
        ("wf", None, "wf@1/r@1", {"y": 1}),
        ("wf", None, "wf@1/r@1", "r"),
        ("wf", None, "wf@1/b@1", {"b": 1}),
        ("wf", None, "wf@1/b@1", "r+b"),
    ]


async def moves_and_asks(ctx: Context) -> Any:
    yield Event(state={"k": 1}, branch="side")
    yield RequestInput(interrupt_id="q1", message="ok?")


def moved_then_asking() -> Workflow:
    """a moves to 'side' and outputs; of its successors, ask moves too and pauses, c ends."""
    a = FunctionNode(moves, name="a")
    ask, c = FunctionNode(moves_and_asks, name="ask"), FunctionNode(plus_c, name="c")
    return Workflow(name="wf", edges=[("START", a, (ask, c), JoinNode(name="j"))])


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_a_run_paused_on_the_branch_it_moved_to_resumes_there_after_a_restart(
    stores: StoreFactory, resumable: bool
) -> None:
    h = await build_harness(
        moved_then_asking(), BaseSessionService(stores.open()), resumable=resumable
    )
    first = await h.start()
    assert asked(first) == ["q1"]
    assert [(e.branch, e.node_info.path if e.node_info else None) for e in first if e.content] == [
        ("side", "wf@1/ask@1")
    ]

    again = attach_harness(
        moved_then_asking(), BaseSessionService(stores.open()), h.session_id, resumable=resumable
    )
    events = await again.answer(("q1", "yes"))

    # The answered run's output goes on the branch it moved to (the reference echoes it
    # on the workflow's branch, or not at all when not resumable); its successor, here
    # the join, runs on the branch its arrivals share, as the reference's does.
    assert shown(events) == [
        ("wf", "side", "wf@1/ask@1", "yes"),
        ("wf", "side", "wf@1/j@1", {"ask": "yes", "c": "a+c"}),
    ]


async def test_a_rerun_starts_on_the_branch_the_run_started_on(
    make_harness: MakeHarness,
) -> None:
    branches: list[str | None] = []

    async def asks_on_side(ctx: Context) -> Any:
        branches.append(ctx.branch)
        if ctx.resume_inputs:
            yield Event(state={"after": 1})
            yield "out"
            return
        yield Event(state={"k": 1}, branch="side")
        branches.append(ctx.branch)
        yield RequestInput(interrupt_id="q1", message="ok?")

    ar = FunctionNode(asks_on_side, name="ar", rerun_on_resume=True)
    h: Harness = await make_harness(Workflow(name="wf", edges=[("START", ar)]))
    first = await h.start()

    events = await h.answer(("q1", "yes"))

    assert [(e.branch, bool(e.long_running_tool_ids)) for e in first] == [
        ("side", False),
        ("side", True),
    ]
    assert shown(events) == [
        ("wf", None, "wf@1/ar@1", {"after": 1}),
        ("wf", None, "wf@1/ar@1", "out"),
    ]
    assert branches == [None, "side", None]


async def test_a_retry_starts_on_the_branch_the_run_started_on(make_harness: MakeHarness) -> None:
    attempts: list[str | None] = []

    async def fails_once_on_side(ctx: Context) -> Any:
        attempts.append(ctx.branch)
        if len(attempts) == 1:
            yield Event(state={"k": 1}, branch="side")
            raise RuntimeError("boom")
        yield "a"

    a = FunctionNode(
        fails_once_on_side,
        name="a",
        retry_config=RetryConfig(max_attempts=2, initial_delay=0),
    )
    h = await make_harness(Workflow(name="wf", edges=[("START", a, FunctionNode(then, name="b"))]))

    events = await h.start()

    # The failed attempt's error is on the branch it moved to; the retry starts afresh.
    assert attempts == [None, None]
    assert (events[0].branch, events[0].error_code) == ("side", "RuntimeError")
    assert shown(events)[1:] == [
        ("wf", None, "wf@1/a@1", "a"),
        ("wf", None, "wf@1/b@1", {"b": 1}),
        ("wf", None, "wf@1/b@1", "a+b"),
    ]


class Says(BaseAgent):
    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        text = f"{self.name} on {ctx.branch}"
        content = Content(role="model", parts=[Part(text=text)])
        yield Event(
            author=self.name, invocation_id=ctx.invocation_id, branch=ctx.branch, content=content
        )


async def test_a_parallel_agents_successor_stays_on_the_agents_branch(
    make_harness: MakeHarness,
) -> None:
    branches_seen.clear()
    par = ParallelAgent(name="par", sub_agents=[Says(name="x"), Says(name="y")])
    h = await make_harness(
        Workflow(name="wf", edges=[("START", par, FunctionNode(then, name="b"))])
    )

    events = await h.start()

    # The reference moves the successor onto the lane of whichever sub-agent spoke last
    # ('par.y' here), where an agent would not see the other lane's reply: baton keeps it
    # on the parallel agent's own branch.
    assert [(e.author, e.branch) for e in events if e.content or e.actions.state_delta] == [
        ("x", "par.x"),
        ("y", "par.y"),
        ("wf", None),
    ]
    assert branches_seen == [None]
