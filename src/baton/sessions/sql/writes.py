"""The store's writes other than a step (see `step`): sessions and leases.

Synchronous functions over a `Connection`, each run inside one writing transaction
(see `executors`). A lease lives on its invocation's row: a claim is one `UPDATE ...
SET token = new token WHERE expired or released or same owner`, which the database
evaluates under the row lock, so two stores in two processes cannot both win it. A
claim, renewal or release is one statement, its own transaction on PostgreSQL (a
refused claim reads the holder after it, for the message only).

Fencing: a step, renewal or release lands only while its lease's token is the row's
(`lease_token = token`), so the token must name ONE claim: no claim may ever take a
token an earlier claim of the invocation took, or two holders could both pass the
fence. Each claim takes a random 63-bit token drawn by the claimer (`new_token`), not
the row's token plus one, because a claim can be undone after it was handed out: on
PostgreSQL an answer's claim and a resume's (`CLAIM_LOADED`) commit without waiting
for their WAL flush (see `answering`, `dialect_postgres`), and a database crash in
that moment rolls the row back to the token before it; with "plus one", the next
claimer would be handed the very token the lost claim's holder still presents (as
would a failover to a standby that missed a claim, durable or not). Two drawn tokens
are equal with probability 2^-63, and none is 0 (an invocation created without a
lease) or 1 (`lease_new`'s). So a holder whose claim was lost writes nothing more:
its first step, renewal or release finds another token and stops (LeaseLostError),
whoever claimed since.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, bindparam, delete, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from baton.errors import (
    BatonError,
    InvocationBusyError,
    InvocationNotFoundError,
    SessionExistsError,
)
from baton.sessions.sql.artifacts import delete_session_artifacts
from baton.sessions.sql.dialect import SqlDialect
from baton.sessions.sql.direct import UpdateReturning
from baton.sessions.sql.schema import (
    IS_SESSION,
    events,
    fingerprints,
    interrupts,
    invocations,
    question_checkpoints,
    session_params,
    sessions,
)
from baton.sessions.sql.shared_state import SHARED_STATE, shared_params, write_shared_state
from baton.sessions.store import (
    Claimed,
    InvocationStatus,
    Lease,
    Pruning,
    Session,
    SessionKey,
    SharedState,
    busy_error,
)
from baton.types import InvocationId, SessionId

__all__ = [
    "CLAIM",
    "CLAIM_LOADED",
    "CLAIM_LOADED_FIELDS",
    "HOLDER",
    "IS_FREE",
    "RELEASE_LEASE",
    "RENEW_LEASE",
    "STORED_FINGERPRINT",
    "TAKEN",
    "OrphanClaim",
    "claim_orphans",
    "claim_params",
    "delete_old_session",
    "delete_session",
    "holder_from",
    "insert_session",
    "lease_params",
    "new_token",
    "refusal",
    "released_running",
    "renew_params",
]

# Built once with bound parameters. The lease statements run on every call, each as a
# transaction of its own (`Executor.one`): the store binds them with the `*_params`
# functions below and reads their rows with the others.
_INSERT_SESSION = sessions.insert()
_SESSION_PK = select(sessions.c.pk).where(IS_SESSION)
_IS_INVOCATION = invocations.c.id == bindparam("key_invocation_id")
_IS_LEASE = _IS_INVOCATION & (invocations.c.lease_token == bindparam("key_token"))
HOLDER = select(
    invocations.c.lease_owner, invocations.c.lease_expires_at, invocations.c.lease_token
).where(_IS_INVOCATION)
# Take the lease only when it lapsed, was released, or is already this owner's; the
# new token (see the module docstring) fences out the previous holder's commits.
_TOKEN = (invocations.c.lease_token,)
TAKEN = update(invocations).values(
    lease_owner=bindparam("key_owner"),
    lease_expires_at=bindparam("key_expires_at"),
    lease_token=bindparam("key_new_token"),
)
"""An update taking the lease of the invocations it picks (bind `claim_params`)."""
IS_FREE = (
    (invocations.c.lease_owner.is_(None))
    | (invocations.c.lease_expires_at <= bindparam("key_now"))
    | (invocations.c.lease_owner == bindparam("key_owner"))
)
"""Nobody but `key_owner` holds the invocation's lease at `key_now`: a claim may take it."""
CLAIM = UpdateReturning(TAKEN.where(_IS_INVOCATION, IS_FREE), _TOKEN, _IS_INVOCATION)
# A claim that also returns the invocation (as `reads.INVOCATION`'s row; bind
# `session_params` too): a resume's claim and checkpoint read in one round trip.
STORED_FINGERPRINT = (
    select(fingerprints.c.fingerprint)
    .where(fingerprints.c.digest == invocations.c.fingerprint_digest)
    .scalar_subquery()
)
"""The invocation's workflow fingerprint, kept in `fingerprints` (NULL without one)."""
_FINGERPRINT = STORED_FINGERPRINT.label("fingerprint")
CLAIM_LOADED = UpdateReturning(
    TAKEN.where(_IS_INVOCATION, invocations.c.session_pk == _SESSION_PK.scalar_subquery(), IS_FREE),
    (
        invocations.c.lease_token,
        invocations.c.id,
        invocations.c.status,
        _FINGERPRINT,
        invocations.c.checkpoint,
        invocations.c.version,
        invocations.c.created_at,
        invocations.c.updated_at,
        invocations.c.error,
    ),
    _IS_INVOCATION,
)
CLAIM_LOADED_FIELDS = tuple(str(c.name) for c in CLAIM_LOADED.returning[1:])
"""The invocation's fields in `CLAIM_LOADED`'s rows, after the lease token."""
RENEW_LEASE = UpdateReturning(
    update(invocations)
    .where(_IS_LEASE, invocations.c.lease_owner == bindparam("key_owner"))
    .values(lease_expires_at=bindparam("key_expires_at")),
    _TOKEN,
    _IS_INVOCATION,
)
RELEASE_LEASE = UpdateReturning(
    update(invocations).where(_IS_LEASE).values(lease_owner=None, lease_expires_at=0.0),
    (invocations.c.status, invocations.c.session_pk),
    _IS_INVOCATION,
)
# Claims a row `claim_orphans` locked.
_TAKE = UpdateReturning(TAKEN.where(_IS_INVOCATION), _TOKEN, _IS_INVOCATION)


def insert_session(
    connection: Connection, dialect: SqlDialect, session: Session, shared: SharedState
) -> tuple[Any, ...]:
    """Insert the session's row (without events) and add the `shared` keys to its app's
    and user's; the app's and user's keys then (a row of `SHARED_STATE`).

    Raises:
        SessionExistsError: the id is taken in that app for that user.
    """
    try:
        connection.execute(_INSERT_SESSION, session_row(session))
    except IntegrityError as error:
        if not dialect.is_unique_violation(error):
            raise
        raise session_taken(session) from error
    write_shared_state(connection, dialect, session.app_name, session.user_id, shared)
    params = shared_params(session.app_name, session.user_id)
    return tuple(connection.execute(SHARED_STATE, params).one())


def session_row(session: Session) -> dict[str, Any]:
    """The session's row in baton_sessions (its events apart)."""
    return {
        "app_name": session.app_name,
        "user_id": session.user_id,
        "session_id": session.id,
        "state": session.state,
        "updated_at": session.last_update_time,
    }


def session_taken(session: Session) -> SessionExistsError:
    """The refusal of creating `session` under an id its app and user already have."""
    return SessionExistsError(
        f"session '{session.id}' already exists for user '{session.user_id}' in app "
        f"'{session.app_name}'; pick another id or omit it to get a fresh one."
    )


_SESSION_ROWS = (events, invocations, interrupts, question_checkpoints)
"""The tables whose rows belong to one session, by its `pk`."""


def delete_session(connection: Connection, key: SessionKey) -> bool:
    """Delete a session and everything in it; False when there was none."""
    pk = connection.scalar(_SESSION_PK, session_params(key))
    if pk is None:
        return False
    _delete_rows(connection, key, pk)
    return True


def _delete_rows(connection: Connection, key: SessionKey, pk: int) -> None:
    # On SQLite and MySQL its rows go with it (ON DELETE CASCADE: the deletes below find
    # none); PostgreSQL has no foreign keys to sessions (see `schema._session_key`): they
    # are deleted after the session's row, so a step that held it and committed first
    # has its rows deleted too.
    connection.execute(delete(sessions).where(sessions.c.pk == pk))
    for table in _SESSION_ROWS:
        connection.execute(delete(table).where(table.c.session_pk == pk))
    delete_session_artifacts(connection, key)


# Locking reads (FOR UPDATE, which SQLite has no need of: its writers take turns): a
# step or claim landing meanwhile waits for the delete, or the delete sees what it did.
_OLD_SESSION = (
    select(sessions.c.pk)
    .where(IS_SESSION, sessions.c.updated_at < bindparam("key_changed_before"))
    .with_for_update()
)
_RUNS = (
    select(invocations.c.status, invocations.c.lease_expires_at)
    .where(invocations.c.session_pk == bindparam("key_pk"))
    .with_for_update()
)


def delete_old_session(
    connection: Connection, key: SessionKey, pruning: Pruning, now: float
) -> bool:
    """Delete a session if `pruning` picks it as it stands under the row locks; False
    when it stays or there was none."""
    parameters = {"key_changed_before": pruning.changed_before, **session_params(key)}
    pk = connection.scalar(_OLD_SESSION, parameters)
    if pk is None:
        return False
    rows = connection.execute(_RUNS, {"key_pk": pk}).all()
    if not pruning.deletes([(InvocationStatus(status), until > now) for status, until in rows]):
        return False
    _delete_rows(connection, key, pk)
    return True


def new_token() -> int:
    """A claim's fencing token: random, in [2, 2^63) (see the module docstring)."""
    return secrets.randbelow(_TOKENS) + 2


_TOKENS = 2**63 - 2


def claim_params(lease: Lease, now: float) -> dict[str, Any]:
    """What `CLAIM` binds to take the invocation's lease for `lease.owner` (a new token)."""
    return {
        "key_invocation_id": lease.invocation_id,
        "key_owner": lease.owner,
        "key_expires_at": lease.expires_at,
        "key_new_token": new_token(),
        "key_now": now,
    }


def renew_params(lease: Lease, expires_at: float) -> dict[str, Any]:
    """What `RENEW_LEASE` binds to move a held lease's expiry to `expires_at`."""
    return {"key_expires_at": expires_at, "key_owner": lease.owner, **lease_params(lease)}


def lease_params(lease: Lease) -> dict[str, Any]:
    """What `RELEASE_LEASE` (and PostgreSQL's release) bind: the lease's invocation and token."""
    return {"key_invocation_id": lease.invocation_id, "key_token": lease.token}


def released_running(rows: list[tuple[Any, ...]], *, notified: bool) -> bool:
    """Whether a released invocation is still running, from the release statement's rows
    (PostgreSQL's release-and-NOTIFY returns a row only then; `RELEASE_LEASE` the status)."""
    if notified:
        return bool(rows)
    return bool(rows) and rows[0][0] == InvocationStatus.RUNNING.value


def holder_from(
    invocation_id: InvocationId, rows: list[tuple[Any, ...]], now: float
) -> Lease | None:
    """The unexpired lease in `HOLDER`'s rows, or None."""
    if not rows:
        return None
    owner, expires_at, token = rows[0]
    if owner is None or expires_at <= now:
        return None
    return Lease(invocation_id, owner, expires_at, token)


def refusal(invocation_id: InvocationId, rows: list[tuple[Any, ...]], now: float) -> BatonError:
    """Why a claim took nothing, from `HOLDER`'s rows read after it.

    InvocationNotFoundError when there is no such invocation, else InvocationBusyError.
    """
    if not rows:
        return InvocationNotFoundError(
            f"invocation '{invocation_id}' does not exist, so it cannot be claimed."
        )
    owner, expires_at, _token = rows[0]
    if owner is None:
        # The holder released between our attempt and this read.
        return InvocationBusyError(
            f"invocation '{invocation_id}' was being run by another owner a moment ago; "
            "retry the claim."
        )
    return busy_error(invocation_id, owner, expires_at, now)


def claim_orphans(
    connection: Connection, dialect: SqlDialect, request: OrphanClaim, now: float
) -> list[Claimed]:
    """Claim running invocations of the apps with no live lease (see `Store.claim_orphans`).

    Inside one writing transaction: on a database server the candidates are locked
    with FOR UPDATE SKIP LOCKED, so processes asking at once each get different ones;
    on SQLite the transaction holds the database's write lock. Each is then claimed
    by one constant statement (a recovery round claims a handful).
    """
    query = dialect.lock_rows(_orphans(dialect, request, now), of=invocations, skip_locked=True)
    rows = connection.execute(query).all()
    if not rows:
        return []
    keys = connection.execute(
        select(sessions.c.pk, sessions.c.app_name, sessions.c.user_id, sessions.c.session_id).where(
            sessions.c.pk.in_({row.session_pk for row in rows})
        )
    ).all()
    session_keys = {k.pk: SessionKey(k.app_name, k.user_id, SessionId(k.session_id)) for k in keys}
    return [
        Claimed(
            session_keys[row.session_pk],
            Lease(
                InvocationId(row.id),
                request.owner,
                request.expires_at,
                _take(connection, dialect, row.id, request),
            ),
        )
        for row in rows
    ]


def _take(
    connection: Connection, dialect: SqlDialect, invocation_id: str, request: OrphanClaim
) -> int:
    """Claim a row `claim_orphans` locked; its new token."""
    parameters = {
        "key_invocation_id": invocation_id,
        "key_owner": request.owner,
        "key_expires_at": request.expires_at,
        "key_new_token": new_token(),
    }
    return int(dialect.update_returning(connection, _TAKE, parameters)[0][0])


@dataclass(frozen=True)
class OrphanClaim:
    """What `claim_orphans` looks for and the lease it takes."""

    app_names: tuple[str, ...]
    owner: str
    expires_at: float
    limit: int
    worker: str | None = None
    spare: str | None = None
    skip: tuple[str, ...] = ()


def _orphans(dialect: SqlDialect, request: OrphanClaim, now: float) -> Select[Any, Any]:
    lapsed = (invocations.c.lease_owner.is_(None)) | (invocations.c.lease_expires_at <= now)
    if request.worker is not None:
        restarted = invocations.c.lease_owner.startswith(f"{request.worker}/", autoescape=True)
        if request.spare is not None:
            restarted = restarted & ~invocations.c.lease_owner.startswith(
                request.spare, autoescape=True
            )
        lapsed = lapsed | restarted
    if request.skip:  # the caller's runs in hand: one clause more only while it has some
        lapsed = lapsed & invocations.c.id.not_in(request.skip)
    # One table, the apps' sessions in a subquery: a locking read locks (and skips) only
    # invocation rows, never a session another step holds (MySQL has no FOR UPDATE OF).
    return (
        select(invocations.c.id, invocations.c.session_pk)
        .where(
            invocations.c.status == InvocationStatus.RUNNING.value,
            dialect.in_apps(invocations.c.session_pk, request.app_names),
            lapsed,
        )
        .order_by(invocations.c.lease_expires_at, invocations.c.id)
        .limit(request.limit)
    )
