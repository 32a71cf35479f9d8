"""The store's writes other than a step (see `step`): sessions and leases.

Synchronous functions over a `Connection`, each run inside one writing transaction
(see `executors`). A lease lives on its invocation's row: a claim is one `UPDATE ...
SET token = token + 1 WHERE expired or released or same owner`, which the database
evaluates under the row lock, so two stores in two processes cannot both win it. A
claim, renewal or release is one statement, its own transaction on PostgreSQL (a
refused claim reads the holder after it, for the message only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, bindparam, delete, func, literal, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from baton.errors import (
    BatonError,
    InvocationBusyError,
    InvocationNotFoundError,
    SessionExistsError,
)
from baton.sessions.sql.artifacts import delete_session_artifacts
from baton.sessions.sql.dialect import is_unique_violation
from baton.sessions.sql.listener import CHANNEL
from baton.sessions.sql.schema import IS_SESSION, invocations, session_params, sessions
from baton.sessions.store import (
    Claimed,
    InvocationStatus,
    Lease,
    Session,
    SessionKey,
    busy_error,
)
from baton.types import InvocationId, SessionId

__all__ = [
    "CLAIM",
    "HOLDER",
    "RELEASE_AND_NOTIFY",
    "RELEASE_LEASE",
    "RENEW_LEASE",
    "OrphanClaim",
    "claim_orphans",
    "claim_params",
    "delete_session",
    "holder_from",
    "insert_session",
    "lease_params",
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
# token grows with every claim, which fences out the previous holder's commits.
CLAIM = (
    update(invocations)
    .where(
        _IS_INVOCATION,
        (invocations.c.lease_owner.is_(None))
        | (invocations.c.lease_expires_at <= bindparam("key_now"))
        | (invocations.c.lease_owner == bindparam("key_owner")),
    )
    .values(
        lease_owner=bindparam("key_owner"),
        lease_expires_at=bindparam("key_expires_at"),
        lease_token=invocations.c.lease_token + 1,
    )
    .returning(invocations.c.lease_token)
)
RENEW_LEASE = (
    update(invocations)
    .where(_IS_LEASE, invocations.c.lease_owner == bindparam("key_owner"))
    .values(lease_expires_at=bindparam("key_expires_at"))
    .returning(invocations.c.lease_token)
)
RELEASE_LEASE = (
    update(invocations)
    .where(_IS_LEASE)
    .values(lease_owner=None, lease_expires_at=0.0)
    .returning(invocations.c.status, invocations.c.session_pk)
)
_RELEASED = RELEASE_LEASE.cte("released")
# PostgreSQL: release and, when the invocation is still running, NOTIFY other processes
# that it can be continued, in one statement.
RELEASE_AND_NOTIFY = (
    select(func.pg_notify(literal(CHANNEL), sessions.c.app_name))
    .select_from(_RELEASED.join(sessions, sessions.c.pk == _RELEASED.c.session_pk))
    .where(_RELEASED.c.status == InvocationStatus.RUNNING.value)
)


def insert_session(connection: Connection, session: Session) -> None:
    """Insert the session's row (without events).

    Raises:
        SessionExistsError: the id is taken in that app for that user.
    """
    row = {
        "app_name": session.app_name,
        "user_id": session.user_id,
        "session_id": session.id,
        "state": session.state,
        "updated_at": session.last_update_time,
    }
    try:
        connection.execute(_INSERT_SESSION, row)
    except IntegrityError as error:
        if not is_unique_violation(error):
            raise
        raise SessionExistsError(
            f"session '{session.id}' already exists for user '{session.user_id}' in app "
            f"'{session.app_name}'; pick another id or omit it to get a fresh one."
        ) from error


def delete_session(connection: Connection, key: SessionKey) -> bool:
    """Delete a session and everything in it; False when there was none."""
    pk = connection.scalar(_SESSION_PK, session_params(key))
    if pk is None:
        return False
    # Events, invocations (with their leases) and interrupts go with it: ON DELETE CASCADE.
    connection.execute(delete(sessions).where(sessions.c.pk == pk))
    delete_session_artifacts(connection, key)
    return True


def claim_params(lease: Lease, now: float) -> dict[str, Any]:
    """What `CLAIM` binds to take the invocation's lease for `lease.owner`."""
    return {
        "key_invocation_id": lease.invocation_id,
        "key_owner": lease.owner,
        "key_expires_at": lease.expires_at,
        "key_now": now,
    }


def renew_params(lease: Lease, expires_at: float) -> dict[str, Any]:
    """What `RENEW_LEASE` binds to move a held lease's expiry to `expires_at`."""
    return {"key_expires_at": expires_at, "key_owner": lease.owner, **lease_params(lease)}


def lease_params(lease: Lease) -> dict[str, Any]:
    """What `RELEASE_LEASE` (and `RELEASE_AND_NOTIFY`) bind: the lease's invocation and token."""
    return {"key_invocation_id": lease.invocation_id, "key_token": lease.token}


def released_running(rows: list[tuple[Any, ...]], *, notified: bool) -> bool:
    """Whether a released invocation is still running, from the release statement's rows
    (`RELEASE_AND_NOTIFY` returns a row only then; `RELEASE_LEASE` returns the status)."""
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


def claim_orphans(connection: Connection, request: OrphanClaim, now: float) -> list[Claimed]:
    """Claim running invocations of the apps with no live lease (see `Store.claim_orphans`).

    Inside one writing transaction: on PostgreSQL the candidates are locked with
    FOR UPDATE SKIP LOCKED, so processes asking at once each get different ones; on
    SQLite the transaction holds the database's write lock.
    """
    rows = connection.execute(_orphans(connection.dialect.name, request, now)).all()
    if not rows:
        return []
    claimed = connection.execute(
        update(invocations)
        .where(invocations.c.id.in_([row.id for row in rows]))
        .values(
            lease_owner=request.owner,
            lease_expires_at=request.expires_at,
            lease_token=invocations.c.lease_token + 1,
        )
        .returning(invocations.c.id, invocations.c.lease_token)
    ).all()
    tokens = {row.id: int(row.lease_token) for row in claimed}
    return [
        Claimed(
            SessionKey(row.app_name, row.user_id, SessionId(row.session_id)),
            Lease(InvocationId(row.id), request.owner, request.expires_at, tokens[row.id]),
        )
        for row in rows
        if row.id in tokens
    ]


@dataclass(frozen=True)
class OrphanClaim:
    """What `claim_orphans` looks for and the lease it takes."""

    app_names: tuple[str, ...]
    owner: str
    expires_at: float
    limit: int
    worker: str | None = None
    spare: str | None = None


def _orphans(dialect: str, request: OrphanClaim, now: float) -> Select[Any, Any, Any, Any]:
    lapsed = (invocations.c.lease_owner.is_(None)) | (invocations.c.lease_expires_at <= now)
    if request.worker is not None:
        restarted = invocations.c.lease_owner.startswith(f"{request.worker}/", autoescape=True)
        if request.spare is not None:
            restarted = restarted & ~invocations.c.lease_owner.startswith(
                request.spare, autoescape=True
            )
        lapsed = lapsed | restarted
    query = (
        select(invocations.c.id, sessions.c.app_name, sessions.c.user_id, sessions.c.session_id)
        .join(sessions, sessions.c.pk == invocations.c.session_pk)
        .where(
            invocations.c.status == InvocationStatus.RUNNING.value,
            sessions.c.app_name.in_(request.app_names),
            lapsed,
        )
        .order_by(invocations.c.lease_expires_at, invocations.c.id)
        .limit(request.limit)
    )
    if dialect == "postgresql":
        query = query.with_for_update(of=invocations, skip_locked=True)
    return query
