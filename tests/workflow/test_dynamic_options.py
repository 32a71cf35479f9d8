"""`ctx.run_node` options on every backend, in both modes: `use_as_output` (the child's
output event stands for the caller's), `use_sub_branch` and `override_branch` (the
child's events carry a branch); each kept by the child across a pause and a restart."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from baton import Context, RequestInput, Workflow, node
from baton.events import Event
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, asked, attach_harness, build_harness


@pytest.fixture(params=[True, False], ids=["resumable", "replay"])
def resumable(request: pytest.FixtureRequest) -> bool:
    return request.param


def delegating(counter: Counter, **options: JsonValue) -> Workflow:
    """parent: ask(x) with `options` (a child that pauses, then answers), then next."""

    async def ask(ctx: Context, node_input: str) -> object:
        counter.bump("ask")
        answer = ctx.resume_inputs.get("q")
        if answer is None:
            yield RequestInput(interrupt_id="q", message="ok?")
            return
        yield f"{node_input}:{answer}"

    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> str:
        counter.bump("parent")
        answer = await ctx.run_node(ask, "x", **options)  # pyright: ignore[reportArgumentType] -- test options
        return f"parent({answer})"

    def after(node_input: str) -> str:
        counter.bump("after")
        return f"after({node_input})"

    return Workflow(name="wf", edges=[("START", parent, after)])


def shown(events: list[Event]) -> list[tuple[str, JsonValue, list[str] | None, str | None]]:
    """(path, output, output_for, branch) of each event that carries an output."""
    return [
        (e.node_info.path, e.output, e.node_info.output_for, e.branch)
        for e in events
        if e.node_info and e.output is not None
    ]


async def pause_and_answer(
    stores: StoreFactory, root: Workflow, counter: Counter, resumable: bool
) -> tuple[list[Event], list[Event]]:
    """Start the run, then answer 'q' from a new Runner over a new store (a restart)."""
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=resumable)
    first = await h.start()
    assert asked(first) == ["q"]
    again: Harness = attach_harness(
        root, BaseSessionService(stores.open()), h.session_id, resumable=resumable
    )
    last = await again.answer(("q", "yes"))
    assert (await again.invocation()).status == InvocationStatus.COMPLETED
    return first, last


async def test_a_child_used_as_output_stands_for_its_caller_across_a_restart(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()
    root = delegating(counter, use_as_output=True)

    _, last = await pause_and_answer(stores, root, counter, resumable)

    assert shown(last) == [
        ("wf@1/parent@1/ask@1", "x:yes", ["wf@1/parent@1/ask@1", "wf@1/parent@1"], None),
        ("wf@1/after@1", "after(parent(x:yes))", ["wf@1/after@1", "wf@1"], None),
    ]
    assert counter.runs == {"parent": 2, "ask": 2, "after": 1}


async def test_a_child_on_a_sub_branch_keeps_it_across_a_restart(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()
    root = delegating(counter, use_sub_branch=True)

    first, last = await pause_and_answer(stores, root, counter, resumable)

    [question] = [e for e in first if e.long_running_tool_ids]
    assert question.branch == "ask@1"
    assert shown(last) == [
        ("wf@1/parent@1/ask@1", "x:yes", ["wf@1/parent@1/ask@1"], "ask@1"),
        ("wf@1/parent@1", "parent(x:yes)", ["wf@1/parent@1"], None),
        ("wf@1/after@1", "after(parent(x:yes))", ["wf@1/after@1", "wf@1"], None),
    ]


async def test_a_child_on_a_given_branch_keeps_it_across_a_restart(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()
    root = delegating(counter, override_branch="review.legal")

    first, last = await pause_and_answer(stores, root, counter, resumable)

    assert [e.branch for e in first if e.long_running_tool_ids] == ["review.legal"]
    assert shown(last)[0] == (
        "wf@1/parent@1/ask@1",
        "x:yes",
        ["wf@1/parent@1/ask@1"],
        "review.legal",
    )


async def test_nested_sub_branches_and_outputs_chain_up(stores: StoreFactory) -> None:
    def leaf(node_input: str) -> str:
        return f"leaf({node_input})"

    @node(rerun_on_resume=True)
    async def middle(ctx: Context, node_input: str) -> str:
        return await ctx.run_node(leaf, node_input, use_sub_branch=True, use_as_output=True)

    @node(rerun_on_resume=True)
    async def top(ctx: Context) -> str:
        return await ctx.run_node(middle, "a", use_sub_branch=True, use_as_output=True)

    h = await build_harness(
        Workflow(name="wf", edges=[("START", top)]),
        BaseSessionService(stores.open()),
        resumable=True,
    )

    events = await h.start()

    # As in the reference (2.13.0): the output is on the branch of the outermost run it
    # stands for, top's (the workflow's), not on the sub-branch leaf ran on; it names
    # the workflow too, top being its terminal node.
    assert shown(events) == [
        (
            "wf@1/top@1/middle@1/leaf@1",
            "leaf(a)",
            ["wf@1/top@1/middle@1/leaf@1", "wf@1/top@1/middle@1", "wf@1/top@1", "wf@1"],
            None,
        )
    ]


@pytest.mark.parametrize(
    ("calls", "error"),
    [
        (
            "twice",
            "node run 'wf@1/parent@1' passed use_as_output=True to ctx.run_node('leaf') already, "
            "and again to ctx.run_node('leaf'); a run's output stands for one child: pass it "
            "once.",
        ),
        (
            "both branches",
            "ctx.run_node was given use_sub_branch=True and override_branch='b' in node run "
            "'wf@1/parent@1'; the child's branch is one or the other: pass only one of them.",
        ),
    ],
)
async def test_conflicting_options_fail_the_run_naming_them(
    stores: StoreFactory, calls: str, error: str
) -> None:
    ran: list[str] = []

    def leaf(node_input: str) -> str:
        ran.append(node_input)
        return node_input

    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> str:
        if calls == "twice":
            await ctx.run_node(leaf, "a", use_as_output=True)
            return await ctx.run_node(leaf, "b", use_as_output=True)
        return await ctx.run_node(leaf, "a", use_sub_branch=True, override_branch="b")

    h = await build_harness(
        Workflow(name="wf", edges=[("START", parent)]),
        BaseSessionService(stores.open()),
        resumable=True,
    )

    with pytest.raises(ValueError, match="use_") as refused:
        await h.start()

    assert str(refused.value) == error
    assert ran == (["a"] if calls == "twice" else [])
    assert (await h.invocation()).status == InvocationStatus.FAILED
    session = await h.service.store.get_session(h.key)
    assert session is not None
    assert [e.output for e in session.events if e.output is not None] == ran


def calling_a_quiet_workflow(counter: Counter, *, raise_on_wait: bool) -> Workflow:
    """parent: run_node(inner), a workflow that ends without output, then after."""

    def quiet(node_input: str) -> None:
        counter.bump("quiet")

    inner = Workflow(name="inner", edges=[("START", quiet)])

    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> str:
        got = await ctx.run_node(inner, "x", raise_on_wait=raise_on_wait)
        counter.bump("parent went on")
        return f"got {got}"

    def after(node_input: str) -> str:
        counter.bump("after")
        return f"after({node_input})"

    return Workflow(name="wf", edges=[("START", parent, after)])


@pytest.mark.parametrize("raise_on_wait", [False, True], ids=["returns-none", "raise-on-wait"])
async def test_a_child_waiting_for_output_stops_its_caller_only_with_raise_on_wait(
    stores: StoreFactory, resumable: bool, raise_on_wait: bool
) -> None:
    counter = Counter()
    root = calling_a_quiet_workflow(counter, raise_on_wait=raise_on_wait)
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=resumable)

    events = await h.start()

    assert (await h.invocation()).status == InvocationStatus.COMPLETED
    if raise_on_wait:
        # The caller stopped at the call: no output of its own, nothing after it ran.
        assert shown(events) == []
        assert counter.runs == {"quiet": 1}
    else:
        assert [(path, output) for path, output, _, _ in shown(events)] == [
            ("wf@1/parent@1", "got None"),
            ("wf@1/after@1", "after(got None)"),
        ]
        assert counter.runs == {"quiet": 1, "parent went on": 1, "after": 1}
