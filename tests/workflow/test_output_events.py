"""Which runs an output event speaks for (`node_info.output_for`), as in the reference: a
node run's output event names the run, and a terminal node's also the workflow run whose
output it is, and that one's own workflow when it is a terminal node too. A child whose
output stands for its caller's (`use_as_output`) names the caller and the caller's.

The expected lists are what google-adk 2.13.0 yields for the same workflows (its
events' `branch`, `node_info.path`, `output` and `node_info.output_for`), except where a
test says otherwise.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from baton import Context, Event, FunctionNode, RequestInput, Workflow, node
from tests.harness import MakeHarness

Shown = tuple[str | None, str | None, JsonValue, list[str] | None]


def shown(events: list[Event]) -> list[Shown]:
    """(branch, node path, output, output_for) of each event that carries an output."""
    return [
        (e.branch, e.node_info.path, e.output, e.node_info.output_for)
        for e in events
        if e.node_info and e.output is not None
    ]


def classify(node_input: JsonValue) -> Event:
    return Event(output="x", route="big")


def labelled(label: str) -> FunctionNode:
    """A node named `label` that outputs its input after `label:`."""

    def label_input(node_input: str) -> str:
        return f"{label}:{node_input}"

    return FunctionNode(label_input, name=label)


async def test_each_output_names_its_run_and_a_terminal_nodes_its_workflow(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(
        Workflow(
            name="wf",
            edges=[("START", classify, {"big": labelled("big"), "small": labelled("small")})],
        )
    )

    events = await h.start()

    assert shown(events) == [
        (None, "wf@1/classify@1", "x", ["wf@1/classify@1"]),
        (None, "wf@1/big@1", "big:x", ["wf@1/big@1", "wf@1"]),
    ]


async def test_a_nested_workflows_terminal_output_names_each_workflow_it_ends(
    make_harness: MakeHarness,
) -> None:
    def val(node_input: JsonValue) -> str:
        return "v"

    inner = Workflow(name="inner", edges=[("START", val)])
    middle = Workflow(name="middle", edges=[("START", inner)])
    h = await make_harness(Workflow(name="wf", edges=[("START", middle, labelled("big"))]))

    events = await h.start()

    # middle is not wf's terminal node (big follows it): the chain stops at middle.
    assert shown(events) == [
        (
            None,
            "wf@1/middle@1/inner@1/val@1",
            "v",
            ["wf@1/middle@1/inner@1/val@1", "wf@1/middle@1/inner@1", "wf@1/middle@1"],
        ),
        (None, "wf@1/big@1", "big:v", ["wf@1/big@1", "wf@1"]),
    ]


async def test_a_terminal_output_on_a_lane_stays_on_its_lane(make_harness: MakeHarness) -> None:
    def c(node_input: JsonValue) -> str:
        return "c"

    def quiet(node_input: JsonValue) -> None:
        return None

    h = await make_harness(Workflow(name="wf", edges=[("START", (c, quiet))]))

    events = await h.start()

    assert shown(events) == [("c@1", "wf@1/c@1", "c", ["wf@1/c@1", "wf@1"])]


async def test_an_answer_that_becomes_a_terminal_nodes_output_names_the_workflow(
    make_harness: MakeHarness,
) -> None:
    async def ask(ctx: Context, node_input: JsonValue) -> Any:
        yield RequestInput(interrupt_id="q", message="ok?")

    h = await make_harness(Workflow(name="wf", edges=[("START", FunctionNode(ask, name="ask"))]))
    await h.start()

    events = await h.answer(("q", "yes"))

    # baton emits the answered run's output event in both modes (the reference's
    # resumable mode echoes it without output_for; its replay mode emits none).
    assert shown(events) == [(None, "wf@1/ask@1", "yes", ["wf@1/ask@1", "wf@1"])]


def nothing(node_input: JsonValue) -> None:
    return None


async def quiet(node_input: JsonValue) -> Any:
    if False:  # an async generator that yields nothing
        yield


def after(node_input: JsonValue) -> str:
    return f"after:{node_input}"


async def test_a_claimed_child_without_output_leaves_its_caller_without_one(
    make_harness: MakeHarness,
) -> None:
    for child in (nothing, quiet):

        @node(rerun_on_resume=True)
        async def claimer(ctx: Context, node_input: JsonValue) -> None:
            await ctx.run_node(child, "x", use_as_output=True)  # noqa: B023 -- run at once

        h = await make_harness(Workflow(name="wf", edges=[("START", claimer, after)]))

        events = await h.start()

        assert shown(events) == [(None, "wf@1/after@1", "after:None", ["wf@1/after@1", "wf@1"])]


async def test_a_claimed_childs_output_names_the_caller_and_the_callers_workflow(
    make_harness: MakeHarness,
) -> None:
    def val(node_input: JsonValue) -> str:
        return "v"

    @node(rerun_on_resume=True)
    async def claimer(ctx: Context, node_input: JsonValue) -> Any:
        return await ctx.run_node(val, "x", use_as_output=True)

    h = await make_harness(Workflow(name="wf", edges=[("START", claimer)]))

    events = await h.start()

    assert shown(events) == [
        (None, "wf@1/claimer@1/val@1", "v", ["wf@1/claimer@1/val@1", "wf@1/claimer@1", "wf@1"])
    ]
