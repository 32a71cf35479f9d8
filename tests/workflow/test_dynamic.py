"""Dynamic nodes (`ctx.run_node`) on every backend, in both modes: checkpointed child runs
that are not redone, interrupts inside children, restarts, changed code, bad calls."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import JsonValue

from baton import Context, RequestInput, Workflow, node
from baton.errors import WorkflowChangedError
from baton.history import acting_node
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InterruptStatus, InvocationStatus
from baton.workflow.nodes import Node
from tests.agents.examples import load_example
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, asked, attach_harness, build_harness, outputs


@pytest.fixture(params=[True, False], ids=["resumable", "replay"])
def resumable(request: pytest.FixtureRequest) -> bool:
    return request.param


async def open_harness(stores: StoreFactory, root: Node, resumable: bool) -> Harness:
    return await build_harness(root, BaseSessionService(stores.open()), resumable=resumable)


def restarted(h: Harness, stores: StoreFactory, root: Node, resumable: bool) -> Harness:
    """The same session served by a new Runner over a new store: a restarted process."""
    return attach_harness(
        root, BaseSessionService(stores.open()), h.session_id, resumable=resumable
    )


def fan_out_and_ask(counter: Counter, *, second: str = "double") -> Workflow:
    """parent: gather(double(1), double(2)), then ask(x) (a child that pauses), then done."""

    async def double(node_input: int) -> int:
        counter.bump(f"double({node_input})")
        return node_input * 2

    async def ask(node_input: str) -> Any:
        counter.bump("ask")
        yield RequestInput(interrupt_id=f"q-{node_input}", message="ok?")

    async def triple(node_input: int) -> int:
        counter.bump(f"triple({node_input})")
        return node_input * 3

    children = {"double": double, "triple": triple}

    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> dict[str, JsonValue]:
        counter.bump("parent")
        a, b = await asyncio.gather(ctx.run_node(double, 1), ctx.run_node(children[second], 2))
        answer = await ctx.run_node(ask, "x")
        return {"a": a, "b": b, "answer": answer}

    def done(node_input: dict[str, JsonValue]) -> str:
        counter.bump("done")
        return f"{node_input['a']}+{node_input['b']} {node_input['answer']}"

    return Workflow(name="wf", edges=[("START", parent, done)])


async def test_children_run_once_and_a_paused_child_resumes_after_a_restart(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()
    h = await open_harness(stores, fan_out_and_ask(counter), resumable)

    first = await h.start()

    assert asked(first) == ["q-x"]
    assert outputs(first) == [("double", 2), ("double", 4)]
    assert [e.node_info.path for e in first if e.node_info] == [
        "wf@1/parent@1/double@1",
        "wf@1/parent@1/double@2",
        "wf@1/parent@1/ask@1",
    ]
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    again = restarted(h, stores, fan_out_and_ask(counter), resumable)

    second = await again.answer(("q-x", "yes"))

    assert outputs(second) == [
        ("ask", "yes"),
        ("parent", {"a": 2, "b": 4, "answer": "yes"}),
        ("done", "2+4 yes"),
    ]
    assert counter.runs == {"parent": 2, "double(1)": 1, "double(2)": 1, "ask": 1, "done": 1}
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


async def test_a_changed_call_is_refused_naming_it(stores: StoreFactory, resumable: bool) -> None:
    counter = Counter()
    h = await open_harness(stores, fan_out_and_ask(counter), resumable)
    await h.start()
    changed = restarted(h, stores, fan_out_and_ask(counter, second="triple"), resumable)

    with pytest.raises(WorkflowChangedError) as refused:
        await changed.answer(("q-x", "yes"))

    message = str(refused.value)
    assert "dynamic call #2 was ctx.run_node('double') (double@2)" in message
    assert "is now ctx.run_node('triple')" in message
    assert "triple(2)" not in counter.runs
    # The original code still finishes the run: nothing recorded was lost.
    original = restarted(h, stores, fan_out_and_ask(counter), resumable)
    await original.collect(invocation_id=(await h.invocation()).id)
    assert (await original.invocation()).status == InvocationStatus.COMPLETED
    assert counter.runs["double(1)"] == 1
    assert counter.runs["double(2)"] == 1


async def test_a_child_workflow_pauses_and_interrupts_propagate(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()

    def check(node_input: int) -> RequestInput:
        counter.bump(f"check({node_input})")
        return RequestInput(interrupt_id=f"check-{node_input}", message=f"approve {node_input}?")

    def record(node_input: JsonValue) -> str:
        counter.bump("record")
        return f"recorded {node_input}"

    review = Workflow(name="review", edges=[("START", check, record)])

    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> list[str]:
        counter.bump("parent")
        return list(await asyncio.gather(ctx.run_node(review, 1), ctx.run_node(review, 2)))

    h = await open_harness(stores, Workflow(name="wf", edges=[("START", parent)]), resumable)

    assert sorted(asked(await h.start())) == ["check-1", "check-2"]
    pending = await h.service.store.list_interrupts(
        "app", "u", session_id=h.key.session_id, status=InterruptStatus.OPEN
    )
    assert sorted(p.node_path for p in pending) == [
        "wf@1/parent@1/review@1/check@1",
        "wf@1/parent@1/review@2/check@1",
    ]
    assert outputs(await h.answer(("check-2", "no"))) == [
        ("check", "no"),
        ("record", "recorded no"),
    ]
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    last = await h.answer(("check-1", "yes"))

    assert outputs(last)[-2:] == [
        ("record", "recorded yes"),
        ("parent", ["recorded yes", "recorded no"]),
    ]
    assert counter.runs == {"parent": 3, "check(1)": 1, "check(2)": 1, "record": 2}


async def test_a_failed_child_fails_the_run_and_continuing_reruns_only_it(
    stores: StoreFactory,
) -> None:
    counter = Counter()
    flaky = {"fail": True}

    async def first() -> str:
        counter.bump("first")
        return "one"

    async def second() -> str:
        counter.bump("second")
        if flaky["fail"]:
            raise ConnectionError("charge service down")
        return "two"

    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> str:
        return f"{await ctx.run_node(first)} {await ctx.run_node(second)}"

    h = await open_harness(stores, Workflow(name="wf", edges=[("START", parent)]), True)
    with pytest.raises(ConnectionError, match="charge service down"):
        await h.start()
    invocation = await h.invocation()
    assert invocation.status == InvocationStatus.FAILED
    flaky["fail"] = False

    events = await h.collect(invocation_id=invocation.id)

    assert outputs(events) == [("second", "two"), ("parent", "one two")]
    assert counter.runs == {"first": 1, "second": 2}


async def test_bad_calls_are_refused_and_store_nothing(stores: StoreFactory) -> None:
    async def child() -> str:
        return "x"

    calls: list[tuple[Any, dict[str, Any]]] = [
        (child, {"run_id": "7"}),
        (42, {}),
    ]
    for target, kwargs in calls:

        @node(rerun_on_resume=True)
        async def parent(ctx: Context) -> JsonValue:
            return await ctx.run_node(target, **kwargs)  # noqa: B023 -- called in this iteration

        h = await open_harness(stores, Workflow(name="wf", edges=[("START", parent)]), True)
        with pytest.raises((ValueError, TypeError)) as refused:
            await h.start()
        assert ("'7'" in str(refused.value)) or ("42" in str(refused.value))
        session = await h.service.store.get_session(h.key)
        assert session is not None
        assert [e.output for e in session.events if e.output is not None] == []


async def test_named_calls_and_nested_dynamic_children(stores: StoreFactory) -> None:
    counter = Counter()

    async def leaf(node_input: str) -> str:
        counter.bump(f"leaf({node_input})")
        return node_input.upper()

    @node(rerun_on_resume=True)
    async def middle(ctx: Context, node_input: str) -> str:
        counter.bump("middle")
        shout = await ctx.run_node(leaf, node_input)
        answer = await ctx.run_node(lambda_free_ask, node_input, run_id=f"confirm-{node_input}")
        return f"{shout} {answer}"

    async def lambda_free_ask(node_input: str) -> Any:
        yield RequestInput(interrupt_id=f"ok-{node_input}", message="ok?")

    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> str:
        return await ctx.run_node(middle, "hi")

    h = await open_harness(stores, Workflow(name="wf", edges=[("START", parent)]), True)
    first = await h.start()
    assert asked(first) == ["ok-hi"]
    assert first[-1].node_info is not None
    assert first[-1].node_info.path == "wf@1/parent@1/middle@1/lambda_free_ask@confirm-hi"

    last = await h.answer(("ok-hi", "sure"))

    assert outputs(last)[-2:] == [("middle", "HI sure"), ("parent", "HI sure")]
    assert counter.runs == {"middle": 2, "leaf(hi)": 1}


async def test_the_parallel_review_example_asks_per_section_and_publishes(
    stores: StoreFactory,
) -> None:
    example = load_example("parallel_review")
    h = await open_harness(stores, example.root_agent, True)

    first = await h.start("Intro text.\n\nPricing: 12 EUR a month.\n\nTerms apply.")

    assert sorted(asked(first)) == ["section-1", "section-2", "section-3"]
    await h.answer(("section-2", {"approved": False, "comment": "too cheap"}), wrap=False)
    last = await h.answer(
        ("section-1", {"approved": True}), ("section-3", {"approved": True}), wrap=False
    )

    assert outputs(last)[-1] == (
        "publish",
        {"published": False, "approved": [1, 3], "rejected": [2]},
    )
    summaries = [e for e in h.seen if acting_node(e) == "summarize" and e.output is not None]
    assert len(summaries) == 3
