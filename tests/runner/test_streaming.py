"""Events reach the caller as each step commits; the run never runs ahead of its caller."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

from baton import Workflow, types
from baton.history import acting_node
from baton.sessions.store import InvocationStatus
from baton.types import InvocationId
from tests.harness import MakeHarness


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
