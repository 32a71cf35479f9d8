"""Numbered schema steps and the version row that records how far a database got.

`migrate` runs on a store's first use. It holds a cross-process lock for the whole
transaction (BEGIN IMMEDIATE on SQLite, an advisory lock on PostgreSQL), reads the
version row, applies the missing steps and writes the new version, so two processes
starting at once apply each step exactly once, and a finished database is left alone.

A new step is appended with the next number and never edits an earlier one: step 1
is the schema as first released, later steps say what changed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.schema import CreateIndex, CreateTable, ExecutableDDLElement

from baton.sessions.sql import schema
from baton.sessions.sql.dialect import SQLITE_BEGIN_OPTION, insert, lock_for_migration

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


async def migrate(engine: AsyncEngine) -> list[int]:
    """Bring the database up to `LATEST_VERSION`; return the step numbers applied now.

    Raises:
        RuntimeError: the database was written by a newer baton (its version is ahead).
    """
    async with engine.connect() as connection:
        connection = await connection.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
        async with connection.begin():
            await lock_for_migration(connection)
            await connection.run_sync(schema.schema_version.create, checkfirst=True)
            current = await read_version(connection)
            _refuse_newer(engine, current)
            pending = [m for m in MIGRATIONS if m.number > current]
            for migration in pending:
                for statement in migration.statements():
                    await connection.execute(statement)
            if pending:
                await _write_version(connection, pending[-1].number)
            return [m.number for m in pending]


async def read_version(connection: AsyncConnection) -> int:
    """The schema version recorded in the database (0 before the first step)."""
    found = await connection.scalar(
        select(schema.schema_version.c.version).where(schema.schema_version.c.id == _VERSION_ROW_ID)
    )
    return int(found or 0)


async def _write_version(connection: AsyncConnection, version: int) -> None:
    statement = insert(connection, schema.schema_version).values(
        id=_VERSION_ROW_ID, version=version
    )
    await connection.execute(
        statement.on_conflict_do_update(
            index_elements=[schema.schema_version.c.id],
            set_={"version": statement.excluded.version},
        )
    )


def _refuse_newer(engine: AsyncEngine, current: int) -> None:
    if current > LATEST_VERSION:
        url = engine.url.render_as_string(hide_password=True)
        raise RuntimeError(
            f"database '{url}' has baton schema version {current}, but this baton knows "
            f"only up to {LATEST_VERSION}; upgrade baton to use this database."
        )
