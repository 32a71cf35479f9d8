"""INSERT ... ON CONFLICT and UPDATE ... RETURNING, as SQLite and PostgreSQL both spell them.

The two strategies (`dialect_sqlite`, `dialect_postgres`) share these through `ReturningStatements`,
each with its dialect's `insert`. The statements are built once per table (or
statement) and cached, so a step reuses the same Core objects (see `step`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.sql.dml import Update, UpdateBase

from baton.sessions.sql.dialect import Params, Rows
from baton.sessions.sql.direct import UpdateReturning
from baton.sessions.sql.executors import count_updated
from baton.sessions.sql.schema import sessions
from baton.sessions.sql.shared_state import SHARED_BY_KEY

__all__ = ["Insert", "ReturningStatements"]

Insert = Callable[[Table], sqlite.Insert | postgresql.Insert]
"""A dialect's `insert` with ON CONFLICT support."""


class ReturningStatements(ABC):
    """`SqlDialect`'s `update_returning`, `count_updated`, `insert_new` and `upsert` for a
    database with RETURNING and ON CONFLICT; a subclass names its `insert` and defines `run`."""

    insert: Insert

    @abstractmethod
    def run(self, connection: Connection, statement: Any, params: Params) -> Rows:
        """As `SqlDialect.run`."""

    def update_returning(
        self, connection: Connection, statement: UpdateReturning, params: Mapping[str, Any]
    ) -> Rows:
        """Run the update with RETURNING: one statement."""
        return self.run(connection, statement.with_returning, params)

    def count_updated(
        self, connection: Connection, statement: Update, params: Mapping[str, Any]
    ) -> int:
        """Run the UPDATE; how many rows matched its WHERE."""
        return count_updated(connection, statement, params)

    def insert_new(self, connection: Connection, table: Table, row: Mapping[str, Any]) -> bool:
        """INSERT ... ON CONFLICT DO NOTHING; True when it wrote the row."""
        return bool(self.run(connection, _insert_new(self.insert, table), row))

    def upsert(self, table: Table, replaced: tuple[str, ...]) -> UpdateBase:
        """INSERT ... ON CONFLICT DO UPDATE of the `replaced` columns."""
        return _upsert(self.insert, table, replaced)

    @property
    def new_session_statement(self) -> UpdateBase:
        """INSERT ... ON CONFLICT DO NOTHING of a session's row, returning its key."""
        return _new_session(self.insert)


@cache
def _insert_new(insert: Insert, table: Table) -> UpdateBase:
    """An INSERT that does nothing on a primary-key conflict and returns the key it wrote."""
    key = list(table.primary_key.columns)
    return insert(table).on_conflict_do_nothing(index_elements=key).returning(*key)


@cache
def _new_session(insert: Insert) -> UpdateBase:
    """An INSERT of a session's row that does nothing when its (app, user, id) is taken
    and returns the key of the row it wrote with its app's and user's shared state (bind
    `shared_params` too): no row back means the id was taken."""
    taken = [sessions.c.app_name, sessions.c.user_id, sessions.c.session_id]
    new = insert(sessions).on_conflict_do_nothing(index_elements=taken)
    return new.returning(sessions.c.pk, *SHARED_BY_KEY)


@cache
def _upsert(insert: Insert, table: Table, replaced: tuple[str, ...]) -> UpdateBase:
    """An INSERT that replaces the `replaced` columns of the row whose key it conflicts with."""
    statement = insert(table)
    return statement.on_conflict_do_update(
        index_elements=list(table.primary_key.columns),
        set_={name: statement.excluded[name] for name in replaced},
    )
