"""Running one transaction on each database: the event loop's thread for SQLite,
asyncpg for PostgreSQL.

The store's SQL is synchronous functions over a `Connection` (one code path for both
databases). An executor runs such a function in one transaction and hands back plain
values.

On SQLite a transaction runs right on the event loop's thread when it can: the driver
is synchronous and a step's transaction takes tens of microseconds, less than handing
it to another thread and back. It must never wait there, so that connection has no
busy timeout: when another process holds the write lock, BEGIN fails at once, before
anything ran, and the transaction is tried again on the loop after a pause
(`_wait_for_lock`, pauses of at most a millisecond). WAL checkpoints, which sync the
file to disk, run on a worker thread. Transactions arriving while one waits for the
lock, or while the worker finishes a checkpoint holding writers off, wait for it, then
run inline again.

On PostgreSQL the function runs through the asyncpg engine's `run_sync`, and a
single statement on the hot path (`one`) goes straight to asyncpg (see `postgres`).
On MySQL it runs through asyncmy's engine (`MysqlExecutor`).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar, TypeVarTuple, final

from sqlalchemy import Engine
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.dml import Update

from baton.sessions.sql.direct import Statement, UpdateReturning, run, sqlite_driver
from baton.sessions.sql.postgres import DirectConnections

__all__ = [
    "BUSY_TIMEOUT_MS",
    "Executor",
    "MysqlExecutor",
    "PostgresExecutor",
    "SqliteExecutor",
    "count_updated",
]

BUSY_TIMEOUT_MS = 10_000
"""How long a SQLite writer waits for another process's write lock before failing."""

OneStatement = Statement | UpdateReturning
"""What `Executor.one` runs: a statement, or an update with the columns it returns."""

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

    async def read_once(self, fn: Callable[[Connection, *Ts], T], *args: *Ts) -> T:
        """Run `fn`, which reads with ONE statement: on PostgreSQL without BEGIN and COMMIT
        (the statement sees one snapshot by itself)."""
        ...

    async def one(
        self, statement: OneStatement, params: Mapping[str, Any], *, write: bool
    ) -> list[tuple[Any, ...]]:
        """Run one Core statement as a transaction of its own and return its rows.

        The hot path of steps, lease calls and resume reads: on PostgreSQL it goes to
        asyncpg directly, without SQLAlchemy's connection and result layers. An
        `UpdateReturning` is one statement where the database has RETURNING.
        """
        ...

    async def close(self) -> None:
        """Close every pooled connection; a later `transact` opens new ones."""
        ...


@final
class SqliteExecutor:
    """Transactions inline on the event loop's thread; WAL checkpoints on one worker.

    Two connections: the inline one (busy_timeout 0, no automatic WAL checkpoints) is
    used only on the loop's thread; the worker's only on the worker thread, which starts
    on first need and stops in `close()`.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._inline: Connection | None = None
        # The inline connection's cursor for BEGIN and COMMIT, kept: one per transaction
        # cost 1.5k instructions, and the driver's own `commit()` parses COMMIT each time.
        self._inline_cursor: sqlite3.Cursor | None = None
        self._worker: ThreadPoolExecutor | None = None
        self._connection: Connection | None = None
        self._commits = 0  # inline write commits since the last WAL checkpoint
        self._copying: asyncio.Future[None] | None = None  # a checkpoint's first part
        # The latest job others wait for: a WAL checkpoint on the worker, or a transaction
        # waiting out another process's write lock on the loop. While it runs, this store's
        # other transactions wait.
        self._busy: asyncio.Future[Any] | None = None

    async def transact(self, fn: Callable[[Connection, *Ts], T], *args: *Ts, write: bool) -> T:
        """Run `fn` in one transaction (IMMEDIATE when writing): inline unless it must wait."""
        if (busy := self._busy) is not None and not busy.done():  # else: no coroutine to await
            await self._worker_done()
        try:
            result = self._run_inline(fn, args, write)
        except _LockedError:
            pass
        else:
            if write:
                self._after_commit()
            return result
        job = asyncio.ensure_future(self._wait_for_lock(fn, args, write))
        self._busy = job
        return await job

    async def _wait_for_lock(
        self, fn: Callable[[Connection, *Ts], T], args: tuple[*Ts], write: bool
    ) -> T:
        """`fn` inline once another process's write lock is released: tried again after
        pauses that start at 0.1 ms and grow to 1 ms, for up to BUSY_TIMEOUT_MS.

        SQLite's own busy handler sleeps 1, 2, 5, 10, 15, 20, 25 ... 100 ms between
        tries: a lock held 4 ms cost 8 ms of waiting, and meanwhile every other
        transaction of this store waits for this one (`_worker_done`). Waiting on a
        worker thread instead cost each try a hand-over of the GIL, which a busy event
        loop gives up only every 5 ms (`sys.getswitchinterval`): two server processes
        on one file (bench/http_bench.py, 16 clients) each spent 2.6-3.9 ms per wait, and
        the requests queued meanwhile cost CPU to suspend and resume.

        Raises:
            DBAPIError: the lock was still held when the time was up ("database is locked").
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        pause = _FIRST_PAUSE
        while True:
            await _pause(pause)
            try:
                result = self._run_inline(fn, args, write)
            except _LockedError as locked:
                if time.monotonic() >= deadline:
                    begin = _begin(write)
                    raise DBAPIError.instance(begin, None, locked.busy, sqlite3.Error) from locked
                pause = min(pause * 2, _LONGEST_PAUSE)
                continue
            if write:
                self._after_commit()
            return result

    async def _worker_done(self) -> None:
        """Wait until the busy job is done: a transaction waiting for the write lock
        (`_wait_for_lock`), or a checkpoint that needs the writers held off.

        Waiting here, rather than queueing every later transaction on the worker,
        costs no thread hop: a queue that new transactions keep joining under load
        never empties, and held every transaction of a 16-client server on the worker
        after its first WAL checkpoint (+50% CPU per request).
        """
        while (busy := self._busy) is not None and not busy.done():
            # `wait` neither raises the job's error (its owner gets that) nor cancels
            # the job when this caller is cancelled.
            await asyncio.wait((busy,))

    def _start_on_worker(self, fn: Callable[[*Ts], T], *args: *Ts) -> asyncio.Future[T]:
        """`fn(*args)` on the worker, with this store's later transactions waiting for it."""
        job = self._on_worker(fn, *args)
        self._busy = job
        return job

    def _on_worker(self, fn: Callable[[*Ts], T], *args: *Ts) -> asyncio.Future[T]:
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="baton-sqlite")
        return asyncio.get_running_loop().run_in_executor(self._worker, fn, *args)

    async def read_once(self, fn: Callable[[Connection, *Ts], T], *args: *Ts) -> T:
        """A reading transaction, as `transact` runs it: inline, it costs no round trip."""
        return await self.transact(fn, *args, write=False)

    async def one(
        self, statement: OneStatement, params: Mapping[str, Any], *, write: bool
    ) -> list[tuple[Any, ...]]:
        """The statement in a transaction, as `transact` runs it (inline when it can)."""
        if isinstance(statement, UpdateReturning):
            statement = statement.with_returning
        return await self.transact(_run_one, statement, params, write=write)

    async def close(self) -> None:
        """Close both connections and stop the worker thread, once a transaction waiting
        for another process's write lock has ended (it would open the file again)."""
        await self._worker_done()
        if self._inline is not None:
            self._inline_cursor = None
            self._inline.close()
            self._inline = None
        worker, self._worker = self._worker, None
        if worker is None:
            self._engine.dispose()
            return
        try:
            await asyncio.get_running_loop().run_in_executor(worker, self._dispose)
        finally:
            # The worker is idle now (dispose was the last thing queued): this join is short.
            worker.shutdown()

    def _run_inline(self, fn: Callable[[Connection, *Ts], T], args: tuple[*Ts], write: bool) -> T:
        connection, cursor = self._inline_connection()
        # BEGIN and COMMIT go to the driver: SQLAlchemy's own transaction bookkeeping costs
        # more than SQLite's. Core statements in `fn` join this transaction (see dialect).
        try:
            cursor.execute(_begin(write))
        except sqlite3.OperationalError as error:
            if error.sqlite_errorname == "SQLITE_BUSY":
                raise _LockedError(error) from error
            raise
        return _run_begun(connection, cursor, fn, args)

    def _inline_connection(self) -> tuple[Connection, sqlite3.Cursor]:
        if self._inline is None:
            self._inline = self._engine.connect()
            raw = sqlite_driver(self._inline)
            raw.execute("PRAGMA busy_timeout = 0")
            raw.execute("PRAGMA wal_autocheckpoint = 0")
        raw = sqlite_driver(self._inline)  # a new one, should SQLAlchemy have reconnected
        cursor = self._inline_cursor
        if cursor is None or cursor.connection is not raw:
            cursor = self._inline_cursor = raw.cursor()
        return self._inline, cursor

    def _after_commit(self) -> None:
        """Every so many inline commits, have the worker checkpoint the WAL into the file."""
        self._commits += 1
        if self._copying is None:
            if self._commits >= _COPY_AFTER:
                self._copying = self._on_worker(self._checkpoint_wal, "PASSIVE")
                self._copying.add_done_callback(self._restart_wal)
        elif self._commits >= _CHECKPOINT_EVERY and (self._busy is None or self._busy.done()):
            self._busy = self._copying  # the WAL is as long as it may get: wait for the copy

    def _restart_wal(self, copied: asyncio.Future[None]) -> None:
        # A checkpoint in two parts. The PASSIVE one copied the WAL into the file while
        # this store's transactions went on inline; but it cannot start the WAL over,
        # since they kept adding to it. The RESTART one holds writers off (and this
        # store's transactions wait for it, see _worker_done) while it copies the little
        # they added, then the next commit starts the WAL over. Holding them for the
        # whole copy instead (15-80 ms every 500 commits of a busy server, 5,000 pages)
        # made every request in flight wait that long.
        self._copying = None
        self._commits = 0  # the WAL starts over after this part
        if self._worker is not None and not copied.cancelled():  # else: closing
            self._start_on_worker(self._checkpoint_wal, "RESTART")

    def _checkpoint_wal(self, mode: str) -> None:
        raw = sqlite_driver(self._worker_connection())
        with contextlib.suppress(sqlite3.OperationalError):  # busy: the next one catches up
            raw.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()

    def _worker_connection(self) -> Connection:
        if self._connection is None:
            # Kept open between transactions: connecting and setting PRAGMAs per call
            # would cost more than the statements.
            self._connection = self._engine.connect()
        return self._connection

    def _dispose(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._engine.dispose()


_CHECKPOINT_EVERY = 500
"""Inline write commits between WAL checkpoints (SQLite's own default is about 1,000 pages)."""

_COPY_AFTER = 400
"""Inline write commits after which a checkpoint's first part starts (see `_restart_wal`):
it has until `_CHECKPOINT_EVERY` to finish before the store's transactions wait for it."""


class _LockedError(Exception):
    """Another connection holds the SQLite write lock: the transaction must wait for it."""

    def __init__(self, busy: sqlite3.OperationalError) -> None:
        super().__init__(str(busy))
        self.busy = busy


def _begin(write: bool) -> str:
    return "BEGIN IMMEDIATE" if write else "BEGIN DEFERRED"


def _run_begun(
    connection: Connection,
    cursor: sqlite3.Cursor,
    fn: Callable[[Connection, *Ts], T],
    args: tuple[*Ts],
) -> T:
    """`fn` in the transaction begun by `cursor` on `connection`'s driver; commit it, or
    roll it back when `fn` raises."""
    raw = cursor.connection
    try:
        result = fn(connection, *args)
    except BaseException:
        connection.rollback()  # ends SQLAlchemy's view of the transaction too, if it began one
        if raw.in_transaction:
            raw.rollback()
        raise
    connection.commit()
    if raw.in_transaction:
        cursor.execute("COMMIT")  # prepared once, unlike the driver's `commit()`
    return result


_pause = asyncio.sleep  # a waiting transaction's pauses (tests watch them)

_FIRST_PAUSE = 0.0001
"""Seconds before the second try of a transaction waiting for the write lock."""

_LONGEST_PAUSE = 0.001
"""Seconds between tries at most, however long the lock stays held."""


def _run_one(
    connection: Connection, statement: Statement, params: Mapping[str, Any]
) -> list[tuple[Any, ...]]:
    return run(connection, statement, params)


@final
class PostgresExecutor:
    """The asyncpg engine; reads run at REPEATABLE READ so they see one snapshot.

    Connections belong to the event loop that opened them: use the store from one
    loop and `close()` it before that loop ends.
    """

    def __init__(
        self, url: URL, engine: AsyncEngine, *, connect_args: Mapping[str, Any] | None = None
    ) -> None:
        self._engine = engine
        # A session and its events are read in two statements; the default READ
        # COMMITTED could let a commit land between them.
        self._reader = self._engine.execution_options(isolation_level="REPEATABLE READ")
        self._autocommit = self._engine.execution_options(isolation_level="AUTOCOMMIT")
        # The caller's connect_args reach the step connections too: the same driver.
        self._direct = DirectConnections(url, self._engine.dialect, connect_args=connect_args)

    async def transact(self, fn: Callable[[Connection, *Ts], T], *args: *Ts, write: bool) -> T:
        """Run `fn` through `run_sync` in one transaction."""
        async with (self._engine if write else self._reader).begin() as connection:
            return await connection.run_sync(fn, *args)

    async def read_once(self, fn: Callable[[Connection, *Ts], T], *args: *Ts) -> T:
        """Run `fn` through `run_sync` in autocommit mode: a read's one statement is its
        own snapshot."""
        async with self._autocommit.connect() as connection:
            return await connection.run_sync(fn, *args)

    def one(
        self, statement: OneStatement, params: Mapping[str, Any], *, write: bool
    ) -> Coroutine[Any, Any, list[tuple[Any, ...]]]:
        """The statement on one of the store's own asyncpg connections, prepared there.

        Speed: a plain function handing back `fetch`'s coroutine, not a coroutine of its
        own awaiting it: one frame fewer to start, resume and finish on every step."""
        del write  # one statement is its own transaction either way
        if isinstance(statement, UpdateReturning):
            statement = statement.with_returning
        return self._direct.fetch(statement, params)

    async def close(self) -> None:
        """Close the direct connections and dispose of the engine's pool."""
        await self._direct.close()
        await self._engine.dispose()


@final
class MysqlExecutor:
    """asyncmy's engine on MySQL/MariaDB; reads run at REPEATABLE READ (one snapshot).

    MySQL has no UPDATE ... RETURNING: `one` runs an `UpdateReturning` as a
    transaction of the update and a read of the rows it changed (see `dialect_mysql`).
    Connections belong to the event loop that opened them, as on PostgreSQL.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._reader = engine.execution_options(isolation_level="REPEATABLE READ")
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")

    async def transact(self, fn: Callable[[Connection, *Ts], T], *args: *Ts, write: bool) -> T:
        """Run `fn` through `run_sync` in one transaction."""
        async with (self._engine if write else self._reader).begin() as connection:
            return await connection.run_sync(fn, *args)

    async def read_once(self, fn: Callable[[Connection, *Ts], T], *args: *Ts) -> T:
        """Run `fn` in autocommit mode: a read's one statement is its own snapshot."""
        async with self._autocommit.connect() as connection:
            return await connection.run_sync(fn, *args)

    async def one(
        self, statement: OneStatement, params: Mapping[str, Any], *, write: bool
    ) -> list[tuple[Any, ...]]:
        """A statement in autocommit mode, or an `UpdateReturning` as a transaction."""
        if isinstance(statement, UpdateReturning):
            return await self.transact(update_then_refind, statement, params, write=True)
        return await self.read_once(_execute_one, statement, params)

    async def close(self) -> None:
        """Dispose of the engine's pool."""
        await self._engine.dispose()


def _execute_one(
    connection: Connection, statement: Statement, params: Mapping[str, Any]
) -> list[tuple[Any, ...]]:
    result = connection.execute(statement, params)
    return [tuple(row) for row in result] if result.returns_rows else []


def update_then_refind(
    connection: Connection, statement: UpdateReturning, params: Mapping[str, Any]
) -> list[tuple[Any, ...]]:
    """UPDATE ... RETURNING where there is no RETURNING: the update, then (when it
    matched rows) its `returning` columns read back by `refind`, under the row locks
    the update holds until the transaction ends.

    rowcount counts the rows matched, not only those whose values changed: SQLAlchemy
    sets the client flag FOUND_ROWS on MySQL's drivers.
    """
    if count_updated(connection, statement.update, params) == 0:
        return []
    return _execute_one(connection, statement.refound, params)


def count_updated(connection: Connection, statement: Update, params: Mapping[str, Any]) -> int:
    """Run an UPDATE through SQLAlchemy; how many rows matched its WHERE (on MySQL too,
    see `update_then_refind`)."""
    return connection.execute(statement, params).rowcount
