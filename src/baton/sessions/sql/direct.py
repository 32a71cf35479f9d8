"""Running a Core statement on the database's driver directly: the hot path of every step.

SQLAlchemy's `Connection.execute` spends several times what SQLite takes to run a
small statement (cache keys, events, result objects). For the few statements a
step commit runs, `run` keeps the statement a Core object, compiles it once per
set of parameter names (`plan_for`), and then hands SQLite the SQL and the
parameters itself, converted by the column types' own bind and result processors,
inside the transaction the connection already began. PostgreSQL's hot path hands
the same plans to asyncpg (see `postgres`); inside a SQLAlchemy transaction there,
statements go through `Connection.execute` unchanged.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, cast, final

from sqlalchemy import ColumnElement, Dialect, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql.dml import Update, UpdateBase
from sqlalchemy.sql.selectable import Select

Statement = UpdateBase | Select[*tuple[Any, ...]]

__all__ = ["Plan", "Statement", "UpdateReturning", "changed", "plan_for", "run", "sqlite_driver"]


@final
class UpdateReturning:
    """An UPDATE and the columns it returns of the rows it changed.

    Where the database has UPDATE ... RETURNING it runs as one statement
    (`with_returning`); elsewhere (MySQL) the update runs, then `refind`, which picks
    the same rows by key and binds from the same parameters, reads `returning` back
    in the same transaction.
    """

    def __init__(
        self, update: Update, returning: tuple[ColumnElement[Any], ...], refind: ColumnElement[bool]
    ) -> None:
        self.update = update
        self.returning = returning
        self.refind = refind
        self.with_returning = update.returning(*returning)
        self.refound = select(*returning).where(refind)


_Processor = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class Plan:
    """A statement compiled for one dialect with one set of parameter names."""

    sql: str
    names: tuple[str, ...]
    constants: dict[str, Any]  # bound values fixed in the statement itself
    binds: tuple[tuple[int, _Processor], ...]  # (position, processor) where there is one
    results: tuple[tuple[int, _Processor], ...]
    # The parameters' values in the SQL's order, for two or more: one C call
    # (itemgetter) instead of a lookup and a membership test per name; with constants,
    # over the caller's parameters laid on them (a resume's statements bind 20-40).
    pick: Callable[[Mapping[str, Any]], tuple[Any, ...]] | None

    def arguments(self, params: Mapping[str, Any]) -> list[Any]:
        """The positional arguments of the SQL, converted for the driver."""
        pick = self.pick
        if pick is None:
            constants = self.constants
            values = [params[n] if n in params else constants[n] for n in self.names]
        elif self.constants:
            values = list(pick({**self.constants, **params}))
        else:
            values = list(pick(params))
        for i, process in self.binds:
            if values[i] is not None:
                values[i] = process(values[i])
        return values

    def row(self, raw: Sequence[Any]) -> tuple[Any, ...]:
        """A row the driver returned, converted back to Python values."""
        if not self.results:
            return tuple(raw)
        values = list(raw)
        for i, process in self.results:
            if values[i] is not None:
                values[i] = process(values[i])
        return tuple(values)


_plans: dict[tuple[Statement, tuple[str, ...], str, bool], Plan] = {}


def run(
    connection: Connection,
    statement: Statement,
    params: Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> list[tuple[Any, ...]]:
    """Execute a SELECT, or an INSERT/UPDATE/DELETE (one parameter set, or many), on a
    SQLite connection, and return its rows (a SELECT's, or the RETURNING ones) as tuples
    (none for many)."""
    raw = sqlite_driver(connection)
    if isinstance(params, Mapping):
        plan = plan_for(statement, tuple(params), connection.dialect)
        cursor = raw.execute(plan.sql, plan.arguments(params))
        return [plan.row(r) for r in cursor.fetchall()]
    if params:
        plan = plan_for(statement, tuple(params[0]), connection.dialect)
        raw.executemany(plan.sql, [plan.arguments(p) for p in params])
    return []


def changed(connection: Connection, statement: UpdateBase, params: Mapping[str, Any]) -> int:
    """Execute an INSERT/UPDATE/DELETE without RETURNING on a SQLite connection, as `run`
    does; how many rows it changed."""
    plan = plan_for(statement, tuple(params), connection.dialect)
    return sqlite_driver(connection).execute(plan.sql, plan.arguments(params)).rowcount


def sqlite_driver(connection: Connection) -> sqlite3.Connection:
    """The pysqlite connection under `connection`, which must be live (checked out).

    Speed: the pool's plain `dbapi_connection` attribute, not `driver_connection`, three
    properties deep through the dialect, which for pysqlite (it adapts nothing) arrive
    at the same object: read for every statement of every step."""
    raw = connection.connection.dbapi_connection
    assert raw is not None  # a checked-out connection is live
    return cast(sqlite3.Connection, raw)


def plan_for(
    statement: Statement,
    names: tuple[str, ...],
    dialect: Dialect,
    *,
    convert_results: bool = True,
) -> Plan:
    """`statement` compiled for `dialect` with parameters `names`, once per process.

    `convert_results=False` for a driver that returns every column as its Python value
    already (asyncpg), so rows pass through as they come.
    """
    key = (statement, names, dialect.driver, convert_results)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _compile(statement, names, dialect, convert_results)
    return plan


def _compile(
    statement: Statement, names: tuple[str, ...], dialect: Dialect, convert_results: bool
) -> Plan:
    compiled = statement.compile(dialect=dialect, column_keys=list(names))
    positions = tuple(compiled.positiontup or ())
    binds = _present(
        compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
        for name in positions
    )
    columns = (
        [c.type for c in statement.selected_columns]
        if isinstance(statement, Select)
        else [c["type"] for c in statement.returning_column_descriptions]
    )
    results = (
        _present(t.dialect_impl(dialect).result_processor(dialect, None) for t in columns)
        if convert_results
        else ()
    )
    constants = {
        name: compiled.binds[name].effective_value for name in positions if name not in names
    }
    # itemgetter returns one value bare, not in a tuple: only for two names or more.
    pick = itemgetter(*positions) if len(positions) > 1 else None
    return Plan(compiled.string, positions, constants, binds, results, pick)


def _present(processors: Iterable[_Processor | None]) -> tuple[tuple[int, _Processor], ...]:
    return tuple((i, p) for i, p in enumerate(processors) if p is not None)
