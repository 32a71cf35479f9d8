"""Plain nodes and tools run in worker threads; an async node that blocks the loop is named."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Generator, Iterator
from contextvars import ContextVar
from functools import partial

import pytest

from baton import Context, Event, FunctionNode, RetryConfig, Workflow, threads
from baton.errors import NodeTimeoutError
from baton.sessions.services import DatabaseSessionService
from baton.threads import SyncSteps, run_sync
from baton.tools import FunctionTool, ToolContext
from baton.workflow import loopwatch
from baton.workflow.loopwatch import THRESHOLD_ENV, watch_loop
from tests.harness import MakeHarness, build_harness, outputs

request_id: ContextVar[str] = ContextVar("request_id")


async def test_a_blocking_sync_node_leaves_the_event_loop_free(make_harness: MakeHarness) -> None:
    loop_thread = threading.get_ident()
    released = threading.Event()  # only a coroutine on the loop sets it
    seen: list[int] = []

    def blocks() -> str:
        seen.append(threading.get_ident())
        assert released.wait(timeout=10), "the event loop was held while the node blocked"
        return "done"

    async def release_soon() -> None:
        await asyncio.sleep(0.05)
        released.set()

    h = await make_harness(Workflow(name="wf", edges=[("START", blocks)]))
    events, _ = await asyncio.gather(h.start(), release_soon())
    assert outputs(events) == [("blocks", "done")]
    assert seen
    assert seen[0] != loop_thread


async def test_the_loop_keeps_ticking_while_a_sync_node_sleeps(make_harness: MakeHarness) -> None:
    ticks = 0
    finished = asyncio.Event()
    ticked = threading.Event()  # the loop ticked more than ten times

    def sleeps() -> str:
        ticked.wait(timeout=10)  # on a held loop no tick comes: it sleeps the 10 s
        return "rested"

    async def tick() -> None:
        nonlocal ticks
        while not finished.is_set():
            ticks += 1
            if ticks > 10:
                ticked.set()
            await asyncio.sleep(0.01)

    async def run() -> list[object]:
        try:
            return list(await h.start())
        finally:
            finished.set()

    h = await make_harness(Workflow(name="wf", edges=[("START", sleeps)]))
    _, run_events = await asyncio.gather(tick(), run())
    assert len(run_events) == 1
    assert ticks > 10  # a held loop would have ticked once or twice


async def test_each_step_of_a_sync_generator_runs_off_the_loop(make_harness: MakeHarness) -> None:
    steps = [threading.Event(), threading.Event()]
    stepped_in: set[int] = set()

    def stepwise() -> Iterator[Event | str]:
        for number, step in enumerate(steps):
            stepped_in.add(threading.get_ident())
            assert step.wait(timeout=10), f"step {number}: the event loop was held"
            yield Event(message="thinking") if number == 0 else "output"

    async def release() -> None:
        for step in steps:
            await asyncio.sleep(0.02)
            step.set()

    h = await make_harness(Workflow(name="wf", edges=[("START", FunctionNode(stepwise))]))
    events, _ = await asyncio.gather(h.start(), release())
    assert outputs(events) == [("stepwise", "output")]
    assert events[0].content is not None
    assert events[0].content.text == "thinking"
    assert threading.get_ident() not in stepped_in


async def test_context_variables_reach_sync_nodes_and_tools(make_harness: MakeHarness) -> None:
    def reads() -> str:
        return request_id.get("unset")

    def tool_reads() -> str:
        return request_id.get("unset")

    request_id.set("req-7")
    h = await make_harness(Workflow(name="wf", edges=[("START", reads)]))
    assert outputs(await h.start()) == [("reads", "req-7")]
    assert await FunctionTool(tool_reads).run({}, ToolContext()) == "req-7"


async def test_context_variables_set_in_the_thread_are_seen_afterwards() -> None:
    def sets() -> int:
        request_id.set("from-thread")
        return threading.get_ident()

    ident = await run_sync(sets)
    assert ident != threading.get_ident()
    assert request_id.get() == "from-thread"


async def test_state_writes_retries_and_errors_of_sync_nodes(make_harness: MakeHarness) -> None:
    attempts: list[int] = []

    def flaky(ctx: Context) -> str:
        attempts.append(ctx.attempt_count)
        ctx.state["tries"] = len(attempts)
        if len(attempts) < 3:
            raise ConnectionError("not yet")
        return "ok"

    node = FunctionNode(flaky, retry_config=RetryConfig(max_attempts=3, initial_delay=0))
    h = await make_harness(Workflow(name="wf", edges=[("START", node)]))
    assert outputs(await h.start()) == [("flaky", "ok")]
    assert attempts == [1, 2, 3]
    session = await h.service.get_session(
        app_name=h.runner.app_name, user_id="u", session_id=h.session_id
    )
    assert session is not None
    assert session.state["tries"] == 3


async def test_a_timeout_stops_a_blocked_sync_node(make_harness: MakeHarness) -> None:
    released = threading.Event()

    def stuck() -> str:
        released.wait(timeout=10)
        return "too late"

    h = await make_harness(
        Workflow(name="wf", edges=[("START", FunctionNode(stuck, timeout=0.05))])
    )
    try:
        with pytest.raises(NodeTimeoutError, match="node 'stuck' timed out after 0.05 seconds"):
            await h.start()
        assert not released.is_set()  # stopped while the function was still blocked
    finally:
        released.set()  # the abandoned thread ends; its result is dropped


async def test_a_sync_generator_stopped_early_is_closed_in_a_thread() -> None:
    closed: list[int] = []

    def counts() -> Generator[int]:
        try:
            yield 1
            yield 2
        finally:
            closed.append(threading.get_ident())

    steps = SyncSteps(counts())
    assert await steps.next() == (True, 1)
    await steps.close()
    assert closed
    assert closed[0] != threading.get_ident()


@pytest.fixture
def warned(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> Iterator[threading.Event]:
    """A small threshold, baton's warnings captured; the event is set at the first one."""
    monkeypatch.setenv(THRESHOLD_ENV, "0.1")
    caplog.set_level(logging.WARNING, logger="baton")
    first = threading.Event()

    class Signal(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            first.set()

    handler = Signal(logging.WARNING)
    logging.getLogger("baton").addHandler(handler)
    yield first
    logging.getLogger("baton").removeHandler(handler)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "baton"]


class Looks:
    """Counts the looks the watch of one event loop takes at it (a spy wrapped around
    the watch's check, which runs as before): a test that expects no warning waits for
    looks, so it cannot pass because the watch never looked."""

    def __init__(self, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self._changed = threading.Condition()
        look = loopwatch._Watch._look  # pyright: ignore[reportPrivateUsage] -- the spy's target

        def counted(watch: loopwatch._Watch) -> bool:  # pyright: ignore[reportPrivateUsage] -- as above
            looking = look(watch)
            if watch._loop() is loop:  # pyright: ignore[reportPrivateUsage] -- as above
                with self._changed:
                    self.count += 1
                    self._changed.notify_all()
            return looking

        monkeypatch.setattr(loopwatch._Watch, "_look", counted)  # pyright: ignore[reportPrivateUsage] -- as above

    def wait(self, more: int) -> None:
        """Block until the watch has looked `more` times after now (10 s at most)."""
        with self._changed:
            target = self.count + more
            assert self._changed.wait_for(
                lambda: self.count >= target, timeout=10
            ), f"the watch looked {self.count} times, not {target}"


async def test_an_async_node_blocking_the_loop_is_named_once_while_it_blocks(
    make_harness: MakeHarness,
    caplog: pytest.LogCaptureFixture,
    warned: threading.Event,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looks = Looks(asyncio.get_running_loop(), monkeypatch)

    async def hogs() -> str:
        noticed = warned.wait(timeout=10)  # blocks the loop until the watch speaks up
        # The same stall goes on while the watch looks four more times, each time past the
        # threshold: a watch warning at every look would warn again.
        looks.wait(4)
        return "noticed" if noticed else "unnoticed"

    h = await make_harness(Workflow(name="wf", edges=[("START", hogs)]))
    assert outputs(await h.start()) == [("hogs", "noticed")]
    warnings = _warnings(caplog)
    assert len(warnings) == 1
    message = warnings[0]
    assert message.startswith("node 'wf@1/hogs@1' has held the event loop for")
    assert "asyncio.to_thread" in message
    assert THRESHOLD_ENV in message


@pytest.mark.usefixtures("warned")
async def test_the_innermost_node_run_blocking_the_loop_is_named(make_harness: MakeHarness) -> None:
    # A node called by another (ctx.run_node), on one of two lanes run beside each other
    # (each in a task of its own): the one whose code blocks is named, not its caller.
    named = threading.Event()
    seen: list[str] = []

    class Named(logging.Handler):
        # Its own record of the warnings, the last handler on the root logger: the watch's
        # logging call is over when it lets the node go on. Ahead of the root's other
        # handlers, the test could end meanwhile and the record reach the next test's
        # caplog, as a warning that test's own run never caused.
        def emit(self, record: logging.LogRecord) -> None:
            if record.name != "baton":
                return
            seen.append(record.getMessage())
            if "'wf@1/caller@1/hogs@1'" in seen[-1]:
                named.set()

    async def hogs() -> str:
        named.wait(timeout=10)
        return "hogged"

    async def caller(ctx: Context) -> str:
        return await ctx.run_node(hogs)

    async def other() -> None:
        return None

    handler = Named(logging.WARNING)
    logging.getLogger().addHandler(handler)
    try:
        h = await make_harness(Workflow(name="wf", edges=[("START", (caller, other))]))
        await h.start()
    finally:
        logging.getLogger().removeHandler(handler)
    assert named.is_set()
    assert seen[0].startswith("node 'wf@1/caller@1/hogs@1' has held the event loop")
    assert not any(w.startswith("node 'wf@1/caller@1' ") for w in seen)


async def test_runs_that_do_not_block_produce_no_warning(
    make_harness: MakeHarness,
    caplog: pytest.LogCaptureFixture,
    warned: threading.Event,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looks = Looks(asyncio.get_running_loop(), monkeypatch)
    # Each node lasts eight looks of the watch (at least 0.175 s, past the 0.1 s threshold),
    # so a watch that timed nodes instead of the loop's heartbeat would warn.

    async def polite() -> str:
        await asyncio.to_thread(looks.wait, 8)
        return "ok"

    def sleepy() -> str:
        looks.wait(8)  # a plain node: in a thread, the loop is free
        return "ok"

    h = await make_harness(Workflow(name="wf", edges=[("START", polite, sleepy)]))
    assert outputs(await h.start()) == [("polite", "ok"), ("sleepy", "ok")]
    assert _warnings(caplog) == []
    assert not warned.is_set()


def test_the_watch_thread_ends_with_its_loop() -> None:
    async def main() -> None:
        watch_loop()

    before = set(threading.enumerate())
    loop = asyncio.new_event_loop()  # not asyncio.run: it would reset the test's loop policy
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    started = [t for t in threading.enumerate() if t not in before and t.name == "baton-loopwatch"]
    for thread in started:
        thread.join(timeout=5)
    assert started
    assert not any(t.is_alive() for t in started)


def _run_sync_in_new_loop(value: int) -> int:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(run_sync(lambda: value))
    finally:
        loop.close()


def test_a_forked_child_starts_its_own_worker_threads() -> None:
    assert _run_sync_in_new_loop(1) == 1  # the parent has an idle worker now
    pid = os.fork()
    if pid == 0:  # the child: the parent's idle worker does not exist here
        signal.alarm(5)  # a hang would end the child with SIGALRM
        os._exit(0 if _run_sync_in_new_loop(7) == 7 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


async def test_calls_at_once_past_the_piped_workers_each_get_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two workers at most are woken through a pipe: the others through a Lock. Eight
    # calls that each wait for all eight to be running need eight threads at once.
    monkeypatch.setattr(threads, "PIPED_WORKERS", 2)
    together = threading.Barrier(8)

    def meets() -> int:
        together.wait(timeout=10)  # BrokenBarrierError unless all eight run at once
        return threading.get_ident()

    idents = await asyncio.gather(*(run_sync(meets) for _ in range(8)))
    assert len(set(idents)) == 8
    assert await asyncio.gather(*(run_sync(lambda n=n: n) for n in range(8))) == list(range(8))


async def test_an_idle_worker_thread_retires_and_a_later_call_still_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(threads, "IDLE_SECONDS", 0.01)
    worker = await run_sync(threading.current_thread)
    worker.join(timeout=10)  # it waits 0.01 s for its next call, then ends
    assert not worker.is_alive()
    assert await run_sync(lambda: "still served") == "still served"


async def test_a_function_that_outlasted_the_quick_wait_leaves_the_loop_free_on_its_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each call waits for a callback the loop runs only once the caller lets go of it.
    loop = asyncio.get_running_loop()

    def waits_for_the_loop(free: threading.Event) -> bool:
        return free.wait(timeout=2)

    async def call() -> bool:
        free = threading.Event()
        loop.call_soon(free.set)
        return await run_sync(partial(waits_for_the_loop, free))

    # No function known slow: had an earlier test's slow function the id this one gets,
    # the first call would go through the loop, end quick and take the id off again.
    monkeypatch.setattr(threads, "_slow", set[int]())
    monkeypatch.setattr(threads, "HANDOFF_WAIT", 0.01)
    assert await call()  # the loop was held for the quick wait, 0.01 s, then ran it
    # A quick wait now would outlast the call's own wait: the loop would be held throughout.
    monkeypatch.setattr(threads, "HANDOFF_WAIT", 10.0)
    assert await call(), "the loop was held for the quick wait again"


async def test_a_function_whose_call_held_the_loop_for_more_than_a_quick_call_does_not_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call that ended within the quick wait but took longer than `QUICK_CALL` held the
    loop all that time: the function's next call goes through the loop, so several runs
    calling a function of a few ms each run side by side."""
    loop = asyncio.get_running_loop()

    def works_then_waits_for_the_loop(free: threading.Event | None) -> bool:
        if free is None:
            time.sleep(0.002)  # the work of a call: four quick ones (`QUICK_CALL`)
            return True
        return free.wait(timeout=2)

    # A quick wait this long would outlast any call: only `_slow` lets the loop go.
    monkeypatch.setattr(threads, "HANDOFF_WAIT", 10.0)
    assert await run_sync(partial(works_then_waits_for_the_loop, None))
    free = threading.Event()
    loop.call_soon(free.set)
    assert await run_sync(partial(works_then_waits_for_the_loop, free)), "the loop was held"


async def test_other_runs_finish_while_a_sync_node_blocks(store_url: str) -> None:
    # Each of the other runs needs the loop and worker threads of its own (its nodes are
    # plain functions too) while the first run's node blocks in its thread.
    service = DatabaseSessionService(store_url)
    finished = threading.Event()

    def waits() -> str:
        assert finished.wait(timeout=10), "the other runs were held while this node blocked"
        return "released"

    def a() -> str:
        return "a"

    def b(node_input: str) -> str:
        return node_input + "b"

    try:
        blocked = await build_harness(
            Workflow(name="blocked", edges=[("START", waits)]), service, resumable=True
        )
        others = [
            await build_harness(
                Workflow(name="quick", edges=[("START", a, b)]), service, resumable=True
            )
            for _ in range(3)
        ]

        async def run_others() -> list[list[Event]]:
            done = await asyncio.gather(*(other.start() for other in others))
            finished.set()
            return done

        first, rest = await asyncio.gather(blocked.start(), run_others())
    finally:
        await service.close()
    assert outputs(first) == [("waits", "released")]
    assert [outputs(events) for events in rest] == [[("a", "a"), ("b", "ab")]] * 3


async def test_calls_run_when_no_pipe_can_be_opened(monkeypatch: pytest.MonkeyPatch) -> None:
    def out_of_descriptors() -> tuple[int, int]:
        raise OSError(errno.EMFILE, "Too many open files")

    # More calls at once than earlier tests left idle workers: new workers start, each
    # woken through a Lock instead.
    monkeypatch.setattr(os, "pipe", out_of_descriptors)
    together = threading.Barrier(40)

    def meets() -> int:
        together.wait(timeout=10)
        return threading.get_ident()

    idents = await asyncio.gather(*(run_sync(meets) for _ in range(40)))
    assert len(set(idents)) == 40


async def test_a_worker_thread_that_cannot_start_leaves_no_pipe_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A new pool has no idle worker: the call starts one, and the process has no thread
    # to give it (its limit reached). The worker's pipe was left open, and kept one of the
    # PIPED_WORKERS places, on every such failure.
    def no_thread(worker: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    pool = threads._Pool()  # pyright: ignore[reportPrivateUsage] -- no idle worker in it
    monkeypatch.setattr(threads, "_POOL", pool)
    opened = set(os.listdir("/proc/self/fd"))
    with monkeypatch.context() as starts:
        starts.setattr(threads._Worker, "start", no_thread)  # pyright: ignore[reportPrivateUsage] -- as above
        with pytest.raises(RuntimeError, match="can't start new thread"):
            await run_sync(lambda: "never")
    # None opened and kept (idle workers of earlier tests may close theirs meanwhile).
    assert set(os.listdir("/proc/self/fd")) - opened == set()
    assert await run_sync(lambda: "served") == "served"


# A run fails (its async node raises) while its plain node is still inside Rust code
# (a pydantic-core validator calling back into Python). The node keeps going past the
# start of the interpreter's exit, then returns. Exit code 3 is the script's own.
_NODE_RUNNING_AT_EXIT = """
import asyncio, sys, threading, time
from pydantic import BaseModel, field_validator
from baton import InMemorySessionService, Runner, Workflow, threads, types

threads.EXIT_WAIT = float(sys.argv[1])
started = threading.Event()

class Slow(BaseModel):
    value: int

    @field_validator("value")
    @classmethod
    def outlive_the_run(cls, value: int) -> int:
        started.set()
        if sys.argv[2] == "forever":
            threading.Event().wait()
        while threading.main_thread().is_alive():  # until the interpreter starts to exit
            time.sleep(0.001)
        # on, in Rust code, until the interpreter finalizes (or a while, if it waits)
        ends = time.monotonic() + 1.0
        while not sys.is_finalizing() and time.monotonic() < ends:
            time.sleep(0.001)
        print("node finished", flush=True)
        return value

def slow(node_input: str) -> int:
    return Slow(value=1).value

async def fail(node_input: str) -> str:
    await asyncio.get_running_loop().run_in_executor(None, started.wait)
    raise RuntimeError("sibling failed")

async def main() -> None:
    flow = Workflow(name="w", edges=[("START", (slow, fail))])
    runner = Runner(app_name="app", agent=flow, session_service=InMemorySessionService())
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="go")])
    try:
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass
    except RuntimeError as error:
        print("run failed:", error, flush=True)

asyncio.run(main())
sys.exit(3)
"""


def _exit_with_a_node_running(exit_wait: float, node: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", _NODE_RUNNING_AT_EXIT, str(exit_wait), node]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_a_process_exits_normally_when_a_failed_run_left_a_sync_node_running() -> None:
    done = _exit_with_a_node_running(30.0, "returns")
    assert done.returncode == 3, done.stderr  # was -6 (SIGABRT: "exception not rethrown")
    assert done.stdout.splitlines() == ["run failed: sibling failed", "node finished"]
    assert "waiting up to 30.0 s for 1 sync call(s) still running" in done.stderr


def test_exit_waits_only_exit_wait_for_a_sync_node_that_never_returns() -> None:
    done = _exit_with_a_node_running(0.2, "forever")
    assert done.returncode == 3, done.stderr
    assert done.stdout.splitlines() == ["run failed: sibling failed"]
    assert "exiting with 1 sync call(s) still running in worker threads" in done.stderr
