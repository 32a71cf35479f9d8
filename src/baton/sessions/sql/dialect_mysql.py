"""MySQL's and MariaDB's strategy: asyncmy (or aiomysql), InnoDB row locks, polling.

What differs from PostgreSQL:

- No UPDATE ... RETURNING: an update runs in a transaction, and the rows it changed
  are read back by key after it (`update_returning`), under the row locks it took.
  So the lease calls and steps are transactions, never lone autocommit statements.
- No INSERT ... ON CONFLICT: a new row that may exist is inserted and a duplicate-key
  error caught (InnoDB undoes just that statement); an upsert is ON DUPLICATE KEY UPDATE.
- Writes run at READ COMMITTED, as PostgreSQL's do, so locking reads take no gap
  locks; reads run at REPEATABLE READ, one snapshot.
- Nothing pushes changes to other processes (there is no LISTEN/NOTIFY): workers
  poll every second, as on SQLite (`wakes_other_processes` is False).
- DDL commits by itself, so migrations hold a named lock (GET_LOCK) instead of a
  transaction's.
- Text is stored as utf8mb4 with a binary NO PAD collation (`schema.binary_text`, then
  migration 23): ids compare by their characters, as on SQLite and PostgreSQL, not
  case-insensitively, and trailing spaces count.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import cache
from typing import Any, TypeVarTuple, final

import pydantic_core
from sqlalchemy import ColumnElement, Table, select, text
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.sql.dml import Update, UpdateBase
from sqlalchemy.sql.selectable import Select

from baton.errors import ExtraNotInstalledError
from baton.sessions.sql.dialect import Listener, OneStatementStep, Params, Rows, json_text
from baton.sessions.sql.direct import UpdateReturning
from baton.sessions.sql.engine_options import with_engine_options
from baton.sessions.sql.executors import (
    Executor,
    MysqlExecutor,
    OneStatement,
    count_updated,
    update_then_refind,
)
from baton.sessions.sql.outages import is_lost_connection
from baton.sessions.sql.schema import sessions
from baton.sessions.sql.step import SessionKeys, write_step
from baton.sessions.sql.writes import CLAIM_LOADED, RELEASE_LEASE
from baton.sessions.store import StepCommit
from baton.sessions.wakeups import Wakeups

Ts = TypeVarTuple("Ts")

__all__ = ["MysqlDialect", "create_mysql_engine"]

DRIVER = "mysql+asyncmy"
_AIOMYSQL = "mysql+aiomysql"
NAMES = ("mysql", "mariadb", DRIVER, "mariadb+asyncmy", _AIOMYSQL, "mariadb+aiomysql")
_PACKAGES = {DRIVER: "asyncmy", _AIOMYSQL: "aiomysql"}

_DUPLICATE_KEY = (1062, 1586)  # ER_DUP_ENTRY, ER_DUP_ENTRY_WITH_KEY_NAME
# Server and client error numbers meaning "not now": server shutting down (1053),
# lock wait timeout (1205), deadlock victim (1213), connection killed (1927, MariaDB),
# can't connect (2002, 2003), server gone away or lost mid-query (2006, 2013, 2055).
_UNAVAILABLE = frozenset((1053, 1205, 1213, 1927, 2002, 2003, 2006, 2013, 2055))
# GET_LOCK's names are the server's, so the database's own name goes in it (hashed: a
# name is at most 64 characters): migrations of other databases on the server, or of
# other tests' databases, do not wait for this one.
_MIGRATION_LOCK = "CONCAT('baton_migrate:', MD5(DATABASE()))"
_NO_LIMIT = 2**64 - 1
_MIGRATION_WAIT_S = 60


@final
class MysqlDialect:
    """MySQL 8 or MariaDB 10.6+ (see the module docstring)."""

    name = "mysql"

    def __init__(self, url: URL, engine_options: Mapping[str, Any] | None = None) -> None:
        self.engine_options = dict(engine_options or {})
        driver = _AIOMYSQL if url.drivername.endswith("+aiomysql") else DRIVER
        if importlib.util.find_spec(_PACKAGES[driver]) is None:
            raise ExtraNotInstalledError("mysql", _PACKAGES[driver], "MySQL/MariaDB storage")
        self.url = url.set(drivername=driver)

    def open_executor(self) -> Executor:
        return MysqlExecutor(create_mysql_engine(self.url, self.engine_options))

    def open_listener(self, wakeups: Wakeups) -> Listener | None:
        return None  # no cross-process push: workers poll once per lease TTL

    def run(self, connection: Connection, statement: Any, params: Params) -> Rows:
        result = connection.execute(statement, params)
        return [tuple(row) for row in result] if result.returns_rows else []

    def update_returning(
        self, connection: Connection, statement: UpdateReturning, params: Mapping[str, Any]
    ) -> Rows:
        return update_then_refind(connection, statement, params)

    def count_updated(
        self, connection: Connection, statement: Update, params: Mapping[str, Any]
    ) -> int:
        return count_updated(connection, statement, params)

    def insert_new(self, connection: Connection, table: Table, row: Mapping[str, Any]) -> bool:
        try:
            connection.execute(table.insert(), row)
        except IntegrityError as error:
            if not self.is_unique_violation(error):
                raise
            return False
        return True

    def upsert(self, table: Table, replaced: tuple[str, ...]) -> UpdateBase:
        return _upsert(table, replaced)

    def lock_rows(self, query: Select[*Ts], *, of: Table, skip_locked: bool = False) -> Select[*Ts]:
        # MariaDB has no FOR UPDATE OF: the joined tables' rows are locked too.
        return query.with_for_update(skip_locked=skip_locked)

    def in_apps(
        self, session_pk: ColumnElement[Any], app_names: Sequence[str]
    ) -> ColumnElement[bool]:
        # MariaDB turns IN (subquery) into a semi-join whose rows FOR UPDATE locks too;
        # a derived table with a LIMIT is materialized first, and not locked.
        apps = select(sessions.c.pk).where(sessions.c.app_name.in_(app_names))
        return session_pk.in_(select(*apps.limit(_NO_LIMIT).subquery().c))

    @property
    def claim_loaded_statement(self) -> OneStatement:
        return CLAIM_LOADED  # commits as every write does (the server's flush policy)

    @property
    def new_session_statement(self) -> OneStatement | None:
        return None  # no RETURNING: a transaction that tells a taken id by its error

    def answering_statement(self, with_events: bool) -> OneStatement | None:
        return None  # no UPDATE in a CTE: a transaction

    @property
    def sees_later_commits(self) -> bool:
        return True  # writes run at READ COMMITTED

    def one_statement_step(self, commit: StepCommit, now: float) -> OneStatementStep | None:
        return None  # without RETURNING a step takes several statements: a transaction

    @property
    def release_statement(self) -> OneStatement:
        return RELEASE_LEASE

    def write_step(
        self, connection: Connection, commit: StepCommit, now: float, known: SessionKeys
    ) -> int:
        return write_step(connection, self, commit, now, known)

    def is_unique_violation(self, error: IntegrityError) -> bool:
        return _error_number(error) in _DUPLICATE_KEY

    def is_unavailable(self, error: BaseException) -> bool:
        if is_lost_connection(error) or isinstance(error, InterfaceError):
            return True
        # SQLAlchemy does not wrap every driver error (one raised while it sets up a
        # new connection reaches us as the driver's own): look at both.
        return _error_number(error) in _UNAVAILABLE

    def migration_lock(self, connection: Connection) -> AbstractContextManager[None]:
        return _named_lock(connection)


def _error_number(error: BaseException) -> int | None:
    """The server's (or client's) error number: the first argument of the driver's error,
    wrapped by SQLAlchemy or not."""
    orig = error.orig if isinstance(error, DBAPIError) else error
    args = getattr(orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


@cache
def _upsert(table: Table, replaced: tuple[str, ...]) -> UpdateBase:
    statement = mysql.insert(table)
    return statement.on_duplicate_key_update({name: statement.inserted[name] for name in replaced})


@contextmanager
def _named_lock(connection: Connection) -> Iterator[None]:
    """GET_LOCK belongs to the connection, not the transaction: DDL's implicit commits
    keep it, and it is released here (or when the connection closes)."""
    acquired = connection.scalar(
        text(f"SELECT GET_LOCK({_MIGRATION_LOCK}, :wait)"), {"wait": _MIGRATION_WAIT_S}
    )
    if acquired != 1:
        raise TimeoutError(
            f"another process held baton's migration lock of this database for "
            f"{_MIGRATION_WAIT_S} s; "
            "retry when its migration has finished."
        )
    try:
        yield
        # Commit before the lock goes, or the next process could read the version row
        # as it was (DDL already committed everything else by itself).
        connection.exec_driver_sql("COMMIT")
    finally:
        connection.execute(text(f"SELECT RELEASE_LOCK({_MIGRATION_LOCK})"))


def create_mysql_engine(url: URL, engine_options: Mapping[str, Any] | None = None) -> AsyncEngine:
    """An async engine on MySQL/MariaDB, utf8mb4, writes at READ COMMITTED, with the
    caller's `engine_options` (see `check_engine_options`).

    `pool_pre_ping` replaces pooled connections a server restart closed (a round trip
    per checkout; PostgreSQL's engine checks without one, see `postgres`).
    """
    if "charset" not in url.query:
        url = url.update_query_dict({"charset": "utf8mb4"})
    own: dict[str, Any] = {
        "isolation_level": "READ COMMITTED",
        "pool_pre_ping": True,
        "json_serializer": json_text,
        "json_deserializer": pydantic_core.from_json,
    }
    return create_async_engine(url, **with_engine_options(own, engine_options or {}))
