"""Calling baton from code without an event loop: a loop on a thread of its own.

`Runner.run` (the reference's sync entry point) drives `run_async` here. One
`LoopThread` per Runner keeps one loop for all its sync calls, so a store's
connections, made on that loop, stay usable from one call to the next.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Coroutine, Iterator
from typing import TypeVar

__all__ = ["LoopThread"]

_T = TypeVar("_T")


class LoopThread:
    """An event loop running on a daemon thread, started on first use."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self._name, daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def call(self, coroutine: Coroutine[object, object, _T]) -> _T:
        """Run a coroutine on the loop and wait for its result (or its exception)."""
        loop = self._running_loop()
        if _current_loop() is loop:
            coroutine.close()
            raise RuntimeError("a sync baton call cannot be made from inside its own loop.")
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    def iterate(self, events: AsyncGenerator[_T, None]) -> Iterator[_T]:
        """Iterate an async generator from sync code, one item per step of it.

        The generator advances only when the caller asks for the next item, and
        closing the iterator (or leaving a `for` loop early) closes the generator.
        """
        try:
            while True:
                try:
                    item = self.call(_next(events))
                except StopAsyncIteration:
                    return
                yield item
        finally:
            self.call(events.aclose())

    def stop(self) -> None:
        """Stop the loop (a later call starts a new one)."""
        with self._lock:
            loop, self._loop = self._loop, None
            thread, self._thread = self._thread, None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not threading.current_thread():
            thread.join()
            loop.close()


async def _next(events: AsyncGenerator[_T, None]) -> _T:
    return await anext(events)


def _current_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
