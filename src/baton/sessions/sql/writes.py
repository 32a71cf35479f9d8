"""The store's writes other than a step (see `step`): sessions and leases.

Synchronous functions over a `Connection`, each run inside one writing transaction
(see `executors`). A claim is one `INSERT ... ON CONFLICT DO UPDATE ... WHERE expired
or same owner`, which the database evaluates under the row lock, so two stores in
two processes cannot both win it. A claim, renewal or release is one statement, its
own transaction on PostgreSQL (a refused claim reads the holder after it, for the
message only).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Row, bindparam, delete, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.dml import UpdateBase

from baton.errors import InvocationBusyError, SessionExistsError
from baton.sessions.sql.dialect import insert, is_unique_violation
from baton.sessions.sql.direct import run
from baton.sessions.sql.schema import IS_SESSION, invocations, leases, session_params, sessions
from baton.sessions.store import Lease, Session, SessionKey, busy_error
from baton.types import InvocationId

__all__ = ["claim_lease", "delete_session", "insert_session", "release_lease", "renew_lease"]

# Built once with bound parameters; the lease statements, run on every call, go
# through `direct.run` (see `step`).
_INSERT_SESSION = sessions.insert()
_SESSION_PK = select(sessions.c.pk).where(IS_SESSION)
_IS_LEASE = (leases.c.invocation_id == bindparam("key_invocation_id")) & (
    leases.c.owner == bindparam("key_owner")
)
_LEASE = select(leases).where(leases.c.invocation_id == bindparam("key_invocation_id"))
_RENEW_LEASE = update(leases).where(_IS_LEASE).returning(leases.c.owner)
_RELEASE_LEASE = delete(leases).where(_IS_LEASE)


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
    owned = select(invocations.c.id).where(invocations.c.session_pk == pk)
    connection.execute(delete(leases).where(leases.c.invocation_id.in_(owned)))
    # Events, invocations and interrupts go with it: ON DELETE CASCADE.
    connection.execute(delete(sessions).where(sessions.c.pk == pk))
    return True


def claim_lease(connection: Connection, lease: Lease, now: float) -> None:
    """Write `lease` unless another owner holds an unexpired one.

    Raises:
        InvocationBusyError: another live owner has the invocation.
    """
    parameters = {
        "invocation_id": lease.invocation_id,
        "owner": lease.owner,
        "expires_at": lease.expires_at,
        "key_now": now,
    }
    if run(connection, _claim(connection.dialect.name), parameters):
        return
    held = connection.execute(_LEASE, {"key_invocation_id": lease.invocation_id}).first()
    raise _busy(lease.invocation_id, held, now)


def renew_lease(connection: Connection, lease: Lease, expires_at: float) -> None:
    """Move a held lease's expiry.

    Raises:
        InvocationBusyError: the lease was lost (expired and taken, or released).
    """
    parameters = {"expires_at": expires_at, **_lease_params(lease)}
    if not run(connection, _RENEW_LEASE, parameters):
        raise InvocationBusyError(
            f"lease on invocation '{lease.invocation_id}' was lost by '{lease.owner}'; "
            "another process took the run over."
        )


def release_lease(connection: Connection, lease: Lease) -> None:
    """Delete the lease if it is still this owner's."""
    run(connection, _RELEASE_LEASE, _lease_params(lease))


@cache
def _claim(dialect: str) -> UpdateBase:
    statement = insert(dialect, leases)
    # Take it over only when it expired or is already ours.
    return statement.on_conflict_do_update(
        index_elements=[leases.c.invocation_id],
        set_={"owner": statement.excluded.owner, "expires_at": statement.excluded.expires_at},
        where=(leases.c.expires_at <= bindparam("key_now"))
        | (leases.c.owner == statement.excluded.owner),
    ).returning(leases.c.owner)


def _lease_params(lease: Lease) -> dict[str, str]:
    return {"key_invocation_id": lease.invocation_id, "key_owner": lease.owner}


def _busy(invocation_id: InvocationId, held: Row[Any] | None, now: float) -> InvocationBusyError:
    if held is None:
        # The holder released between our attempt and this read.
        return InvocationBusyError(
            f"invocation '{invocation_id}' was being run by another owner a moment ago; "
            "retry the claim."
        )
    return busy_error(invocation_id, held.owner, held.expires_at, now)
