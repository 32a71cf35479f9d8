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

from sqlalchemy import Row, Select, bindparam, delete, func, literal, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from baton.errors import (
    BatonError,
    InvocationBusyError,
    InvocationNotFoundError,
    SessionExistsError,
)
from baton.sessions.sql.dialect import is_unique_violation
from baton.sessions.sql.direct import run
from baton.sessions.sql.listener import CHANNEL
from baton.sessions.sql.schema import IS_SESSION, invocations, session_params, sessions
from baton.sessions.store import (
    Claimed,
    InvocationStatus,
    Lease,
    Session,
    SessionKey,
    busy_error,
    lost_error,
)
from baton.types import InvocationId, SessionId

__all__ = [
    "OrphanClaim",
    "claim_lease",
    "claim_orphans",
    "delete_session",
    "insert_session",
    "read_holder",
    "release_lease",
    "renew_lease",
]

# Built once with bound parameters; the lease statements, run on every call, go
# through `direct.run` (see `step`).
_INSERT_SESSION = sessions.insert()
_SESSION_PK = select(sessions.c.pk).where(IS_SESSION)
_IS_INVOCATION = invocations.c.id == bindparam("key_invocation_id")
_IS_LEASE = _IS_INVOCATION & (invocations.c.lease_token == bindparam("key_token"))
_HOLDER = select(
    invocations.c.lease_owner, invocations.c.lease_expires_at, invocations.c.lease_token
).where(_IS_INVOCATION)
# Take the lease only when it lapsed, was released, or is already this owner's; the
# token grows with every claim, which fences out the previous holder's commits.
_CLAIM = (
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
_RENEW_LEASE = (
    update(invocations)
    .where(_IS_LEASE, invocations.c.lease_owner == bindparam("key_owner"))
    .values(lease_expires_at=bindparam("key_expires_at"))
    .returning(invocations.c.lease_token)
)
_RELEASE_LEASE = (
    update(invocations)
    .where(_IS_LEASE)
    .values(lease_owner=None, lease_expires_at=0.0)
    .returning(invocations.c.status, invocations.c.session_pk)
)
_RELEASED = _RELEASE_LEASE.cte("released")
# PostgreSQL: release and, when the invocation is still running, NOTIFY other processes
# that it can be continued, in one statement.
_RELEASE_AND_NOTIFY = (
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
    return True


def claim_lease(connection: Connection, lease: Lease, now: float) -> Lease:
    """Take the invocation's lease for `lease.owner` unless another live owner holds it;
    return it with its new token.

    Raises:
        InvocationBusyError: another live owner has the invocation.
        InvocationNotFoundError: no such invocation.
    """
    parameters = {
        "key_invocation_id": lease.invocation_id,
        "key_owner": lease.owner,
        "key_expires_at": lease.expires_at,
        "key_now": now,
    }
    rows = run(connection, _CLAIM, parameters)
    if rows:
        return Lease(lease.invocation_id, lease.owner, lease.expires_at, int(rows[0][0]))
    held = connection.execute(_HOLDER, {"key_invocation_id": lease.invocation_id}).first()
    raise _refusal(lease.invocation_id, held, now)


def renew_lease(connection: Connection, lease: Lease, expires_at: float) -> None:
    """Move a held lease's expiry.

    Raises:
        LeaseLostError: the lease was taken over (or released).
    """
    parameters = {"key_expires_at": expires_at, "key_owner": lease.owner, **_lease_params(lease)}
    if not run(connection, _RENEW_LEASE, parameters):
        raise lost_error(lease)


def release_lease(connection: Connection, lease: Lease) -> bool:
    """Clear the lease if its token still holds it; True when the invocation is still
    running, so recovery should continue it now (other processes are told on PostgreSQL)."""
    if connection.dialect.name == "postgresql":
        return bool(run(connection, _RELEASE_AND_NOTIFY, _lease_params(lease)))
    rows = run(connection, _RELEASE_LEASE, _lease_params(lease))
    return bool(rows) and rows[0][0] == InvocationStatus.RUNNING.value


def read_holder(connection: Connection, invocation_id: InvocationId, now: float) -> Lease | None:
    """The unexpired lease on the invocation, or None."""
    held = connection.execute(_HOLDER, {"key_invocation_id": invocation_id}).first()
    if held is None or held.lease_owner is None or held.lease_expires_at <= now:
        return None
    return Lease(invocation_id, held.lease_owner, held.lease_expires_at, held.lease_token)


def _lease_params(lease: Lease) -> dict[str, Any]:
    return {"key_invocation_id": lease.invocation_id, "key_token": lease.token}


def _refusal(
    invocation_id: InvocationId, held: Row[Any, Any, Any] | None, now: float
) -> BatonError:
    if held is None:
        return InvocationNotFoundError(
            f"invocation '{invocation_id}' does not exist, so it cannot be claimed."
        )
    if held.lease_owner is None:
        # The holder released between our attempt and this read.
        return InvocationBusyError(
            f"invocation '{invocation_id}' was being run by another owner a moment ago; "
            "retry the claim."
        )
    return busy_error(invocation_id, held.lease_owner, held.lease_expires_at, now)


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
