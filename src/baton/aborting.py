"""A caller's abort signal: the run stops where it is and is sealed, resumable by its id.

`Runner.run_async(abort_signal=...)` reads the run's events until the signal is set; the
run is then stopped as a closed stream stops it (a node under way is cancelled, and runs
again on resume, as after a crash), and `InvocationRun.seal_aborted` lands its seal.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from typing import Final, final

from baton.events import Event

__all__ = ["ABORTED_CODE", "ABORTED_MESSAGE", "AbortSignal", "until_aborted"]

ABORTED_CODE: Final = "INVOCATION_ABORTED"
"""The `error_code` of the event that seals an aborted invocation (the reference's)."""

ABORTED_MESSAGE: Final = (
    "the invocation was aborted by its caller (abort_signal); continue it with "
    "run_async(invocation_id=...) to run the interrupted node again."
)


@final
class AbortSignal(asyncio.Event):
    """An `asyncio.Event` that also tells `until_aborted` itself when it is set, so the
    run reading events needs no task waiting on it (the server's runs use one)."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], None]] = []

    def set(self) -> None:
        super().set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_set(self, callback: Callable[[], None]) -> None:
        """Call `callback` when the signal is set (it is not set yet)."""
        self._callbacks.append(callback)

    def forget(self, callback: Callable[[], None]) -> None:
        """Do not call `callback` (given to `on_set`) after all."""
        if callback in self._callbacks:
            self._callbacks.remove(callback)


async def until_aborted(
    events: AsyncIterator[Event], signal: asyncio.Event
) -> AsyncGenerator[Event, None]:
    """`events` until they end or `signal` is set, whichever comes first.

    Each event is read in the caller's own task; once the signal is set while one is
    being read, that task is cancelled, and the cancellation, which ends `events`, is
    taken back here. Speed: where a task and an `asyncio.wait` per event, and a task
    waiting on the signal, cost 3-4% of a server's CPU per request of a HITL run, an
    `AbortSignal` needs no task at all, any other event one per run.
    """
    reading = _Reading()
    with _stopping(reading, signal):
        while not signal.is_set():
            try:
                event = await reading.next(events)
            except StopAsyncIteration:
                reading.took_back()
                return
            except asyncio.CancelledError:
                if reading.took_back():
                    return
                raise
            if reading.took_back():  # `events` went on after the cancellation: stop here
                return
            yield event


@contextlib.contextmanager
def _stopping(reading: _Reading, signal: asyncio.Event) -> Iterator[None]:
    """`reading` stopped once `signal` is set, while in the block."""
    if isinstance(signal, AbortSignal):
        signal.on_set(reading.stop)
        try:
            yield
        finally:
            signal.forget(reading.stop)
        return
    aborted = asyncio.ensure_future(signal.wait())
    aborted.add_done_callback(reading.stopped_by)
    try:
        yield
    finally:
        aborted.remove_done_callback(reading.stopped_by)
        # Not awaited: a waiter has nothing to clean up, and waiting for its cancellation
        # to land took one more turn of the loop per run (36k instructions, callgrind).
        aborted.cancel()


@final
class _Reading:
    """The task reading an event for `until_aborted`, if one is, and whether the signal
    cancelled it."""

    def __init__(self) -> None:
        self._task: asyncio.Task[object] | None = None
        self._stopped = False

    async def next(self, events: AsyncIterator[Event]) -> Event:
        self._task = asyncio.current_task()
        try:
            return await anext(events)
        finally:
            self._task = None

    def stop(self) -> None:
        """The signal is set: cancel the read under way, if any."""
        if self._task is not None:
            self._stopped = True
            self._task.cancel()

    def stopped_by(self, _: object) -> None:
        """`stop`, as a waiter's done callback."""
        self.stop()

    def took_back(self) -> bool:
        """Whether the signal cancelled the read that just ended, and nobody else
        cancelled its task: the signal's cancellation is then undone."""
        if not self._stopped:
            return False
        self._stopped = False
        task = asyncio.current_task()
        return task is not None and task.uncancel() == 0
