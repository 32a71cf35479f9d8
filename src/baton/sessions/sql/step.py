"""Writing one step commit inside a transaction: the heart of `SqlStore.commit_step`.

The order matters: the session row is locked first, the invocation's version is
checked and advanced second, so a stale step fails before it writes anything and
the transaction's rollback has nothing to undo beyond that.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from baton.errors import SessionNotFoundError, StaleVersionError
from baton.events import Event
from baton.sessions.sql.dialect import insert
from baton.sessions.sql.schema import events, interrupts, invocations, is_session, sessions
from baton.sessions.store import (
    Interrupt,
    InterruptStatus,
    InvocationStatus,
    SessionKey,
    StepCommit,
    strip_temp_state,
)

__all__ = ["write_step"]

_INTERRUPT_KEY = ("invocation_id", "interrupt_id")


async def write_step(connection: AsyncConnection, commit: StepCommit, now: float) -> int:
    """Write `commit` in the connection's open transaction; return the new version.

    Raises:
        SessionNotFoundError: the session does not exist.
        StaleVersionError: `expected_version` is not the invocation's version.
    """
    pk, state = await _lock_session(connection, commit.session)
    version = 0
    if commit.invocation_id is not None:
        version = await _advance_invocation(connection, pk, commit, now)
    await _append_events(connection, pk, commit.events)
    delta = strip_temp_state(commit.state_delta)
    await connection.execute(
        update(sessions)
        .where(sessions.c.pk == pk)
        .values(updated_at=now, **({"state": {**state, **delta}} if delta else {}))
    )
    if commit.invocation_id is not None:
        await _open_interrupts(connection, pk, commit, now)
        await _answer_interrupts(connection, commit, now)
    return version


async def _lock_session(connection: AsyncConnection, key: SessionKey) -> tuple[int, dict[str, Any]]:
    # FOR UPDATE serializes a session's commits on PostgreSQL (its state is
    # read-modify-written); SQLite's IMMEDIATE transaction already did.
    query = select(sessions.c.pk, sessions.c.state).where(is_session(key)).with_for_update()
    row = (await connection.execute(query)).first()
    if row is None:
        raise SessionNotFoundError(f"session '{key}' does not exist; create it first.")
    return row.pk, dict(row.state)


async def _append_events(
    connection: AsyncConnection, session_pk: int, new: tuple[Event, ...]
) -> None:
    if not new:
        return
    rows = [
        {
            "session_pk": session_pk,
            "invocation_id": event.invocation_id,
            "author": event.author,
            "timestamp": event.timestamp,
            "event": event.to_wire(),
        }
        for event in new
    ]
    await connection.execute(events.insert(), rows)


async def _advance_invocation(
    connection: AsyncConnection, session_pk: int, commit: StepCommit, now: float
) -> int:
    if commit.expected_version == 0:
        statement = (
            insert(connection, invocations)
            .values(_new_invocation(session_pk, commit, now))
            .on_conflict_do_nothing(index_elements=[invocations.c.id])
        )
    else:
        statement = (
            update(invocations)
            .where(
                invocations.c.id == commit.invocation_id,
                invocations.c.session_pk == session_pk,
                invocations.c.version == commit.expected_version,
            )
            .values(_invocation_changes(commit, now))
        )
    if (await connection.execute(statement.returning(invocations.c.version))).first() is None:
        await _raise_stale(connection, commit)
    return commit.expected_version + 1


def _new_invocation(session_pk: int, commit: StepCommit, now: float) -> dict[str, Any]:
    return {
        "id": commit.invocation_id,
        "session_pk": session_pk,
        "status": (commit.status or InvocationStatus.RUNNING).value,
        "fingerprint": commit.fingerprint or "",
        "checkpoint": commit.checkpoint,
        "version": 1,
        "created_at": now,
        "updated_at": now,
        "error": commit.error if commit.status is not None else None,
    }


def _invocation_changes(commit: StepCommit, now: float) -> dict[str, Any]:
    changes: dict[str, Any] = {"version": commit.expected_version + 1, "updated_at": now}
    if commit.checkpoint is not None:
        changes["checkpoint"] = commit.checkpoint
    if commit.status is not None:
        changes["status"] = commit.status.value
        changes["error"] = commit.error
    return changes


async def _raise_stale(connection: AsyncConnection, commit: StepCommit) -> None:
    actual = await connection.scalar(
        select(invocations.c.version).where(invocations.c.id == commit.invocation_id)
    )
    raise StaleVersionError(
        f"invocation '{commit.invocation_id}' is at version {actual or 0}, not "
        f"{commit.expected_version}: another process advanced it; reload and retry."
    )


async def _open_interrupts(
    connection: AsyncConnection, session_pk: int, commit: StepCommit, now: float
) -> None:
    if not commit.opened:
        return
    rows = [_interrupt_row(session_pk, commit.session, row, now) for row in commit.opened]
    statement = insert(connection, interrupts)
    # Reopening an id (a loop asks again) replaces the earlier, answered row.
    replaced = {
        c.name: statement.excluded[c.name] for c in interrupts.c if c.name not in _INTERRUPT_KEY
    }
    await connection.execute(
        statement.on_conflict_do_update(
            index_elements=[interrupts.c.invocation_id, interrupts.c.interrupt_id], set_=replaced
        ),
        rows,
    )


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
    }


async def _answer_interrupts(connection: AsyncConnection, commit: StepCommit, now: float) -> None:
    for interrupt_id, answer in commit.answered:
        await connection.execute(
            update(interrupts)
            .where(
                interrupts.c.invocation_id == commit.invocation_id,
                interrupts.c.interrupt_id == interrupt_id,
            )
            .values(
                status=InterruptStatus.ANSWERED.value,
                answered_at=now,
                answer=answer,
                answered_by=commit.answered_by,
            )
        )
