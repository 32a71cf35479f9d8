"""`run_async(abort_signal=...)`: the run stops where it is, is sealed with an
`INVOCATION_ABORTED` event, and continues by its id, the interrupted node run again."""

from __future__ import annotations

import asyncio

import pytest

from baton import Workflow, types
from baton.aborting import AbortSignal
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus, StepCommit
from baton.types import InvocationId
from tests.conftest import StoreFactory
from tests.harness import MakeHarness, build_harness


def _go() -> types.Content:
    return types.Content(role="user", parts=[types.Part(text="go")])


def _workflow(abort: asyncio.Event, ran: list[str]) -> Workflow:
    def a(node_input: str) -> str:
        ran.append("a")
        return "a"

    async def b(node_input: str) -> str:
        ran.append("b")
        if ran.count("b") == 1:
            abort.set()  # the caller aborts while b is under way
            await asyncio.Event().wait()  # b never finishes this time
        return "b"

    def c(node_input: str) -> str:
        ran.append("c")
        return "c"

    return Workflow(name="wf", edges=[("START", a, b, c)])


# The server's `AbortSignal` stops the read itself when set; any other event is waited on.
_SIGNALS = pytest.mark.parametrize("signal", [asyncio.Event, AbortSignal])


@_SIGNALS
async def test_an_aborted_run_is_sealed_and_continues_by_its_id(
    make_harness: MakeHarness, signal: type[asyncio.Event]
) -> None:
    abort = signal()
    ran: list[str] = []
    h = await make_harness(_workflow(abort, ran))

    events = await h.collect(new_message=_go(), abort_signal=abort)

    assert ran == ["a", "b"]
    assert [e.output for e in events if e.output is not None] == ["a"]
    seal = events[-1]
    assert (seal.author, seal.error_code) == ("wf", "INVOCATION_ABORTED")
    assert "invocation_id" in (seal.error_message or "")
    invocation = await h.invocation()
    assert invocation.status is InvocationStatus.FAILED
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.events[-1].id == seal.id

    resumed = await h.collect(invocation_id=invocation.id)

    assert ran == ["a", "b", "b", "c"]  # a committed and is not run again; b is
    assert [e.output for e in resumed if e.output is not None][-1] == "c"
    assert (await h.invocation()).status is InvocationStatus.COMPLETED


@_SIGNALS
async def test_a_signal_set_after_the_run_ended_seals_nothing(
    make_harness: MakeHarness, signal: type[asyncio.Event]
) -> None:
    ran = ["b"]  # b ran once already: this time it does not abort
    h = await make_harness(_workflow(asyncio.Event(), ran))
    abort = signal()

    events = [
        e
        async for e in h.runner.run_async(
            user_id="u", session_id=h.session_id, new_message=_go(), abort_signal=abort
        )
    ]
    abort.set()

    assert not any(e.error_code for e in events)
    assert (await h.invocation()).status is InvocationStatus.COMPLETED
    assert ran == ["b", "a", "b", "c"]


def _counted(ran: list[str]) -> Workflow:
    def a(node_input: str) -> str:
        ran.append("a")
        return "a"

    def b(node_input: str) -> str:
        ran.append("b")
        return "b"

    return Workflow(name="wf", edges=[("START", a, b)])


async def _let_the_abort_reach_the_run() -> None:
    """Turns of the event loop enough for a set signal to stop the run (the caller's
    read ends, the run is told to stop): a count of yields, never a timed wait."""
    for _ in range(100):
        await asyncio.sleep(0)


@pytest.mark.parametrize("landed", [True, False], ids=["after-the-write", "before-the-write"])
async def test_an_abort_during_a_step_commit_leaves_the_step_whole_and_the_run_sealed(
    stores: StoreFactory, landed: bool
) -> None:
    """The signal is set while a's step is being committed: once the database holds it
    (the run not told yet), or before it is written. The run ends sealed after a's step
    committed whole (its output and checkpoint), or with the step not committed at all,
    never between; it continues by its id, running a again only when its step is not
    stored."""
    abort = asyncio.Event()
    ran: list[str] = []
    store = stores.open()
    commit = store.commit_step

    async def commit_step(step: StepCommit) -> int:
        ends_a = any(e.output == "a" for e in step.events)
        if ends_a and not landed:
            abort.set()
            await _let_the_abort_reach_the_run()
        version = await commit(step)
        if ends_a and landed:
            abort.set()  # the database holds the step; the run does not know yet
            await _let_the_abort_reach_the_run()
        return version

    setattr(store, "commit_step", commit_step)  # noqa: B010 -- the store is final: wrap it
    h = await build_harness(_counted(ran), BaseSessionService(store), resumable=True)

    events = await h.collect(new_message=_go(), abort_signal=abort)

    assert ran == ["a"]
    assert (events[-1].author, events[-1].error_code) == ("wf", "INVOCATION_ABORTED")
    invocation = await h.invocation()
    assert invocation.status is InvocationStatus.FAILED
    stored = await store.list_events(h.key, InvocationId(invocation.id))
    outputs = [e.output for e in stored if e.output is not None]
    assert outputs == ["a"] if landed else outputs in ([], ["a"])
    assert stored[-1].error_code == "INVOCATION_ABORTED"

    resumed = await h.collect(invocation_id=invocation.id)

    assert ran == ["a", "b"] if outputs else ["a", "a", "b"]
    assert [e.output for e in resumed if e.output is not None][-1] == "b"
    assert (await h.invocation()).status is InvocationStatus.COMPLETED


@_SIGNALS
async def test_a_reader_cancelled_by_someone_else_is_cancelled_not_sealed(
    make_harness: MakeHarness, signal: type[asyncio.Event]
) -> None:
    """The signal's own cancellation of a read is taken back; another one, arriving with
    it, still cancels the task reading the run."""
    abort = signal()
    ran: list[str] = []
    h = await make_harness(_workflow(abort, ran))
    reader = asyncio.current_task()
    assert reader is not None

    async def read() -> list[object]:
        return [
            e
            async for e in h.runner.run_async(
                user_id="u", session_id=h.session_id, new_message=_go(), abort_signal=abort
            )
        ]

    task = asyncio.ensure_future(read())
    async with asyncio.timeout(60):  # until b sets the signal (and waits forever)
        while "b" not in ran:  # noqa: ASYNC110 -- b is the workflow's node: nothing to wait on
            await asyncio.sleep(0)
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert reader.cancelling() == 0
