"""A worker's looks for lapsed leases read the running invocations alone, however many
runs ended before: on PostgreSQL, whatever the tables' statistics say (they are stale
until ANALYZE, which a busy database may run late or, autovacuum off, never)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from sqlalchemy import event as sa_event
from sqlalchemy import text

from baton.sessions.sql import SqlStore
from baton.sessions.store import InvocationStatus
from baton.types import InvocationId
from tests.store.builders import APP, USER, key, step

TTL = timedelta(seconds=30)
ENDED_RUNS = 1_500


async def _ended_runs(store: SqlStore, runs: int) -> None:
    """`runs` sessions, each with a run that was running (its lease taken and renewed
    ten times, as a live run's is) and then completed. Each renewal leaves a dead entry
    in the running invocations' index: renewed once, the plan the stale statistics give
    read 23 blocks and went unseen. One run goes through the store; the others copy its
    rows and live the same life a statement for all of them at a time (14 statements,
    not 22,500 round trips), leaving the tables as many runs' own statements do."""
    await _ended_run(store, 0)
    executor: Any = store._executor  # pyright: ignore[reportPrivateUsage] -- bulk rows
    for statement in _lives_of_runs(runs):
        async with executor._engine.begin() as connection:
            await connection.execute(text(statement))


def _lives_of_runs(runs: int) -> list[str]:
    """Sessions s1..s{runs-1} copied from s0, their runs started and leased (as a claim
    leaves them), renewed ten times, then completed and released."""
    running = "UPDATE baton_invocations SET {} WHERE status = 'running'"
    return [
        "INSERT INTO baton_sessions (app_name, user_id, session_id, state, updated_at) "
        f"SELECT app_name, user_id, 's' || n, state, updated_at FROM baton_sessions, "
        f"generate_series(1, {runs - 1}) AS n",
        "INSERT INTO baton_invocations (id, session_pk, status, checkpoint, version, "
        "created_at, updated_at, fingerprint_digest, lease_owner, lease_expires_at, "
        "lease_token) SELECT 'inv-' || substr(s.session_id, 2), s.pk, 'running', "
        "i.checkpoint, 1, i.created_at, i.updated_at, i.fingerprint_digest, 'w1/run', "
        "i.updated_at + 30, 1 FROM baton_sessions AS s, baton_invocations AS i "
        "WHERE s.session_id <> 's0' AND i.id = 'inv-0'",
        *[running.format("lease_expires_at = lease_expires_at + 1, lease_token = lease_token + 1")]
        * 10,
        running.format(
            "status = 'completed', version = 2, lease_owner = NULL, lease_expires_at = 0"
        ),
    ]


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
    # 600 blocks each (290 after runs renewed one by one). Planned on stale statistics, as
    # the join or `session_pk IN (the app's sessions)` were, the looks read every session
    # and, for each, those entries again: 24,000 blocks (120,000 one by one).
    assert all(blocks < ENDED_RUNS for blocks in read), read


def _blocks(plan: Any) -> int:
    """Shared blocks the statement read (hit in memory or not)."""
    top = plan[0]["Plan"]
    return int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"])
