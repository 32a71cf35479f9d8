"""CallRelay: the events of a turn's calls that run as tasks, handed on one at a time.

A model turn's calls run at once, as the reference runs them, an agent called as a tool
among them. Such an agent's events are committed as it makes them (so a crash resumes
it where it was), but an event is committed only by being yielded from the caller's
run, which a task cannot do. The task sends each event here and waits until the
caller's run has yielded it, so the agent goes on only once its event is committed.
"""

from __future__ import annotations

import asyncio
from typing import final

from baton.events import Event

__all__ = ["CallRelay"]


@final
class CallRelay:
    """Events sent by a turn's call tasks, received by the run that yields them."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[tuple[Event, asyncio.Future[None]]] = asyncio.Queue()

    async def send(self, event: Event) -> None:
        """Hand `event` on; returns once the receiver has yielded it (it is committed)."""
        yielded = asyncio.get_running_loop().create_future()
        await self._queue.put((event, yielded))
        await yielded

    async def receive(self) -> tuple[Event, asyncio.Future[None]]:
        """The next event sent, and the future to resolve once it is yielded."""
        return await self._queue.get()
