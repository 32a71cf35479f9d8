"""What SQLite stores, written on its driver: JSON values, and a plain step commit.

`step.write_step` lands any step on any database through Core statements, which on
SQLite `direct.run` hands to the driver: the parameters a dict per statement, its plan
looked up by their names, each value converted by its column type's processor (the
checkpoint through SQLAlchemy's JSON type). Around a step of three small statements
that cost more than SQLite took to run them. Most of a run's steps are plain (see
`_is_plain`): `write_plain_step` lands those with the same statements, compiled from
the same Core objects once per process, their parameters bound as tuples in the SQL's
order, each value converted once, by hand, as its column type converts it (checked
when the statement is compiled): the same rows, the same bytes, in the same
transaction. Every other step goes to `step.write_step`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from operator import itemgetter
from typing import Any, final

from sqlalchemy import Dialect
from sqlalchemy.engine import Connection

from baton.sessions.sql.dialect import SqlDialect, json_text
from baton.sessions.sql.direct import Statement, plan_for, sqlite_driver
from baton.sessions.sql.outbox import record_notifications
from baton.sessions.sql.schema import events, stored_event
from baton.sessions.sql.step import (
    ADVANCE,
    ADVANCE_FENCED,
    TOUCH_KNOWN,
    SessionKeys,
    invocation_changes,
    raise_stale,
    write_step,
)
from baton.sessions.store import InvocationStatus, StepCommit

__all__ = ["sqlite_json", "write_plain_step"]

_NUMBER_STARTS = frozenset("-0123456789")


def sqlite_json(value: Any) -> str | bytes:
    """A JSON column's value as SQLite stores it unchanged.

    SQLite gives a column declared JSON numeric affinity: text that reads as a number
    is stored as one, and a bare integer beyond 64 bits became a REAL that came back
    rounded. Such a value goes in as bytes (a BLOB, never converted); everything else
    stays text. Both read back through the same JSON parser.
    """
    text = json_text(value)
    return text.encode() if text[:1] in _NUMBER_STARTS else text


def write_plain_step(
    connection: Connection, dialect: SqlDialect, commit: StepCommit, now: float, known: SessionKeys
) -> int:
    """`step.write_step`, with the same arguments and effect: faster for a plain step."""
    if not _is_plain(commit) or (pk := known.get(commit.session)) is None:
        return write_step(connection, dialect, commit, now, known)
    compiled = _compiled(connection.dialect)
    cursor = sqlite_driver(connection).cursor()  # one for the step's statements
    key = commit.session
    at = float(now)  # as the time columns' processor binds it
    touch = (at, pk, key.app_name, key.user_id, key.session_id)
    if not cursor.execute(compiled.touch, touch).rowcount:
        # Deleted, perhaps created again: nothing is written yet, the shared path finds it.
        return write_step(connection, dialect, commit, now, known)
    if not cursor.execute(*compiled.advance(commit, pk, at)).rowcount:
        raise_stale(connection, dialect, commit)
    for event in commit.events:
        # An event's JSON is an object: text, as `sqlite_json` leaves it.
        row = (pk, event.invocation_id, event.author, float(event.timestamp), stored_event(event))
        cursor.execute(compiled.append, row)
    if commit.status is not None:  # a run's end: its notification (see `may_notify`)
        record_notifications(connection, dialect, commit, now)
    return commit.expected_version + 1


def _is_plain(commit: StepCommit) -> bool:
    """A step of a running invocation that asks, answers and sets nothing in the state,
    nor rewinds: it touches the session, advances the invocation, appends its events
    and (ending the run) records its notification, and nothing else."""
    return (
        commit.expected_version > 0
        and commit.invocation_id is not None
        and not commit.state_delta
        and not commit.opened
        and not commit.answered
        and commit.status is not _REWOUND
    )


_REWOUND = InvocationStatus.REWOUND  # read on every step: a global, not the enum's attribute


@final
@dataclass(frozen=True, slots=True)
class _Advance:
    """An advance's SQL, and its parameters in the SQL's order from their dict."""

    sql: str
    pick: Callable[[Mapping[str, Any]], tuple[Any, ...]]


@final
class _Compiled:
    """The plain step's statements compiled for one SQLite dialect object."""

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect
        self.touch = _sql(dialect, TOUCH_KNOWN, _TOUCH_ORDER)
        self.append = _sql(dialect, events.insert(), _EVENT_ORDER)
        self._checkpointed = _sql(dialect, ADVANCE, _CHECKPOINTED_ORDER)
        self._checkpointed_fenced = _sql(
            dialect, ADVANCE_FENCED, (*_CHECKPOINTED_ORDER, "key_token")
        )
        self._advances: dict[tuple[bool, tuple[str, ...]], _Advance] = {}

    def advance(self, commit: StepCommit, pk: int, now: float) -> tuple[str, tuple[Any, ...]]:
        """The SQL advancing `commit`'s invocation, and its parameters."""
        version = commit.expected_version
        lease = commit.lease
        if commit.checkpoint is not None and commit.status is None and not commit.release:
            # Most steps: a new checkpoint, nothing else. Bound in `_CHECKPOINTED_ORDER`.
            checkpoint = sqlite_json(commit.checkpoint)
            bound = (checkpoint, version + 1, now, commit.invocation_id, pk, version)
            if lease is None:
                return self._checkpointed, bound
            return self._checkpointed_fenced, (*bound, lease.token)
        parameters = invocation_changes(commit, now)
        if commit.checkpoint is not None:
            parameters["checkpoint"] = sqlite_json(commit.checkpoint)
        parameters["key_id"] = commit.invocation_id
        parameters["key_session_pk"] = pk
        parameters["key_version"] = version
        if lease is not None:
            parameters["key_token"] = lease.token
        found = self._other(lease is not None, tuple(parameters))
        return found.sql, found.pick(parameters)

    def _other(self, fenced: bool, names: tuple[str, ...]) -> _Advance:
        """`ADVANCE` (or `ADVANCE_FENCED`) setting the columns `names` holds."""
        found = self._advances.get((fenced, names))
        if found is None:
            statement = ADVANCE_FENCED if fenced else ADVANCE
            sql, order = _checked(self._dialect, statement, names)
            found = self._advances[fenced, names] = _Advance(sql, itemgetter(*order))
        return found


@cache
def _compiled(dialect: Dialect) -> _Compiled:
    return _Compiled(dialect)


# The parameters of the touch, the append and most advances, in their SQL's order
# (checked by `_sql`): those statements are bound from tuples made in that order.
_TOUCH_ORDER = ("updated_at", "key_pk", "key_app_name", "key_user_id", "key_session_id")
_EVENT_ORDER = ("session_pk", "invocation_id", "author", "timestamp", "event")
_CHECKPOINTED_ORDER = (
    "checkpoint",
    "version",
    "updated_at",
    "key_id",
    "key_session_pk",
    "key_version",
)

# The parameters converted by hand before they are bound, as their column types would:
# the times to float, the JSON columns by `sqlite_json`.
_CONVERTED = frozenset(("updated_at", "lease_expires_at", "timestamp", "checkpoint", "event"))


def _sql(dialect: Dialect, statement: Statement, order: tuple[str, ...]) -> str:
    """`statement`'s SQL, whose parameters must come in `order`."""
    sql, found = _checked(dialect, statement, order)
    if found != order:
        raise RuntimeError(f"parameters in the order {found}, not {order}: {sql}")
    return sql


def _checked(
    dialect: Dialect, statement: Statement, names: tuple[str, ...]
) -> tuple[str, tuple[str, ...]]:
    """`statement` compiled with parameters `names`: its SQL and their order in it.

    Raises:
        RuntimeError: the statement binds a value of its own, or converts a parameter
            that is not converted by hand (see `_CONVERTED`), so binding them as they
            are would store something else.
    """
    plan = plan_for(statement, names, dialect)
    unconverted = {plan.names[at] for at, _ in plan.binds} - _CONVERTED
    if plan.constants or unconverted:
        raise RuntimeError(f"{statement} binds {plan.constants} or converts {unconverted}")
    return plan.sql, plan.names
