"""PostgreSQL LISTEN: wake-ups from other processes sharing the database.

A trigger on the interrupts table (migration 2) and every release of a running
invocation send `NOTIFY baton, '<app>'`. One connection per store listens while
anything subscribes, and turns each notification into a local wake-up. When the
connection drops (a database restart) it reconnects with backoff and then wakes
everyone once, since notifications sent meanwhile were lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from typing import Any, final

from sqlalchemy.engine import URL

from baton.sessions.sql.postgres import asyncpg_connect_args
from baton.sessions.wakeups import Wakeups

__all__ = ["CHANNEL", "PostgresListener"]

CHANNEL = "baton"
_RETRY_FIRST = 0.2
_RETRY_MOST = 5.0

_log = logging.getLogger("baton")


@final
class PostgresListener:
    """Listens on `CHANNEL` for one store while `start`ed; `stop` ends it."""

    def __init__(self, url: URL, wakeups: Wakeups) -> None:
        self._url = url
        self._wakeups = wakeups
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin listening in the background (once; later calls do nothing)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._listen_forever())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _listen_forever(self) -> None:
        delay = _RETRY_FIRST
        while True:
            try:
                await self._listen_once()
                delay = _RETRY_FIRST
            except Exception as error:  # refused, reset, or one of asyncpg's own errors
                _log.debug("baton: LISTEN connection failed (%s); retrying", error)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RETRY_MOST)

    async def _listen_once(self) -> None:
        # Imported by name: the postgres extra is installed whenever a PostgreSQL URL is used.
        asyncpg: Any = importlib.import_module("asyncpg")
        connecting = asyncio.ensure_future(asyncpg.connect(**asyncpg_connect_args(self._url)))
        try:
            connection: Any = await asyncio.shield(connecting)
        except asyncio.CancelledError:
            # Stopped while connecting: close the connection when it arrives, not leak it.
            with contextlib.suppress(Exception):
                await (await connecting).close(timeout=1)
            raise
        closed = asyncio.get_running_loop().create_future()

        def on_close(_connection: Any) -> None:
            if not closed.done():
                closed.set_result(None)

        connection.add_termination_listener(on_close)
        try:
            await connection.add_listener(CHANNEL, self._on_notify)
            # Anything sent while we were not listening is lost: look once now.
            self._wakeups.notify()
            await closed
        finally:
            with contextlib.suppress(Exception):
                await connection.close(timeout=1)

    def _on_notify(self, *_args: object) -> None:
        self._wakeups.notify()
