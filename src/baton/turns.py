"""Turns: one holder at a time, in the order they asked, taken without a coroutine when free.

What an `asyncio.Lock` guarantees. Speed: its `acquire` is a coroutine, made, run and
thrown away on every acquisition even when nobody holds the lock: an invocation's steps
take their turn to land on every step, and almost never find it taken (~2k instructions
a step of a chain).
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["Turns"]


class Turns:
    """Mutual exclusion for coroutines of one event loop, first come first served:

    waiting = turns.take()
    if waiting is not None:
        await turns.wait(waiting)
    try:
        ...  # the turn's work
    finally:
        turns.give_back()
    """

    def __init__(self) -> None:
        self._taken = False
        self._waiting: deque[asyncio.Future[None]] = deque()

    def take(self) -> asyncio.Future[None] | None:
        """Take the turn: None when it is taken now, else what to `wait` for."""
        if not self._taken:
            self._taken = True
            return None
        waiting = asyncio.get_running_loop().create_future()
        self._waiting.append(waiting)
        return waiting

    async def wait(self, waiting: asyncio.Future[None]) -> None:
        """Wait until the turn `take` queued comes (it is then held).

        Raises:
            CancelledError: the task was cancelled meanwhile; the turn is not held (one
                that came as it was cancelled goes on to the next in line).
        """
        try:
            await waiting
        except asyncio.CancelledError:
            if waiting.done() and not waiting.cancelled():
                self.give_back()
            raise

    def give_back(self) -> None:
        """End the turn: the next in line (still waiting) holds it now."""
        while self._waiting:
            waiting = self._waiting.popleft()
            if not waiting.done():
                waiting.set_result(None)
                return
        self._taken = False
