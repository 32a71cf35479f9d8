"""Plain (sync) code, called by a coroutine, that waits for an awaitable without holding
the event loop.

The reference's `tool_context.get_auth_response` is a plain function, and an async tool
calls it on the event loop; when it must ask a token endpoint (a sign-in's code to
exchange, an expired token to refresh) a blocking request would stop the loop, and every
other run and the HTTP server with it, for as long as the endpoint takes.
`run_waitable(coroutine)` runs the coroutine's steps in a greenlet of their own, so plain
code inside it can `wait(awaitable)`: the greenlet steps aside, the coroutine's task
awaits the awaitable on the loop (which goes on with everything else meanwhile), and the
plain code gets its result where it called `wait`. Elsewhere `can_wait()` is False and
the caller does the work its own way (in a worker thread, blocking only that thread).

Only a run that may need it goes through here (a tool call answered with a credential):
each step of the coroutine costs two greenlet switches more.
"""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine, Generator
from typing import Any, TypeVar, cast

from greenlet import getcurrent, greenlet

__all__ = ["can_wait", "run_waitable", "wait"]

T = TypeVar("T")

_YIELD, _AWAIT, _RETURN = "yield", "await", "return"


class _Steps(greenlet):
    """The greenlet a waitable coroutine's steps run in."""


class _Pass:
    """Hands what the coroutine yielded (a future, or None) to its task, and the task's
    answer back, as if the coroutine were the task's own."""

    __slots__ = ("_yielded",)

    def __init__(self, yielded: object) -> None:
        self._yielded = yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        return (yield self._yielded)


async def run_waitable(coroutine: Coroutine[Any, Any, T]) -> T:
    """`await coroutine`, with `wait` usable by plain code it calls.

    Raises:
        whatever the coroutine raises.
    """
    steps = _Steps(_step)
    steps.gr_context = getcurrent().gr_context  # the task's context variables
    message: tuple[str, Any] = steps.switch(coroutine)
    while message[0] != _RETURN:
        kind, value = message
        try:
            sent = await (_Pass(value) if kind == _YIELD else cast(Awaitable[Any], value))
        except BaseException as error:  # a cancellation too: it goes where the step waits
            message = steps.throw(error)
        else:
            message = steps.switch(sent)
    return cast(T, message[1])


def can_wait() -> bool:
    """Whether the caller runs inside `run_waitable`, so `wait` does not block the loop."""
    return isinstance(getcurrent(), _Steps)


def wait(awaitable: Awaitable[T]) -> T:
    """The result of `awaitable`, awaited on the loop by the task of the `run_waitable`
    this code runs in.

    Raises:
        RuntimeError: not inside `run_waitable` (see `can_wait`).
        whatever awaiting it raises.
    """
    steps = getcurrent()
    if not isinstance(steps, _Steps) or steps.parent is None:
        raise RuntimeError("wait() runs only inside run_waitable(); check can_wait() first.")
    return cast(T, steps.parent.switch((_AWAIT, awaitable)))


def _step(coroutine: Coroutine[Any, Any, object]) -> tuple[str, object]:
    """Step `coroutine` to its end, handing each thing it yields to the task."""
    sent: object = None
    error: BaseException | None = None
    parent = getcurrent().parent
    assert parent is not None  # made by run_waitable
    while True:
        try:
            yielded = coroutine.send(sent) if error is None else coroutine.throw(error)
        except StopIteration as stop:
            return (_RETURN, stop.value)
        sent, error = None, None
        try:
            sent = parent.switch((_YIELD, yielded))
        except BaseException as thrown:  # the task's answer was an exception
            error = thrown
