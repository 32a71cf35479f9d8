"""Server-Sent Events: framing, runs that outlive their request, and change signals.

A run is driven by a background task (a `RunFeed`) in the server's task group, not
by the response body: the run goes on to its next pause even when the client hangs
up, and an error raised before the first event still becomes an HTTP status.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from typing import Final, final

from pydantic import JsonValue

from baton.events import Event

__all__ = ["ChangeSignal", "RunFeed", "error_frame", "frame", "keepalive_frame"]

_END: Final = object()


def frame(data: JsonValue) -> bytes:
    """One SSE frame: `data: <json>` and a blank line (no event or id lines)."""
    return f"data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def keepalive_frame() -> bytes:
    """An SSE comment, ignored by clients, that keeps proxies from closing the stream."""
    return b": keepalive\n\n"


def error_frame(error: BaseException) -> bytes:
    """The final frame of a stream whose run failed, in the reference system's shape."""
    message = f"{type(error).__name__}: {error}"
    return frame(
        {
            "error": message,
            "error_details": {
                "error_type": type(error).__name__,
                "error_message": str(error),
                "timestamp": time.time(),
            },
        }
    )


@final
class ChangeSignal:
    """Wakes every waiter when something that the inbox shows may have changed."""

    def __init__(self) -> None:
        # Made by the first waiter after a notify, so a notify that nobody waits for costs
        # nothing: runs notify on each of their events, mostly with no stream open.
        self._event: asyncio.Event | None = None

    def notify(self) -> None:
        """Wake the current waiters."""
        event, self._event = self._event, None
        if event is not None:
            event.set()

    async def wait(self, seconds: float) -> None:
        """Return on the next notify, or after `seconds` (to see changes by other processes)."""
        if self._event is None:
            self._event = asyncio.Event()
        event = self._event
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await event.wait()


@final
class _Mailbox:
    """An unbounded queue with one reader: what `asyncio.Queue` does for a `RunFeed`, in
    two calls per item instead of a dozen (a run's reply carries several items)."""

    def __init__(self) -> None:
        self._items: collections.deque[object] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: object) -> None:
        self._items.append(item)
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():  # done: its reader was cancelled
            waiter.set_result(None)

    async def get(self) -> object:
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        return self._items.popleft()


@final
class RunFeed:
    """One `run_async` call driven by a background task; its events arrive over a queue."""

    def __init__(
        self,
        group: asyncio.TaskGroup,
        events: AsyncGenerator[Event, None],
        *,
        on_change: Callable[[], None],
    ) -> None:
        """Start driving `events` in `group`; `on_change` is called after each event."""
        self._queue = _Mailbox()
        self._head: object = None
        self._has_head = False
        self._on_change = on_change
        self.task = group.create_task(self._pump(events))

    async def _pump(self, events: AsyncGenerator[Event, None]) -> None:
        try:
            async with aclosing(events) as stream:
                async for event in stream:
                    self._queue.put(event)
                    self._on_change()
        except Exception as exc:  # handed to the request; the task group must not fail
            self._queue.put(exc)
        finally:
            self._queue.put(_END)
            self._on_change()

    def hand_over(self, reason: Exception) -> None:
        """Cut the run off (the server is shutting down): the reader gets `reason` after
        the events so far, and the run's lease is released as it stops, so another
        process continues it."""
        self._queue.put(reason)
        self.task.cancel()

    async def opening(self) -> None:
        """Wait for the first event; re-raise an error the run raised before it."""
        self._head = await self._queue.get()
        self._has_head = True
        if isinstance(self._head, Exception):
            raise self._head

    async def items(
        self, *, idle_after: float | None = None
    ) -> AsyncIterator[Event | Exception | None]:
        """The events, then the error that ended the run, if any.

        With `idle_after`, None is yielded whenever that many seconds pass without an
        item, so a stream can send a keep-alive while a slow node works.
        """
        if self._has_head:
            self._has_head = False
            if self._head is _END:
                return
            head = self._head
            assert isinstance(head, Event | Exception)
            yield head
        while True:
            if idle_after is None:  # /run's and an answer's reply: no timer to arm per event
                item = await self._queue.get()
            else:
                try:
                    async with asyncio.timeout(idle_after):
                        item = await self._queue.get()
                except TimeoutError:
                    yield None
                    continue
            if item is _END:
                return
            assert isinstance(item, Event | Exception)
            yield item
