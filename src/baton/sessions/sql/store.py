"""`SqlStore`: the Store protocol over SQLite or PostgreSQL, one SQLAlchemy Core code path.

Concurrency rests on the database, not on this process: a step commit locks its
session row and advances the invocation with `UPDATE ... WHERE version = expected`
(or an INSERT that does nothing on conflict when creating it), and a claim is one
`INSERT ... ON CONFLICT DO UPDATE ... WHERE expired or same owner`. So two stores in
two processes on one database behave like one store.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any, final

from pydantic import JsonValue
from sqlalchemy import ColumnElement, Row, RowMapping, Select, and_, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from baton.errors import InvocationBusyError, SessionExistsError
from baton.events import Event
from baton.sessions.sql.dialect import (
    SQLITE_BEGIN_OPTION,
    create_engine,
    insert,
    is_unique_violation,
    normalize_url,
    snapshot_reader,
)
from baton.sessions.sql.migrations import migrate
from baton.sessions.sql.schema import events, interrupts, invocations, is_session, leases, sessions
from baton.sessions.sql.step import write_step
from baton.sessions.store import (
    Clock,
    Interrupt,
    InterruptStatus,
    Invocation,
    InvocationStatus,
    Lease,
    Session,
    SessionKey,
    StepCommit,
    strip_temp_state,
)
from baton.types import InterruptId, InvocationId, SessionId

__all__ = ["SqlStore"]


@final
class SqlStore:
    """Sessions, checkpoints, interrupts and leases in SQLite or PostgreSQL.

    Args:
        url: `sqlite+aiosqlite:///path` (or `sqlite:///path`) or
            `postgresql+asyncpg://user@host/db`; a PostgreSQL URL may end in
            `?search_path=schema` to keep baton's tables in that schema.
        clock: seconds since the epoch, for timestamps and lease expiry.

    Raises:
        ValueError: the URL names an unsupported database.
        ExtraNotInstalledError: a PostgreSQL URL without asyncpg installed.

    The schema is created or upgraded on first use (see `migrations`). Connections
    belong to the event loop that opened them: use a store from one loop and `close()`
    it before that loop ends.
    """

    def __init__(self, url: str, *, clock: Clock = time.time) -> None:
        self._url = normalize_url(url)
        self._engine = create_engine(self._url)
        self._reader = snapshot_reader(self._engine)
        self._writer = self._engine.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
        self._clock = clock
        self._migrated = False
        self._migrating = asyncio.Lock()

    @property
    def url(self) -> str:
        """The database URL (with its async driver), password hidden."""
        return self._url.render_as_string(hide_password=True)

    async def _ready(self) -> None:
        if self._migrated:
            return
        async with self._migrating:
            if not self._migrated:
                await migrate(self._engine)
                self._migrated = True

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        await self._ready()
        async with self._reader.connect() as connection:
            yield connection

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        await self._ready()
        async with self._writer.begin() as connection:
            yield connection

    async def create_session(
        self,
        app_name: str,
        user_id: str,
        *,
        session_id: SessionId | None = None,
        state: dict[str, JsonValue] | None = None,
    ) -> Session:
        """Create a session; raises SessionExistsError when the id is taken."""
        session = Session(
            id=session_id or str(uuid.uuid4()),
            app_name=app_name,
            user_id=user_id,
            state=strip_temp_state(dict(state or {})),
            last_update_time=self._clock(),
        )
        row = {
            "app_name": app_name,
            "user_id": user_id,
            "session_id": session.id,
            "state": session.state,
            "updated_at": session.last_update_time,
        }
        try:
            async with self._write() as connection:
                await connection.execute(sessions.insert().values(row))
        except IntegrityError as error:
            if not is_unique_violation(error):
                raise
            raise SessionExistsError(
                f"session '{session.id}' already exists for user '{user_id}' in app "
                f"'{app_name}'; pick another id or omit it to get a fresh one."
            ) from error
        return session

    async def get_session(
        self, key: SessionKey, *, with_events: bool = True, event_limit: int | None = None
    ) -> Session | None:
        """The session (its newest `event_limit` events, or all), or None."""
        async with self._read() as connection:
            row = (await connection.execute(select(sessions).where(is_session(key)))).first()
            if row is None:
                return None
            session = _to_session(row)
            if with_events:
                session.events = await _load_events(connection, row.pk, event_limit)
            return session

    async def list_sessions(self, app_name: str, user_id: str | None = None) -> list[Session]:
        """Sessions of an app (optionally of one user), without their events."""
        query = select(sessions).where(sessions.c.app_name == app_name)
        if user_id is not None:
            query = query.where(sessions.c.user_id == user_id)
        async with self._read() as connection:
            rows = await connection.execute(query.order_by(sessions.c.pk))
            return [_to_session(row) for row in rows]

    async def delete_session(self, key: SessionKey) -> bool:
        """Delete a session and everything in it; False when there was none."""
        async with self._write() as connection:
            pk = await connection.scalar(select(sessions.c.pk).where(is_session(key)))
            if pk is None:
                return False
            owned = select(invocations.c.id).where(invocations.c.session_pk == pk)
            await connection.execute(delete(leases).where(leases.c.invocation_id.in_(owned)))
            # Events, invocations and interrupts go with it: ON DELETE CASCADE.
            await connection.execute(delete(sessions).where(sessions.c.pk == pk))
            return True

    async def commit_step(self, commit: StepCommit) -> int:
        """Land a step atomically and return the invocation's new version.

        Raises:
            SessionNotFoundError: the session does not exist.
            StaleVersionError: `expected_version` is not the invocation's version.
        """
        now = self._clock()
        async with self._write() as connection:
            return await write_step(connection, commit, now)

    async def load_invocation(
        self, key: SessionKey, invocation_id: InvocationId
    ) -> Invocation | None:
        """The invocation with its checkpoint, or None."""
        query = _invocations_of(key).where(invocations.c.id == invocation_id)
        async with self._read() as connection:
            row = (await connection.execute(query)).first()
        return None if row is None else _to_invocation(key, row)

    async def list_invocations(self, key: SessionKey) -> list[Invocation]:
        """The session's invocations, oldest first."""
        query = _invocations_of(key).order_by(invocations.c.created_at, invocations.c.id)
        async with self._read() as connection:
            rows = (await connection.execute(query)).all()
        return [_to_invocation(key, row) for row in rows]

    async def find_interrupts(self, key: SessionKey, interrupt_id: InterruptId) -> list[Interrupt]:
        """Index rows with that id in the session (open or answered), by index, not scan."""
        query = (
            select(interrupts)
            .join(sessions, sessions.c.pk == interrupts.c.session_pk)
            .where(is_session(key), interrupts.c.interrupt_id == interrupt_id)
            .order_by(interrupts.c.created_at, interrupts.c.invocation_id)
        )
        async with self._read() as connection:
            rows = (await connection.execute(query)).mappings().all()
        return [_to_interrupt(row) for row in rows]

    async def list_interrupts(
        self,
        app_name: str,
        user_id: str | None = None,
        *,
        session_id: SessionId | None = None,
        invocation_id: InvocationId | None = None,
        status: InterruptStatus | None = InterruptStatus.OPEN,
    ) -> list[Interrupt]:
        """Interrupts matching the filters, oldest first."""
        filters = {
            interrupts.c.app_name: app_name,
            interrupts.c.user_id: user_id,
            interrupts.c.session_id: session_id,
            interrupts.c.invocation_id: invocation_id,
            interrupts.c.status: status.value if status is not None else None,
        }
        query = select(interrupts).where(
            *(column == value for column, value in filters.items() if value is not None)
        )
        order = (interrupts.c.created_at, interrupts.c.invocation_id, interrupts.c.interrupt_id)
        async with self._read() as connection:
            rows = (await connection.execute(query.order_by(*order))).mappings().all()
        return [_to_interrupt(row) for row in rows]

    async def claim(self, invocation_id: InvocationId, owner: str, ttl: timedelta) -> Lease:
        """Take the invocation's lease; InvocationBusyError if another live owner has it."""
        now = self._clock()
        lease = Lease(invocation_id, owner, now + ttl.total_seconds())
        async with self._write() as connection:
            statement = insert(connection, leases).values(
                invocation_id=invocation_id, owner=owner, expires_at=lease.expires_at
            )
            # Take it over only when it expired or is already ours; the database
            # evaluates this under the row lock, so concurrent claimers cannot both win.
            statement = statement.on_conflict_do_update(
                index_elements=[leases.c.invocation_id],
                set_={"owner": owner, "expires_at": lease.expires_at},
                where=(leases.c.expires_at <= now) | (leases.c.owner == owner),
            ).returning(leases.c.owner)
            if (await connection.execute(statement)).first() is not None:
                return lease
            held = (
                await connection.execute(
                    select(leases).where(leases.c.invocation_id == invocation_id)
                )
            ).first()
        raise InvocationBusyError(_busy_message(invocation_id, held))

    async def renew(self, lease: Lease, ttl: timedelta) -> Lease:
        """Extend a held lease; InvocationBusyError when it was lost."""
        renewed = Lease(lease.invocation_id, lease.owner, self._clock() + ttl.total_seconds())
        async with self._write() as connection:
            result = await connection.execute(
                update(leases)
                .where(_is_lease(lease))
                .values(expires_at=renewed.expires_at)
                .returning(leases.c.owner)
            )
            if result.first() is None:
                raise InvocationBusyError(
                    f"lease on invocation '{lease.invocation_id}' was lost by '{lease.owner}'; "
                    "another process took the run over."
                )
        return renewed

    async def release(self, lease: Lease) -> None:
        """Give the lease up (no error when it already expired or moved on)."""
        async with self._write() as connection:
            await connection.execute(delete(leases).where(_is_lease(lease)))

    async def close(self) -> None:
        """Close every pooled connection."""
        await self._engine.dispose()


def _is_lease(lease: Lease) -> ColumnElement[bool]:
    return and_(leases.c.invocation_id == lease.invocation_id, leases.c.owner == lease.owner)


def _invocations_of(key: SessionKey) -> Select[Any]:
    return (
        select(invocations)
        .join(sessions, sessions.c.pk == invocations.c.session_pk)
        .where(is_session(key))
    )


async def _load_events(
    connection: AsyncConnection, session_pk: int, limit: int | None
) -> list[Event]:
    if limit == 0:
        return []
    query = select(events.c.event).where(events.c.session_pk == session_pk)
    if limit is None:
        rows = await connection.scalars(query.order_by(events.c.seq))
        return [Event.from_wire(e) for e in rows]
    # Newest first with LIMIT reads only N rows off the (session, seq) index.
    rows = await connection.scalars(query.order_by(events.c.seq.desc()).limit(limit))
    return [Event.from_wire(e) for e in reversed(rows.all())]


def _busy_message(invocation_id: InvocationId, held: Row[Any] | None) -> str:
    if held is None:
        # The holder released between our attempt and this read.
        return (
            f"invocation '{invocation_id}' was being run by another owner a moment ago; "
            "retry the claim."
        )
    return (
        f"invocation '{invocation_id}' is being run by '{held.owner}' (lease until "
        f"{held.expires_at:.0f}); wait for that run to pause or finish, then retry."
    )


def _to_session(row: Row[Any]) -> Session:
    return Session(
        id=row.session_id,
        app_name=row.app_name,
        user_id=row.user_id,
        state=row.state,
        last_update_time=row.updated_at,
    )


def _to_invocation(key: SessionKey, row: Row[Any]) -> Invocation:
    return Invocation(
        id=row.id,
        app_name=key.app_name,
        user_id=key.user_id,
        session_id=key.session_id,
        status=InvocationStatus(row.status),
        fingerprint=row.fingerprint,
        checkpoint=row.checkpoint,
        version=row.version,
        created_at=row.created_at,
        updated_at=row.updated_at,
        error=row.error,
    )


def _to_interrupt(row: RowMapping) -> Interrupt:
    return Interrupt.model_validate({k: v for k, v in row.items() if k != "session_pk"})
