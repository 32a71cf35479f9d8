"""Running one transaction on each database: a worker thread for SQLite, asyncpg for PostgreSQL.

The store's SQL is synchronous functions over a `Connection` (one code path for both
databases). An executor runs such a function in one transaction and hands back plain
values. On SQLite that is one hop to a dedicated thread: the driver is synchronous and
fast, and a hop per statement (what an async SQLite driver does) costs more than the
statement. A writer waiting for another process's lock (busy_timeout) blocks that
thread, never the event loop. On PostgreSQL the same function runs through the
asyncpg engine's `run_sync`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar, TypeVarTuple, final

from sqlalchemy.engine import URL, Connection

from baton.sessions.sql.dialect import (
    SQLITE_BEGIN_OPTION,
    create_postgres_engine,
    create_sqlite_engine,
    is_sqlite,
)

__all__ = ["Executor", "PostgresExecutor", "SqliteExecutor", "open_executor"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class Executor(Protocol):
    """Runs `fn(connection, *args)` in one transaction and returns its result."""

    async def transact(self, fn: Callable[[Connection, *Ts], T], *args: *Ts, write: bool) -> T:
        """Run `fn` in a transaction that commits when it returns and rolls back when it raises.

        `write=True` for a transaction that may write: on SQLite it takes the write lock
        up front. Reads see one consistent snapshot.
        """
        ...

    async def close(self) -> None:
        """Close every pooled connection; a later `transact` opens new ones."""
        ...


def open_executor(url: URL) -> Executor:
    """The executor for the (normalized) URL's database."""
    if is_sqlite(url):
        return SqliteExecutor(url)
    return PostgresExecutor(url)


@final
class SqliteExecutor:
    """One worker thread and one connection per store; each transaction is one hop.

    The thread starts on first use and stops in `close()`. The connection is opened,
    used and closed only on that thread.
    """

    def __init__(self, url: URL) -> None:
        self._engine = create_sqlite_engine(url)
        self._worker: ThreadPoolExecutor | None = None
        self._connection: Connection | None = None

    async def transact(self, fn: Callable[[Connection, *Ts], T], *args: *Ts, write: bool) -> T:
        """Run `fn` on the worker thread in one transaction (IMMEDIATE when writing)."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="baton-sqlite")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, self._run, fn, args, write)

    async def close(self) -> None:
        """Close the connection and stop the worker thread."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(worker, self._dispose)
        finally:
            # The worker is idle now (dispose was the last thing queued): this join is short.
            worker.shutdown()

    def _run(self, fn: Callable[[Connection, *Ts], T], args: tuple[*Ts], write: bool) -> T:
        if self._connection is None:
            # Kept open between transactions: connecting and setting PRAGMAs per call
            # would cost more than the statements.
            self._connection = self._engine.connect()
        connection = self._connection
        connection.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE" if write else "DEFERRED"})
        with connection.begin():
            return fn(connection, *args)

    def _dispose(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._engine.dispose()


@final
class PostgresExecutor:
    """The asyncpg engine; reads run at REPEATABLE READ so they see one snapshot.

    Connections belong to the event loop that opened them: use the store from one
    loop and `close()` it before that loop ends.
    """

    def __init__(self, url: URL) -> None:
        self._engine = create_postgres_engine(url)
        # A session and its events are read in two statements; the default READ
        # COMMITTED could let a commit land between them.
        self._reader = self._engine.execution_options(isolation_level="REPEATABLE READ")

    async def transact(self, fn: Callable[[Connection, *Ts], T], *args: *Ts, write: bool) -> T:
        """Run `fn` through `run_sync` in one transaction."""
        async with (self._engine if write else self._reader).begin() as connection:
            return await connection.run_sync(fn, *args)

    async def close(self) -> None:
        """Dispose of the engine's pool."""
        await self._engine.dispose()
