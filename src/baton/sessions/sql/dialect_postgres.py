"""PostgreSQL's strategy: asyncpg, row locks, LISTEN/NOTIFY, one-statement steps.

Where a call is one statement (most reads, the lease calls, most steps) it runs
without BEGIN and COMMIT: a statement is atomic and sees one snapshot by itself, and
those two round trips are most of a small call's cost. A plain step is one statement
of data-modifying CTEs (`step.step_at_once`), and the hot statements go to asyncpg
directly (`postgres`). Other processes learn of opened, answered and released work
through NOTIFY (see `listener`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVarTuple, final

import pydantic_core
from sqlalchemy import ColumnElement, Table, event, func, text
from sqlalchemy import select as select_query
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import DisconnectionError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.sql.selectable import Select

from baton.errors import ExtraNotInstalledError
from baton.sessions.sql.answering import ANSWERING, ANSWERING_WITH_EVENTS, NO_FLUSH_WAIT
from baton.sessions.sql.conflicts import ReturningStatements
from baton.sessions.sql.dialect import Listener, OneStatementStep, Params, Rows, json_text
from baton.sessions.sql.engine_options import with_engine_options
from baton.sessions.sql.executors import Executor, OneStatement, PostgresExecutor
from baton.sessions.sql.listener import CHANNEL, PostgresListener, scoped
from baton.sessions.sql.postgres import has_unread_input
from baton.sessions.sql.postgres import is_unavailable as is_postgres_unavailable
from baton.sessions.sql.schema import session_in_apps, sessions
from baton.sessions.sql.step import SessionKeys, one_statement_step, write_step
from baton.sessions.sql.writes import CLAIM_LOADED, RELEASE_LEASE
from baton.sessions.store import InvocationStatus, StepCommit
from baton.sessions.wakeups import Wakeups

Ts = TypeVarTuple("Ts")

__all__ = ["POOLED_CONNECTIONS", "PostgresDialect", "create_postgres_engine"]

DRIVER = "postgresql+asyncpg"
NAMES = ("postgresql", "postgres", DRIVER)

_UNIQUE_VIOLATION = "23505"
# Any 64-bit constant works; it only has to be the same in every baton process. The key
# is hashed with the schema's name (advisory locks are the database's), so migrations of
# other schemas, or of other tests' schemas, do not wait for this one.
_MIGRATION_LOCK_KEY = 0x62_61_74_6F_6E_00_00_01

_RELEASED = RELEASE_LEASE.with_returning.cte("released")
# Release and, when the invocation is still running, NOTIFY other processes that it can
# be continued, in one statement.
_RELEASE_AND_NOTIFY = (
    select_query(func.pg_notify(scoped(CHANNEL), sessions.c.app_name))
    .select_from(_RELEASED.join(sessions, sessions.c.pk == _RELEASED.c.session_pk))
    .where(_RELEASED.c.status == InvocationStatus.RUNNING.value)
)

# A resume's claim (`Store.claim_loaded`: a continue, or an answer whose checks' read
# claimed nothing) commits without waiting for its WAL flush, as an answer's claim does,
# for the same reasons (`answering`'s docstring): every later durable commit flushes it,
# and a crash that undoes it leaves its holder fenced out by its random token, while the
# row's lease is back as it was: lapsed, released or this owner's (a claim takes nothing
# else). What differs: a continue runs the next node's code before its first step, so
# that code may run under a claim a crash then undoes. Its step is then refused, and
# whoever claims the run next (recovery) runs the node again from the same committed
# checkpoint with the same idempotency key: at least once, as when a process dies in a
# node. Nothing the call brought (a message, answers) is lost that a durable claim would
# have kept: it lands with the first step either way, and answers land before any code.
# Speed: one durable commit fewer for a continue.
_CLAIM_LOADED_NO_FLUSH_WAIT = CLAIM_LOADED.update.returning(*CLAIM_LOADED.returning, NO_FLUSH_WAIT)


@final
class PostgresDialect(ReturningStatements):
    """PostgreSQL (see the module docstring); the URL may end in `?search_path=schema`."""

    insert = staticmethod(postgresql.insert)
    name = "postgresql"

    def __init__(self, url: URL, engine_options: Mapping[str, Any] | None = None) -> None:
        self.engine_options = dict(engine_options or {})
        if importlib.util.find_spec("asyncpg") is None:
            raise ExtraNotInstalledError("postgres", "asyncpg", "PostgreSQL storage")
        self.url = url.set(drivername=DRIVER)

    def open_executor(self) -> Executor:
        engine = create_postgres_engine(self.url, self.engine_options)
        connect_args = self.engine_options.get("connect_args", {})
        return PostgresExecutor(self.url, engine, connect_args=connect_args)

    def open_listener(self, wakeups: Wakeups) -> Listener | None:
        return PostgresListener(self.url, wakeups)

    def run(self, connection: Connection, statement: Any, params: Params) -> Rows:
        result = connection.execute(statement, params)
        return [tuple(row) for row in result] if result.returns_rows else []

    def lock_rows(self, query: Select[*Ts], *, of: Table, skip_locked: bool = False) -> Select[*Ts]:
        # FOR NO KEY UPDATE (the lock an UPDATE of non-key columns takes) OF that table
        # only: a claim of invocations must not wait for (or skip) a session a step holds.
        return query.with_for_update(of=of, skip_locked=skip_locked, key_share=True)

    def in_apps(
        self, session_pk: ColumnElement[Any], app_names: Sequence[str]
    ) -> ColumnElement[bool]:
        return session_in_apps(session_pk, app_names)  # a locking read locks only its FROM

    @property
    def claim_loaded_statement(self) -> OneStatement:
        return _CLAIM_LOADED_NO_FLUSH_WAIT

    def answering_statement(self, with_events: bool) -> OneStatement | None:
        return ANSWERING_WITH_EVENTS if with_events else ANSWERING

    @property
    def sees_later_commits(self) -> bool:
        return True  # writes run at READ COMMITTED

    def one_statement_step(self, commit: StepCommit, now: float) -> OneStatementStep | None:
        return one_statement_step(commit, now)

    @property
    def release_statement(self) -> OneStatement:
        return _RELEASE_AND_NOTIFY

    def write_step(
        self, connection: Connection, commit: StepCommit, now: float, known: SessionKeys
    ) -> int:
        return write_step(connection, self, commit, now, known)

    def is_unique_violation(self, error: IntegrityError) -> bool:
        # asyncpg's SQLSTATE, through SQLAlchemy's adapter
        return getattr(error.orig, "sqlstate", None) == _UNIQUE_VIOLATION

    def is_unavailable(self, error: BaseException) -> bool:
        return is_postgres_unavailable(error)

    def migration_lock(self, connection: Connection) -> AbstractContextManager[None]:
        return _advisory_lock(connection)


@contextmanager
def _advisory_lock(connection: Connection) -> Iterator[None]:
    # Held until the transaction ends: released with the migration's commit.
    connection.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(current_schema(), :key))"),
        {"key": _MIGRATION_LOCK_KEY},
    )
    yield


POOLED_CONNECTIONS = 10
"""Connections the engine keeps open between transactions. SQLAlchemy's default of 5
is below a busy server's concurrent cold transactions (a session is created in one per
HITL run): past it, each transaction opened a connection and closed it on return, a new
PostgreSQL backend every time (80 per 1,000 runs at 16 clients; 18 with 10), each
costing both sides milliseconds of CPU and the request its round trips."""


def create_postgres_engine(
    url: URL, engine_options: Mapping[str, Any] | None = None
) -> AsyncEngine:
    """An asyncpg engine; the URL may carry `?search_path=schema` for baton's tables. The
    caller's `engine_options` (see `check_engine_options`) are laid over baton's."""
    search_path = url.query.get("search_path")
    connect_args: dict[str, Any] = {}
    if search_path is not None:
        value = search_path if isinstance(search_path, str) else ",".join(search_path)
        connect_args["server_settings"] = {"search_path": value}
    own: dict[str, Any] = {
        "connect_args": connect_args,
        "json_serializer": json_text,
        "json_deserializer": pydantic_core.from_json,
        "pool_size": POOLED_CONNECTIONS,
    }
    engine = create_async_engine(
        url.difference_update_query(["search_path"]),
        **with_engine_options(own, engine_options or {}),
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
