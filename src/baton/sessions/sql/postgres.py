"""PostgreSQL's hot path: the statements of a step, a lease call or a resume read, sent
straight to asyncpg as prepared statements.

Through SQLAlchemy's async engine a one-statement call costs a pool checkout, a
greenlet hop and result wrapping: several times the client CPU asyncpg itself spends.
`DirectConnections` keeps a few asyncpg connections of its own and lends one per
statement (a list pop, no events), and runs the statement's `direct.Plan` (compiled
once from the same Core statement, with its types' bind and result processors)
with `fetch`, which asyncpg prepares once per connection and then only binds.
Each statement runs outside any explicit transaction: one statement is atomic and
sees one snapshot by itself.

SQLAlchemy still defines every statement and runs everything cold (migrations,
listings, multi-statement transactions) through its own pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import importlib.metadata
import select
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, final

import pydantic_core
from sqlalchemy import Dialect
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from baton.sessions.sql.direct import Statement, plan_for
from baton.sessions.sql.engine_options import merged_connect_args
from baton.sessions.sql.outages import is_lost_connection

__all__ = ["DirectConnections", "asyncpg_connect_args", "has_unread_input", "is_unavailable"]

# SQLSTATE classes of a lost or refused connection: 08 (connection exception) and 57
# (operator intervention: admin shutdown, crash shutdown, cannot connect now).
_UNAVAILABLE_CLASSES = ("08", "57")


def is_unavailable(error: BaseException) -> bool:
    """True when `error` means PostgreSQL cannot be reached right now (a restart, a
    dropped or refused connection), through SQLAlchemy or from asyncpg directly, so the
    same call may succeed later; False for errors of the call itself."""
    if is_lost_connection(error):
        return True
    orig = error.orig if isinstance(error, DBAPIError) else error
    sqlstate = getattr(orig, "sqlstate", None)
    if isinstance(sqlstate, str):
        return sqlstate[:2] in _UNAVAILABLE_CLASSES
    if isinstance(error, DBAPIError):
        return isinstance(error, InterfaceError | OperationalError)
    # asyncpg's own errors on the direct path: a connection closed under the call.
    return type(error).__module__.startswith("asyncpg") and "closed" in str(error)


def has_unread_input(fd: int) -> bool:
    """True when the socket has something to read: on an idle database connection, the
    server's goodbye or end of stream (it closed the connection)."""
    # poll, not select: select cannot watch descriptors past 1023, which a busy server reaches.
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


_CONNECT_TIMEOUT = 5.0
_RECENT = 0.001
"""Seconds since a connection was given back within which it is lent again unchecked:
the check (`_is_usable`, a poll system call) cost a chain step 2.6 us, one statement
after another on the same connection."""
_MOST_CONNECTIONS = 10
"""Connections a store lends at once; more concurrent statements wait for one."""
_GENERIC_PLANS = {"plan_cache_mode": "force_generic_plan"}
"""The direct connections' prepared statements run their generic plan from the first
execution, not after five custom ones, each planned again with its parameters' values.

Speed: every statement here finds its rows by key, and its generic plan is the one
PostgreSQL keeps after those five (tests/store/test_step_reads.py reads it); planning a
step's or a claim's statement (several CTEs) cost the server 0.3-0.7 ms on each of
those executions, per statement and per connection: a resume (its claim and two
steps, three statements) cost ~1 ms more of the server's CPU during each connection's
first five, and baton_bench's resume@0, 15 resumes, paid it in most of them."""


def asyncpg_connect_args(url: URL) -> dict[str, Any]:
    """`asyncpg.connect` arguments for a (normalized) PostgreSQL URL, with its
    `?search_path=` as the connection's search_path."""
    args: dict[str, Any] = {
        "host": url.host,
        "port": url.port,
        "user": url.username,
        "password": url.password,
        "database": url.database,
        "timeout": _CONNECT_TIMEOUT,
    }
    search_path = url.query.get("search_path")
    if search_path is not None:
        value = search_path if isinstance(search_path, str) else ",".join(search_path)
        args["server_settings"] = {"search_path": value}
    return args


@final
class DirectConnections:
    """A store's own asyncpg connections, each lent for one statement at a time.

    Connections belong to the event loop that opened them, like the engine's pool.
    A connection the server closed (a restart) is noticed when it is next lent, without
    a round trip, and replaced; one that fails mid-statement is dropped. One given back
    less than `_RECENT` ago is lent unchecked: it was answering a statement then, and a
    server closing it in between fails the next statement as closing it during one
    does (a step retries).
    """

    def __init__(
        self, url: URL, dialect: Dialect, *, connect_args: Mapping[str, Any] | None = None
    ) -> None:
        given = {"connect_args": connect_args or {}}
        own = asyncpg_connect_args(url)
        own["server_settings"] = {**own.get("server_settings", {}), **_GENERIC_PLANS}
        self._connect_args = merged_connect_args(own, given)
        self._dialect = dialect
        self._idle: list[tuple[Any, float]] = []  # each with the time it was given back
        # Statements that may start now, and those waiting for one to end (oldest first):
        # what asyncio.Semaphore does, without its two coroutines a statement while a
        # slot is free. With an idle connection lent without a coroutine either, a step's
        # store code runs 114k instructions instead of 124k (callgrind, no I/O).
        self._free = _MOST_CONNECTIONS
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._closed = False
        self._watchers: list[Callable[[str], None]] = []

    @contextmanager
    def watching(self, watcher: Callable[[str], None]) -> Iterator[None]:
        """Call `watcher` with the SQL of every statement sent while inside (tests count
        what reaches the database with it)."""
        self._watchers.append(watcher)
        try:
            yield
        finally:
            self._watchers.remove(watcher)

    async def fetch(self, statement: Statement, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Run `statement` (one, its own transaction) and return its rows as tuples."""
        # asyncpg returns each column as its Python value (JSON through the codec below).
        plan = plan_for(statement, tuple(params), self._dialect, convert_results=False)
        arguments = plan.arguments(params)
        for watcher in self._watchers:
            watcher(plan.sql)
        if self._free and not self._waiting:
            self._free -= 1
        else:
            await self._wait_for_slot()
        try:
            connection = self._idle_connection() or await self._connect()
            protocol = connection._protocol  # asyncpg lets go of it on closing
            run = protocol.queries_count
            try:
                # `_fetch`'s body, inline: a coroutine fewer to start, resume and finish.
                state = _prepared(connection, plan.sql)
                if state is None:
                    rows = await connection.fetch(plan.sql, *arguments)
                else:
                    try:
                        rows = await connection._protocol.bind_execute(
                            state, arguments, "", 0, False, None
                        )
                    except Exception as error:
                        rows = await _after_bound(connection, error, plan.sql, arguments)
            except Exception as error:
                self._after_error(connection, error)
                if not _ended_before(connection, protocol, run):
                    raise
                # The server ended the connection while it was idle (see `_ended_before`):
                # the statement never left, and goes on a new connection.
                rows = await self._fetch_on(await self._connect(), plan.sql, arguments)
            except BaseException:
                connection.terminate()  # cancelled mid-statement: in an unknown state
                raise
            else:
                self._give_back(connection)
        finally:
            self._free_slot()
        # asyncpg's records as tuples: its plans convert no results (see `Plan.row`).
        return list(map(tuple, rows))

    async def close(self) -> None:
        """Close the idle connections; those lent now close when given back."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection, _ in idle:
            with contextlib.suppress(Exception):
                await connection.close(timeout=1)

    async def _wait_for_slot(self) -> None:
        """Wait until a statement ends and hands this one its slot."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter
        except BaseException:
            if not waiter.cancelled():  # handed a slot, then cancelled before using it
                self._free_slot()
            elif waiter in self._waiting:
                self._waiting.remove(waiter)
            raise

    def _free_slot(self) -> None:
        """Hand the slot of a statement that ended to the oldest waiting one, or free it."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1

    async def _fetch_on(self, connection: Any, sql: str, arguments: list[Any]) -> list[Any]:
        """`_fetch` on `connection`, then give it back, or drop it when it may be unusable
        (as `fetch` does inline: this coroutine more cost a chain step 3-4k of its ~375k
        instructions, `bench/engine_profile.py --backend postgres` under callgrind)."""
        try:
            rows = await _fetch(connection, sql, arguments)
        except Exception as error:
            self._after_error(connection, error)
            raise
        except BaseException:
            connection.terminate()  # cancelled mid-statement: in an unknown state
            raise
        self._give_back(connection)
        return rows

    def _idle_connection(self) -> Any:
        """An idle connection the server has not closed, or None (then one is opened)."""
        while self._idle:
            connection, given_back = self._idle.pop()
            recent = time.monotonic() - given_back < _RECENT
            if (recent and not connection.is_closed()) or _is_usable(connection):
                return connection
            connection.terminate()
        self._closed = False
        return None

    def _after_error(self, connection: Any, error: Exception) -> None:
        """Lend the connection again after an error of the statement itself (the server
        refused it and is ready for the next one); drop it after any other."""
        if isinstance(getattr(error, "sqlstate", None), str) and not is_unavailable(error):
            self._give_back(connection)
        else:
            connection.terminate()

    def _give_back(self, connection: Any) -> None:
        if self._closed:
            connection.terminate()
        else:
            self._idle.append((connection, time.monotonic()))

    async def _connect(self) -> Any:
        # Imported by name: the postgres extra is installed whenever a PostgreSQL URL is used.
        asyncpg: Any = importlib.import_module("asyncpg")
        connection = await asyncpg.connect(**self._connect_args)
        try:
            # JSON columns arrive as text, decoded by pydantic-core, as the engine's do.
            await connection.set_type_codec(
                "json",
                encoder=str.encode,
                decoder=pydantic_core.from_json,
                schema="pg_catalog",
                format="binary",
            )
        except BaseException:
            connection.terminate()
            raise
        return connection


async def _fetch(connection: Any, sql: str, arguments: list[Any]) -> list[Any]:
    """`connection.fetch(sql, *arguments)`: the rows, from asyncpg's protocol itself once
    the connection has prepared `sql`.

    Speed: `Connection.fetch` reaches the protocol's `bind_execute` through five Python
    frames (a coroutine of its own looking up the prepared statement, a context manager,
    a lambda): 20k of the 100k instructions a statement's round trip costs this process
    (callgrind, 1,000 statements). The lookup is the one `fetch` makes, in the same
    cache, so the statement it finds is the one `fetch` prepared and keeps.
    """
    state = _prepared(connection, sql)
    if state is None:
        return await connection.fetch(sql, *arguments)  # prepares and caches it
    try:
        return await connection._protocol.bind_execute(state, arguments, "", 0, False, None)
    except Exception as error:
        return await _after_bound(connection, error, sql, arguments)


def _prepared(connection: Any, sql: str) -> Any:
    """The statement `connection.fetch` prepared for `sql` and keeps, when `_fetch` may
    bind it itself; else None (`fetch` then runs it, preparing it first if need be)."""
    if not _through_protocol():
        return None
    key = (sql, connection._protocol.get_record_class(), False)  # as Connection._get_statement's
    return connection._stmt_cache.get(key)


async def _after_bound(
    connection: Any, error: Exception, sql: str, arguments: list[Any]
) -> list[Any]:
    """The rows of `sql` once binding its prepared statement failed with `error`, or
    `error` raised again.

    What `fetch` does about these two (see `Connection._do_execute`): outside any
    transaction, a statement whose result types changed (ALTER TABLE) is prepared again
    and runs once more; type caches gone stale are reloaded."""
    errors: Any = importlib.import_module("asyncpg.exceptions")
    if isinstance(error, errors.InvalidCachedStatementError):
        connection._drop_global_statement_cache()
        return await connection.fetch(sql, *arguments)
    if isinstance(error, errors.OutdatedSchemaCacheError):
        await connection.reload_schema_state()
    raise error


# The asyncpg releases whose private surface `_fetch` uses (`Connection._stmt_cache` keyed
# as `_get_statement` keys it, `BaseProtocol.bind_execute(state, args, portal, limit,
# return_extra, timeout)`) was read and found the same: 0.29 to 0.32. (`fetch` reads
# `BaseProtocol.queries_count` on every release: all of them count sent statements.) Another release
# takes the public `fetch`, slower by 20k instructions a statement but never broken by a
# change in asyncpg's internals.
_PROTOCOL_SURFACE_READ = ((0, 29), (0, 32))


def protocol_surface_known(version: str) -> bool:
    """Whether asyncpg `version` ("0.32.0") is a release `_fetch` may bypass `fetch` on."""
    try:
        release = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:  # not numbers: a build of unknown source
        return False
    first, last = _PROTOCOL_SURFACE_READ
    return first <= release <= last


@functools.cache
def _through_protocol() -> bool:
    """Whether the installed asyncpg is one `_fetch` may bypass `fetch` on (asked once)."""
    return protocol_surface_known(importlib.metadata.version("asyncpg"))


def _ended_before(connection: Any, protocol: Any, run: int) -> bool:
    """Whether a statement that failed on `connection` (with asyncpg's `protocol`) failed
    unsent, the connection closed under it, when `run` is how many statements the
    connection had sent before.

    A server ending a connection (a restart, `pg_terminate_backend`, an idle timeout)
    first sends a goodbye, an error, then closes the socket. When the goodbye has been
    read but the end of stream not yet, the connection looks open and its socket
    quiet, so `_idle_connection` lends it; asyncpg, having read a message while idle,
    refuses the next statement before sending anything ("cannot switch to state 12;
    another operation (2) is in progress") and closes the connection. asyncpg counts a
    statement once it is sent (`queries_count`), so an unchanged count says it never
    reached the server, and running it on another connection runs it once.
    """
    return connection.is_closed() and protocol.queries_count == run


def _is_usable(connection: Any) -> bool:
    """False when the server has closed the connection (see `has_unread_input`)."""
    if connection.is_closed():
        return False
    transport = connection._transport  # asyncpg has no public way to its socket
    sock = transport.get_extra_info("socket") if transport is not None else None
    return sock is not None and not has_unread_input(sock.fileno())
