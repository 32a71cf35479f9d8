"""Events reach the caller as each step commits; the run never runs ahead of its caller."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

import pytest

from baton import Workflow, types
from baton.history import acting_node
from baton.sessions.store import InvocationStatus
from baton.types import InvocationId
from tests.conftest import StoreFactory
from tests.harness import MakeHarness
from tests.workflow.test_dynamic import open_harness, restarted


def _chain(log: list[str]) -> Workflow:
    def make(name: str):
        def step(node_input: str) -> str:
            log.append(f"ran {name}")
            return f"{node_input}>{name}"

        step.__name__ = name
        return step

    return Workflow(name="wf", edges=[("START", *(make(f"n{i}") for i in range(1, 5)))])


def _go() -> types.Content:
    return types.Content(role="user", parts=[types.Part(text="go")])


async def test_each_event_reaches_the_caller_before_the_next_node_starts(
    make_harness: MakeHarness,
) -> None:
    log: list[str] = []
    h = await make_harness(_chain(log))
    async for event in h.runner.run_async(user_id="u", session_id=h.session_id, new_message=_go()):
        log.append(f"got {acting_node(event)}")
    assert log == [entry for i in range(1, 5) for entry in (f"ran n{i}", f"got n{i}")]


async def test_a_caller_that_stops_reading_holds_the_run_and_closing_stops_it_resumably(
    make_harness: MakeHarness,
) -> None:
    log: list[str] = []
    h = await make_harness(_chain(log))
    events = h.runner.run_async(user_id="u", session_id=h.session_id, new_message=_go())
    async with aclosing(events):
        first = await anext(events)
        for _ in range(50):  # the loop is free to run anything that is ready
            await asyncio.sleep(0)
        assert log == ["ran n1"]  # held at the step boundary while the caller does not read
    # Closing the stream stopped the run there: committed steps stay, nothing more ran.
    assert log == ["ran n1"]
    invocation = await h.load(InvocationId(first.invocation_id))
    assert invocation is not None
    assert invocation.status is InvocationStatus.RUNNING

    rest = await h.collect(invocation_id=first.invocation_id)
    assert log == ["ran n1", "ran n2", "ran n3", "ran n4"]  # n1 did not run again
    assert rest[-1].output == "go>n1>n2>n3>n4"
    finished = await h.load(InvocationId(first.invocation_id))
    assert finished is not None
    assert finished.status is InvocationStatus.COMPLETED


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_on_every_backend_events_come_step_by_step_and_a_closed_stream_resumes(
    stores: StoreFactory, resumable: bool
) -> None:
    # The same on the SQL stores, whose steps commit in their own transactions: the
    # caller holds the invocation id before the second node runs, and the run waits.
    log: list[str] = []
    h = await open_harness(stores, _chain(log), resumable)
    events = h.runner.run_async(user_id="u", session_id=h.session_id, new_message=_go())
    async with aclosing(events):
        first = await anext(events)
        assert (acting_node(first), log) == ("n1", ["ran n1"])
        second = await anext(events)
        assert (acting_node(second), log) == ("n2", ["ran n1", "ran n2"])
        for _ in range(50):
            await asyncio.sleep(0)
        assert log == ["ran n1", "ran n2"]
    later = restarted(h, stores, _chain(log), resumable)
    stored = await later.load(InvocationId(first.invocation_id))
    assert stored is not None
    assert stored.status is InvocationStatus.RUNNING

    rest = await later.collect(invocation_id=first.invocation_id)
    assert log == ["ran n1", "ran n2", "ran n3", "ran n4"]
    assert [acting_node(e) for e in rest] == ["n3", "n4"]
    assert rest[-1].output == "go>n1>n2>n3>n4"
