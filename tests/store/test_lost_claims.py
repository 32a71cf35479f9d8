"""A claim the database loses: an answer's claim and a resume's (`claim_loaded`) on
PostgreSQL commit without waiting for the WAL flush, so a database crash right after
them may undo them. Its holder must then
write nothing more, whoever claims the run next (no claim takes a token an earlier one
took). The crash is shown by putting the row's lease back as it was before the claim,
as crash recovery would, not by crashing the shared server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from baton.errors import LeaseLostError
from baton.sessions.sql import SqlStore
from baton.sessions.sql.backends import open_dialect
from baton.sessions.sql.schema import invocations
from baton.sessions.store import AnswerClaim, InvocationStatus, Lease
from baton.types import InterruptId, InvocationId, SessionId
from tests.conftest import FakeClock
from tests.store.builders import APP, USER, event, key, question, snapshot, step

INV = InvocationId("inv-1")
TTL = timedelta(seconds=30)
_LEASE = (invocations.c.lease_owner, invocations.c.lease_expires_at, invocations.c.lease_token)


@asynccontextmanager
async def _paused(url: str, clock: FakeClock) -> AsyncIterator[SqlStore]:
    """A SQL store on `url` holding a run paused at question 'q1', its lease free."""
    opened = SqlStore(url, clock=clock)
    try:
        await opened.create_session(APP, USER, session_id=SessionId("s1"))
        paused = step(
            key(),
            INV,
            0,
            events=(event("asked", invocation_id=INV),),
            checkpoint={"at": "ask"},
            status=InvocationStatus.PAUSED,
            opened=(question(key(), INV, "q1"),),
        )
        await opened.commit_step(paused)
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def store(emptied_store_url: str, clock: FakeClock) -> AsyncIterator[SqlStore]:
    """A SQL store holding a run paused at question 'q1', its lease free."""
    async with _paused(emptied_store_url, clock) as opened:
        yield opened


async def _lease_columns(store_url: str, lease: tuple[Any, ...] | None = None) -> tuple[Any, ...]:
    """The invocation's lease columns; first set to `lease` when given (as a crash's
    recovery leaves the row: the claim's change undone)."""
    dialect = open_dialect(store_url)
    executor = dialect.open_executor()

    def lease_columns(connection: Connection) -> tuple[Any, ...]:
        if lease is not None:
            values = {column.name: value for column, value in zip(_LEASE, lease, strict=True)}
            connection.execute(update(invocations).where(invocations.c.id == INV).values(values))
        return tuple(connection.execute(select(*_LEASE).where(invocations.c.id == INV)).one())

    try:
        return await executor.transact(lease_columns, write=True)
    finally:
        await executor.close()


async def _lost_answer_claim(store: SqlStore, store_url: str) -> Lease:
    """An answer's claim of INV, then undone as a database crash before its flush would."""
    before = await _lease_columns(store_url)
    answering = await store.claim_answering(key(), AnswerClaim(InterruptId("q1"), "answerer", TTL))
    assert answering.claimed is not None
    await _lease_columns(store_url, before)
    return answering.claimed[0]


async def test_a_holder_whose_claim_was_lost_writes_nothing_after_the_next_claim(
    store: SqlStore, emptied_store_url: str
) -> None:
    lost = await _lost_answer_claim(store, emptied_store_url)

    taken, invocation = await store.claim_loaded(key(), INV, "answerer-2", TTL)
    before = await snapshot(store, key())

    assert taken.token != lost.token
    late = step(key(), INV, invocation.version, answered={"q1": True})
    late.lease = lost
    with pytest.raises(LeaseLostError, match=r"lease of 'answerer' \(token \d+\) no longer holds"):
        await store.commit_step(late)
    with pytest.raises(LeaseLostError):
        await store.renew(lost, TTL)
    await store.release(lost)  # not its lease: nothing happens
    assert await snapshot(store, key()) == before
    assert await store.holder(INV) == taken
    mine = step(key(), INV, invocation.version, answered={"q1": False})
    mine.lease = taken
    assert await store.commit_step(mine) == invocation.version + 1


async def test_a_holder_whose_claim_was_lost_writes_nothing_while_nobody_holds_the_run(
    store: SqlStore, emptied_store_url: str
) -> None:
    lost = await _lost_answer_claim(store, emptied_store_url)
    before = await snapshot(store, key())

    late = step(key(), INV, 1, answered={"q1": True})
    late.lease = lost
    with pytest.raises(LeaseLostError):
        await store.commit_step(late)

    assert await snapshot(store, key()) == before
    assert await store.holder(INV) is None
    again = await store.claim_answering(key(), AnswerClaim(InterruptId("q1"), "answerer", TTL))
    assert again.claimed is not None  # the question is still open to answer


async def test_the_steps_after_an_answers_claim_wait_for_their_flush_again(
    emptied_postgres_url: str, clock: FakeClock
) -> None:
    """The claim turns the flush wait off for its own transaction only: the connection it
    ran on commits the run's steps durably."""
    async with _paused(emptied_postgres_url, clock) as opened:
        claim = AnswerClaim(InterruptId("q1"), "answerer", TTL)
        assert (await opened.claim_answering(key(), claim)).claimed is not None

        setting = select(func.current_setting("synchronous_commit"))
        rows = await opened._one(setting, {}, write=False)  # pyright: ignore[reportPrivateUsage] -- the connection the claim ran on

        assert rows == [("on",)]


async def test_a_holder_whose_resume_claim_was_lost_writes_nothing_after_the_next_claim(
    store: SqlStore, emptied_store_url: str
) -> None:
    """A resume's claim undone as a crash before its flush would: the code that ran under
    it can commit nothing, and the run is claimed again, its question still open."""
    before = await _lease_columns(emptied_store_url)
    lost, invocation = await store.claim_loaded(key(), INV, "resumer", TTL)
    await _lease_columns(emptied_store_url, before)

    late = step(key(), INV, invocation.version, answered={"q1": True})
    late.lease = lost
    with pytest.raises(LeaseLostError, match=r"lease of 'resumer' \(token \d+\) no longer holds"):
        await store.commit_step(late)
    taken, again = await store.claim_loaded(key(), INV, "resumer-2", TTL)
    with pytest.raises(LeaseLostError):
        await store.renew(lost, TTL)

    assert taken.token != lost.token
    assert again.version == invocation.version  # nothing the lost holder sent landed
    mine = step(key(), INV, again.version, answered={"q1": False})
    mine.lease = taken
    assert await store.commit_step(mine) == again.version + 1


_COMMITS_SEEN = (
    "CREATE TABLE commits_seen (seq serial PRIMARY KEY, owner text, synchronous_commit text)",
    """CREATE FUNCTION note_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO commits_seen (owner, synchronous_commit)
      VALUES (NEW.lease_owner, current_setting('synchronous_commit'));
      RETURN NULL;
    END $$""",
    """CREATE CONSTRAINT TRIGGER note_commit AFTER UPDATE ON baton_invocations
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION note_commit()""",
)
"""A table of what `synchronous_commit` was as each change of an invocation committed:
the deferred trigger runs at COMMIT."""


async def test_a_resume_claim_commits_without_its_flush_wait_and_the_steps_after_with_it(
    emptied_postgres_url: str, clock: FakeClock
) -> None:
    """`synchronous_commit` as each transaction commits (a deferred trigger reads it at
    COMMIT): off for a resume's claim alone, on for the steps after it on its connection."""
    async with _paused(emptied_postgres_url, clock) as opened:
        await _run_sql(emptied_postgres_url, *_COMMITS_SEEN)

        lease, invocation = await opened.claim_loaded(key(), INV, "resumer", TTL)
        answered = step(key(), INV, invocation.version, answered={"q1": True})
        answered.lease = lease
        await opened.commit_step(answered)

        seen = await _run_sql(emptied_postgres_url, "SELECT * FROM commits_seen ORDER BY seq")
        assert seen == [(1, "resumer", "off"), (2, "resumer", "on")]


async def _run_sql(url: str, *statements: str) -> list[tuple[Any, ...]]:
    """Run `statements` in one transaction in the store's schema; the last one's rows."""
    executor = open_dialect(url).open_executor()

    def run(connection: Connection) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        for sql in statements:
            result = connection.exec_driver_sql(sql)
            rows = [tuple(row) for row in result] if result.returns_rows else []
        return rows

    try:
        return await executor.transact(run, write=True)
    finally:
        await executor.close()
