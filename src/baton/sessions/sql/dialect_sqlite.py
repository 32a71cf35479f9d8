"""SQLite's strategy: a file through pysqlite, WAL, IMMEDIATE write transactions.

A step's statements run on the driver directly (`direct`), inline on the event
loop's thread when the write lock is free (`executors.SqliteExecutor`). Nothing
needs row locks: a writing transaction begins IMMEDIATE, which holds the database's
write lock until it ends. Other processes on the same file are not told of changes:
their workers poll (see `wakes_other_processes`).
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVarTuple, final

import pydantic_core
from sqlalchemy import ColumnElement, Engine, Table, event
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.sql.dml import Update
from sqlalchemy.sql.selectable import Select

from baton.errors import EngineOptionsError
from baton.sessions.sql import direct
from baton.sessions.sql.conflicts import ReturningStatements
from baton.sessions.sql.dialect import Listener, OneStatementStep, Params, Rows
from baton.sessions.sql.direct import UpdateReturning
from baton.sessions.sql.engine_options import with_engine_options
from baton.sessions.sql.executors import BUSY_TIMEOUT_MS, Executor, OneStatement, SqliteExecutor
from baton.sessions.sql.outages import is_lost_connection
from baton.sessions.sql.schema import session_in_apps
from baton.sessions.sql.sqlite_writes import sqlite_json, write_plain_step
from baton.sessions.sql.step import SessionKeys
from baton.sessions.sql.writes import CLAIM_LOADED, RELEASE_LEASE
from baton.sessions.store import StepCommit
from baton.sessions.wakeups import Wakeups

Ts = TypeVarTuple("Ts")

__all__ = ["SqliteDialect", "create_sqlite_engine"]

DRIVER = "sqlite+pysqlite"
NAMES = ("sqlite", DRIVER, "sqlite+aiosqlite")
"""URL schemes of a SQLite file: aiosqlite was baton's driver once; its URLs name the same file."""

_UNIQUE_VIOLATIONS = ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY")


@final
class SqliteDialect(ReturningStatements):
    """SQLite (see the module docstring)."""

    insert = staticmethod(sqlite.insert)
    name = "sqlite"

    def __init__(self, url: URL, engine_options: Mapping[str, Any] | None = None) -> None:
        self.url = url.set(drivername=DRIVER)
        self.engine_options = dict(engine_options or {})
        _synchronous(self.url)  # refuse a bad URL when the store is built, not on first use

    def open_executor(self) -> Executor:
        return SqliteExecutor(create_sqlite_engine(self.url, self.engine_options))

    def open_listener(self, wakeups: Wakeups) -> Listener | None:
        return None

    def run(self, connection: Connection, statement: Any, params: Params) -> Rows:
        return direct.run(connection, statement, params)

    def update_returning(
        self, connection: Connection, statement: UpdateReturning, params: Mapping[str, Any]
    ) -> Rows:
        """The update, then (when it changed rows) its `returning` columns read back by key.

        Speed: SQLite runs an UPDATE ... RETURNING by buffering its rows in a temporary
        B-tree it opens, fills and drops on every execution. A hand-written step (raw
        sqlite3, callgrind) took 203k instructions with its session and invocation
        updates RETURNING, 160k with the same updates followed by a read of the
        session's key. The IMMEDIATE transaction holds the write lock: nothing changes
        the rows between the update and the read.
        """
        if direct.changed(connection, statement.update, params) == 0:
            return []
        return direct.run(connection, statement.refound, params)

    def count_updated(
        self, connection: Connection, statement: Update, params: Mapping[str, Any]
    ) -> int:
        return direct.changed(connection, statement, params)

    def lock_rows(self, query: Select[*Ts], *, of: Table, skip_locked: bool = False) -> Select[*Ts]:
        return query  # the IMMEDIATE transaction holds the whole database's write lock

    def in_apps(
        self, session_pk: ColumnElement[Any], app_names: Sequence[str]
    ) -> ColumnElement[bool]:
        return session_in_apps(session_pk, app_names)  # a locking read locks only its FROM

    @property
    def claim_loaded_statement(self) -> OneStatement:
        return CLAIM_LOADED  # commits as every write does (the URL's `?synchronous=`)

    def answering_statement(self, with_events: bool) -> OneStatement | None:
        return None  # inline, a transaction costs no round trip

    @property
    def sees_later_commits(self) -> bool:
        return False  # a write transaction holds the database's write lock from BEGIN IMMEDIATE

    def one_statement_step(self, commit: StepCommit, now: float) -> OneStatementStep | None:
        return None  # inline, a transaction costs no round trip: one code path serves all

    @property
    def release_statement(self) -> OneStatement:
        return RELEASE_LEASE

    def write_step(
        self, connection: Connection, commit: StepCommit, now: float, known: SessionKeys
    ) -> int:
        return write_plain_step(connection, self, commit, now, known)  # bound by hand, mostly

    def is_unique_violation(self, error: IntegrityError) -> bool:
        return getattr(error.orig, "sqlite_errorname", None) in _UNIQUE_VIOLATIONS

    def is_unavailable(self, error: BaseException) -> bool:
        if isinstance(error, DBAPIError) and isinstance(error.orig, sqlite3.OperationalError):
            return "locked" in str(error.orig) or "busy" in str(error.orig)
        return is_lost_connection(error)

    def migration_lock(self, connection: Connection) -> AbstractContextManager[None]:
        # The migration's transaction begins IMMEDIATE: it already excludes other writers.
        return contextlib.nullcontext()


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


def create_sqlite_engine(url: URL, engine_options: Mapping[str, Any] | None = None) -> Engine:
    """A synchronous pysqlite engine with WAL, busy_timeout and baton's BEGIN modes, and
    the caller's `engine_options` (see `check_engine_options`).

    Raises:
        ValueError: an unknown `?synchronous=` level.
        EngineOptionsError: a pool option this database's pool does not have (an
            in-memory database's pool keeps one connection per thread: no queue).
    """
    synchronous = _synchronous(url)
    own: dict[str, Any] = {
        "json_serializer": sqlite_json,
        "json_deserializer": pydantic_core.from_json,
    }
    try:
        engine = create_sync_engine(
            url.difference_update_query(["synchronous"]),
            **with_engine_options(own, engine_options or {}),
        )
    except TypeError as error:  # SQLAlchemy's word for options its pool class lacks
        if not engine_options:
            raise
        raise EngineOptionsError(
            f"DatabaseSessionService: engine options {', '.join(sorted(engine_options))} "
            f"do not all apply to '{url.render_as_string(hide_password=True)}' ({error}); "
            "an in-memory SQLite database takes no max_overflow, pool_timeout or "
            "pool_use_lifo. Leave them out, or use a database file."
        ) from error

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
        # The executor begins every transaction on the driver (a writing one IMMEDIATE,
        # see SqliteExecutor): statements join it. Anything else only reads.
        raw = connection.connection.driver_connection
        if raw is not None and raw.in_transaction:
            return
        connection.exec_driver_sql("BEGIN DEFERRED")

    return engine
