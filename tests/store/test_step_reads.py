"""A step reads its own invocation's row, however many runs its session had before: on
PostgreSQL, whatever the tables' statistics say (they are stale until ANALYZE, which a
busy database may run late or, autovacuum off, never) and whichever plan the prepared
statement settles on."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import asyncpg  # pyright: ignore[reportMissingTypeStubs] -- reading the plan of the store's own statement

from baton.events import Event
from baton.sessions.sql import SqlStore
from baton.sessions.sql.direct import plan_for
from baton.sessions.sql.postgres import asyncpg_connect_args
from baton.sessions.sql.step import ADVANCE, step_at_once
from baton.sessions.store import InvocationStatus
from tests.store.builders import APP, USER, key, step

EARLIER_RUNS = 300


async def _earlier_runs(store: SqlStore, runs: int) -> None:
    """`runs` completed invocations in session s1, ten at a time."""
    session = key("s1")

    async def ended(n: int) -> None:
        await store.commit_step(step(session, f"inv-{n}", 0))
        await store.commit_step(step(session, f"inv-{n}", 1, status=InvocationStatus.COMPLETED))

    for first in range(0, runs, 10):
        await asyncio.gather(*(ended(n) for n in range(first, first + 10)))


async def test_a_step_reads_its_own_invocation_not_its_sessions_earlier_runs(
    emptied_postgres_url: str,
) -> None:
    store = await _store_with_earlier_runs(emptied_postgres_url)
    # The next step of the running invocation, as the store sends it in one statement.
    commit = step(key("s1"), "run", 1, events=(Event(invocation_id="run", author="a"),))
    statement, params = step_at_once(commit, 1.0)
    found = await _generic_plan(store, statement, params)
    landed = await store.load_invocation(key("s1"), "run")  # pyright: ignore[reportArgumentType]
    await store.close()

    assert landed is not None
    assert landed.version == 2  # the statement landed the step
    advanced = _node(found, "advanced")
    # Its row by primary key: a few blocks. By the session's index, the session's every
    # invocation's entry and row: hundreds.
    assert _blocks(advanced) < 20, advanced


async def test_a_step_changing_state_reads_its_own_invocation_only(
    emptied_postgres_url: str,
) -> None:
    store = await _store_with_earlier_runs(emptied_postgres_url)
    # The invocation's advance of a step that changes state (`write_step`'s UPDATE).
    executor: Any = store._executor  # pyright: ignore[reportPrivateUsage] -- the store's own statement
    async with executor._engine.connect() as connection:
        session_pk = (await connection.exec_driver_sql("SELECT pk FROM baton_sessions")).scalar()
    params = {
        "key_id": "run",
        "key_session_pk": session_pk,
        "key_version": 1,
        "version": 2,
        "updated_at": 1.0,
    }
    found = await _generic_plan(store, ADVANCE, params)
    landed = await store.load_invocation(key("s1"), "run")  # pyright: ignore[reportArgumentType]
    await store.close()

    assert landed is not None
    assert landed.version == 2  # the statement advanced it
    assert _blocks(found) < 20, found


async def _store_with_earlier_runs(emptied_postgres_url: str) -> SqlStore:
    """A store whose session s1 holds `EARLIER_RUNS` completed runs and a running one,
    'run', at version 1."""
    store = SqlStore(emptied_postgres_url)
    session = key("s1")
    await store.create_session(APP, USER, session_id=session.session_id)
    await _earlier_runs(store, EARLIER_RUNS)
    await store.commit_step(step(session, "run", 0))
    return store


async def _generic_plan(store: SqlStore, statement: Any, params: dict[str, Any]) -> Any:
    """The plan a connection's prepared statement keeps after its fifth execution (the
    generic one), run with `params` (EXPLAIN ANALYZE): its root node."""
    executor: Any = store._executor  # pyright: ignore[reportPrivateUsage] -- the store's own statement
    plan = plan_for(statement, tuple(params), executor._engine.dialect, convert_results=False)
    url: Any = store._dialect.url  # pyright: ignore[reportPrivateUsage] -- its schema
    connection: Any = await asyncpg.connect(**asyncpg_connect_args(url))  # pyright: ignore[reportUnknownMemberType]
    try:
        await connection.execute("SET plan_cache_mode = force_generic_plan")
        await connection.execute(f"PREPARE measured AS {plan.sql}")
        values = ", ".join(_literal(value) for value in plan.arguments(params))
        found = await connection.fetchval(
            f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE measured({values})"
        )
    finally:
        await connection.close()
    return json.loads(found)[0]["Plan"]


def _literal(value: Any) -> str:
    """A parameter as an SQL literal of unknown type (the prepared statement types it)."""
    return "'" + str(value).replace("'", "''") + "'"


def _node(plan: dict[str, Any], cte: str) -> dict[str, Any]:
    """The plan node of the CTE named `cte`."""
    for child in plan.get("Plans", []):
        if child.get("Subplan Name") == f"CTE {cte}":
            return child
        found = _node(child, cte)
        if found:
            return found
    return {}


def _blocks(plan: dict[str, Any]) -> int:
    """Shared blocks a plan node read (hit in memory or not), its children included."""
    return int(plan.get("Shared Hit Blocks", 0)) + int(plan.get("Shared Read Blocks", 0))
