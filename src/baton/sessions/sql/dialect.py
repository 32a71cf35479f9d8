"""What differs between SQLite and PostgreSQL: URLs, engines, conflicts, locks.

Everything else in `baton.sessions.sql` is one SQLAlchemy Core code path of
synchronous functions over a `Connection`; `executors` runs them on each database.
"""

from __future__ import annotations

import importlib.util
import select
import sqlite3
import time
from typing import Any

import pydantic_core
from sqlalchemy import Engine, Table, event, text
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import (
    DBAPIError,
    DisconnectionError,
    IntegrityError,
    InterfaceError,
    OperationalError,
)
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from baton.errors import ExtraNotInstalledError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "SQLITE_BEGIN_OPTION",
    "EncodedJson",
    "create_postgres_engine",
    "create_sqlite_engine",
    "has_unread_input",
    "insert",
    "is_sqlite",
    "is_unavailable",
    "is_unique_violation",
    "lock_for_migration",
    "normalize_url",
]

BUSY_TIMEOUT_MS = 10_000
"""How long a SQLite writer waits for another process's write lock before failing."""

SQLITE_BEGIN_OPTION = "baton_sqlite_begin"
"""Execution option naming the SQLite BEGIN mode ("IMMEDIATE" for read-then-write)."""

_SQLITE_DRIVER = "sqlite+pysqlite"
# aiosqlite was baton's SQLite driver once: its URLs still name the same file.
_SQLITE_NAMES = ("sqlite", _SQLITE_DRIVER, "sqlite+aiosqlite")
_POSTGRES_DRIVER = "postgresql+asyncpg"
_SUPPORTED = f"'sqlite:///path' or '{_POSTGRES_DRIVER}://...'"
_PG_UNIQUE_VIOLATION = "23505"
_SQLITE_UNIQUE_VIOLATIONS = ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY")
# Any 64-bit constant works; it only has to be the same in every baton process.
_MIGRATION_LOCK_KEY = 0x62_61_74_6F_6E_00_00_01


def normalize_url(url: str) -> URL:
    """Parse a database URL, naming the driver baton uses for its database.

    SQLite URLs (`sqlite://`, `sqlite+pysqlite://`, `sqlite+aiosqlite://`) become
    `sqlite+pysqlite://`; PostgreSQL URLs become `postgresql+asyncpg://`.

    Raises:
        ValueError: the URL names a database or driver baton does not support.
    """
    parsed = make_url(url)
    if parsed.drivername in _SQLITE_NAMES:
        return parsed.set(drivername=_SQLITE_DRIVER)
    if parsed.drivername in ("postgresql", "postgres", _POSTGRES_DRIVER):
        return parsed.set(drivername=_POSTGRES_DRIVER)
    raise ValueError(
        f"unsupported database URL '{parsed.render_as_string(hide_password=True)}' "
        f"(driver '{parsed.drivername}'); use {_SUPPORTED}."
    )


def is_sqlite(url: URL) -> bool:
    """True for a SQLite URL (after `normalize_url`)."""
    return url.get_backend_name() == "sqlite"


def create_postgres_engine(url: URL) -> AsyncEngine:
    """An asyncpg engine; the URL may carry `?search_path=schema` for baton's tables.

    Raises:
        ExtraNotInstalledError: asyncpg is not installed.
    """
    if importlib.util.find_spec("asyncpg") is None:
        raise ExtraNotInstalledError("postgres", "asyncpg", "PostgreSQL storage")
    search_path = url.query.get("search_path")
    connect_args: dict[str, Any] = {}
    if search_path is not None:
        value = search_path if isinstance(search_path, str) else ",".join(search_path)
        connect_args["server_settings"] = {"search_path": value}
    engine = create_async_engine(
        url.difference_update_query(["search_path"]),
        connect_args=connect_args,
        json_serializer=_json_text,
        json_deserializer=pydantic_core.from_json,
    )
    event.listen(engine.sync_engine, "checkout", _drop_if_closed)
    return engine


def _drop_if_closed(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """Make the pool replace a pooled connection the server has closed (a restart).

    Instead of pinging the server (`pool_pre_ping`: three round trips on asyncpg, per
    transaction), look at the connection without a round trip: asyncpg marks it closed
    once the event loop has read the server hang up; until then the server's goodbye
    or end of stream waits unread in the socket. An idle connection is sent nothing
    else, so anything to read at checkout also means "replace it".
    """
    driver = dbapi_connection.driver_connection
    if driver.is_closed():
        raise DisconnectionError("the server closed this pooled connection")
    transport = driver._transport  # asyncpg has no public way to its socket
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or has_unread_input(sock.fileno()):
        raise DisconnectionError("the server sent a pooled connection something while idle")


def has_unread_input(fd: int) -> bool:
    """True when the socket has something to read: on an idle database connection, the
    server's goodbye or end of stream (it closed the connection)."""
    # poll, not select: select cannot watch descriptors past 1023, which a busy server reaches.
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


_SYNCHRONOUS = ("NORMAL", "FULL")


def _switch_to_wal(cursor: Any) -> None:
    """Put the database in WAL mode, waiting out another process doing the same.

    Two connections converting a brand-new file at once can get "database is locked"
    without SQLite consulting busy_timeout, so the switch is retried, within that timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _synchronous(url: URL) -> str:
    """SQLite's `synchronous` level from the URL's `?synchronous=` (NORMAL by default).

    In WAL mode NORMAL loses nothing when a process crashes or is killed: a commit is
    in the WAL before it returns. Only an OS crash or power cut can roll back the last
    commits, which then run again (at least once). FULL syncs every commit to disk
    as well, at a cost of milliseconds per step.

    Raises:
        ValueError: an unknown level.
    """
    raw = url.query.get("synchronous", "NORMAL")
    level = (raw if isinstance(raw, str) else raw[-1]).upper()
    if level not in _SYNCHRONOUS:
        raise ValueError(
            f"unsupported SQLite synchronous level {raw!r} in the database URL; "
            f"use one of {', '.join(_SYNCHRONOUS)}."
        )
    return level


class EncodedJson(str):
    """JSON text for a JSON column, already encoded (a model's `to_json()`): written as is."""

    __slots__ = ()


def _json_text(value: Any) -> str:
    # JSON columns through pydantic-core: a few times faster than the json module.
    if isinstance(value, EncodedJson):
        return value
    return pydantic_core.to_json(value).decode()


def create_sqlite_engine(url: URL) -> Engine:
    """A synchronous pysqlite engine with WAL, busy_timeout and baton's BEGIN modes.

    Raises:
        ValueError: an unknown `?synchronous=` level.
    """
    synchronous = _synchronous(url)
    engine = create_sync_engine(
        url.difference_update_query(["synchronous"]),
        json_serializer=_json_text,
        json_deserializer=pydantic_core.from_json,
    )

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:  # pyright: ignore[reportUnusedFunction] -- registered as a listener
        # Take over BEGIN from the driver so transactions start where SQLAlchemy says,
        # in the mode we choose (see _begin).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        # busy_timeout first: switching to WAL waits for other processes' locks.
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _switch_to_wal(cursor)
        cursor.execute(f"PRAGMA synchronous = {synchronous}")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:  # pyright: ignore[reportUnusedFunction] -- registered as a listener
        # A transaction that reads and then writes must take the write lock up front
        # (IMMEDIATE): upgrading a read lock later fails at once when another writer
        # committed in between, instead of waiting out busy_timeout.
        raw = connection.connection.driver_connection
        if raw is not None and raw.in_transaction:
            return  # the executor began it on the driver: statements join that transaction
        mode = connection.get_execution_options().get(SQLITE_BEGIN_OPTION, "DEFERRED")
        connection.exec_driver_sql(f"BEGIN {mode}")

    return engine


def insert(dialect: str, table: Table) -> sqlite.Insert | postgresql.Insert:
    """An INSERT into `table` with ON CONFLICT support, for the dialect of that name."""
    if dialect == "sqlite":
        return sqlite.insert(table)
    return postgresql.insert(table)


def is_unique_violation(error: IntegrityError) -> bool:
    """True when the error is a primary-key or unique-constraint conflict."""
    sqlstate = getattr(error.orig, "sqlstate", None)  # asyncpg, through SQLAlchemy's adapter
    if sqlstate is not None:
        return sqlstate == _PG_UNIQUE_VIOLATION
    errorname = getattr(error.orig, "sqlite_errorname", None)  # sqlite3, Python 3.11+
    return errorname in _SQLITE_UNIQUE_VIOLATIONS


# SQLSTATE classes of a lost or refused connection: 08 (connection exception) and 57
# (operator intervention: admin shutdown, crash shutdown, cannot connect now).
_UNAVAILABLE_CLASSES = ("08", "57")


def is_unavailable(error: BaseException) -> bool:
    """True when `error` means the database cannot be reached right now (a restart, a
    dropped connection, a refused one, or SQLite's write lock held past busy_timeout),
    so the same call may succeed later; False for errors of the call itself."""
    if isinstance(error, DBAPIError):
        if error.connection_invalidated:
            return True
        sqlstate = getattr(error.orig, "sqlstate", None)
        if isinstance(sqlstate, str):
            return sqlstate[:2] in _UNAVAILABLE_CLASSES
        if isinstance(error.orig, sqlite3.OperationalError):
            return "locked" in str(error.orig) or "busy" in str(error.orig)
        return isinstance(error, InterfaceError | OperationalError) or _is_socket_error(error.orig)
    return (
        isinstance(error, DisconnectionError)
        or _is_socket_error(error)
        or _is_asyncpg_unavailable(error)
    )


def _is_asyncpg_unavailable(error: BaseException) -> bool:
    """The same question for asyncpg's own errors (PostgreSQL's direct path, `postgres`):
    a SQLSTATE of a lost or refused connection, or a connection closed under the call."""
    sqlstate = getattr(error, "sqlstate", None)
    if isinstance(sqlstate, str):
        return sqlstate[:2] in _UNAVAILABLE_CLASSES
    return type(error).__module__.startswith("asyncpg") and "closed" in str(error)


def _is_socket_error(error: BaseException | None) -> bool:
    return isinstance(error, ConnectionError | TimeoutError) or (
        isinstance(error, OSError) and error.errno is not None
    )


def lock_for_migration(connection: Connection) -> None:
    """Serialize schema migration between processes, until the transaction ends.

    SQLite needs nothing more: the migration transaction begins IMMEDIATE, which
    already excludes every other writer.
    """
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY})
