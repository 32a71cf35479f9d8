"""`@node(parallel_worker=True)`: the node runs once per item of its input list, each
run a child on a branch of its own, at most `max_parallel_workers` at a time, and
outputs their outputs in input order, as in the reference; an item that asks pauses
the worker, and a resume runs only the items that had not finished.

The expected lists are what google-adk 2.13.0 yields for the same workflows (its
events' `branch`, `node_info.path` and output), except where a test says otherwise.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import JsonValue, ValidationError

from baton import Context, Event, Node, RequestInput, Workflow, node
from baton.errors import (
    NodeTimeoutError,
    WorkflowChangedError,
    WorkflowConfigurationError,
)
from baton.sessions.services import BaseSessionService
from baton.workflow import RetryConfig
from baton.workflow.binding import NodeInput
from baton.workflow.fingerprint import resumes_into
from baton.workflow.graph import fingerprint_of
from tests.conftest import StoreFactory
from tests.harness import Harness, MakeHarness, asked, attach_harness, build_harness
from tests.runner.test_guarantees import snapshot

Shown = tuple[str | None, str | None, JsonValue]


def shown(events: list[Event]) -> list[Shown]:
    """(branch, node path, output) of each event that carries an output."""
    return [
        (e.branch, e.node_info.path, e.output)
        for e in events
        if e.node_info and e.output is not None
    ]


def split(node_input: JsonValue) -> list[int]:
    return [1, 2, 3]


def total(node_input: list[int]) -> int:
    return sum(node_input)


async def test_a_parallel_worker_runs_each_item_on_its_own_branch_and_outputs_the_list(
    make_harness: MakeHarness,
) -> None:
    @node(parallel_worker=True)
    def sq(node_input: int) -> int:
        return node_input * node_input

    h = await make_harness(Workflow(name="wf", edges=[("START", split, sq, total)]))

    events = await h.start()

    seen = shown(events)
    # The items run at once (a sync node on a worker thread each): in any order.
    seen[1:4] = sorted(seen[1:4], key=lambda e: e[1] or "")
    assert seen == [
        (None, "wf@1/split@1", [1, 2, 3]),
        ("sq@1", "wf@1/sq@1/sq@1", 1),
        ("sq@2", "wf@1/sq@1/sq@2", 4),
        ("sq@3", "wf@1/sq@1/sq@3", 9),
        (None, "wf@1/sq@1", [1, 4, 9]),
        (None, "wf@1/total@1", 14),
    ]


async def test_max_parallel_workers_bounds_the_items_running_at_once(
    make_harness: MakeHarness,
) -> None:
    running: list[int] = []
    most = 0
    two_ran = asyncio.Event()  # set on the loop's thread: the items are async

    @node(parallel_worker=True, max_parallel_workers=2)
    async def slow(node_input: int) -> int:
        nonlocal most
        running.append(node_input)
        most = max(most, len(running))
        if len(running) == 2:
            two_ran.set()
        # The first item waits for the second, so a loaded machine pausing the loop past
        # a sleep cannot finish it alone (a bound of 1 fails the run after 10 s instead
        # of hanging); the sleep lets a third in if the bound fails.
        await asyncio.wait_for(two_ran.wait(), 10)
        await asyncio.sleep(0.01)
        running.remove(node_input)
        return node_input

    def five(node_input: JsonValue) -> list[int]:
        return [1, 2, 3, 4, 5]

    h = await make_harness(Workflow(name="wf", edges=[("START", five, slow)]))

    events = await h.start()

    assert events[-1].output == [1, 2, 3, 4, 5]
    assert most == 2


async def test_a_single_value_is_one_item_and_an_empty_list_none(
    make_harness: MakeHarness,
) -> None:
    @node(parallel_worker=True)
    def twice(node_input: int) -> int:
        return node_input * 2

    def seven(node_input: JsonValue) -> int:
        return 7

    def nothing(node_input: JsonValue) -> list[int]:
        return []

    one = await make_harness(Workflow(name="wf", edges=[("START", seven, twice)]))
    empty = await make_harness(Workflow(name="wf", edges=[("START", nothing, twice)]))

    assert (await one.start())[-1].output == [14]
    assert (await empty.start())[-1].output == []


def asking_worker(runs: list[int], **options: Any) -> Workflow:
    """A worker whose item 2 asks a question, its node made with `options`."""

    @node(parallel_worker=True, **options)
    async def check(ctx: Context, node_input: int) -> Any:
        runs.append(node_input)
        if node_input == 2:
            yield RequestInput(interrupt_id="q2", message="two?")
            return
        yield node_input * 10

    return Workflow(name="wf", edges=[("START", split, check, total)])


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_an_item_that_asks_pauses_the_worker_and_only_it_runs_on_resume(
    stores: StoreFactory, resumable: bool
) -> None:
    runs: list[int] = []
    h = await build_harness(
        asking_worker(runs, max_parallel_workers=2),
        BaseSessionService(stores.open()),
        resumable=resumable,
    )
    first = await h.start()
    assert asked(first) == ["q2"]

    again = attach_harness(
        asking_worker(runs, max_parallel_workers=2),
        BaseSessionService(stores.open()),
        h.session_id,
        resumable=resumable,
    )
    events = await again.answer(("q2", 22))

    # The items beside the one that asked run on while it waits (the reference starts
    # no new item once one asked, and runs item 3 after the answer).
    assert sorted(shown(first)[1:], key=lambda e: e[1] or "") == [
        ("check@1", "wf@1/check@1/check@1", 10),
        ("check@3", "wf@1/check@1/check@3", 30),
    ]
    assert shown(events) == [
        ("check@2", "wf@1/check@1/check@2", 22),
        (None, "wf@1/check@1", [10, 22, 30]),
        (None, "wf@1/total@1", 62),
    ]
    assert sorted(runs) == [1, 2, 3]


def test_max_parallel_workers_without_a_parallel_worker_is_refused() -> None:
    def f(node_input: int) -> int:
        return node_input

    # The reference's WorkflowConfigurationError (a ValueError), which its users catch.
    needs = "max_parallel_workers=2 needs parallel_worker=True"
    with pytest.raises(WorkflowConfigurationError, match=needs):
        node(max_parallel_workers=2)(f)
    # 1.5 or True would pass a `< 1` check and leave the semaphore no bound at all.
    for most in (0, 1.5, True, "2"):
        problem = "node 'f' max_parallel_workers must be a whole number of at least 1 "
        with pytest.raises(
            WorkflowConfigurationError,
            match=re.escape(f"{problem}(or None for all items at once), got {most!r}"),
        ):
            node(parallel_worker=True, max_parallel_workers=most)(f)  # pyright: ignore[reportArgumentType] -- the wrong types are the point


class Scale(Node):
    """A subclass of the reference's `Node`: one method, and its flags for free."""

    factor: int = 2

    async def run_node_impl(self, *, ctx: Context, node_input: NodeInput) -> AsyncIterator[object]:
        assert isinstance(node_input, int)
        yield node_input * self.factor


async def test_a_node_subclass_runs_its_run_node_impl_once_or_per_item(
    make_harness: MakeHarness,
) -> None:
    def seven(node_input: JsonValue) -> int:
        return 7

    once = Scale(name="scale", factor=3)
    each = Scale(name="scale", parallel_worker=True, max_parallel_workers=2)
    h1 = await make_harness(Workflow(name="wf", edges=[("START", seven, once)]))
    h2 = await make_harness(Workflow(name="wf", edges=[("START", split, each)]))

    assert shown(await h1.start())[-1] == (None, "wf@1/scale@1", 21)
    events = await h2.start()

    assert sorted(shown(events)[1:4], key=lambda e: e[1] or "") == [
        ("scale@1", "wf@1/scale@1/scale@1", 2),
        ("scale@2", "wf@1/scale@1/scale@2", 4),
        ("scale@3", "wf@1/scale@1/scale@3", 6),
    ]
    assert shown(events)[-1] == (None, "wf@1/scale@1", [2, 4, 6])


def test_a_node_subclass_with_max_parallel_workers_and_no_worker_is_refused() -> None:
    with pytest.raises(ValidationError, match="max_parallel_workers=2 needs parallel_worker"):
        Scale(name="s", max_parallel_workers=2)


def test_a_node_subclass_s_worker_flags_cannot_change_after_construction() -> None:
    # Set later, they were taken and ignored: the node ran once, or with its old bound.
    once, each = Scale(name="s"), Scale(name="s", parallel_worker=True, max_parallel_workers=2)

    with pytest.raises(ValidationError, match="parallel_worker\n  Field is frozen"):
        once.parallel_worker = True
    with pytest.raises(ValidationError, match="max_parallel_workers\n  Field is frozen"):
        each.max_parallel_workers = 5

    assert (once.parallel_worker, each.max_parallel_workers) == (False, 2)


async def test_the_workers_retry_config_retries_a_failed_item_not_the_finished_ones(
    make_harness: MakeHarness,
) -> None:
    # As in the reference. An item's failure used to fail the run, never retried.
    runs: list[int] = []

    @node(parallel_worker=True, retry_config=RetryConfig(max_attempts=2, initial_delay=0))
    async def flaky(node_input: int) -> int:
        runs.append(node_input)
        if node_input != 1:
            return node_input * 10
        if runs.count(1) == 1:
            # Not before items 2 and 3 are stored: in flight, they would be cancelled.
            while not await stored(20, 30):  # noqa: ASYNC110 -- no signal for a stored event
                await asyncio.sleep(0.001)
            raise ValueError("item 1 failed once")
        return 10

    async def stored(*outputs: int) -> bool:
        session = await h.service.store.get_session(h.key)
        assert session is not None
        return all(any(e.output == o for e in session.events) for o in outputs)

    h = await make_harness(Workflow(name="wf", edges=[("START", split, flaky)]))

    events = await h.start()

    assert events[-1].output == [10, 20, 30]
    assert sorted(runs) == [1, 1, 2, 3]


def failures(events: list[Event]) -> list[tuple[str | None, str | None]]:
    """(node path, error message) of each error event, in path order."""
    found = [(e.node_info.path, e.error_message) for e in events if e.node_info and e.error_code]
    return sorted(found, key=lambda f: f[0] or "")


async def stored_events(h: Harness) -> list[Event]:
    session = await h.service.store.get_session(h.key)
    assert session is not None
    return session.events


async def test_an_item_that_fails_is_retried_by_itself_and_the_worker_records_no_error(
    stores: StoreFactory,
) -> None:
    """`node(..., parallel_worker=True, retry_config=...)` gives the retry_config to each
    item, as the reference does: an item that fails once is retried on its own, and
    the only error events are the items' (the worker's retry wrote its own before)."""
    runs: list[int] = []

    @node(parallel_worker=True, retry_config=RetryConfig(max_attempts=2, initial_delay=0))
    async def flaky(node_input: int) -> int:
        runs.append(node_input)
        if node_input != 3 and runs.count(node_input) == 1:
            raise ValueError(f"item {node_input} failed once")
        return node_input * 10

    wf = Workflow(name="wf", edges=[("START", split, flaky)])
    h = await build_harness(wf, BaseSessionService(stores.open()), resumable=True)

    events = await h.start()

    assert failures(events) == [
        ("wf@1/flaky@1/flaky@1", "item 1 failed once"),
        ("wf@1/flaky@1/flaky@2", "item 2 failed once"),
    ]
    assert events[-1].output == [10, 20, 30]
    assert sorted(runs) == [1, 1, 2, 2, 3]
    assert failures(await stored_events(h)) == failures(events)


async def test_the_timeout_of_a_parallel_worker_times_each_item(
    stores: StoreFactory,
) -> None:
    """`timeout` bounds each item's run, as in the reference: the item that never ends
    fails with the timeout under its own path, and the items that ended are stored."""

    @node(parallel_worker=True, timeout=0.5)
    async def slow(node_input: int) -> int:
        if node_input == 3:
            await asyncio.Event().wait()  # never set: only the timeout ends this item
        return node_input * 10

    wf = Workflow(name="wf", edges=[("START", split, slow)])
    h = await build_harness(wf, BaseSessionService(stores.open()), resumable=True)

    with pytest.raises(NodeTimeoutError, match="node 'slow' timed out after 0.5 seconds"):
        await h.start()

    stored = await stored_events(h)
    assert failures(stored) == [
        ("wf@1/slow@1/slow@3", "node 'slow' timed out after 0.5 seconds."),
    ]
    assert [e.output for e in stored if e.output is not None] == [[1, 2, 3], 10, 20]


@pytest.mark.parametrize(
    ("started", "resumed", "change"),
    [
        ({"version": 1}, {"version": 2}, "ParallelWorker(rerun) of FunctionNode version 1 -> "),
        (
            {},
            {"rerun_on_resume": True},
            "ParallelWorker(rerun) of FunctionNode -> ParallelWorker(rerun) of FunctionNode(rerun)",
        ),
    ],
    ids=["version", "rerun_on_resume"],
)
async def test_a_changed_item_option_is_a_changed_workflow_on_resume(
    stores: StoreFactory, started: dict[str, Any], resumed: dict[str, Any], change: str
) -> None:
    """The item node's options are in the fingerprint, as any node's are: a resume by
    code whose item node differs is refused, naming the node, and nothing changes."""
    runs: list[int] = []
    service = BaseSessionService(stores.open())
    h = await build_harness(asking_worker(runs, **started), service, resumable=True)
    await h.start()
    before = await snapshot(service, h.key)

    changed = attach_harness(
        asking_worker(runs, **resumed),
        BaseSessionService(stores.open()),
        h.session_id,
        resumable=True,
    )
    with pytest.raises(WorkflowChangedError, match=rf"node 'check' changed \({re.escape(change)}"):
        await changed.answer(("q2", 22))

    assert await snapshot(service, h.key) == before
    events = await h.answer(("q2", 22))  # the code it started with resumes it
    assert shown(events)[-1] == (None, "wf@1/total@1", 62)


@pytest.mark.parametrize(
    "options", [{}, {"rerun_on_resume": True}, {"version": 1}], ids=["plain", "rerun", "version"]
)
def test_a_run_recorded_before_workers_named_their_item_still_resumes(
    options: dict[str, Any],
) -> None:
    """A run paused before the item node was fingerprinted recorded the worker alone
    (this string is what that code recorded): the same code resumes it, whatever the
    item's options, while a worker that named its item must match it."""
    recorded = (
        '{"edges":["START -> split","check -> total","split -> check"],'
        '"nodes":{"check":"ParallelWorker(rerun)","split":"FunctionNode",'
        '"total":"FunctionNode"},"workflow":"wf"}'
    )
    current = fingerprint_of(asking_worker([], **options))

    assert resumes_into(recorded, current)
    named = recorded.replace("ParallelWorker(rerun)", "ParallelWorker(rerun) of FunctionNode")
    assert resumes_into(named, current) == (options == {})


def test_node_takes_auth_config_none_and_refuses_one_that_is_no_auth_config() -> None:
    def f(node_input: int) -> int:
        return node_input

    # The reference's signature default, which code spelling every option passes.
    assert node(auth_config=None)(f).name == "f"
    with pytest.raises(TypeError, match="auth_config must be an AuthConfig"):
        node(f, auth_config={"auth_scheme": "oauth2"})  # pyright: ignore[reportCallIssue, reportArgumentType] -- the wrong type is the point
