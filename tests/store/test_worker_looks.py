"""A worker's looks for lapsed leases read the running invocations alone, however many
runs ended before: on PostgreSQL, whatever the tables' statistics say (they are stale
until ANALYZE, which a busy database may run late or, autovacuum off, never)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from sqlalchemy import event as sa_event

from baton.sessions.sql import SqlStore
from baton.sessions.store import InvocationStatus
from baton.types import InvocationId
from tests.store.builders import APP, USER, key, step

TTL = timedelta(seconds=30)
ENDED_RUNS = 1_500


async def _ended_runs(store: SqlStore, runs: int) -> None:
    """`runs` sessions, each with a run that was running (its lease taken and renewed
    ten times, as a live run's is) and then completed; ten at a time. Each renewal
    leaves a dead entry in the running invocations' index: renewed once, the plan the
    stale statistics give read 23 blocks and went unseen."""
    for first in range(0, runs, 10):
        await asyncio.gather(*(_ended_run(store, n) for n in range(first, first + 10)))


async def _ended_run(store: SqlStore, n: int) -> None:
    session, invocation = key(f"s{n}"), f"inv-{n}"
    await store.create_session(APP, USER, session_id=session.session_id)
    await store.commit_step(step(session, invocation, 0))
    lease = await store.claim(InvocationId(invocation), "w1/run", TTL)
    for _ in range(10):
        lease = await store.renew(lease, TTL)
    await store.commit_step(step(session, invocation, 1, status=InvocationStatus.COMPLETED))
    await store.release(lease)


async def test_a_workers_looks_read_only_the_running_invocations(emptied_postgres_url: str) -> None:
    store = SqlStore(emptied_postgres_url)
    await _ended_runs(store, ENDED_RUNS)
    executor: Any = store._executor  # pyright: ignore[reportPrivateUsage] -- reading the worker's SQL
    engine: Any = executor._engine
    looks: list[tuple[str, Any]] = []

    def sent(*args: Any) -> None:
        if args[2].lstrip().upper().startswith("SELECT"):
            looks.append((args[2], args[3]))

    sa_event.listen(engine.sync_engine, "before_cursor_execute", sent)
    try:
        due = await store.next_due([APP])
        claimed = await store.claim_orphans([APP], "w2/recover", TTL, limit=32)
    finally:
        sa_event.remove(engine.sync_engine, "before_cursor_execute", sent)
    read: list[int] = []
    async with engine.connect() as connection:
        for sql, parameters in looks:
            plan = await connection.exec_driver_sql(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, parameters
            )
            found: Any = plan.scalar_one()
            read.append(_blocks(json.loads(found) if isinstance(found, str) else found))
    await store.close()

    assert due is None
    assert claimed == []
    assert len(looks) == 2  # when something falls due; the lapsed leases to claim
    # The running invocations' index entries (the ended runs' dead ones among them): some
    # 220 blocks each. Planned on stale statistics, the looks read every session and, for
    # each, those entries again: 120,000 blocks.
    assert all(blocks < ENDED_RUNS for blocks in read), read


def _blocks(plan: Any) -> int:
    """Shared blocks the statement read (hit in memory or not)."""
    top = plan[0]["Plan"]
    return int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"])
