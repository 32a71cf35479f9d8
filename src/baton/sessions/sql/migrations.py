"""Numbered schema steps and the version row that records how far a database got.

`migrate` runs on a store's first use, in one writing transaction. It holds a
cross-process lock for the whole transaction (BEGIN IMMEDIATE on SQLite, an advisory
lock on PostgreSQL), reads the version row, applies the missing steps and writes the
new version, so two processes starting at once apply each step exactly once, and a
finished database is left alone.

A new step is appended with the next number and never edits an earlier one: step 1
is the schema as first released, later steps say what changed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Table, select
from sqlalchemy.engine import Connection
from sqlalchemy.schema import CreateIndex, CreateTable, ExecutableDDLElement

from baton.sessions.sql import schema
from baton.sessions.sql.dialect import insert, lock_for_migration

__all__ = ["LATEST_VERSION", "MIGRATIONS", "Migration", "migrate", "read_version"]

_VERSION_ROW_ID = 1


@dataclass(frozen=True)
class Migration:
    """One schema step: its number, what it does, and its DDL statements."""

    number: int
    summary: str
    statements: Callable[[], Sequence[ExecutableDDLElement]]


def _create(*tables: Table) -> Callable[[], Sequence[ExecutableDDLElement]]:
    def statements() -> Sequence[ExecutableDDLElement]:
        created: list[ExecutableDDLElement] = [CreateTable(t) for t in tables]
        created += [CreateIndex(i) for t in tables for i in sorted(t.indexes, key=_name)]
        return created

    return statements


def _name(index: object) -> str:
    return str(getattr(index, "name", ""))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions, events, invocations, interrupts and leases",
        _create(
            schema.sessions, schema.events, schema.invocations, schema.interrupts, schema.leases
        ),
    ),
)

LATEST_VERSION = MIGRATIONS[-1].number
"""The schema version this code writes and expects."""


def migrate(connection: Connection) -> list[int]:
    """Bring the database up to `LATEST_VERSION`; return the step numbers applied now.

    Runs in the caller's transaction, which must be a writing one (see `executors`):
    on SQLite its BEGIN IMMEDIATE is the cross-process lock.

    Raises:
        RuntimeError: the database was written by a newer baton (its version is ahead).
    """
    lock_for_migration(connection)
    schema.schema_version.create(connection, checkfirst=True)
    current = read_version(connection)
    _refuse_newer(connection, current)
    pending = [m for m in MIGRATIONS if m.number > current]
    for migration in pending:
        for statement in migration.statements():
            connection.execute(statement)
    if pending:
        _write_version(connection, pending[-1].number)
    return [m.number for m in pending]


def read_version(connection: Connection) -> int:
    """The schema version recorded in the database (0 before the first step)."""
    found = connection.scalar(
        select(schema.schema_version.c.version).where(schema.schema_version.c.id == _VERSION_ROW_ID)
    )
    return int(found or 0)


def _write_version(connection: Connection, version: int) -> None:
    statement = insert(connection.dialect.name, schema.schema_version).values(
        id=_VERSION_ROW_ID, version=version
    )
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=[schema.schema_version.c.id],
            set_={"version": statement.excluded.version},
        )
    )


def _refuse_newer(connection: Connection, current: int) -> None:
    if current > LATEST_VERSION:
        url = connection.engine.url.render_as_string(hide_password=True)
        raise RuntimeError(
            f"database '{url}' has baton schema version {current}, but this baton knows "
            f"only up to {LATEST_VERSION}; upgrade baton to use this database."
        )
