"""What differs between databases, as one strategy object per database: `SqlDialect`.

Everything else in `baton.sessions.sql` is one SQLAlchemy Core code path of
synchronous functions over a `Connection`. Where a database needs something of its
own (an engine, an executor, UPDATE ... RETURNING, insert-if-new, an upsert, row
locks, a one-statement step, telling a unique conflict or a lost server apart, the
migration lock), that code asks the store's `SqlDialect`. `backends.open_dialect`
picks the strategy once, from the URL; each database is one module
(`dialect_sqlite`, `dialect_postgres`, `dialect_mysql`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVarTuple

import pydantic_core
from sqlalchemy import ColumnElement, Table
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.dml import Insert, Update, UpdateBase
from sqlalchemy.sql.selectable import Select

from baton.sessions.sql.direct import UpdateReturning
from baton.sessions.sql.executors import Executor, OneStatement
from baton.sessions.store import StepCommit
from baton.sessions.wakeups import Wakeups

if TYPE_CHECKING:  # pragma: no cover - for annotations only: `step` imports this module
    from baton.sessions.sql.step import SessionKeys

Ts = TypeVarTuple("Ts")

__all__ = [
    "EncodedJson",
    "Listener",
    "Rows",
    "SqlDialect",
    "json_text",
]

Rows = list[tuple[Any, ...]]
Params = Mapping[str, Any] | Sequence[Mapping[str, Any]]


class Listener(Protocol):
    """Turns other processes' notifications into this store's wake-ups while started."""

    def start(self) -> None:
        """Begin listening in the background (later calls do nothing)."""
        ...

    async def stop(self) -> None:
        """Stop listening and close the connection."""
        ...


class SqlDialect(Protocol):
    """One database's answers to everything the shared SQL code cannot say in Core."""

    @property
    def name(self) -> str:
        """SQLAlchemy's name for the dialect ("sqlite", "postgresql", "mysql")."""
        ...

    @property
    def url(self) -> URL:
        """The database URL, with the driver baton uses."""
        ...

    def open_executor(self) -> Executor:
        """A new executor (engine and connections) for this database."""
        ...

    def open_listener(self, wakeups: Wakeups) -> Listener | None:
        """What wakes `wakeups` when another process opens, answers or releases
        something, or None when this database cannot push that (workers poll)."""
        ...

    def run(self, connection: Connection, statement: Any, params: Params) -> Rows:
        """Execute a statement (one parameter set, or many) in the connection's
        transaction and return its rows as tuples (none for many parameter sets)."""
        ...

    def update_returning(
        self, connection: Connection, statement: UpdateReturning, params: Mapping[str, Any]
    ) -> Rows:
        """Run the update and return its `returning` columns of the rows it changed."""
        ...

    def count_updated(
        self, connection: Connection, statement: Update, params: Mapping[str, Any]
    ) -> int:
        """Run an UPDATE (one parameter set); how many rows matched its WHERE."""
        ...

    def insert_new(self, connection: Connection, table: Table, row: Mapping[str, Any]) -> bool:
        """Insert `row` unless its primary key is taken; False (and nothing written) then."""
        ...

    def upsert(self, table: Table, replaced: tuple[str, ...]) -> UpdateBase:
        """An INSERT into `table` that, on a primary-key conflict, replaces the `replaced`
        columns of the existing row with the inserted values."""
        ...

    def lock_rows(self, query: Select[*Ts], *, of: Table, skip_locked: bool = False) -> Select[*Ts]:
        """`query` locking the rows of `of` it reads until the transaction ends (skipping
        rows another transaction holds, when asked; some databases lock the joined
        tables' rows too), or as is where the transaction already excludes other writers."""
        ...

    def in_apps(
        self, session_pk: ColumnElement[Any], app_names: Sequence[str]
    ) -> ColumnElement[bool]:
        """The row's session (`session_pk`) is one of `app_names`'s, as a condition of a
        `lock_rows` query that must not lock the sessions' rows."""
        ...

    @property
    def release_statement(self) -> OneStatement:
        """Clears a lease if its token still holds it (bind `writes.lease_params`); its
        rows say whether the invocation is still running (`writes.released_running`)."""
        ...

    @property
    def claim_loaded_statement(self) -> OneStatement:
        """`Store.claim_loaded`'s claim (bind `writes.claim_params` and `session_params`):
        its rows start with `writes.CLAIM_LOADED`'s columns (more may follow)."""
        ...

    @property
    def new_session_statement(self) -> OneStatement | None:
        """Creating a session as one statement (bind `writes.session_row` and
        `shared_state.shared_params`) that returns a row (its key, then its app's and its
        user's shared state) only when it wrote one (none: the id is taken), or None to
        create it in a transaction of `writes.insert_session`."""
        ...

    def answering_statement(self, with_events: bool) -> OneStatement | None:
        """`Store.claim_answering` as one statement (`answering.ANSWERING`, or
        `ANSWERING_WITH_EVENTS` for a claim `with_events`), or None to run it as a
        transaction of `answering.claim_answering`."""
        ...

    @property
    def sees_later_commits(self) -> bool:
        """Whether a write transaction's later statements see rows others committed after
        its first read (READ COMMITTED), so a claim that waited for a row reads again."""
        ...

    def one_statement_step(self, commit: StepCommit, now: float) -> OneStatementStep | None:
        """The one statement (and its parameters) landing `commit` outside BEGIN/COMMIT,
        or None to land it as a transaction of the shared `step.write_step`."""
        ...

    def write_step(
        self, connection: Connection, commit: StepCommit, now: float, known: SessionKeys
    ) -> int:
        """Land `commit` in the connection's open transaction and return the new version:
        `step.write_step`, or this database's faster way to the same rows."""
        ...

    def is_unique_violation(self, error: IntegrityError) -> bool:
        """True when the error is a primary-key or unique-constraint conflict."""
        ...

    def is_unavailable(self, error: BaseException) -> bool:
        """True when `error` means the database cannot be reached right now (a restart, a
        dropped or refused connection, a lock held too long), so the same call may
        succeed later; False for errors of the call itself."""
        ...

    def migration_lock(self, connection: Connection) -> AbstractContextManager[None]:
        """Hold the lock that serializes schema migration between processes."""
        ...


OneStatementStep = tuple[Select[Any] | Insert, dict[str, Any]]
"""A step's one statement and its parameters: it returns no row when the session does
not exist, and fails with an error `step.is_stale_step` recognizes when the commit is
stale (the failure rolls it back: nothing landed)."""


class EncodedJson(str):
    """JSON text for a JSON column, already encoded (a model's `to_json()`): written as is."""

    __slots__ = ()


def json_text(value: Any) -> str:
    """JSON columns' serializer: pydantic-core is a few times faster than the json module."""
    if isinstance(value, EncodedJson):
        return value
    return pydantic_core.to_json(value).decode()
