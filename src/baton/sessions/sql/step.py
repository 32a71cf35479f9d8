"""Writing one step commit inside a transaction: the heart of `SqlStore.commit_step`.

One code path for every database, asking the store's `SqlDialect` where they differ
(PostgreSQL also lands most steps in one statement: `step_at_once`). The order
matters: the session row is locked first (the UPDATE of its `updated_at`, which every
step sets), the invocation's version is checked and advanced second, so a stale step
fails before it writes anything and the transaction's rollback has nothing to undo.

The statements are built once, with bound parameters, and run through the dialect's
`run` (on SQLite `direct.run`: building, cache-keying and executing a Core statement
the usual way costs several times what SQLite takes to run it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any, final

from pydantic import JsonValue
from sqlalchemy import (
    JSON,
    Double,
    Integer,
    String,
    Text,
    and_,
    bindparam,
    case,
    cast,
    column,
    func,
    literal_column,
    null,
    select,
    true,
    update,
    values,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.sql.dml import Insert, UpdateBase
from sqlalchemy.sql.selectable import CTE, Join, Select, TableValuedAlias, Values

from baton.errors import BatonError, SessionNotFoundError, StaleVersionError
from baton.events import Event
from baton.sessions.notifications import Notification, notifications_of
from baton.sessions.sql.dialect import EncodedJson, OneStatementStep, SqlDialect, json_text
from baton.sessions.sql.direct import UpdateReturning
from baton.sessions.sql.outbox import record_notifications, stored_body
from baton.sessions.sql.schema import (
    IS_SESSION,
    events,
    fingerprint_digest,
    fingerprints,
    interrupts,
    invocations,
    notifications,
    question_checkpoints,
    session_params,
    sessions,
    stored_event,
)
from baton.sessions.sql.shared_state import write_shared_state
from baton.sessions.store import (
    Interrupt,
    InterruptStatus,
    InvocationStatus,
    SessionKey,
    StepCommit,
    lost_error,
    split_state,
    stale_session_error,
    strip_temp_state,
)
from baton.types import InterruptId

__all__ = [
    "ADVANCE",
    "ADVANCE_FENCED",
    "INVOCATION_VERSION",
    "TOUCH_KNOWN",
    "SessionKeys",
    "fits_one_statement",
    "invocation_changes",
    "is_stale_step",
    "one_statement_step",
    "raise_stale",
    "stale_error",
    "step_at_once",
    "write_step",
]

_INTERRUPT_KEY = ("invocation_id", "interrupt_id")

_REPLACED = tuple(c.name for c in interrupts.c if c.name not in _INTERRUPT_KEY)
# The parameter binding each column of the invocation a one-statement step sets.
_NEW = {c.name: f"new_{c.name}" for c in invocations.c}
# Every step sets the session's `updated_at` (the time it last changed, as the memory
# store keeps it) with the UPDATE that takes the row lock serializing a session's
# commits, whose state is read-modify-written.
_TOUCH_SESSION = UpdateReturning(update(sessions).where(IS_SESSION), (sessions.c.pk,), IS_SESSION)
TOUCH_KNOWN = update(sessions).where(sessions.c.pk == bindparam("key_pk"), IS_SESSION)
"""The same, for a session whose key this store has seen (bind `key_pk` and
`session_params`): its row by key and primary key at once, so nothing is read back. A
row that no longer has both (the session was deleted, and perhaps created again)
matches nothing, and the step takes it by key."""
# The same, where the writer read the session at `key_read_at` and must not land on a
# later change (`StepCommit.unchanged_since`): the UPDATE's WHERE is checked under the
# row's lock, so of writers that read the session together one lands.
_TOUCH_UNCHANGED = update(sessions).where(
    IS_SESSION, sessions.c.updated_at <= bindparam("key_read_at")
)
_CHANGED_AT = select(sessions.c.updated_at).where(IS_SESSION)
# The state is read (under that lock) only by a step that changes it: a step costs the
# same whatever the state's size, unless it writes to it.
_READ_STATE = select(sessions.c.state).where(sessions.c.pk == bindparam("key_pk"))
_SET_STATE = update(sessions).where(sessions.c.pk == bindparam("key_pk"))
_APPEND_EVENTS = events.insert()
_IS_INVOCATION = invocations.c.id == bindparam("key_id")
ADVANCE = update(invocations).where(
    _IS_INVOCATION,
    # `+ 0`: the row is found by its primary key alone, whatever the statistics (see
    # `_advance_at_once`), never by the session's index of invocations.
    invocations.c.session_pk + literal_column("0") == bindparam("key_session_pk"),
    invocations.c.version == bindparam("key_version"),
)
"""A step's advance of its invocation to the next version (bind `key_id`,
`key_session_pk`, `key_version` and the changed columns)."""
ADVANCE_FENCED = ADVANCE.where(invocations.c.lease_token == bindparam("key_token"))
"""`ADVANCE` of a step under a lease (bind `key_token` too): it lands only while the
lease's token is the invocation's current one (fencing)."""
INVOCATION_VERSION = select(invocations.c.version, invocations.c.lease_token).where(_IS_INVOCATION)
"""The version and lease token of a commit that did not land (bind `key_id`): why not."""
# A rewound invocation's open questions can no longer be answered.
_CLOSE_REWOUND = (
    update(interrupts)
    .where(
        interrupts.c.invocation_id == bindparam("key_invocation_id"),
        interrupts.c.status == InterruptStatus.OPEN.value,
    )
    .values(status=InterruptStatus.REWOUND.value)
)
_ANSWER_INTERRUPT = update(interrupts).where(
    interrupts.c.invocation_id == bindparam("key_invocation_id"),
    interrupts.c.interrupt_id == bindparam("key_interrupt_id"),
)


@final
class SessionKeys:
    """The primary keys of the sessions a store's steps touched lately, by session key."""

    __slots__ = ("_last", "_pks")

    def __init__(self) -> None:
        self._pks: dict[SessionKey, int] = {}
        # The key last found or remembered, and its pk. Speed: an invocation's steps pass
        # the same key object, found by identity here; in the dict, each lookup hashes
        # it and compares it with the stored key field by field, two calls of
        # dataclass-generated Python code (3.0k of 341k instructions a SQLite chain step).
        self._last: tuple[SessionKey, int] | None = None

    def get(self, key: SessionKey) -> int | None:
        last = self._last
        if last is not None and last[0] is key:
            return last[1]
        pk = self._pks.get(key)
        if pk is not None:
            self._last = (key, pk)
        return pk

    def remember(self, key: SessionKey, pk: int) -> None:
        if len(self._pks) >= _KEPT_KEYS:
            self._pks.clear()  # a long-lived server's sessions come and go: start over
        self._pks[key] = pk
        self._last = (key, pk)


_KEPT_KEYS = 10_000


def write_step(
    connection: Connection, dialect: SqlDialect, commit: StepCommit, now: float, known: SessionKeys
) -> int:
    """Write `commit` in the connection's open transaction; return the new version.

    Raises:
        SessionNotFoundError: the session does not exist.
        StaleVersionError: `expected_version` is not the invocation's version.
    """
    if commit.unchanged_since is not None:
        _touch_unchanged(connection, dialect, commit.session, now, commit.unchanged_since)
    pk = _touch_session(connection, dialect, commit.session, now, known)
    version = 0
    if commit.invocation_id is not None:
        version = _advance_invocation(connection, dialect, pk, commit, now)
    _append_events(connection, dialect, pk, commit.events)
    if commit.state_delta:
        _write_state(connection, dialect, pk, commit)
    if commit.invocation_id is not None:
        _open_interrupts(connection, dialect, pk, commit, now)
        _answer_interrupts(connection, dialect, commit, now)
        if commit.status is InvocationStatus.REWOUND:
            parameters = {"key_invocation_id": commit.invocation_id}
            dialect.run(connection, _CLOSE_REWOUND, parameters)
    record_notifications(connection, dialect, commit, now)
    return version


def _write_state(connection: Connection, dialect: SqlDialect, pk: int, commit: StepCommit) -> None:
    """Add the step's state delta to the session's state (read under the session's lock)
    and its `app:` and `user:` keys to the state the app's and user's sessions share."""
    split = split_state(commit.state_delta)
    if split.session:
        state: dict[str, Any] = connection.scalar(_READ_STATE, {"key_pk": pk}) or {}
        dialect.run(connection, _SET_STATE, {"key_pk": pk, "state": {**state, **split.session}})
    key = commit.session
    write_shared_state(connection, dialect, key.app_name, key.user_id, split)


def _touch_session(
    connection: Connection, dialect: SqlDialect, key: SessionKey, now: float, known: SessionKeys
) -> int:
    """Lock the session's row (setting its `updated_at`); its primary key."""
    parameters: dict[str, Any] = {"updated_at": now, **session_params(key)}
    pk = known.get(key)
    if pk is not None:
        parameters["key_pk"] = pk
        if dialect.count_updated(connection, TOUCH_KNOWN, parameters):
            return pk
    touched = dialect.update_returning(connection, _TOUCH_SESSION, parameters)
    if not touched:
        raise SessionNotFoundError(f"session '{key}' does not exist; create it first.")
    pk = touched[0][0]
    known.remember(key, pk)
    return pk


def _touch_unchanged(
    connection: Connection, dialect: SqlDialect, key: SessionKey, now: float, read_at: float
) -> None:
    """Lock the session's row if it has not changed since `read_at`, as `_touch_session`.

    Raises:
        SessionNotFoundError: the session does not exist.
        StaleSessionError: the session changed after `read_at`.
    """
    parameters = {"updated_at": now, "key_read_at": read_at, **session_params(key)}
    if dialect.count_updated(connection, _TOUCH_UNCHANGED, parameters):
        return
    changed_at = connection.scalar(_CHANGED_AT, session_params(key))
    if changed_at is None:
        raise SessionNotFoundError(f"session '{key}' does not exist; create it first.")
    raise stale_session_error(key, changed_at, read_at)


def _append_events(
    connection: Connection, dialect: SqlDialect, session_pk: int, new: tuple[Event, ...]
) -> None:
    if not new:
        return
    rows = [
        {
            "session_pk": session_pk,
            "invocation_id": event.invocation_id,
            "author": event.author,
            "timestamp": event.timestamp,
            "event": EncodedJson(stored_event(event)),
        }
        for event in new
    ]
    dialect.run(connection, _APPEND_EVENTS, rows)


def _advance_invocation(
    connection: Connection, dialect: SqlDialect, session_pk: int, commit: StepCommit, now: float
) -> int:
    if commit.expected_version == 0:
        if commit.fingerprint:  # kept once, under its digest
            row = {
                "digest": fingerprint_digest(commit.fingerprint),
                "fingerprint": commit.fingerprint,
            }
            dialect.insert_new(connection, fingerprints, row)
        created = _new_invocation(session_pk, commit, now)
        if not dialect.insert_new(connection, invocations, created):
            raise_stale(connection, dialect, commit)
    else:
        statement = ADVANCE if commit.lease is None else ADVANCE_FENCED
        parameters = {
            "key_id": commit.invocation_id,
            "key_session_pk": session_pk,
            "key_version": commit.expected_version,
            **invocation_changes(commit, now),
        }
        if commit.lease is not None:
            parameters["key_token"] = commit.lease.token
        # The count says whether it advanced; the new version is known, so nothing is read
        # back (on SQLite that read cost 30k instructions a step, on MySQL a statement).
        if dialect.count_updated(connection, statement, parameters) == 0:
            raise_stale(connection, dialect, commit)
    return commit.expected_version + 1


def _new_invocation(session_pk: int, commit: StepCommit, now: float) -> dict[str, Any]:
    lease = None if commit.release else commit.lease
    return {
        "lease_owner": lease.owner if lease else None,
        "lease_expires_at": lease.expires_at if lease else 0.0,
        "lease_token": commit.lease.token if commit.lease else 0,
        "id": commit.invocation_id,
        "session_pk": session_pk,
        "status": (commit.status or InvocationStatus.RUNNING).value,
        "fingerprint_digest": fingerprint_digest(commit.fingerprint) if commit.fingerprint else "",
        "checkpoint": commit.checkpoint,
        "version": 1,
        "created_at": now,
        "updated_at": now,
        "error": commit.error if commit.status is not None else None,
    }


def invocation_changes(commit: StepCommit, now: float) -> dict[str, Any]:
    """The columns of its invocation that `commit` (not creating it) changes, by name."""
    changes: dict[str, Any] = {"version": commit.expected_version + 1, "updated_at": now}
    if commit.checkpoint is not None:
        changes["checkpoint"] = commit.checkpoint
    if commit.status is not None:
        changes["status"] = commit.status.value
        changes["error"] = commit.error
    if commit.release:  # as RELEASE_LEASE does
        changes["lease_owner"] = None
        changes["lease_expires_at"] = 0.0
    return changes


def raise_stale(connection: Connection, dialect: SqlDialect, commit: StepCommit) -> None:
    """Raise why `commit`'s advance matched no row (`stale_error`), read in its transaction."""
    rows = dialect.run(connection, INVOCATION_VERSION, {"key_id": commit.invocation_id})
    raise stale_error(commit, rows)


def stale_error(commit: StepCommit, rows: list[tuple[Any, ...]]) -> BatonError:
    """Why `commit` did not land, from `INVOCATION_VERSION`'s rows read after it: its lease
    was taken over, or its version is stale."""
    version, token = rows[0] if rows else (0, None)
    lease = commit.lease
    if lease is not None and token is not None and token != lease.token:
        return lost_error(lease)
    return StaleVersionError(
        f"invocation '{commit.invocation_id}' is at version {version}, not "
        f"{commit.expected_version}: another process advanced it; reload and retry.",
        actual=version,
    )


def _open_interrupts(
    connection: Connection, dialect: SqlDialect, session_pk: int, commit: StepCommit, now: float
) -> None:
    if not commit.opened:
        return
    rows = [_interrupt_row(session_pk, commit.session, row, now) for row in commit.opened]
    # Reopening an id (a loop asks again) replaces the earlier, answered row.
    dialect.run(connection, dialect.upsert(interrupts, _REPLACED), rows)
    if commit.checkpoint is not None:
        # The checkpoint each question was asked at; asked again, the newer one replaces it.
        kept = [
            {
                "invocation_id": row.invocation_id,
                "interrupt_id": row.interrupt_id,
                "session_pk": session_pk,
                "checkpoint": commit.checkpoint,
            }
            for row in commit.opened
        ]
        upsert = dialect.upsert(question_checkpoints, ("checkpoint",))
        dialect.run(connection, upsert, kept)


def _interrupt_row(session_pk: int, key: SessionKey, row: Interrupt, now: float) -> dict[str, Any]:
    return {
        "invocation_id": row.invocation_id,
        "interrupt_id": row.interrupt_id,
        "session_pk": session_pk,
        "app_name": key.app_name,
        "user_id": key.user_id,
        "session_id": key.session_id,
        "node_path": row.node_path,
        "function_name": row.function_name,
        "message": row.message,
        "payload": row.payload,
        "response_schema": row.response_schema,
        "status": row.status.value,
        "created_at": now,
        "answered_at": row.answered_at,
        "answer": row.answer,
        "answered_by": row.answered_by,
        "timeout": row.timeout,
        "expires_at": None if row.timeout is None else now + row.timeout,
        "on_timeout": row.on_timeout,
        "answers_on_timeout": row.answers_on_timeout,
        "assignee": row.assignee,
    }


def _answer_interrupts(
    connection: Connection, dialect: SqlDialect, commit: StepCommit, now: float
) -> None:
    if not commit.answered:
        return
    answers = [
        {
            "key_invocation_id": commit.invocation_id,
            "key_interrupt_id": interrupt_id,
            "status": InterruptStatus.ANSWERED.value,
            "answered_at": now,
            "answer": answer,
            "answered_by": commit.answered_by,
        }
        for interrupt_id, answer in commit.answered
    ]
    dialect.run(connection, _ANSWER_INTERRUPT, answers)


# PostgreSQL: most steps (an invocation already running, no state change; asking and
# answering are fine, see below) land in ONE statement, outside any explicit
# transaction: a single statement is atomic by itself, so BEGIN and COMMIT, two of its
# round trips, go too.
# The order is the same as `write_step`'s: the session row is locked first, by the
# UPDATE of its `updated_at` (as `_TOUCH_SESSION`), the invocation is advanced only
# after that (it joins the updated row), and the events are inserted only from the
# advanced row. Updating the session row once, rather than locking it (FOR NO KEY
# UPDATE) and updating it later in the statement, spares the server a tuple lock, its
# WAL record (54 bytes) and a second scan of the row: a tenth of the statement's
# instructions (callgrind of the backend serving it: 334k a step instead of 371k).
_LOCKED = (
    update(sessions)
    .where(IS_SESSION)
    .values(updated_at=bindparam("new_updated_at"))
    .returning(sessions.c.pk)
    .cte("locked")
)
# A stale step (the invocation is not at the expected version, or its lease was taken
# over) must land nothing, the session's `updated_at` included: its statement fails
# with this text in its error, which rolls the statement back. It fails by casting the
# text to an integer (PostgreSQL has no RAISE outside functions); COALESCE evaluates the
# cast only when the advanced row is missing.
_STALE_STEP = "baton: stale step in session "
_INVALID_TEXT = "22P02"  # the SQLSTATE of that cast


def is_stale_step(error: BaseException) -> bool:
    """True when `error` is how a step's one statement (`step_at_once`) says it is stale."""
    return getattr(error, "sqlstate", None) == _INVALID_TEXT and _STALE_STEP in str(error)


# Speed: what a step appends or answers in rows of its own (events, answers,
# notifications) travels as JSON texts, not as an array per column: asyncpg checks an
# array and each of its elements against collections.abc (Iterable, Sized, Mapping) in
# Python, about 100k instructions a resume for its 12 arrays. Each kind is two texts
# zipped by position: the rows' plain fields, and their JSON values as they are (read
# with json_array_elements, which leaves strings escaped: reading text out of JSON
# (->>, json_each) fails on a string holding \u0000, which a JSON column keeps).
def _elements(name: str, column: str, *, as_text: bool = False) -> TableValuedAlias:
    """The elements of the JSON array bound as `name`, numbered from 1 (n)."""
    elements = func.json_array_elements_text if as_text else func.json_array_elements
    rows = elements(cast(bindparam(name, type_=Text), JSON))
    return rows.table_valued(column, with_ordinality="n").render_derived()


def _zipped(fields: TableValuedAlias, values: TableValuedAlias) -> Join:
    return fields.join(values, fields.c.n == values.c.n)


def _field(row: Any, at: int) -> Any:
    """Element `at` of the JSON array `row`, as text."""
    return row.op("->>")(literal_column(str(at)))


def _json_array(texts: Iterable[str]) -> str:
    """A JSON array of values already encoded as JSON text."""
    return f"[{','.join(texts)}]"


_EVENT_FIELDS = _elements("key_event_fields", "fields")  # [invocation id, author, timestamp]
_EVENT_VALUES = _elements("key_events", "event")  # as `stored_event` wrote it

# Most steps append exactly one event: bound as four plain values, not in JSON texts
# (first, four one-element arrays), it spares the client encoding and the server
# decoding and unnesting them: about 10 us of client CPU a step, a few on the server.
_ONE_EVENT = (
    bindparam("key_invocation_id", type_=String),
    bindparam("key_author", type_=String),
    bindparam("key_timestamp", type_=Double),
    cast(bindparam("key_event", type_=Text), JSON),
)

# A few events (a resume's first step appends two) are bound as plain values too, in a
# VALUES list, not in the two JSON texts many events travel in: the server spares
# decoding two texts, expanding them and joining them by position (`_EVENT_FIELDS`,
# `_EVENT_VALUES`), the client encoding them.
_MOST_EVENTS_BOUND = 4
_EVENT_NAMES = tuple(
    (f"key_invocation_id_{i}", f"key_author_{i}", f"key_timestamp_{i}", f"key_event_{i}")
    for i in range(_MOST_EVENTS_BOUND)
)


def _events_bound(count: int) -> int:
    """How many appended events a step binds as plain values: all of them when they are
    one or a few (`_MOST_EVENTS_BOUND`), else none (they travel as JSON texts)."""
    return count if 0 < count <= _MOST_EVENTS_BOUND else 0


@cache
def _events_as_values(count: int) -> Values:
    """The rows of `count` events bound as plain values (`_EVENT_NAMES`), numbered (n)."""
    rows: list[tuple[Any, ...]] = [
        (
            bindparam(invocation_id, type_=String),
            bindparam(author, type_=String),
            bindparam(timestamp, type_=Double),
            bindparam(stored, type_=Text),
            literal_column(str(n), Integer),
        )
        for n, (invocation_id, author, timestamp, stored) in enumerate(_EVENT_NAMES[:count])
    ]
    columns = (
        column("invocation_id", String),
        column("author", String),
        column("timestamp", Double),
        column("event", Text),
        column("n", Integer),
    )
    return values(*columns, name="bound_events").data(rows)


# A step that answers interrupts (the first step of a resume) marks them answered from
# the advanced row too, so a stale version answers nothing either. An id answered twice
# keeps its last answer, as `write_step`'s one UPDATE per answer does.
_ANSWER_IDS = _elements("key_answer_ids", "interrupt_id", as_text=True)
_ANSWERS = _elements("key_answers", "answer")
# A null answer is a JSON null there; the column keeps None as SQL NULL.
_ANSWER = case(
    (func.json_typeof(_ANSWERS.c.answer) == literal_column("'null'"), null()),
    else_=_ANSWERS.c.answer,
)
# A step answering one interrupt (a resume's, most often) binds its id and answer as
# plain values (a null answer as SQL NULL), not two JSON texts expanded, zipped and
# joined with the interrupts: the answering CTE cost the server ~100 us of the answer's
# step (EXPLAIN ANALYZE EXECUTE), a plain update by key a fraction of it.
_ONE_ANSWER = (
    bindparam("key_answer_id", type_=String),
    cast(bindparam("key_answer", type_=Text), JSON),
)


# A step's notifications (an answer, a run's end) are inserted from the advanced row
# too, in their order: a stale step records none.
_NOTE_FIELDS = _elements("key_note_fields", "fields")  # [id, created at]
_NOTE_BODIES = _elements("key_note_bodies", "body")


def _noted(advanced: CTE, how_many: int) -> Insert:
    names = ["id", "body", "created_at"]
    if how_many == _ONE:
        one = select(*_ONE_NOTE).select_from(advanced)
        return notifications.insert().from_select(names, one)
    rows = (
        select(
            _field(_NOTE_FIELDS.c.fields, 0),
            _NOTE_BODIES.c.body,
            cast(_field(_NOTE_FIELDS.c.fields, 1), Double),
        )
        .select_from(advanced.join(_zipped(_NOTE_FIELDS, _NOTE_BODIES), true()))
        .order_by(_NOTE_FIELDS.c.n)
    )
    return notifications.insert().from_select(names, rows)


# A step recording one notification (a resume's answer, a run's end: most that record
# any) binds its row's values, not JSON texts to expand and zip (see `_ONE_ANSWER`).
_ONE_NOTE = (
    bindparam("key_note_id", type_=String),
    cast(bindparam("key_note_body", type_=Text), JSON),
    bindparam("key_note_at", type_=Double),
)


def fits_one_statement(commit: StepCommit) -> bool:
    """True when `step_at_once` can land `commit` (see above)."""
    return (
        commit.invocation_id is not None
        and (commit.expected_version > 0 or bool(commit.fingerprint))
        and not (commit.state_delta and strip_temp_state(commit.state_delta))
        and commit.status is not _REWOUND  # closes its questions too
        and not _reopens_an_answer(commit)
    )


_REWOUND = InvocationStatus.REWOUND  # read on every step: a global, not the enum's attribute


def _reopens_an_answer(commit: StepCommit) -> bool:
    """A step that answers and asks again the same id would change one row twice in one
    statement, which PostgreSQL does not order: `write_step` lands it."""
    if not commit.opened or not commit.answered:
        return False
    answered = {interrupt_id for interrupt_id, _ in commit.answered}
    return any(row.interrupt_id in answered for row in commit.opened)


def one_statement_step(commit: StepCommit, now: float) -> OneStatementStep | None:
    """`step_at_once` of `commit` when it `fits_one_statement`, else None.

    Speed: a plain step (see `_plain_step`), the one a chain's every node commits, is
    known to fit without `fits_one_statement`'s tests, which the general path needs."""
    lease = commit.lease
    if lease is not None and not commit.state_delta and _is_plain(commit):
        return _plain_step(commit, now, lease.token)
    return _any_step_at_once(commit, now) if fits_one_statement(commit) else None


def step_at_once(commit: StepCommit, now: float) -> OneStatementStep:
    """The one PostgreSQL statement landing a commit that `fits_one_statement`, with its
    parameters. It returns no row when the session does not exist, and fails with an
    error `is_stale_step` recognizes when the commit is stale (nothing landed then)."""
    lease = commit.lease
    if lease is not None and _is_plain(commit):
        return _plain_step(commit, now, lease.token)
    return _any_step_at_once(commit, now)


def _any_step_at_once(commit: StepCommit, now: float) -> OneStatementStep:
    """`step_at_once` of any commit that fits, its statement chosen condition by condition."""
    creating = commit.expected_version == 0
    if creating:
        changes = _new_invocation(0, commit, now)
        del changes["session_pk"]  # the locked session's
    else:
        changes = invocation_changes(commit, now)
    parameters = _events_params(commit.events)
    parameters["key_id"] = commit.invocation_id
    parameters["key_version"] = commit.expected_version
    key = commit.session  # as `session_params` binds it, without a dict to merge
    parameters["key_app_name"] = key.app_name
    parameters["key_user_id"] = key.user_id
    parameters["key_session_id"] = key.session_id
    for name, value in changes.items():
        parameters[_NEW[name]] = value
    answers = dict(commit.answered)
    if answers:
        parameters.update(_answer_params(commit, answers, now))
    keeping = bool(commit.opened) and commit.checkpoint is not None
    if commit.opened:
        parameters.update(_opened_params(commit, now))
    if keeping:
        parameters["asked_checkpoint"] = _json_text(commit.checkpoint)
    if creating and commit.fingerprint:
        parameters["fp_digest"] = fingerprint_digest(commit.fingerprint)
        parameters["fp_text"] = commit.fingerprint
    if commit.lease is not None:
        parameters["key_token"] = commit.lease.token
    notes = notifications_of(commit, now)
    if notes:
        parameters.update(_note_params(notes))
    # Positional: a cached call's keyword arguments cost a dict and its items a step.
    statement = _step_at_once(
        tuple(changes),
        _events_bound(len(commit.events)),  # bound_events
        _how_many(len(answers)),  # answering
        commit.lease is not None and not creating,  # fenced
        bool(commit.opened),  # opening
        keeping,
        _how_many(len(notes)),  # notifying
        creating,
    )
    return statement, parameters


def _answer_params(
    commit: StepCommit, answers: Mapping[InterruptId, JsonValue], now: float
) -> dict[str, Any]:
    """The answers' parameters: one as plain values (`_ONE_ANSWER`), else two JSON texts."""
    parameters: dict[str, Any] = {
        "answer_status": InterruptStatus.ANSWERED.value,
        "answer_at": now,
        "answer_by": commit.answered_by,
    }
    if len(answers) == 1:
        ((parameters["key_answer_id"], answer),) = answers.items()
        parameters["key_answer"] = _json_text(answer)  # None: SQL NULL, as `_ANSWER` keeps it
    else:
        parameters["key_answer_ids"] = json_text(list(answers))
        parameters["key_answers"] = json_text(list(answers.values()))
    return parameters


def _note_params(notes: Sequence[Notification]) -> dict[str, Any]:
    """The notifications' parameters: one as plain values (`_ONE_NOTE`), else JSON texts."""
    if len(notes) == 1:
        (note,) = notes
        body = json_text(stored_body(note))
        return {"key_note_id": note.id, "key_note_body": body, "key_note_at": note.created_at}
    return {
        "key_note_fields": json_text([(n.id, n.created_at) for n in notes]),
        "key_note_bodies": json_text([stored_body(n) for n in notes]),
    }


def _is_plain(commit: StepCommit) -> bool:
    """Whether `commit`, under a lease, is a plain step (see `_plain_step`); one that
    also writes no state (temporary keys aside) fits one statement."""
    return (
        commit.expected_version > 0
        and commit.invocation_id is not None
        and commit.status is None
        and not commit.release
        and not commit.answered
        and not commit.opened
        and len(commit.events) == 1
    )


def _plain_step(commit: StepCommit, now: float, token: int) -> OneStatementStep:
    """`step_at_once` of the step a running node commits most often: one event, the
    new checkpoint (or none), under its lease, nothing asked, answered or ended (so no
    notification either). Its parameters are written in one dict, its statement is
    built once: what the general path decides condition by condition (the changed
    columns, the flags keying `_step_at_once`) is known here: 11k fewer of the 188k
    instructions the store's side of a chain step costs this process (callgrind, 500
    steps)."""
    (event,) = commit.events
    key = commit.session
    version = commit.expected_version
    parameters: dict[str, Any] = {
        "key_invocation_id": event.invocation_id,
        "key_author": event.author,
        "key_timestamp": event.timestamp,
        "key_event": stored_event(event),
        "key_id": commit.invocation_id,
        "key_version": version,
        "key_app_name": key.app_name,
        "key_user_id": key.user_id,
        "key_session_id": key.session_id,
        "new_version": version + 1,
        "new_updated_at": now,
        "key_token": token,
    }
    checkpoint = commit.checkpoint
    if checkpoint is None:
        return _plain_statement(False), parameters
    parameters["new_checkpoint"] = checkpoint
    return _plain_statement(True), parameters


@cache
def _plain_statement(checkpoint: bool, /) -> Select[Any] | Insert:
    """The statement of `_plain_step`: `_step_at_once`'s for the same step, as the
    general path would key it (`invocation_changes`'s order of the changed columns)."""
    changed = ("version", "updated_at", "checkpoint") if checkpoint else ("version", "updated_at")
    return _step_at_once(changed, 1, _NONE, True, False, False, _NONE, False)


# How many rows of a kind (answers, notifications) a step writes, as `_step_at_once` is
# keyed: one row is bound as plain values, several as JSON texts (see `_ONE_ANSWER`).
_NONE, _ONE, _SEVERAL = 0, 1, 2


def _how_many(count: int) -> int:
    return count if count < _SEVERAL else _SEVERAL


def _events_params(new: tuple[Event, ...]) -> dict[str, Any]:
    """The appended events' columns: plain values for one event (`_ONE_EVENT`) and for a
    few (`_events_as_values`), else two JSON texts (`_EVENT_FIELDS`, `_EVENT_VALUES`)."""
    if len(new) == 1:
        (event,) = new
        return {
            "key_invocation_id": event.invocation_id,
            "key_author": event.author,
            "key_timestamp": event.timestamp,
            "key_event": stored_event(event),
        }
    if _events_bound(len(new)):
        parameters: dict[str, Any] = {}
        for (invocation_id, author, timestamp, stored), event in zip(
            _EVENT_NAMES, new, strict=False
        ):
            parameters[invocation_id] = event.invocation_id
            parameters[author] = event.author
            parameters[timestamp] = event.timestamp
            parameters[stored] = stored_event(event)
        return parameters
    return {
        "key_event_fields": json_text([(e.invocation_id, e.author, e.timestamp) for e in new]),
        "key_events": _json_array(map(stored_event, new)),
    }


def _opened_params(commit: StepCommit, now: float) -> dict[str, Any]:
    """The opened interrupts' rows as one array per column (JSON columns as JSON text)."""
    rows = [_interrupt_row(0, commit.session, row, now) for row in commit.opened]
    return {
        f"opened_{name}": [_json_text(r[name]) if name in _JSON_COLUMNS else r[name] for r in rows]
        for name in _OPENED_COLUMNS
    }


def _json_text(value: Any) -> str | None:
    return None if value is None else json_text(value)


# A step that asks (opens interrupts) inserts them from the advanced row as well, each
# column as an array; reopening an id replaces its earlier row, as `_reopen_interrupts`.
_OPENED_COLUMNS = tuple(c.name for c in interrupts.c if c.name != "session_pk")
_JSON_COLUMNS = frozenset(c.name for c in interrupts.c if isinstance(c.type, JSON))
_OPENED = (
    func.unnest(
        *(
            bindparam(
                f"opened_{name}",
                type_=postgresql.ARRAY(Text if name in _JSON_COLUMNS else interrupts.c[name].type),
            )
            for name in _OPENED_COLUMNS
        )
    )
    .table_valued(*_OPENED_COLUMNS)
    .render_derived()
)


def _open_at_once(advanced: Any) -> UpdateBase:
    values = [
        cast(_OPENED.c[name], JSON) if name in _JSON_COLUMNS else _OPENED.c[name]
        for name in _OPENED_COLUMNS
    ]
    rows = select(advanced.c.session_pk, *values).select_from(advanced.join(_OPENED, true()))
    statement = postgresql.insert(interrupts).from_select(["session_pk", *_OPENED_COLUMNS], rows)
    replaced = {
        c.name: statement.excluded[c.name] for c in interrupts.c if c.name not in _INTERRUPT_KEY
    }
    return statement.on_conflict_do_update(
        index_elements=[interrupts.c.invocation_id, interrupts.c.interrupt_id], set_=replaced
    )


def _keep_at_once(advanced: Any) -> UpdateBase:
    """The checkpoint each opened question is asked at, as `write_step` keeps it."""
    asked_at = cast(bindparam("asked_checkpoint", type_=Text), JSON)
    rows = select(advanced.c.session_pk, advanced.c.id, _OPENED.c.interrupt_id, asked_at)
    rows = rows.select_from(advanced.join(_OPENED, true()))
    names = ["session_pk", "invocation_id", "interrupt_id", "checkpoint"]
    statement = postgresql.insert(question_checkpoints).from_select(names, rows)
    return statement.on_conflict_do_update(
        index_elements=[question_checkpoints.c.invocation_id, question_checkpoints.c.interrupt_id],
        set_={"checkpoint": statement.excluded.checkpoint},
    )


_ADVANCED_COLUMNS = (invocations.c.version, invocations.c.session_pk, invocations.c.id)


def _advance_at_once(changed: tuple[str, ...], *, fenced: bool) -> Any:
    """The CTE moving the invocation to its next version (see `ADVANCE_FENCED`)."""
    return (
        update(invocations)
        .where(
            invocations.c.id == bindparam("key_id"),
            # The locked session's key as a subquery, not a join with `locked`: the
            # server runs it once (an InitPlan), 11k fewer instructions a step (callgrind
            # of the backend, 286k -> 275k). `locked` still runs first (see above).
            # `+ 0` leaves the row to be found by its primary key alone: planned on
            # stale statistics (until ANALYZE), the prepared statement's generic plan
            # took the session's index of invocations instead, reading every earlier
            # run's entry and row on every step (266 blocks after 300 runs, against 5).
            invocations.c.session_pk + literal_column("0")
            == select(_LOCKED.c.pk).scalar_subquery(),
            invocations.c.version == bindparam("key_version"),
            invocations.c.lease_token == bindparam("key_token") if fenced else true(),
        )
        .values({name: bindparam(_NEW[name]) for name in changed})
        .returning(*_ADVANCED_COLUMNS)
        .cte("advanced")
    )


def _create_at_once(columns: tuple[str, ...]) -> Any:
    """The CTE creating the invocation in the locked session (nothing on a conflict: the
    id exists, the commit is stale), its fingerprint kept once beside it."""
    values = [bindparam(_NEW[name], type_=invocations.c[name].type) for name in columns]
    created = (
        postgresql.insert(invocations)
        .from_select(["session_pk", *columns], select(_LOCKED.c.pk, *values))
        .on_conflict_do_nothing(index_elements=[invocations.c.id])
        .returning(*_ADVANCED_COLUMNS)
    )
    kept = (
        postgresql.insert(fingerprints)
        .values(digest=bindparam("fp_digest"), fingerprint=bindparam("fp_text"))
        .on_conflict_do_nothing(index_elements=[fingerprints.c.digest])
    )
    return created.add_cte(kept.cte("fingerprint")).cte("advanced")


_EVENT_COLUMNS = ["session_pk", "invocation_id", "author", "timestamp", "event"]


def _stale(type_: Any) -> Any:
    """The locked session's key cast from text that is no number (see `_STALE_STEP`): in a
    COALESCE after the advanced row's column, it fails the statement when that is missing."""
    return cast(literal_column(f"'{_STALE_STEP}'", Text) + cast(_LOCKED.c.pk, Text), type_)


def _append_one_event(advanced: Any) -> Insert:
    """The statement of a step appending one event: the INSERT of its row is the statement
    itself, from the locked session joined with the advanced row, not a CTE beside a
    SELECT of the two (one CTE and its scan fewer: about 1.5k of the server's 273k
    instructions a chain step, callgrind of the backend, whose runs differ by 2k). It
    returns the event's row (none when the session does not exist) and fails as stale
    when the advanced row is missing."""
    session_pk = func.coalesce(advanced.c.session_pk, _stale(events.c.session_pk.type))
    rows = select(session_pk, *_ONE_EVENT).select_from(_LOCKED.outerjoin(advanced, true()))
    return events.insert().from_select(_EVENT_COLUMNS, rows).returning(events.c.seq)


def _appended_rows(advanced: Any, bound: int) -> Select[*tuple[Any, ...]]:
    """The event rows of a step appending none or several (`bound` of them as plain
    values, see `_events_bound`), from the advanced row (none when stale)."""
    if bound:
        given = _events_as_values(bound)
        rows = select(
            advanced.c.session_pk,
            given.c.invocation_id,
            given.c.author,
            given.c.timestamp,
            cast(given.c.event, JSON),
        )
        return rows.select_from(advanced.join(given, true())).order_by(given.c.n)
    rows = select(
        advanced.c.session_pk,
        _field(_EVENT_FIELDS.c.fields, 0),
        _field(_EVENT_FIELDS.c.fields, 1),
        cast(_field(_EVENT_FIELDS.c.fields, 2), Double),
        _EVENT_VALUES.c.event,
    )
    events = _zipped(_EVENT_FIELDS, _EVENT_VALUES)
    return rows.select_from(advanced.join(events, true())).order_by(_EVENT_FIELDS.c.n)


@cache
def _step_at_once(
    changed: tuple[str, ...],
    bound_events: int,
    answering: int,
    fenced: bool,
    opening: bool,
    keeping: bool,
    notifying: int,
    creating: bool,
    /,
) -> Select[Any] | Insert:
    advanced = _create_at_once(changed) if creating else _advance_at_once(changed, fenced=fenced)
    statement: Select[Any] | Insert
    if bound_events == 1:
        statement = _append_one_event(advanced)
    else:
        rows = _appended_rows(advanced, bound_events)
        appended = events.insert().from_select(_EVENT_COLUMNS, rows)
        statement = (
            select(func.coalesce(advanced.c.version, _stale(Integer)))
            .select_from(_LOCKED.outerjoin(advanced, true()))
            .add_cte(appended.cte("appended"))
        )
    if opening:
        statement = statement.add_cte(_open_at_once(advanced).cte("opened"))
    if keeping:  # the checkpoint the questions are asked at, for forks
        statement = statement.add_cte(_keep_at_once(advanced).cte("kept"))
    if notifying:
        statement = statement.add_cte(_noted(advanced, notifying).cte("noted"))
    if not answering:
        return statement
    if answering == _ONE:
        answer_id, answer = _ONE_ANSWER
        which = interrupts.c.interrupt_id == answer_id
    else:
        which = and_(
            interrupts.c.interrupt_id == _ANSWER_IDS.c.interrupt_id,
            _ANSWER_IDS.c.n == _ANSWERS.c.n,
        )
        answer = _ANSWER
    answered = (
        update(interrupts)
        .where(interrupts.c.invocation_id == advanced.c.id, which)
        .values(
            status=bindparam("answer_status", type_=interrupts.c.status.type),
            answered_at=bindparam("answer_at", type_=interrupts.c.answered_at.type),
            answer=answer,
            answered_by=bindparam("answer_by", type_=interrupts.c.answered_by.type),
        )
    )
    return statement.add_cte(answered.cte("answered"))
