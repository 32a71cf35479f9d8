"""Running the engine in its caller's task, until it needs a task of its own.

An invocation's events go to the caller one step at a time: a step's events are
handed over, and the next step starts only once the caller asks for more. With the
engine in a task of its own, every step costs a pass of the event loop and two task
wake-ups (the engine's, the caller's). `EngineDriver` saves them: the caller's
`anext` steps the engine's coroutine itself, as a task would, until a step's events
are handed over (`park`: the caller then has them, and the engine waits right there,
at the step boundary, until it is asked for more), or until the engine ends.

That holds only while nothing the engine entered spans a hand-over and outlives the
caller's `anext`: a TaskGroup or a timeout, which would cancel the task that entered
it, by then the caller's, busy with code of its own (PEP 789). So before it enters one
(a workflow whose runs go beside each other, a node with a timeout) or runs code that
might (a generator node, an agent, a function that gets `ctx`: their steps hand over
while their code is under way), the engine moves to a task of its own (`own_task`),
and from then on runs as it always did there. A chain of plain functions, the common
case, runs in the caller's task to its end.

Cancellation works as with a task: cancelling the caller while it steps the engine
cancels what the engine awaits (a node under way: as after a crash, it runs again on
resume), except a step's commit under way (`protect`), which ends first; the engine
then stops at that step's boundary and the caller's cancellation goes on up.
`EngineDriver.cancel` cancels the engine as `Task.cancel` would.
"""

from __future__ import annotations

import asyncio
import contextvars
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, Final, cast

__all__ = ["EngineDriver", "own_task", "park", "parks"]

_inline: Final[contextvars.ContextVar[bool]] = contextvars.ContextVar(
    "baton_engine_inline", default=False
)
"""True in the engine's context while it runs in its caller's task."""


class _Signal:
    """What the engine's coroutine yields to its driver (never to an event loop)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<engine {self.name}>"


_PARK: Final = _Signal("park")
_MOVE: Final = _Signal("move to a task of its own")
_ENDED: Final = _Signal("ended")  # not yielded: what `EngineDriver._step` returns then


def parks() -> bool:
    """Whether the engine runs in its caller's task: a hand-over then `park`s."""
    return _inline.get()


@types.coroutine
def park() -> Generator[Any, None, None]:
    """Hand control back to the caller, who has the step's events; resumed when it asks
    for more. Only when `parks()`."""
    yield _PARK


@types.coroutine
def _move() -> Generator[Any, None, None]:
    yield _MOVE


async def own_task() -> None:
    """Go on in a task of the engine's own (nothing to do if it runs in one already)."""
    if _inline.get():
        await _move()


@types.coroutine
def _forward(awaited: object) -> Generator[Any, None, None]:
    """Let the task stepping the engine wait for what the engine awaits (a future, or
    None for one pass of the loop), as if the engine had yielded it itself."""
    yield awaited


class EngineDriver:
    """Drives the engine's coroutine: in the caller's task (`advance`, from the caller's
    `anext`) until it moves to a task of its own (`task`).

    Args:
        engine: the engine's coroutine, not started.
        protect: whether what the engine awaits now must not be cancelled by the caller
            (a step's commit under way): the caller's cancellation then waits for it.
    """

    def __init__(self, engine: Coroutine[Any, Any, None], protect: Callable[[], bool]) -> None:
        self._engine = engine
        self._protect = protect
        # Its own context, as a task would have: what the engine sets stays out of the caller's.
        self._context = contextvars.copy_context()
        self._context.run(_inline.set, True)
        self.task: asyncio.Task[None] | None = None
        self._done = False
        self._must_cancel = False
        self._throw: BaseException | None = None  # into the engine at its next step
        # The caller was cancelled while `protect` held: the engine is, once it no longer does.
        self._cancel_unprotected = False
        self._awaited: asyncio.Future[Any] | None = None  # what the engine waits for now

    def done(self) -> bool:
        return self.task.done() if self.task is not None else self._done

    def cancel(self) -> None:
        """Cancel the engine where it is (as `Task.cancel`: at what it awaits, or at its
        next step)."""
        if self.task is not None:
            self.task.cancel()
            return
        if self._done:
            return
        self._must_cancel = True
        awaited = self._awaited
        if awaited is not None and awaited.cancel():
            self._must_cancel = False  # the engine gets the CancelledError from it

    def advance(self) -> Awaitable[None] | None:
        """Step the engine in this task until it hands a step's events over, ends, or
        moves to a task of its own: None if it got there without waiting for anything,
        else what to await for the rest.

        Speed: most steps wait for nothing (a chain of plain functions on a store that
        does not wait either): no coroutine to make for them.

        Raises (from what is returned):
            CancelledError: this task was cancelled meanwhile (the engine has stopped).
        """
        yielded = self._step()
        if yielded is _ENDED or yielded is _PARK:
            return None
        if yielded is _MOVE:
            self._move_to_task()
            return None
        return self._advance_after(yielded)

    async def _advance_after(self, yielded: object) -> None:
        """`advance`, the engine having yielded `yielded` for this task to wait for."""
        cancelled = await self._wait(yielded)
        while (yielded := self._step()) is not _ENDED:
            if yielded is _PARK:
                break
            if yielded is _MOVE:
                self._move_to_task()
                break
            cancelled = await self._wait(yielded) or cancelled
        if cancelled is not None and _cancelling():
            raise cancelled  # the caller's own cancellation (not the engine's), now stopped

    def _step(self) -> object:
        """Resume the engine until it yields something for this task: what it yields, or
        `_ENDED`."""
        throw, self._throw = self._throw, None
        while True:
            if self._must_cancel:
                self._must_cancel = False
                throw = asyncio.CancelledError()
            try:
                if throw is None:
                    yielded = self._context.run(self._engine.send, None)
                else:
                    yielded = self._context.run(self._engine.throw, throw)
            except (StopIteration, Exception, asyncio.CancelledError):
                # The engine ended (`InvocationRun` keeps its error): as a task's, its
                # outcome is the run's, not the caller's.
                self._done = True
                # A cancellation thrown in and let out holds, in its traceback, this frame,
                # whose `throw` holds it: a cycle keeping the engine's frames, and the run
                # they hold, for the garbage collector to find.
                throw = None
                return _ENDED
            if not self._cancel_unprotected or self._protect():
                return yielded
            # The caller was cancelled during a step's commit: the engine stops where it
            # went on to, at the step's boundary.
            self._cancel_unprotected = False
            if isinstance(yielded, asyncio.Future):
                yielded.cancel()
            throw = asyncio.CancelledError()

    async def _wait(self, yielded: object) -> asyncio.CancelledError | None:
        """Wait in this task for what the engine awaits (a future, or None for one pass of
        the loop); the caller's cancellation meanwhile, if any (passed on to the engine,
        once its commit under way, if any, is done)."""
        awaited = _future(yielded)
        protect = self._protect()
        self._awaited = awaited
        try:
            if awaited is not None and protect:
                return await self._outwait(awaited)
            await _forward(yielded)
        except asyncio.CancelledError as error:
            if protect and awaited is None:
                self._cancel_unprotected = True  # once the commit is done
            else:
                self._throw = error  # into the engine, at what it awaited
            return error
        except BaseException as error:
            # The future's own error: raised in the engine where it awaited it, as a task does.
            self._throw = error
        finally:
            self._awaited = None
        return None

    async def _outwait(self, awaited: asyncio.Future[Any]) -> asyncio.CancelledError | None:
        """Wait for `awaited` whatever the caller's cancellation, which is returned (the
        engine then stops at its next step, the step's boundary).

        Raises:
            CancelledError: `cancel` cancelled `awaited`, as it would a task's.
        """
        cancelled: asyncio.CancelledError | None = None
        while not awaited.done():
            try:
                await _Uncancellable(awaited)
            except asyncio.CancelledError as error:
                if awaited.cancelled():
                    raise
                cancelled = error
        if cancelled is not None:
            self._cancel_unprotected = True
        return cancelled

    def _move_to_task(self) -> None:
        """Go on in a task: the engine's coroutine resumes there from `own_task`."""
        self._context.run(_inline.set, False)
        task = asyncio.get_running_loop().create_task(self._engine, context=self._context)
        self.task = task
        if self._must_cancel:
            task.cancel()

    async def ended(self) -> None:
        """Wait for the engine to end (driving it here until it moves to a task, if it
        does); its error, if any, is the run's."""
        while self.task is None and not self._done:
            waiting = self.advance()
            if waiting is not None:
                await waiting
        if self.task is not None:
            await _task_ended(self.task)


class _Uncancellable:
    """A future's view that the awaiting task's cancellation cannot cancel: awaited, the
    task waits for the future itself, and is cancelled (CancelledError at the await)
    only once the future is done. What `asyncio.shield` does for a step's commit, one
    pass of the event loop sooner: shield's future in between is done from the inner
    one's callback, and wakes the task from a callback of its own (the chain step's
    client: 446k -> 408k instructions, callgrind of engine_profile on PostgreSQL).

    It keeps asyncio's protocol for future-like objects (`asyncio.isfuture`): a task
    waits on it through `add_done_callback`, and its `cancel` refusing makes
    `Task.cancel` mark the task instead, to be cancelled at its next step, which comes
    when the future is done.
    """

    _asyncio_future_blocking = False

    def __init__(self, future: asyncio.Future[Any]) -> None:
        self._future = future

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._future.get_loop()

    def add_done_callback(
        self, callback: Callable[[asyncio.Future[Any]], object], *, context: Any = None
    ) -> None:
        self._future.add_done_callback(callback, context=context)

    def remove_done_callback(self, callback: Callable[[asyncio.Future[Any]], object]) -> int:
        return self._future.remove_done_callback(callback)

    def cancel(self, msg: Any = None) -> bool:
        del msg
        return False  # the task is cancelled once the future is done

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return self._future.done()

    def result(self) -> Any:
        return self._future.result()

    def __await__(self) -> Generator[Any, None, Any]:
        if not self._future.done():
            self._asyncio_future_blocking = True
            yield self
        return self._future.result()


def _cancelling() -> int:
    """Whether the current task (the caller's) is being cancelled (`Task.cancelling`)."""
    current = asyncio.current_task()
    assert current is not None  # called from the caller's coroutine
    return current.cancelling()


def _future(yielded: object) -> asyncio.Future[Any] | None:
    """What the engine yielded, if a future (else None: a bare yield)."""
    return cast("asyncio.Future[Any]", yielded) if isinstance(yielded, asyncio.Future) else None


async def _task_ended(task: asyncio.Task[None]) -> None:
    """Wait for `task` to end (its error, if any, is the run's: already in `error`).

    Speed: a task that has ended (a run that finished: the caller saw the outbox close)
    is only read; `gather` would wait two event-loop iterations for its done callback.
    """
    if not task.done():
        await asyncio.gather(task, return_exceptions=True)
    elif not task.cancelled():
        task.exception()  # retrieved, as gather's return_exceptions does
