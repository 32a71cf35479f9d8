"""The engine runs in its caller's task while a workflow is a chain of plain functions
(see `baton.workflow.handover`), and moves to a task of its own for anything else; the
guarantees hold either way: the caller has a step's events before the next step starts,
its cancellation stops the node under way (run again on resume), and a node's own
timeout is the node's."""

from __future__ import annotations

import asyncio

import pytest

from baton import RequestInput, Workflow, types
from baton.events import REQUEST_INPUT_FUNCTION
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus, StepCommit
from baton.types import InvocationId
from tests.conftest import StoreFactory
from tests.harness import Harness, MakeHarness, build_harness


def _go() -> types.Content:
    return types.Content(role="user", parts=[types.Part(text="go")])


async def _outputs_of_a_new_run(h: Harness) -> list[object]:
    """The outputs a new run in `h`'s session streams, read to its end."""
    stream = h.runner.run_async(user_id="u", session_id=h.session_id, new_message=_go())
    return [e.output async for e in stream if e.output is not None]


async def test_a_chain_of_functions_runs_in_the_callers_task_one_step_per_read(
    make_harness: MakeHarness,
) -> None:
    tasks: list[asyncio.Task[object] | None] = []
    ran: list[str] = []

    async def a(node_input: str) -> str:
        tasks.append(asyncio.current_task())
        ran.append("a")
        return "a"

    async def b(node_input: str) -> str:
        tasks.append(asyncio.current_task())
        ran.append("b")
        return "b"

    async def gen(node_input: str):  # a generator node: its own task from here on
        tasks.append(asyncio.current_task())
        ran.append("gen")
        yield "gen"

    h = await make_harness(Workflow(name="wf", edges=[("START", a, b, gen)]))
    caller = asyncio.current_task()
    outputs: list[object] = []
    async for event in h.runner.run_async(user_id="u", session_id=h.session_id, new_message=_go()):
        if event.output is not None:
            outputs.append(event.output)
            # The step's event is here before the next node started.
            assert ran == ["a", "b", "gen"][: len(outputs)]

    assert outputs == ["a", "b", "gen"]
    assert tasks[:2] == [caller, caller]
    assert tasks[2] is not caller
    assert asyncio.all_tasks() == {caller}  # the engine's task, if any, has ended


async def test_a_chain_resumed_by_an_answer_runs_in_the_callers_task(
    make_harness: MakeHarness,
) -> None:
    """The answer completes the paused run and the chain goes on after it, one step per
    read, in the caller's task: no task of the engine's own."""
    tasks: list[asyncio.Task[object] | None] = []
    ran: list[str] = []

    async def ask(node_input: str) -> RequestInput:
        return RequestInput(interrupt_id="ask", message="ok?", response_schema=bool)

    async def b(node_input: bool) -> str:
        tasks.append(asyncio.current_task())
        ran.append("b")
        return "b"

    async def c(node_input: str) -> str:
        tasks.append(asyncio.current_task())
        ran.append("c")
        return "c"

    h = await make_harness(Workflow(name="wf", edges=[("START", ask, b, c)]))
    await h.start()
    caller = asyncio.current_task()
    answer = types.FunctionResponse(
        id="ask", name=REQUEST_INPUT_FUNCTION, response={"result": True}
    )
    message = types.Content(role="user", parts=[types.Part(function_response=answer)])
    outputs: list[object] = []
    stream = h.runner.run_async(user_id="u", session_id=h.session_id, new_message=message)
    async for event in stream:
        if event.output is not None:
            outputs.append(event.output)
            # The step's event is here before the next node started.
            assert ran == ["b", "c"][: len(outputs) - 1]

    assert outputs == [True, "b", "c"]
    # (No check that no other task is left: a database store may still be announcing the
    # answered question to other processes in a task of its own.)
    assert tasks == [caller, caller]


async def test_the_callers_cancellation_stops_the_node_under_way_which_runs_again_on_resume(
    make_harness: MakeHarness,
) -> None:
    ran: list[str] = []
    blocked = asyncio.Event()

    async def a(node_input: str) -> str:
        ran.append("a")
        return "a"

    async def b(node_input: str) -> str:
        ran.append("b")
        if ran.count("b") == 1:
            blocked.set()
            await asyncio.Event().wait()  # never finishes this time
        return "b"

    h = await make_harness(Workflow(name="wf", edges=[("START", a, b)]))

    reading = asyncio.create_task(_outputs_of_a_new_run(h))
    await blocked.wait()
    reading.cancel()
    await asyncio.wait({reading})
    assert reading.cancelled()

    invocation = await h.invocation()
    assert invocation.status is InvocationStatus.RUNNING  # stopped, resumable by its id
    resumed = await h.collect(invocation_id=invocation.id)

    assert ran == ["a", "b", "b"]  # a's step had committed: only b runs again
    assert [e.output for e in resumed if e.output is not None] == ["b"]
    assert (await h.invocation()).status is InvocationStatus.COMPLETED


async def test_the_callers_cancellation_during_a_steps_commit_waits_for_it_then_stops_the_run(
    stores: StoreFactory,
) -> None:
    """Cancelled while a's step is being committed, the caller waits for the commit to
    end, then is cancelled: a's step is stored whole, b never started, and the run
    continues by its id from b."""
    ran: list[str] = []
    committing, go_on = asyncio.Event(), asyncio.Event()
    store = stores.open()
    commit = store.commit_step

    async def commit_step(step: StepCommit) -> int:
        if any(e.output == "a" for e in step.events):
            committing.set()
            await go_on.wait()  # the commit is under way until the test lets it end
        return await commit(step)

    setattr(store, "commit_step", commit_step)  # noqa: B010 -- the store is final: wrap it

    async def a(node_input: str) -> str:
        ran.append("a")
        return "a"

    async def b(node_input: str) -> str:
        ran.append("b")
        return "b"

    service = BaseSessionService(store)
    h = await build_harness(Workflow(name="wf", edges=[("START", a, b)]), service, resumable=True)

    reading = asyncio.create_task(_outputs_of_a_new_run(h))
    await committing.wait()
    reading.cancel()
    for _ in range(20):  # turns of the loop: a cancellation not held back would land
        await asyncio.sleep(0)
    assert not reading.done()  # the caller waits for the commit under way
    go_on.set()
    await asyncio.wait({reading})
    assert reading.cancelled()

    invocation = await h.invocation()
    assert invocation.status is InvocationStatus.RUNNING
    stored = await store.list_events(h.key, InvocationId(invocation.id))
    assert [e.output for e in stored if e.output is not None] == ["a"]
    assert ran == ["a"]  # the run stopped at a's step boundary
    resumed = await h.collect(invocation_id=invocation.id)

    assert ran == ["a", "b"]
    assert [e.output for e in resumed if e.output is not None] == ["b"]
    assert (await h.invocation()).status is InvocationStatus.COMPLETED


async def test_a_nodes_own_timeout_is_the_nodes_not_the_callers(
    make_harness: MakeHarness,
) -> None:
    async def a(node_input: str) -> str:
        try:
            async with asyncio.timeout(0.01):
                await asyncio.Event().wait()
        except TimeoutError:
            return "timed out"
        return "not reached"

    async def b(node_input: str) -> str:
        return f"b after {node_input}"

    h = await make_harness(Workflow(name="wf", edges=[("START", a, b)]))

    events = await h.collect(new_message=_go())

    assert [e.output for e in events if e.output is not None] == [
        "timed out",
        "b after timed out",
    ]
    assert (await h.invocation()).status is InvocationStatus.COMPLETED


async def test_a_future_that_fails_fails_the_node_that_awaited_it(
    make_harness: MakeHarness,
) -> None:
    async def a(node_input: str) -> str:
        failing = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(failing.set_exception, ValueError("no luck"))
        await failing
        return "not reached"

    h = await make_harness(Workflow(name="wf", edges=[("START", a)]))

    with pytest.raises(ValueError, match="no luck"):
        await h.collect(new_message=_go())

    assert (await h.invocation()).status is InvocationStatus.FAILED
    stored = await h.service.store.list_events(h.key, InvocationId((await h.invocation()).id))
    assert [e.error_code for e in stored if e.error_code] == ["ValueError"]
