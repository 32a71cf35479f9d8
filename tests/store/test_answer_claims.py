"""An answer's checks read and its claim (`Store.claim_answering`) on every backend: the
read is what the separate reads give, and the invocation is claimed only when the rows
let the answer through and its lease is free; any other answer claims nothing at all."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any

import asyncpg  # pyright: ignore[reportMissingTypeStubs] -- a second client, holding a lock
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from baton.sessions.sql import SqlStore
from baton.sessions.sql.backends import open_dialect
from baton.sessions.sql.postgres import asyncpg_connect_args
from baton.sessions.sql.schema import invocations
from baton.sessions.store import AnswerClaim, InvocationStatus, Lease, SessionKey, Store
from baton.types import InterruptId, InvocationId, SessionId
from tests.conftest import FakeClock
from tests.store.builders import APP, USER, claimed_since, event, key, question, step, texts

TTL = timedelta(seconds=30)
INV = InvocationId("inv-1")
WITHIN = 30.0  # seconds a lock wait or a commit may take to be seen, on a loaded machine


def _claim(interrupt_id: str = "q1", **fields: object) -> AnswerClaim:
    claim = AnswerClaim(InterruptId(interrupt_id), "answerer", TTL)
    return replace(claim, **fields)  # pyright: ignore[reportArgumentType] -- the test's fields


async def _paused(
    store: Store,
    session: SessionKey | None = None,
    invocation_id: str = INV,
    *,
    held_by: str | None = None,
    deadline: float | None = None,
    assignee: str | None = None,
) -> None:
    """A session (created when new) whose invocation waits at 'q1', its lease free or
    held by `held_by`."""
    session = session or key()
    if await store.get_session(session, with_events=False) is None:
        await store.create_session(APP, USER, session_id=session.session_id, state={"n": 0})
    asked = question(session, invocation_id, "q1").model_copy(
        update={"timeout": deadline, "assignee": assignee}
    )
    paused = step(
        session,
        invocation_id,
        0,
        events=(event("asked", invocation_id=invocation_id),),
        state={"n": 1},
        checkpoint={"at": "ask"},
        status=InvocationStatus.PAUSED,
        opened=(asked,),
    )
    if held_by is not None:
        paused.lease = store.lease_new(InvocationId(invocation_id), held_by, TTL)
    await store.commit_step(paused)


# The lease of an invocation `_paused` creates free: none, token 0.
UNLEASED = Lease(INV, "nobody", 0.0, 0)


async def _never_claimed(store: Store) -> bool:
    """Whether INV, paused free, was never claimed (not even claimed and released)."""
    return not await claimed_since(store, key(), UNLEASED)


async def test_the_read_is_what_the_session_and_interrupt_reads_give(store: Store) -> None:
    await _paused(store)
    await _paused(store, invocation_id="inv-2")
    await store.create_session(APP, USER, session_id=SessionId("s2"))

    found = await store.claim_answering(key(), _claim())
    alone = await store.claim_answering(key("s2"), _claim("q-unknown"))
    missing = await store.claim_answering(key("s9"), _claim())

    assert found.session == await store.get_session(key(), with_events=False)
    assert found.session is not None
    assert found.session.state == {"n": 1}
    assert found.interrupts == await store.find_interrupts(key(), InterruptId("q1"))
    assert [r.invocation_id for r in found.interrupts] == ["inv-1", "inv-2"]
    assert alone.session == await store.get_session(key("s2"), with_events=False)
    assert (alone.interrupts, alone.claimed) == ([], None)
    assert (missing.session, missing.interrupts, missing.claimed) == (None, [], None)


async def test_an_answerable_answer_claims_its_invocation_with_the_read(
    store: Store, clock: FakeClock
) -> None:
    await _paused(store)

    found = await store.claim_answering(key(), _claim(answered_by="alice"))

    assert found.claimed is not None
    lease, invocation = found.claimed
    assert (lease.invocation_id, lease.owner) == (INV, "answerer")
    assert await claimed_since(store, key(), UNLEASED)
    assert clock.now < lease.expires_at <= clock.now + 30
    assert await store.holder(INV) == lease
    assert invocation == await store.load_invocation(key(), INV)
    assert (invocation.checkpoint, invocation.version) == ({"at": "ask"}, 1)
    assert found.interrupts == await store.find_interrupts(key(), InterruptId("q1"))


async def test_a_claim_follows_the_rule_the_runner_checks_by(store: Store) -> None:
    await _paused(store, assignee="bob")
    [row] = await store.find_interrupts(key(), InterruptId("q1"))

    as_seen = await store.claim_answering(
        key(), _claim(occurrence=row.occurrence, answered_by="bob", invocation_id=INV)
    )

    assert as_seen.claimed is not None
    assert as_seen.claimed[0].owner == "answerer"


@pytest.mark.parametrize(
    "claim",
    [
        _claim("q9"),
        _claim(invocation_id=InvocationId("inv-2")),
        _claim(occurrence="0123456789abcdef"),
        _claim(progress=True),
    ],
    ids=["unknown id", "other invocation", "stale occurrence", "progress to a question"],
)
async def test_an_answer_the_rows_refuse_claims_nothing(store: Store, claim: AnswerClaim) -> None:
    await _paused(store)

    found = await store.claim_answering(key(), claim)

    assert found.claimed is None
    assert await store.holder(INV) is None
    assert await _never_claimed(store)  # not claimed and released either


async def test_an_answered_question_claims_nothing(store: Store) -> None:
    await _paused(store)
    await store.commit_step(step(key(), INV, 1, answered={"q1": True}))

    found = await store.claim_answering(key(), _claim())

    assert [row.status for row in found.interrupts] == ["answered"]
    assert found.claimed is None
    assert await _never_claimed(store)


async def test_a_question_open_in_two_runs_claims_only_the_one_named(store: Store) -> None:
    await _paused(store)
    await _paused(store, invocation_id="inv-2")

    either = await store.claim_answering(key(), _claim())
    named = await store.claim_answering(key(), _claim(invocation_id=InvocationId("inv-2")))

    assert either.claimed is None
    assert named.claimed is not None
    assert named.claimed[0].invocation_id == "inv-2"
    assert await _never_claimed(store)


async def test_an_expired_question_claims_nothing(store: Store, clock: FakeClock) -> None:
    await _paused(store, deadline=10)
    clock.advance(11)

    found = await store.claim_answering(key(), _claim())

    assert found.claimed is None
    assert await _never_claimed(store)


@pytest.mark.parametrize("answered_by", [None, "alice"])
async def test_an_assigned_question_claims_nothing_for_anyone_else(
    store: Store, answered_by: str | None
) -> None:
    await _paused(store, assignee="bob")

    found = await store.claim_answering(key(), _claim(answered_by=answered_by))

    assert found.claimed is None
    assert await _never_claimed(store)


async def test_a_run_held_by_a_live_worker_is_not_taken_from_it(
    store: Store, clock: FakeClock
) -> None:
    await _paused(store, held_by="worker-1")
    held = await store.holder(INV)
    clock.advance(10)

    found = await store.claim_answering(key(), _claim())

    assert found.claimed is None
    assert await store.holder(INV) == held
    clock.advance(21)  # the lease lapsed: the answer may take it
    taken = await store.claim_answering(key(), _claim())
    assert taken.claimed is not None
    assert held is not None
    lease = taken.claimed[0]
    assert lease.owner == "answerer"
    assert lease.token != held.token


async def test_another_session_claims_nothing_of_this_one(store: Store) -> None:
    await _paused(store)
    await store.create_session(APP, "v", session_id=SessionId("s1"))

    found = await store.claim_answering(key(user="v"), _claim())

    assert (found.interrupts, found.claimed) == ([], None)
    assert await _never_claimed(store)


async def _blocked_behind(watcher: Any, holder_pid: int, count: int) -> None:
    """Wait until `count` server processes wait, directly or in a queue, for a lock of
    the process `holder_pid`."""
    while True:
        rows = await watcher.fetch(
            "SELECT pid, pg_blocking_pids(pid) AS by FROM pg_stat_activity"
            " WHERE cardinality(pg_blocking_pids(pid)) > 0"
        )
        behind, grew = {holder_pid}, True
        while grew:
            grew = False
            for row in rows:
                if row["pid"] not in behind and behind & set(row["by"]):
                    behind.add(row["pid"])
                    grew = True
        if len(behind) - 1 >= count:
            return
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("named", [None, "fp", "another"])
async def test_a_claim_returns_the_runs_own_fingerprint_whatever_the_claim_names(
    store: Store, named: str | None
) -> None:
    # `_paused` starts the run under fingerprint 'fp'; a claim naming it may be handed it
    # back without the stored text being read, one naming another gets the stored one.
    await _paused(store)

    answering = await store.claim_answering(key(), _claim(fingerprint=named))

    assert answering.claimed is not None
    _, invocation = answering.claimed
    assert invocation.fingerprint == "fp"


async def test_a_claim_naming_the_runs_fingerprint_reads_no_text_of_it(
    emptied_postgres_url: str, clock: FakeClock
) -> None:
    # Speed: the workflow's structure as text is read and sent only when it differs from
    # the one the claim names (the runner's), to say what changed.
    store = SqlStore(emptied_postgres_url, clock=clock)
    sent: list[list[tuple[Any, ...]]] = []
    executor: Any = store._executor  # pyright: ignore[reportPrivateUsage] -- the rows it returns
    direct = executor._direct
    fetch = direct.fetch

    async def recorded(statement: Any, params: Any) -> list[tuple[Any, ...]]:
        rows = await fetch(statement, params)
        sent.append(rows)
        return rows

    try:
        await _paused(store, key("s1"), "inv-1")
        await _paused(store, key("s2"), "inv-2")
        direct.fetch = recorded
        same = await store.claim_answering(key("s1"), _claim(fingerprint="fp"))
        other = await store.claim_answering(key("s2"), _claim(fingerprint="changed"))
    finally:
        direct.fetch = fetch
        await store.close()

    assert same.claimed is not None
    assert other.claimed is not None
    same_rows, other_rows = sent
    assert "fp" not in same_rows[0]
    assert "fp" in other_rows[0]
    assert same.claimed[1].fingerprint == other.claimed[1].fingerprint == "fp"


async def test_a_claim_reads_its_runs_events_only_when_asked_for_them(
    emptied_postgres_url: str, clock: FakeClock
) -> None:
    # A workflow's resume does not read its run's events: its claim leaves them unread;
    # an agent's (`with_events`) returns them, read with the claim.
    store = SqlStore(emptied_postgres_url, clock=clock)
    try:
        await _paused(store, key("s1"), "inv-1")
        await _paused(store, key("s2"), "inv-2")
        plain = await store.claim_answering(key("s1"), _claim())
        asking = await store.claim_answering(key("s2"), _claim(with_events=True))
    finally:
        await store.close()

    assert plain.claimed is not None
    assert plain.events is None
    assert asking.claimed is not None
    assert asking.events is not None
    assert texts(asking.events()) == ["asked"]


async def test_a_claim_that_waited_for_a_steps_lock_returns_every_event_it_claims_after(
    emptied_postgres_url: str, clock: FakeClock
) -> None:
    # PostgreSQL checks an UPDATE that waited for a row's lock again against the newer
    # row, while the rest of its statement reads as of its start: the step that held the
    # lock is in the claimed checkpoint, so its events must be in what the claim returns.
    store = SqlStore(emptied_postgres_url, clock=clock)
    try:
        await _paused(store)
        later = step(
            key(), INV, 1, events=(event("later", invocation_id=INV),), checkpoint={"at": "later"}
        )
        async with _row_locked(emptied_postgres_url, INV) as waiting:
            committing = asyncio.create_task(store.commit_step(later))
            await waiting(1)
            claiming = asyncio.create_task(store.claim_answering(key(), _claim(with_events=True)))
            await waiting(2)
        assert await committing == 2
        answering = await claiming
        # None: the store did not read them with the claim, and the resume reads them.
        read = answering.events() if answering.events else await store.list_events(key(), INV)
    finally:
        await store.close()

    assert answering.claimed is not None
    assert answering.claimed[1].checkpoint == {"at": "later"}  # the newer row
    assert texts(read) == ["asked", "later"]


@asynccontextmanager
async def _row_locked(
    url: str, invocation_id: str
) -> AsyncIterator[Callable[[int], Awaitable[None]]]:
    """Hold the lock of the invocation's row from a second client until the block ends;
    yields a wait until `count` more transactions wait for it."""
    table = invocations.name
    if url.startswith("postgresql"):
        connect = asyncpg_connect_args(open_dialect(url).url)
        locker: Any = await asyncpg.connect(**connect)  # pyright: ignore[reportUnknownMemberType]
        watcher: Any = await asyncpg.connect(**connect)  # pyright: ignore[reportUnknownMemberType]
        try:
            async with locker.transaction():
                await locker.execute(
                    f"SELECT 1 FROM {table} WHERE id = $1 FOR UPDATE", invocation_id
                )

                async def waiting(count: int) -> None:
                    async with asyncio.timeout(WITHIN):
                        await _blocked_behind(watcher, locker.get_server_pid(), count)

                yield waiting
        finally:
            await locker.close()
            await watcher.close()
        return
    engine = create_async_engine(url)
    try:
        async with engine.connect() as lock, engine.connect() as watch:
            await lock.execute(
                text(f"SELECT 1 FROM {table} WHERE id = :id FOR UPDATE"), {"id": invocation_id}
            )
            database = lock.engine.url.database

            async def waiting(count: int) -> None:
                # (MariaDB lists an UPDATE waiting for a row in a statement's scan
                # as 'Updating', not always in innodb_trx as waiting for a lock.)
                query = text(
                    "SELECT COUNT(*) FROM information_schema.processlist"
                    " WHERE db = :db AND command = 'Query' AND state = 'Updating'"
                )
                async with asyncio.timeout(WITHIN):
                    while (await watch.execute(query, {"db": database})).scalar_one() < count:
                        await watch.rollback()  # a new snapshot for the next look
                        await asyncio.sleep(0.01)

            yield waiting
            await lock.commit()
    finally:
        await engine.dispose()


async def test_a_claim_that_waited_for_a_steps_lock_checks_the_questions_that_step_left(
    emptied_store_url: str, clock: FakeClock
) -> None:
    # A step that answers 'q1' and asks it again elsewhere (a loop's next pass) lands
    # while an answer for the first asking waits to claim: the claim must be checked
    # against the rows that step left, not those its statement or transaction read first.
    # (A claim waits only for a row that was free when it looked.)
    if emptied_store_url.startswith("sqlite"):
        pytest.skip("SQLite runs one write at a time: no step lands inside a claim")
    store = SqlStore(emptied_store_url, clock=clock)
    try:
        await _paused(store, held_by="worker-1")
        [first] = await store.find_interrupts(key(), InterruptId("q1"))
        held = await store.holder(INV)
        again = question(key(), INV, "q1").model_copy(update={"node_path": "wf/ask@2"})
        later = step(
            key(),
            INV,
            1,
            events=(event("later", invocation_id=INV),),
            answered={"q1": "yes"},
            opened=(again,),
            status=InvocationStatus.PAUSED,
            checkpoint={"at": "ask again"},
        )
        later = replace(later, lease=held, release=True)
        clock.advance(31)  # worker-1's lease lapsed as its step was on the way: free to claim
        async with _row_locked(emptied_store_url, INV) as waiting:
            committing = asyncio.create_task(store.commit_step(later))
            await waiting(1)
            claiming = asyncio.create_task(
                store.claim_answering(key(), _claim(occurrence=first.occurrence))
            )
            await waiting(2)
        async with asyncio.timeout(WITHIN):
            assert await committing == 2
            answering = await claiming
        holder = await store.holder(INV)
    finally:
        await store.close()

    assert answering.claimed is None
    assert holder is None
    assert [row.node_path for row in answering.interrupts] == ["wf/ask@2"]
