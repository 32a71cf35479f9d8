"""Plain (sync) user code runs in worker threads, never on the event loop.

A plain node function, each step of a sync generator node, a sync tool and a sync
instruction provider run in a worker thread, in a copy of the caller's context
variables, so one that blocks (`time.sleep`, a blocking HTTP client, a slow
library) never stops the event loop: lease renewal, other runs and the HTTP
server carry on. Context variables the code sets are copied back into the
caller's context afterwards, as if it had run inline.

The cost is kept low for the common trivial function: threads are kept and
reused (a thread per concurrently running call, idle ones retire after
`IDLE_SECONDS`), the caller wakes its worker with the GIL released (`_Pipe`),
then waits `HANDOFF_WAIT` seconds for the result with the GIL released, so a
quick call costs two thread switches and no event-loop wake-up. A call still
running after that becomes an ordinary await: the loop is never held longer
than `HANDOFF_WAIT` by it, and a function whose last call took longer than
`QUICK_CALL` is awaited through the loop from its next call on, without the wait
(`_slow`), until one of its calls is quick again.

A call abandoned by a timeout or a cancellation keeps running in its thread to
its end (Python cannot stop a thread); its result is discarded. At interpreter exit
(`atexit`) the process waits up to `EXIT_WAIT` seconds for such calls to end: the
worker threads are daemon threads, and one that takes the GIL back once the
interpreter is finalizing is ended with `pthread_exit`, whose unwinding aborts the
process (SIGABRT, exit 134) when the call is inside C++ or Rust code (pydantic-core,
greenlet). A call still running after `EXIT_WAIT` is left to that fate, with a log.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import logging
import os
import select
import threading
import time
from collections.abc import Callable, Coroutine, Generator
from contextlib import suppress
from contextvars import Context, ContextVar, copy_context
from functools import partial
from typing import Any, Final, TypeVar, cast

__all__ = [
    "EXIT_WAIT",
    "HANDOFF_WAIT",
    "IDLE_SECONDS",
    "PIPED_WORKERS",
    "SyncSteps",
    "bound_run_threads",
    "run_sync",
]

T = TypeVar("T")

logger = logging.getLogger("baton")

HANDOFF_WAIT: Final = 0.005
"""Seconds the caller waits for a quick call's result before yielding to the event loop.

Speed: longer than a kernel tick (4 ms at Linux's usual HZ=250). A wait due before the
CPU's next tick is its earliest timer, so arming and cancelling it reprograms the CPU's
timer (under KVM, an exit to the hypervisor for each), and the loop's work after the
call then runs slower, as on a cold cache. With 0.5 ms, and both threads on one vCPU, a
plain chain node (bench/baton_bench.py) cost 1.7 such writes of the timer and 20-22 µs
more in memory, 17-34 on SQLite, whose work after each call is three times as long. A
slow function holds the loop this long once, not each call (`_slow`)."""

QUICK_CALL: Final = 0.0005
"""Seconds past which a call marks its function slow (`_slow`), though it ended within
`HANDOFF_WAIT`: the loop is held only while a call is quick, so calls of a few ms each
in several runs at once still run side by side, not one after another on the loop. The
call's own time in its thread, not its wait for one, so a busy machine (or valgrind)
marks no quick function slow."""

IDLE_SECONDS: Final = 30.0
"""An idle worker thread ends after this many seconds without work."""

EXIT_WAIT = 30.0
"""Seconds the interpreter's exit waits at most for calls still running in worker
threads (`_Pool.finish`); as long as a worker's default drain grace."""

_EXIT_POLL: Final = 0.005
"""How often the exit's wait looks whether the running calls have ended."""


class _Job:
    """One call handed to a worker thread, and its outcome."""

    __slots__ = (
        "after",
        "call",
        "context",
        "done",
        "error",
        "finished",
        "lock",
        "result",
        "took",
        "wake",
    )

    def __init__(self, call: Callable[[], object], context: Context) -> None:
        self.call = call
        self.context = context
        self.result: object = None
        self.error: BaseException | None = None
        self.done = threading.Lock()  # released when finished: the caller's quick wait
        self.done.acquire()
        self.lock = threading.Lock()  # guards `finished`, `wake` and `after`
        self.finished = False
        self.wake: Callable[[], None] | None = None
        self.after: Callable[[], object] | None = None
        self.took = 0.0  # seconds the call itself ran (not its wait for a thread)

    def execute(self) -> None:
        started = time.monotonic()
        try:
            self.result = self.context.run(self.call)
        except BaseException as error:  # handed to the caller, who raises it
            self.error = error
        self.took = time.monotonic() - started

    def seal(self) -> tuple[Callable[[], None] | None, Callable[[], object] | None]:
        """Mark the job finished; who to wake and what to run after it, if anyone asked."""
        with self.lock:
            self.finished = True
            return self.wake, self.after

    def signal(self, wake: Callable[[], None] | None) -> None:
        self.done.release()
        if wake is not None:
            wake()

    def run_after(self, after: Callable[[], object]) -> None:
        try:
            self.context.run(after)
        except Exception:  # nobody awaits it any more: say so rather than lose it
            logger.exception("baton: cleaning up an abandoned sync call failed")

    def notify(self, wake: Callable[[], None]) -> bool:
        """Have `wake` called when the job finishes; False if it already has."""
        with self.lock:
            if self.finished:
                return False
            self.wake = wake
            return True

    def then(self, after: Callable[[], object]) -> bool:
        """Run `after` in the job's thread once it finishes; False if it already has."""
        with self.lock:
            if self.finished:
                return False
            self.after = after
            return True

    def outcome(self) -> object:
        if self.error is not None:
            raise self.error
        return self.result


class _Pipe:
    """How a caller wakes its worker: a byte through the worker's pipe.

    Speed: the caller writes the byte with the GIL released, so the worker, woken at
    once (often on the caller's core, ahead of it), finds the GIL free and runs the call
    before the caller goes on: two thread switches a quick call. A released Lock
    (`_Flag`) wakes the worker while the caller still holds the GIL: the worker sleeps
    again until the caller's wait lets go of it, ~6 switches a call (3 of each thread;
    bench/baton_bench.py's thread-hop and chain).
    """

    __slots__ = ("_poll", "_readable", "_writable")

    def __init__(self) -> None:
        self._readable, self._writable = os.pipe()
        poller = select.poll()
        poller.register(self._readable, select.POLLIN)
        self._poll = poller.poll

    def set(self) -> None:
        os.write(self._writable, b"\0")

    def wait(self, seconds: float) -> bool:
        """Wait until woken (True) or for `seconds` (False)."""
        if not self._poll(seconds * 1000):
            return False
        os.read(self._readable, 1)
        return True

    def close(self) -> None:
        os.close(self._readable)
        os.close(self._writable)


class _Flag:
    """How a caller wakes its worker once `PIPED_WORKERS` workers have a pipe: a Lock
    (the same interface as `_Pipe`; slower, but it holds no file descriptor)."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()

    def set(self) -> None:
        self._lock.release()

    def wait(self, seconds: float) -> bool:
        """Wait until woken (True) or for `seconds` (False)."""
        # Positional: a keyword argument costs a dict and a string lookup per call.
        return self._lock.acquire(True, seconds)

    def close(self) -> None:
        return None


PIPED_WORKERS: Final = 32
"""Workers woken through a pipe (`_Pipe`) at most, two file descriptors each; more
workers at once (as many as calls run at once) are woken through a Lock (`_Flag`)."""


class _Worker(threading.Thread):
    """A reusable daemon thread: runs the jobs it is given, one at a time."""

    def __init__(self, pool: _Pool, number: int, wake: _Pipe | _Flag) -> None:
        super().__init__(name=f"baton-sync-{number}", daemon=True)
        self._pool = pool
        self.wake = wake
        self._job: _Job | None = None

    def give(self, job: _Job) -> None:
        self._job = job
        self.wake.set()

    def run(self) -> None:
        wait = self.wake.wait
        while True:
            if not wait(IDLE_SECONDS):
                if self._pool.retire(self):
                    return
                continue  # handed a job while retiring: woken at once
            job, self._job = self._job, None
            assert job is not None  # give() sets it before waking us
            job.execute()
            wake, after = job.seal()
            if after is None:
                self._pool.rest(self)  # idle before the caller wakes: its next call reuses us
                job.signal(wake)
            else:
                job.signal(wake)
                job.run_after(after)
                self._pool.rest(self)


def _wake_for_next() -> _Pipe | _Flag:
    """A pipe for a new worker, or a Lock when the process is out of file descriptors
    (the call runs all the same)."""
    try:
        return _Pipe()
    except OSError:
        return _Flag()


class _Pool:
    """Idle workers; a new one starts when every worker is busy.

    Speed: no lock of its own. `list.append`, `list.pop`, `list.remove` and a set's
    `add` and `discard` each change the collection at once for every other thread, and
    that is all the pool needs: a worker either is taken (popped) by one caller or
    removes itself to retire, never both.
    """

    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._piped: set[_Worker] = set()  # the living workers woken through a pipe
        self._living: set[_Worker] = set()  # every started worker not yet retired
        self._numbers = itertools.count(1)

    def submit(self, job: _Job) -> None:
        try:
            worker = self._idle.pop()  # the one that rested last: likely still on a core
        except IndexError:
            self._start(job)
            return
        worker.give(job)

    def _start(self, job: _Job) -> None:
        wake = _wake_for_next() if len(self._piped) < PIPED_WORKERS else _Flag()
        worker = _Worker(self, next(self._numbers), wake)
        if isinstance(wake, _Pipe):
            self._piped.add(worker)
        self._living.add(worker)
        worker.give(job)
        try:
            worker.start()
        except BaseException:
            # No thread to run it (the process is at its limit): nothing would close its pipe.
            self._piped.discard(worker)
            self._living.discard(worker)
            wake.close()
            raise

    def forget(self) -> None:
        """In a forked child: the parent's threads do not exist here (their pipes do)."""
        for worker in self._piped:
            worker.wake.close()
        self._idle = []
        self._piped = set()
        self._living = set()

    def rest(self, worker: _Worker) -> None:
        self._idle.append(worker)

    def retire(self, worker: _Worker) -> bool:
        """Take an idle worker out for good; False if a caller took it meanwhile."""
        try:
            self._idle.remove(worker)
        except ValueError:
            return False
        self._living.discard(worker)
        if worker in self._piped:
            # Out of the set before closing: a child forked in between closes nothing twice.
            self._piped.discard(worker)
            worker.wake.close()
        return True

    def busy(self) -> list[_Worker]:
        """The workers running a call (or cleaning up after one) now."""
        idle = set(self._idle)  # copies: other threads change these as we read
        return [worker for worker in set(self._living) if worker not in idle]

    def finish(self) -> None:
        """At interpreter exit: wait up to `EXIT_WAIT` seconds for the running calls.

        Runs as an `atexit` function, before the interpreter finalizes: a daemon worker
        that takes the GIL back after that is ended with `pthread_exit`, which aborts
        the process when the call is inside C++ or Rust code.
        """
        busy = self.busy()
        if not busy:
            return
        logger.warning(
            "baton: at exit, waiting up to %s s for %d sync call(s) still running "
            "in worker threads (%s)",
            EXIT_WAIT,
            len(busy),
            ", ".join(sorted(worker.name for worker in busy)),
        )
        deadline = time.monotonic() + EXIT_WAIT
        while busy and time.monotonic() < deadline:
            time.sleep(_EXIT_POLL)
            busy = self.busy()
        if busy:
            logger.error(
                "baton: exiting with %d sync call(s) still running in worker threads (%s); "
                "one that takes the GIL back while the interpreter finalizes may abort the process",
                len(busy),
                ", ".join(sorted(worker.name for worker in busy)),
            )


_POOL: Final = _Pool()
os.register_at_fork(after_in_child=_POOL.forget)
atexit.register(_POOL.finish)


def _carry_back(ran: Context) -> None:
    """Set in the current context what the call set in its copy (cheap when nothing was)."""
    here = copy_context()
    if ran == here:
        return
    missing = object()
    for var, value in ran.items():
        if here.get(var, missing) is not value:
            var.set(value)


_SLOW_KEPT: Final = 256
"""Slow functions remembered at most (`_slow`); past that the memory starts over."""

_slow: set[int] = set()
"""Functions (`_function_of`) whose last call outlasted `QUICK_CALL`: their calls are
awaited through the loop at once, so one that blocks holds the loop for the quick wait
once, not on every call. Should an id be reused, a quick call takes it off again."""


def _function_of(call: Callable[[], object]) -> int:
    """Which function a call runs, for `_slow`: a partial's function, else the callable.

    Speed: an id (a code object's hash is computed anew each time, ~1k instructions),
    and an isinstance check rather than a `getattr` that fails for most callables."""
    if isinstance(call, partial):
        return id(cast("partial[object]", call).func)  # a string: no alias made per call
    return id(call)


async def _hand_off(job: _Job, function: int) -> object:
    """Run the job in a worker thread; its result, once the caller's context has what
    the call set in its copy.

    Speed: the caller first waits for a quick call's result with the GIL released
    (`HANDOFF_WAIT`), then, only if the call is still running, through the loop; a
    call of a function known to be slow goes through the loop at once.
    """
    if function in _slow:
        await _through_loop(job, function)
    else:
        _POOL.submit(job)
        # Positional: a keyword argument costs a dict and a string lookup per call.
        if not job.done.acquire(True, HANDOFF_WAIT):
            _mark_slow(function)
            await _woken(job)
        elif job.took > QUICK_CALL:
            _mark_slow(function)  # it held the loop throughout: not again
    result = job.outcome()
    _carry_back(job.context)
    return result


def _mark_slow(function: int) -> None:
    if len(_slow) >= _SLOW_KEPT:
        _slow.clear()
    _slow.add(function)


async def _through_loop(job: _Job, function: int) -> None:
    """Run a known slow function's call, awaiting it through the loop; a call that was
    quick after all (`QUICK_CALL`, the call's own time) takes its function off `_slow`."""
    _POOL.submit(job)
    await _woken(job)
    if job.took < QUICK_CALL:
        _slow.discard(function)


async def _woken(job: _Job) -> None:
    """Wait through the event loop for a job still running after the quick wait."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not future.done():
            future.set_result(None)

    def wake() -> None:
        with suppress(RuntimeError):  # the loop closed while the call ran: nobody waits
            loop.call_soon_threadsafe(settle)

    if job.notify(wake):
        await future


# Set for a run whose RunConfig bounds its threads (`tool_thread_pool_config`): its calls
# wait for a slot. Inherited by every task the run starts.
_RUN_BOUND: ContextVar[asyncio.Semaphore | None] = ContextVar("baton_run_threads", default=None)


def bound_run_threads(max_workers: int) -> None:
    """From now on, in this task and those it starts, at most `max_workers` calls of
    `run_sync` are in a thread at once (the others wait their turn)."""
    _RUN_BOUND.set(asyncio.Semaphore(max_workers))


def run_sync(call: Callable[[], T]) -> Coroutine[Any, Any, T]:
    """Run `call()` in a worker thread with the caller's context variables; await the
    result for its result.

    Speed: the hand-off's own coroutine, not one more of this function's around it
    (every plain node's run and sync tool's call).

    Raises:
        Exception: whatever `call` raises.
    """
    job = _Job(call, copy_context())
    bound = _RUN_BOUND.get()
    if bound is None:
        return cast(Coroutine[Any, Any, T], _hand_off(job, _function_of(call)))
    return cast(Coroutine[Any, Any, T], _bounded(bound, job, _function_of(call)))


async def _bounded(bound: asyncio.Semaphore, job: _Job, function: int) -> object:
    """`_hand_off` once the run's bound on its threads gives a slot."""
    async with bound:
        return await _hand_off(job, function)


_END: Final = object()


class SyncSteps:
    """A sync generator driven from async code, each step in a worker thread."""

    def __init__(self, generator: Generator[object, None, object]) -> None:
        self._generator = generator
        self._last: _Job | None = None
        self._open = True  # False once exhausted or raised: nothing left to close

    async def next(self) -> tuple[bool, object]:
        """(True, the next item), or (False, None) when the generator is done."""
        job = _Job(self._step, copy_context())
        self._last = job
        try:
            item = await _hand_off(job, id(self._generator))
        except Exception:
            self._open = False
            raise
        if item is _END:
            self._open = False
            return False, None
        return True, item

    def _step(self) -> object:
        return next(self._generator, _END)

    async def close(self) -> None:
        """Close the generator (its `finally` blocks run in a thread too).

        A step abandoned by a timeout or cancellation may still be running: the
        generator is then closed by that step's thread as soon as the step ends.
        """
        if not self._open:
            return
        self._open = False
        last = self._last
        if last is not None and last.then(self._generator.close):
            return
        await run_sync(self._generator.close)
