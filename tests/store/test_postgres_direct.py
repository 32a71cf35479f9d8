"""PostgreSQL's hot path (`postgres.DirectConnections`) answers as asyncpg's `fetch` does."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg  # pyright: ignore[reportMissingTypeStubs] -- altering the schema beside the store
import pytest
from sqlalchemy import BigInteger, Text, column, select, table

from baton.sessions.sql import SqlStore, postgres
from baton.sessions.sql.backends import open_dialect
from baton.sessions.sql.postgres import asyncpg_connect_args, protocol_surface_known
from baton.types import InvocationId, SessionId
from tests.store.builders import APP, USER, event, key, step


async def test_a_statement_prepared_before_its_table_changed_type_runs_again(
    emptied_postgres_url: str,
) -> None:
    """A column's type changes under a connection that has prepared a statement reading
    it (another process's ALTER TABLE): the server refuses the prepared statement, and
    the store prepares it again and answers, as asyncpg's `fetch` does."""
    store = SqlStore(emptied_postgres_url)
    try:
        await store.create_session(APP, USER, session_id=SessionId("s1"))
        await store.commit_step(step(key(), "inv-1", 0, events=(event("a"),), checkpoint={"at": 1}))
        before = await store.load_invocation(key(), InvocationId("inv-1"))
        connecting = asyncpg_connect_args(open_dialect(emptied_postgres_url).url)
        other: Any = await asyncpg.connect(**connecting)  # pyright: ignore[reportUnknownMemberType]
        try:
            await other.execute("ALTER TABLE baton_invocations ALTER COLUMN error TYPE varchar")
        finally:
            await other.close()
        after = await store.load_invocation(key(), InvocationId("inv-1"))
        landed = await store.commit_step(step(key(), "inv-1", 1, checkpoint={"at": 2}))
    finally:
        await store.close()
    assert after == before
    assert landed == 2


def test_only_the_asyncpg_releases_whose_internals_were_read_skip_fetch() -> None:
    """The direct path reaches into asyncpg's private statement cache and protocol only
    on the releases whose internals match what it uses; any other takes `fetch`."""
    assert [protocol_surface_known(v) for v in ("0.29.0", "0.30.1", "0.32.0")] == [True] * 3
    assert [protocol_surface_known(v) for v in ("0.28.0", "0.33.0", "1.0.0", "dev")] == [False] * 4


async def test_the_store_answers_the_same_through_fetch(
    emptied_postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an asyncpg release the direct path does not know, every statement goes
    through the public `fetch` and the store works as before."""
    monkeypatch.setattr(postgres, "_through_protocol", lambda: False)
    store = SqlStore(emptied_postgres_url)
    try:
        await store.create_session(APP, USER, session_id=SessionId("s1"))
        landed = [
            await store.commit_step(
                step(key(), "inv-1", n, events=(event(f"e{n}"),), checkpoint={"at": n})
            )
            for n in range(3)
        ]
        loaded = await store.load_invocation(key(), InvocationId("inv-1"))
    finally:
        await store.close()
    assert landed == [1, 2, 3]
    assert loaded is not None
    assert loaded.checkpoint == {"at": 2}


async def test_a_step_cancelled_mid_statement_leaves_no_busy_connection(
    emptied_postgres_url: str,
) -> None:
    """A step cancelled while its statement is on the server (waiting behind another
    transaction's lock here) takes its connection with it: the store's next statements,
    sent at once, run on other connections and land."""
    store = SqlStore(emptied_postgres_url)
    connecting = asyncpg_connect_args(open_dialect(emptied_postgres_url).url)
    other: Any = await asyncpg.connect(**connecting)  # pyright: ignore[reportUnknownMemberType]
    try:
        for name, invocation in (("s1", "inv-1"), ("s2", "inv-2")):
            await store.create_session(APP, USER, session_id=SessionId(name))
            await store.commit_step(step(key(name), invocation, 0, checkpoint={"at": 0}))
        async with other.transaction():
            await other.execute("SELECT 1 FROM baton_sessions WHERE session_id = 's1' FOR UPDATE")
            blocked = asyncio.create_task(
                store.commit_step(step(key("s1"), "inv-1", 1, checkpoint={"at": 1}))
            )
            blockers = "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))"
            # Until the step's statement waits for the lock (another process's state).
            while not await other.fetchval(blockers, other.get_server_pid()):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
            blocked.cancel()
            with pytest.raises(asyncio.CancelledError):
                await blocked
            landed = [
                await store.commit_step(step(key("s2"), "inv-2", n, checkpoint={"at": n}))
                for n in (1, 2)
            ]
    finally:
        await other.close()
        await store.close()
    assert landed == [2, 3]


async def test_the_direct_statements_run_their_generic_plan_from_the_first_execution(
    emptied_postgres_url: str,
) -> None:
    """A step's statement, run again and again on one of the store's connections, is
    never planned again with its parameters' values (a custom plan): the server plans
    it once, when preparing it, not on each of its first five executions."""
    store = SqlStore(emptied_postgres_url)
    try:
        await store.create_session(APP, USER, session_id=SessionId("s1"))
        for n in range(4):
            await store.commit_step(step(key(), "inv-1", n, events=(event(f"e{n}"),)))
        executor: Any = store._executor  # pyright: ignore[reportPrivateUsage] -- its asyncpg connections
        plans: list[tuple[int, int, str]] = await executor._direct.fetch(_PLANS, {})
    finally:
        await store.close()
    steps = [(custom, generic) for custom, generic, sql in plans if "baton_events" in sql]
    assert steps, plans
    assert all(custom == 0 and generic > 0 for custom, generic in steps), plans


_PREPARED = table(
    "pg_prepared_statements",
    column("custom_plans", BigInteger),
    column("generic_plans", BigInteger),
    column("statement", Text),
)
_PLANS = select(_PREPARED.c.custom_plans, _PREPARED.c.generic_plans, _PREPARED.c.statement)
"""How each statement prepared on the connection was planned: (custom, generic, SQL)."""
