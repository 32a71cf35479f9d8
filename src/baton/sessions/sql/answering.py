"""An answer's checks read and the claim that goes with it (`Store.claim_answering`).

On PostgreSQL it is one statement, `ANSWERING`: one CTE reads the session and its
interrupt rows with the answered id, and an UPDATE in another claims the invocation
only when those rows let the answer through (`store.answerable`, stated again in SQL
here) and nobody else holds its lease; the rows come back with the claim's columns,
NULL when nothing was claimed. Speed: a resume's checks and claim are one round trip
instead of two. The claimed invocation's events come back with it (`_own_events`): an
agent's resume reads them to learn how far its run got, one round trip fewer.
Elsewhere (SQLite, MySQL, which cannot update in a CTE) it is one transaction,
`claim_answering`: the same read, `answerable` itself, and `writes.CLAIM_LOADED`.

PostgreSQL commits `ANSWERING` without waiting for its WAL to reach the disk
(`synchronous_commit` off for that statement's transaction alone, set from inside it
by the claim): the claim is the only thing it writes, and the call's first step
commits durably right after it. Why that loses no guarantee:

- Every later durable commit flushes the claim too. The WAL is one sequence, flushed
  in order: a commit waits until everything before its own record is on disk, and the
  claim's record precedes the answer's step (sent after the claim returned), every
  renewal and release of its holder, and any commit of anyone that began after it.
  (A synchronous standby receives the WAL in the same order.) So once the answer's
  step is durable, so is the claim: a crash after it loses nothing it would not have
  lost with a durable claim.
- A crash of the database before then may undo the claim: the row is back at the
  token before it. The holder of the lost claim then writes nothing: its token was
  drawn at random (`writes.new_token`), so neither the row's old token nor any later
  claim's equals it, and its first step, renewal or release is fenced out
  (LeaseLostError; no step of it landed, the answer included, so the question is
  still open and answering again works). With tokens counted up by one, the next
  claimer would have been handed the lost claim's token and both would pass the fence.
- No code of the user's runs between the claim and that first step: the answer's
  step lands before any node's code starts (`InvocationRun._holds`, `land_held`).
  Only plugins' event callbacks may run first (they see the answer's events before
  they are stored), as they would again for the call retried after the crash.
- Until the flush, other processes may read the claim (a claim of theirs refused as
  busy, recovery skipping the run): a refusal to retry, never a write of theirs, and
  any durable write of theirs would flush the claim first.
- The answering process crashing leaves a committed claim, durable or about to be
  (the WAL writer flushes within three `wal_writer_delay`s): recovery waits for its
  lease to lapse, as after any claim.
- Recovery claims only running invocations (durably, `writes.claim_orphans`); an
  answer's claim leaves the status as it was until its first step. A running run whose
  holder died, claimed by an answer and then lost in a crash, is an orphan again, and
  recovery's claim fences the answer's holder out like any later claim.

Elsewhere the claim commits as every other write does: MySQL has no per-transaction
switch (its flush policy is the server's), and SQLite's is the URL's (`?synchronous=`).
"""

from __future__ import annotations

import functools
from operator import itemgetter
from typing import Any, final

from sqlalchemy import (
    Boolean,
    ColumnElement,
    String,
    and_,
    bindparam,
    case,
    exists,
    func,
    literal_column,
    not_,
    null,
    or_,
    select,
    true,
)
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.engine import Connection
from sqlalchemy.sql.selectable import CTE, Select

from baton.events import ONE_ANSWER_FUNCTIONS, assemble
from baton.sessions.sql.dialect import Rows, SqlDialect
from baton.sessions.sql.reads import (
    SESSION_INTERRUPTS,
    invocation_from,
    session_interrupts_from,
)
from baton.sessions.sql.schema import (
    Json,
    event_from_row,
    events,
    fingerprint_digest,
    invocations,
    session_params,
)
from baton.sessions.sql.writes import (
    CLAIM_LOADED,
    CLAIM_LOADED_FIELDS,
    IS_FREE,
    STORED_FINGERPRINT,
    TAKEN,
    claim_params,
    new_token,
)
from baton.sessions.store import (
    AnswerClaim,
    Answering,
    Interrupt,
    InterruptStatus,
    Invocation,
    InvocationStatus,
    Lease,
    Session,
    SessionKey,
    answerable,
    merge_shared_state,
)
from baton.types import InvocationId

__all__ = [
    "ANSWERING",
    "ANSWERING_WITH_EVENTS",
    "NO_FLUSH_WAIT",
    "Refused",
    "answering_from",
    "answering_params",
    "claim_answering",
    "is_raced",
]

_FOUND = SESSION_INTERRUPTS.order_by(None).cte("found")
_WIDTH = len(_FOUND.c)


def _open_rows(found: CTE) -> CTE:
    """The open rows with the id, in the invocation the caller named (when it did)."""
    answered_in = bindparam("key_answer_invocation", type_=String)
    return (
        select(
            found.c.interrupt_invocation_id.label("invocation_id"),
            found.c.interrupt_interrupt_id.label("interrupt_id"),
            found.c.interrupt_node_path.label("node_path"),
            found.c.interrupt_function_name.label("function_name"),
            found.c.interrupt_expires_at.label("expires_at"),
            found.c.interrupt_assignee.label("assignee"),
        )
        .where(
            found.c.interrupt_status == InterruptStatus.OPEN.value,
            found.c.interrupt_invocation_id
            == func.coalesce(answered_in, found.c.interrupt_invocation_id),
        )
        .cte("open_rows")
    )


def _occurrence(row: Any) -> ColumnElement[str]:
    """`Interrupt.occurrence` in SQL: the first 16 hex digits of the SHA-256 of
    'invocation|node path|interrupt id'."""
    bar = literal_column("'|'", String)
    ident = row.invocation_id + bar + row.node_path + bar + row.interrupt_id
    digest = func.sha256(func.convert_to(ident, literal_column("'UTF8'")))
    return func.substr(func.encode(digest, literal_column("'hex'")), literal_column("1"), 16)


def _lets_through(row: Any) -> ColumnElement[bool]:
    """`answerable`'s rule for the one open row (the count is checked apart)."""
    occurrence = bindparam("key_occurrence", type_=String)
    one_answer = or_(
        *(row.function_name == literal_column(f"'{name}'") for name in ONE_ANSWER_FUNCTIONS)
    )
    return and_(
        or_(row.expires_at.is_(None), row.expires_at > bindparam("key_now")),
        # The digest only when the answer names an occurrence: computed on both sides of
        # a COALESCE before, two SHA-256 per row on every claim (execution of the claim's
        # statement, EXPLAIN ANALYZE, fastest of 150: 0.090 -> 0.077 ms).
        or_(occurrence.is_(None), occurrence == _occurrence(row)),
        or_(row.assignee.is_(None), row.assignee == bindparam("key_answered_by", type_=String)),
        not_(and_(bindparam("key_progress", type_=Boolean), one_answer)),
    )


NO_FLUSH_WAIT = func.set_config(
    literal_column("'synchronous_commit'"), literal_column("'off'"), true()
).label("no_flush_wait")
"""A column that, returned by a claim's UPDATE on PostgreSQL, lets the claim's
transaction (the statement's own) commit without waiting for the WAL flush (see the
module docstring). Only when it claims: computed for each row the UPDATE changes,
whether the query reads it or not."""


def _answering(*, with_events: bool) -> Select[Any]:
    open_rows = _open_rows(_FOUND)
    only_one = select(func.count()).select_from(open_rows).scalar_subquery() == 1
    lets_through = (
        invocations.c.id.in_(select(open_rows.c.invocation_id).where(_lets_through(open_rows.c))),
        only_one,
        IS_FREE,
    )
    # The claim waits for the row's lock when a step of the invocation holds it, and
    # PostgreSQL then checks the newer row again, but not the interrupt rows, read as of
    # the statement's start: a step that landed meanwhile may have answered or asked
    # again the question. So the claim takes only the row as it was at the start
    # (`_VERSION_THEN`), and `_RACED` tells `answering_from`'s caller to run it again.
    claimed = (
        TAKEN.where(*lets_through, invocations.c.version == _version_then(invocations.c.id))
        .returning(*_CLAIMED_COLUMNS, NO_FLUSH_WAIT, invocations.c.session_pk)
        .cte("claimed")
    )
    free_then = select(invocations.c.id).where(*lets_through).cte("free_then")
    raced = and_(claimed.c.id.is_(None), exists(select(free_then.c.id))).label("raced")
    loaded = [claimed.c[str(c.name)] for c in CLAIM_LOADED.returning]
    return (
        select(*_FOUND.c, *loaded, _own_events(claimed) if with_events else _NOT_READ, raced)
        .select_from(_FOUND.outerjoin(claimed, true()))
        .order_by(_FOUND.c.interrupt_created_at, _FOUND.c.interrupt_invocation_id)
    )


# The claimed invocation's fingerprint, NULL when its digest is the claim's
# (`AnswerClaim.fingerprint`, bound as `key_fingerprint_digest`): the resume then has its
# text already, the Runner's own, and `answering_from` puts it back. Speed: the claim
# reads no row of `fingerprints` and sends no text of the workflow's structure, which
# grows with the workflow (EXPLAIN ANALYZE EXECUTE: the sub-plan ~6 us of the claim).
_FINGERPRINT_UNLESS_KNOWN = case(
    (invocations.c.fingerprint_digest == bindparam("key_fingerprint_digest", type_=String), null()),
    else_=func.coalesce(STORED_FINGERPRINT, literal_column("''")),
).label("fingerprint")
_CLAIMED_COLUMNS = tuple(
    _FINGERPRINT_UNLESS_KNOWN if c.name == "fingerprint" else c for c in CLAIM_LOADED.returning
)


def _version_then(invocation_id: Any) -> Any:
    """The invocation's version as of the statement's start."""
    started = invocations.alias("started")
    return select(started.c.version).where(started.c.id == invocation_id).scalar_subquery()


def _own_events(claimed: CTE) -> Any:
    """The claimed invocation's events, oldest first, as one JSON array of
    `reads.INVOCATION_EVENTS`' rows (`[]` when it has none, and when nothing was claimed,
    which `answering_from` tells by the claim's columns), off the (session, invocation)
    index.

    They are read as of the statement's start, and so is the claimed row: the claim
    takes the row only at its version then (`_version_then`; a claim changes the lease,
    not the version), so a step that committed while the claim waited for the row's
    lock is never missing from them (such a claim takes nothing and runs again, `raced`).

    Speed: a resumed agent reads its invocation's events to learn how far its run got
    (`LlmAgent._progress`), and with `include_contents="none"` its model's request is
    made of them: read with the claim, a round trip fewer (an agent's resume on
    PostgreSQL, 5 -> 4); a workflow's resume does not ask for them (`ANSWERING`).
    """
    row = func.json_build_array(
        events.c.invocation_id, events.c.author, events.c.timestamp, events.c.event
    )
    read = (
        select(func.json_agg(aggregate_order_by(row, events.c.seq), type_=Json))
        .where(events.c.session_pk == claimed.c.session_pk, events.c.invocation_id == claimed.c.id)
        .scalar_subquery()
    )
    return func.coalesce(read, literal_column("'[]'::json"), type_=Json).label("own_events")


_NOT_READ: Any = literal_column("NULL::json").label("own_events")
"""`_own_events`' column of a claim that does not read them (`AnswerClaim.with_events`)."""

ANSWERING = _answering(with_events=False)
"""PostgreSQL's `claim_answering` in one statement (bind `answering_params`); its rows
are `SESSION_INTERRUPTS`' followed by `CLAIM_LOADED`'s, a NULL for the events it does
not read, and whether a step landed while the claim waited (`raced`: run it again),
read by `answering_from`.

Speed: a workflow's resume does not read its invocation's events, and aggregating them
(`_own_events`) cost the server about a tenth of the claim (EXPLAIN ANALYZE EXECUTE)."""
ANSWERING_WITH_EVENTS = _answering(with_events=True)
"""`ANSWERING` returning the claimed invocation's events (`_own_events`) in place of
that NULL, for a claim `with_events`."""


def answering_params(key: SessionKey, claim: AnswerClaim, now: float) -> dict[str, Any]:
    """What `ANSWERING` binds."""
    return {
        **session_params(key),
        "key_interrupt_id": claim.interrupt_id,
        "key_answer_invocation": claim.invocation_id,
        "key_occurrence": claim.occurrence,
        "key_answered_by": claim.answered_by,
        "key_progress": claim.progress,
        "key_owner": claim.owner,
        "key_expires_at": now + claim.ttl.total_seconds(),
        "key_new_token": new_token(),
        "key_now": now,
        "key_fingerprint_digest": _digest(claim.fingerprint),
    }


@functools.lru_cache(maxsize=16)
def _digest(fingerprint: str | None) -> str | None:
    """`fingerprint_digest` of a claim's fingerprint, kept: a runner names one on every claim."""
    return None if fingerprint is None else fingerprint_digest(fingerprint)


def is_raced(rows: Rows) -> bool:
    """Whether `ANSWERING` claimed nothing because a step of the invocation landed while
    it waited for its row: its rows are out of date, and running it again reads them."""
    return bool(rows) and bool(rows[0][-1])


def answering_from(key: SessionKey, claim: AnswerClaim, rows: Rows, now: float) -> Answering:
    """What `ANSWERING`'s rows say."""
    if not rows:
        return Answering(None, [])
    session = _trusted_session(rows[0])
    found = [_trusted_interrupt(row) for row in rows if row[_INTERRUPT_ID_AT] is not None]
    if rows[0][_WIDTH] is None:
        return Answering(session, found)
    token, *fields, own, _raced = rows[0][_WIDTH:]
    invocation = _trusted_invocation(key, fields, claim.fingerprint)
    expires_at = now + claim.ttl.total_seconds()
    lease = Lease(InvocationId(invocation.id), claim.owner, expires_at, int(token))
    if own is None:  # not read (a claim without `with_events`): the resume reads them
        return Answering(session, found, (lease, invocation))
    stored: list[list[Any]] = own
    return Answering(
        session, found, (lease, invocation), lambda: [event_from_row(*e) for e in stored]
    )


# Speed: `answering_from` builds its records from the row's values as they are
# (`assemble`), not through pydantic's validation, which walks the session's state,
# each interrupt's payload and schema and (set apart already: `reads.invocation_from`)
# the checkpoint value by value: 167k -> 45k instructions a resume (START -> a -> ask ->
# b; callgrind, 1,000 calls). The values are known good: asyncpg hands each column as the
# Python value of its type (str, float, int, bool; NULL as None), and JSON columns as
# decoded from the JSON text the store wrote, so each is what its field holds; only the
# statuses become their enums.
_NAMES = tuple(str(c.name) for c in _FOUND.c)
_INTERRUPT_ID_AT = _NAMES.index("interrupt_interrupt_id")
_INTERRUPT_NAMES = tuple(Interrupt.model_fields)
# The row's values of those fields, in that order, in one C call (itemgetter), zipped with
# the names: a third of what picking them one by one in a comprehension costs.
_INTERRUPT_VALUES = itemgetter(*(_NAMES.index(f"interrupt_{name}") for name in _INTERRUPT_NAMES))
_INTERRUPT_STATUS_AT = _NAMES.index("interrupt_status")
# A status's enum member by its stored value: a dict lookup, not the enum's call.
_INTERRUPT_STATUSES = {status.value: status for status in InterruptStatus}
_INVOCATION_STATUSES = {status.value: status for status in InvocationStatus}
_SESSION_SET = frozenset(("id", "app_name", "user_id", "state", "last_update_time"))
_INTERRUPT_SET = frozenset(Interrupt.model_fields)
_INVOCATION_SET = frozenset(Invocation.model_fields)
_SESSION_AT = tuple(
    _NAMES.index(name)
    for name in ("session_id", "app_name", "user_id", "state", "app_state", "user_state")
)
_UPDATED_AT = _NAMES.index("updated_at")


def _trusted_session(row: tuple[Any, ...]) -> Session:
    """`reads.session_from`'s session, from a row of `ANSWERING`."""
    session_id, app_name, user_id, state, app, user = (row[i] for i in _SESSION_AT)
    fields: dict[str, Any] = {
        "id": session_id,
        "app_name": app_name,
        "user_id": user_id,
        "state": merge_shared_state(state, app or {}, user or {}),
        "events": [],
        "last_update_time": row[_UPDATED_AT],
    }
    return assemble(Session, fields, set(_SESSION_SET))


def _trusted_interrupt(row: tuple[Any, ...]) -> Interrupt:
    """`reads.interrupts_from`'s interrupt, from a row of `ANSWERING`."""
    fields = dict(zip(_INTERRUPT_NAMES, _INTERRUPT_VALUES(row), strict=True))
    fields["status"] = _INTERRUPT_STATUSES[row[_INTERRUPT_STATUS_AT]]
    return assemble(Interrupt, fields, set(_INTERRUPT_SET))


def _trusted_invocation(key: SessionKey, values: list[Any], known: str | None) -> Invocation:
    """`reads.invocation_from`'s invocation, from `CLAIM_LOADED_FIELDS`' values, whose
    fingerprint is NULL when it is `known` (`_FINGERPRINT_UNLESS_KNOWN`)."""
    row = dict(zip(CLAIM_LOADED_FIELDS, values, strict=True))
    fingerprint = row["fingerprint"]
    fields = {
        "id": row["id"],
        "app_name": key.app_name,
        "user_id": key.user_id,
        "session_id": key.session_id,
        "status": _INVOCATION_STATUSES[row["status"]],
        "fingerprint": (known or "") if fingerprint is None else fingerprint,
        "checkpoint": row["checkpoint"],
        "version": row["version"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "error": row["error"],
    }
    return assemble(Invocation, fields, set(_INVOCATION_SET))


@final
class Refused(Exception):
    """Raised inside `claim_answering`'s transaction to roll its claim back: the rows read
    again under the claim no longer let the answer through; `answering` is what they say."""

    def __init__(self, answering: Answering) -> None:
        super().__init__("the answer's claim was rolled back")
        self.answering = answering


def claim_answering(
    connection: Connection, dialect: SqlDialect, key: SessionKey, claim: AnswerClaim, now: float
) -> Answering:
    """`claim_answering` as a transaction: the read, `answerable`, and the claim.

    Where a write transaction's later statements see what others committed after its
    first read (MySQL at READ COMMITTED), a step of the invocation may land between the
    read and the claim, which waited for its row: the rows are read again under the
    claim's lock, which keeps any other step out, and the claim stands only if they
    still let the answer through (else `Refused` rolls it back)."""
    params = {**session_params(key), "key_interrupt_id": claim.interrupt_id}
    session, found = session_interrupts_from(dialect.run(connection, SESSION_INTERRUPTS, params))
    invocation_id = answerable(found, claim, now) if session is not None else None
    if invocation_id is None:
        return Answering(session, found)
    wanted = Lease(invocation_id, claim.owner, now + claim.ttl.total_seconds())
    claimed = {**claim_params(wanted, now), **session_params(key)}
    taken = dialect.update_returning(connection, CLAIM_LOADED, claimed)
    if not taken:
        return Answering(session, found)
    if dialect.sees_later_commits:
        session, found = session_interrupts_from(
            dialect.run(connection, SESSION_INTERRUPTS, params)
        )
        if session is None or answerable(found, claim, now) != invocation_id:
            raise Refused(Answering(session, found))
    return Answering(session, found, _claimed(key, claim, now, taken[0]))


def _claimed(
    key: SessionKey, claim: AnswerClaim, now: float, row: tuple[Any, ...]
) -> tuple[Lease, Invocation]:
    """The lease and invocation in a row of `CLAIM_LOADED`'s columns."""
    token, *fields = row
    invocation = invocation_from(key, tuple(fields), CLAIM_LOADED_FIELDS)
    expires_at = now + claim.ttl.total_seconds()
    lease = Lease(InvocationId(invocation.id), claim.owner, expires_at, int(token))
    return lease, invocation
