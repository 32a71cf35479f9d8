"""The store's reads, as synchronous functions over a `Connection` (see `executors`).

Each runs inside one read transaction, so a session and its events come from one
snapshot (a read of one statement needs none: see `store`). Rows become the Store
protocol's records here, before they leave the transaction. The frequent queries are
built once with bound parameters (see `step`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, bindparam, func, select, tuple_
from sqlalchemy.engine import Connection

from baton.events import Event
from baton.sessions.paging import Position
from baton.sessions.sql.dialect import SqlDialect
from baton.sessions.sql.schema import (
    IS_SESSION,
    event_from_row,
    events,
    fingerprints,
    interrupts,
    invocations,
    question_checkpoints,
    session_in_apps,
    session_params,
    sessions,
)
from baton.sessions.sql.shared_state import SHARED_OF_SESSION
from baton.sessions.store import (
    Interrupt,
    InterruptStatus,
    Invocation,
    InvocationStatus,
    Session,
    SessionActivity,
    SessionKey,
    merge_shared_state,
)
from baton.types import InvocationId, SessionId

__all__ = [
    "INTERRUPTS_BY_ID",
    "INVOCATION",
    "SESSION",
    "SESSION_ASKING",
    "SESSION_INTERRUPTS",
    "due_interrupts",
    "get_session",
    "interrupts_from",
    "invocation_from",
    "list_interrupts",
    "list_invocations",
    "list_sessions",
    "next_due",
    "recent_sessions",
    "session_from",
    "session_interrupts_from",
    "session_pk",
]

_SESSION_ROW = (*sessions.c, *SHARED_OF_SESSION)
_SESSIONS = select(*_SESSION_ROW)
SESSION = _SESSIONS.where(IS_SESSION)
"""One session's row (bind `session_params`); `session_from` reads it."""
_SESSION_COLUMNS = tuple(str(c.key) for c in SESSION.selected_columns)
# The fingerprint comes from its own table (see `schema.invocations`).
_INVOCATIONS = (
    select(invocations, fingerprints.c.fingerprint)
    .join(sessions, sessions.c.pk == invocations.c.session_pk)
    .outerjoin(fingerprints, fingerprints.c.digest == invocations.c.fingerprint_digest)
    .where(IS_SESSION)
    .order_by(invocations.c.created_at, invocations.c.id)
)
INVOCATION = _INVOCATIONS.where(invocations.c.id == bindparam("key_id"))
"""One invocation of a session (bind `key_id` and `session_params`); `invocation_from`."""
_INVOCATION_COLUMNS = tuple(str(c.key) for c in INVOCATION.selected_columns)
INTERRUPTS_BY_ID = (
    select(interrupts)
    .join(sessions, sessions.c.pk == interrupts.c.session_pk)
    .where(IS_SESSION, interrupts.c.interrupt_id == bindparam("key_interrupt_id"))
    .order_by(interrupts.c.created_at, interrupts.c.invocation_id)
)
"""A session's interrupt rows with one id, by index (bind `key_interrupt_id` and
`session_params`); `interrupts_from` reads them."""
_INTERRUPT_COLUMNS = tuple(str(c.key) for c in INTERRUPTS_BY_ID.selected_columns)


def _session_with_interrupts(*matching: ColumnElement[bool]) -> Select[Any]:
    """The session's row and its interrupt rows `matching` (none: NULLs), in one
    statement, oldest first; `session_interrupts_from` reads them."""
    on = and_(interrupts.c.session_pk == sessions.c.pk, *matching)
    return (
        select(*_SESSION_ROW, *(c.label(f"interrupt_{c.name}") for c in interrupts.c))
        .select_from(sessions.outerjoin(interrupts, on))
        .where(IS_SESSION)
        .order_by(interrupts.c.created_at, interrupts.c.invocation_id)
    )


SESSION_INTERRUPTS = _session_with_interrupts(
    interrupts.c.interrupt_id == bindparam("key_interrupt_id")
)
"""A session and its interrupt rows with one id (bind `key_interrupt_id` and
`session_params`)."""
SESSION_ASKING = _session_with_interrupts(
    interrupts.c.function_name == bindparam("key_function_name"),
    interrupts.c.status == InterruptStatus.OPEN.value,
)
"""A session and its open interrupts asked with one function (bind `key_function_name`
and `session_params`)."""
_EVENT_COLUMNS = (events.c.invocation_id, events.c.author, events.c.timestamp, events.c.event)
INVOCATION_EVENTS = (
    select(*_EVENT_COLUMNS)
    .join(sessions, sessions.c.pk == events.c.session_pk)
    .where(IS_SESSION, events.c.invocation_id == bindparam("key_invocation_id"))
    .order_by(events.c.seq)
)
"""One invocation's events, oldest first, off the (session, invocation) index (bind
`key_invocation_id` and `session_params`); `events_from` reads them."""
_EVENTS = select(*_EVENT_COLUMNS).where(events.c.session_pk == bindparam("key_pk"))
_ALL_EVENTS = _EVENTS.order_by(events.c.seq)
# Newest first with LIMIT reads only N rows off the (session, seq) index.
_NEWEST_EVENTS = _EVENTS.order_by(events.c.seq.desc()).limit(bindparam("key_limit"))
# The session's last event stamped before `key_after` (0: none): walking the (session,
# seq) index back from the newest, it stops at the first such event, so with events
# stamped in order it reads only the events after it, and one more.
_LAST_BEFORE = func.coalesce(
    select(events.c.seq)
    .where(events.c.session_pk == bindparam("key_pk"), events.c.timestamp < bindparam("key_after"))
    .order_by(events.c.seq.desc())
    .limit(1)
    .scalar_subquery(),
    0,
)
_AFTER = events.c.seq > _LAST_BEFORE
_ALL_EVENTS_AFTER = _EVENTS.where(_AFTER).order_by(events.c.seq)
# The last event before the time is found among all the session's events: when it is
# older than the newest N, none of those is before it, so all N are kept, as when it
# is searched among them only.
_NEWEST_EVENTS_AFTER = (
    _EVENTS.where(_AFTER).order_by(events.c.seq.desc()).limit(bindparam("key_limit"))
)


def get_session(
    connection: Connection,
    dialect: SqlDialect,
    key: SessionKey,
    with_events: bool,
    event_limit: int | None,
    events_after: float | None = None,
) -> Session | None:
    """The session (its newest `event_limit` events, or all, or none; with
    `events_after`, those after its last event stamped before then), or None."""
    rows = dialect.run(connection, SESSION, session_params(key))
    if not rows:
        return None
    session = session_from(rows[0])
    if with_events:
        pk = session_pk(rows[0])
        session.events = _load_events(connection, pk, event_limit, events_after)
    return session


def events_from(rows: list[tuple[Any, ...]]) -> list[Event]:
    """The events in rows of `INVOCATION_EVENTS`."""
    return [event_from_row(*row) for row in rows]


def session_pk(row: tuple[Any, ...]) -> int:
    """The primary key in a row of `SESSION`."""
    return row[_SESSION_PK_AT]


_SESSION_PK_AT = _SESSION_COLUMNS.index("pk")


def session_from(row: tuple[Any, ...]) -> Session:
    """The session (without events) in a row of `SESSION`."""
    return _to_session(dict(zip(_SESSION_COLUMNS, row, strict=True)))


def list_sessions(
    connection: Connection,
    app_name: str,
    user_id: str | None,
    session_id: SessionId | None = None,
    limit: int | None = None,
    after: Position | None = None,
) -> list[Session]:
    """Sessions of an app (optionally of one user, or of one id), without their events,
    by user and id: at most `limit` of them after the position `after`."""
    query = _SESSIONS.where(sessions.c.app_name == app_name)
    if user_id is not None:
        query = query.where(sessions.c.user_id == user_id)
    if session_id is not None:
        query = query.where(sessions.c.session_id == session_id)
    order = (sessions.c.user_id, sessions.c.session_id)
    query = _keyset(query.order_by(*order), order, limit, after)
    return [session_from(tuple(row)) for row in connection.execute(query)]


_LATEST_RUN = (
    select(invocations.c.status)
    .where(invocations.c.session_pk == sessions.c.pk)
    .order_by(invocations.c.created_at.desc(), invocations.c.id.desc())
    .limit(1)
    .scalar_subquery()
    .label("latest_run")
)


def recent_sessions(
    connection: Connection, app_name: str, user_id: str, limit: int
) -> list[SessionActivity]:
    """The user's `limit` sessions of the app updated last, the latest first; only
    those few read their latest run's status."""
    query = (
        select(*_SESSION_ROW, _LATEST_RUN)
        .where(sessions.c.app_name == app_name, sessions.c.user_id == user_id)
        .order_by(sessions.c.updated_at.desc(), sessions.c.pk.desc())
        .limit(limit)
    )
    return [
        SessionActivity(
            session_from(tuple(row)[:-1]),
            None if row[-1] is None else InvocationStatus(row[-1]),
        )
        for row in connection.execute(query)
    ]


def invocation_from(
    key: SessionKey, row: tuple[Any, ...], columns: tuple[str, ...] = _INVOCATION_COLUMNS
) -> Invocation:
    """The invocation in a row of `INVOCATION` (or of other `columns` holding its fields)."""
    return _to_invocation(key, dict(zip(columns, row, strict=True)))


def list_invocations(
    connection: Connection,
    key: SessionKey,
    limit: int | None = None,
    after: Position | None = None,
) -> list[Invocation]:
    """The session's invocations, oldest first: at most `limit` after the position `after`."""
    query = _INVOCATIONS
    if limit is not None or after is not None:
        query = _keyset(query, (invocations.c.created_at, invocations.c.id), limit, after)
    return [
        invocation_from(key, tuple(row)) for row in connection.execute(query, session_params(key))
    ]


def session_interrupts_from(rows: list[tuple[Any, ...]]) -> tuple[Session | None, list[Interrupt]]:
    """The session and its interrupts in rows of `SESSION_INTERRUPTS` or `SESSION_ASKING`."""
    if not rows:
        return None, []
    width = len(_SESSION_COLUMNS)
    session = session_from(rows[0][:width])
    found = [row[width:] for row in rows if row[width + _INTERRUPT_ID_AT] is not None]
    return session, interrupts_from(found)


_INTERRUPT_ID_AT = _INTERRUPT_COLUMNS.index("interrupt_id")


def interrupts_from(rows: list[tuple[Any, ...]]) -> list[Interrupt]:
    """The interrupts in rows of `INTERRUPTS_BY_ID`."""
    return [_to_interrupt(dict(zip(_INTERRUPT_COLUMNS, row, strict=True))) for row in rows]


_QUESTION_CHECKPOINTS = (
    select(
        question_checkpoints.c.invocation_id,
        question_checkpoints.c.interrupt_id,
        question_checkpoints.c.checkpoint,
    )
    .join(sessions, sessions.c.pk == question_checkpoints.c.session_pk)
    .where(IS_SESSION)
)


def list_question_checkpoints(
    connection: Connection, key: SessionKey
) -> dict[tuple[str, str], Any]:
    """(invocation id, interrupt id) -> the checkpoint that question was asked at."""
    rows = connection.execute(_QUESTION_CHECKPOINTS, session_params(key))
    return {(row[0], row[1]): row[2] for row in rows}


def list_interrupts(
    connection: Connection,
    app_name: str,
    user_id: str | None,
    session_id: SessionId | None,
    invocation_id: InvocationId | None,
    status: InterruptStatus | None,
    assignee: str | None = None,
    include_assigned: bool = False,
    limit: int | None = None,
    after: Position | None = None,
) -> list[Interrupt]:
    """Interrupts matching the filters (None matches anything), oldest first: at most
    `limit` of them after the position `after`. With `include_assigned`, `user_id` also
    matches the questions assigned to that user: read as a second listing on its own
    index and merged, since one query with an OR could use neither index."""
    query = select(interrupts)
    if invocation_id is not None:
        query = query.where(interrupts.c.invocation_id == invocation_id)
    if status is not None:
        query = query.where(interrupts.c.status == status.value)
    if assignee is not None:
        query = query.where(interrupts.c.assignee == assignee)
    owned = query.where(*_interrupt_filters(app_name, user_id, session_id))
    rows = _interrupt_page(connection, owned, limit, after)
    if include_assigned and user_id is not None:
        assigned = query.where(
            *_interrupt_filters(app_name, None, session_id),
            interrupts.c.assignee == user_id,
            interrupts.c.user_id != user_id,
        )
        rows = sorted(rows + _interrupt_page(connection, assigned, limit, after), key=_position)
        rows = rows if limit is None else rows[:limit]
    return rows


_INTERRUPT_ORDER = (interrupts.c.created_at, interrupts.c.invocation_id, interrupts.c.interrupt_id)


def _interrupt_page(
    connection: Connection, query: Select[Any], limit: int | None, after: Position | None
) -> list[Interrupt]:
    ordered = _keyset(query.order_by(*_INTERRUPT_ORDER), _INTERRUPT_ORDER, limit, after)
    return interrupts_from([tuple(row) for row in connection.execute(ordered)])


def _position(row: Interrupt) -> Position:
    return row.position


def _interrupt_filters(
    app_name: str, user_id: str | None, session_id: SessionId | None
) -> list[ColumnElement[bool]]:
    """Whose interrupts: one session's through its key (the session index, a few rows),
    else an app's or a user's (the owner indexes, in creation order)."""
    if session_id is None:
        owner = [interrupts.c.app_name == app_name]
        return owner if user_id is None else [*owner, interrupts.c.user_id == user_id]
    session = select(sessions.c.pk).where(
        sessions.c.app_name == app_name, sessions.c.session_id == session_id
    )
    if user_id is not None:
        session = session.where(sessions.c.user_id == user_id)
    return [interrupts.c.session_pk.in_(session)]


def _keyset(
    query: Select[Any],
    order: tuple[ColumnElement[Any], ...],
    limit: int | None,
    after: Position | None,
) -> Select[Any]:
    """`query` (already ordered by `order`) from just after the position `after`, at most
    `limit` rows. The row comparison starts the read at `after` on the index; the bound
    on the first column alone lets databases that do not use a row comparison on an
    index (or an index holding only that column) seek there all the same."""
    if after is not None:
        query = query.where(order[0] >= after[0], tuple_(*order) > tuple_(*after))
    return query if limit is None else query.limit(limit)


def _load_events(
    connection: Connection, session_pk: int, limit: int | None, after: float | None
) -> list[Event]:
    if limit == 0:
        return []
    params: dict[str, Any] = {"key_pk": session_pk}
    if after is not None:
        params["key_after"] = after
    if limit is None:
        query = _ALL_EVENTS if after is None else _ALL_EVENTS_AFTER
        return [event_from_row(*row) for row in connection.execute(query, params)]
    params["key_limit"] = limit
    query = _NEWEST_EVENTS if after is None else _NEWEST_EVENTS_AFTER
    return [event_from_row(*row) for row in reversed(connection.execute(query, params).all())]


def _to_session(row: Mapping[Any, Any]) -> Session:
    return Session(
        id=row["session_id"],
        app_name=row["app_name"],
        user_id=row["user_id"],
        state=merge_shared_state(row["state"], row["app_state"] or {}, row["user_state"] or {}),
        last_update_time=row["updated_at"],
    )


def _to_invocation(key: SessionKey, row: Mapping[Any, Any]) -> Invocation:
    invocation = Invocation(
        id=row["id"],
        app_name=key.app_name,
        user_id=key.user_id,
        session_id=key.session_id,
        status=InvocationStatus(row["status"]),
        fingerprint=row["fingerprint"] or "",
        version=row["version"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        error=row["error"],
    )
    # Set, not validated: the column's JSON decoder just made it, so it is JSON. The
    # JsonValue check walks the whole checkpoint calling back into Python at every value
    # (a paused START -> a -> ask -> b run's: 7 -> 2 µs to build the Invocation).
    invocation.checkpoint = row["checkpoint"]
    return invocation


def _to_interrupt(row: Mapping[Any, Any]) -> Interrupt:
    return Interrupt.model_validate({k: v for k, v in row.items() if k != "session_pk"})


def due_interrupts(
    connection: Connection,
    app_names: tuple[str, ...],
    now: float,
    limit: int,
    skip: tuple[str, ...] = (),
) -> list[Interrupt]:
    """Open interrupts of the apps whose deadline has passed, earliest first, of no
    invocation in `skip` and none that ended (see `_of_live_invocation`)."""
    query = (
        select(interrupts)
        .where(
            interrupts.c.status == InterruptStatus.OPEN.value,
            interrupts.c.expires_at <= now,
            interrupts.c.app_name.in_(app_names),
            *_not_of(skip),
            _of_live_invocation(),
        )
        .order_by(interrupts.c.expires_at)
        .limit(limit)
    )
    return interrupts_from([tuple(row) for row in connection.execute(query)])


def next_due(
    connection: Connection, app_names: tuple[str, ...], skip: tuple[str, ...] = ()
) -> float | None:
    """When something of the apps next falls due (see `Store.next_due`), or None."""
    deadline = select(func.min(interrupts.c.expires_at)).where(
        interrupts.c.status == InterruptStatus.OPEN.value,
        interrupts.c.expires_at.is_not(None),
        interrupts.c.app_name.in_(app_names),
        *_not_of(skip),
        _of_live_invocation(),
    )
    lapse = select(func.min(invocations.c.lease_expires_at)).where(
        invocations.c.status == InvocationStatus.RUNNING.value,
        session_in_apps(invocations.c.session_pk, app_names),
    )
    row = connection.execute(select(deadline.scalar_subquery(), lapse.scalar_subquery())).one()
    found = [float(value) for value in row if value is not None]
    return min(found, default=None)


def _of_live_invocation() -> ColumnElement[bool]:
    """The interrupt's invocation is running or paused: a deadline does not continue a
    failed (or completed) invocation; continued by a person, its deadlines count again.

    Its status looked up by primary key for each due row (a correlated subquery, as
    `session_in_apps`): the deadlines' index is read in order and the first live rows end
    the walk, whatever the statistics say.
    """
    status = (
        select(invocations.c.status)
        .where(invocations.c.id == interrupts.c.invocation_id)
        .scalar_subquery()
    )
    return status.in_((InvocationStatus.RUNNING.value, InvocationStatus.PAUSED.value))


def _not_of(skip: tuple[str, ...]) -> list[ColumnElement[bool]]:
    """The condition that leaves out the interrupts of the invocations in `skip` (none
    when it is empty: the statement as without it)."""
    return [interrupts.c.invocation_id.not_in(skip)] if skip else []
