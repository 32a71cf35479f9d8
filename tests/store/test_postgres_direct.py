"""PostgreSQL's hot path (`postgres.DirectConnections`) answers as asyncpg's `fetch` does."""

from __future__ import annotations

from typing import Any

import asyncpg  # pyright: ignore[reportMissingTypeStubs] -- altering the schema beside the store

from baton.sessions.sql import SqlStore
from baton.sessions.sql.backends import open_dialect
from baton.sessions.sql.postgres import asyncpg_connect_args
from baton.types import InvocationId, SessionId
from tests.store.builders import APP, USER, event, key, step


async def test_a_statement_prepared_before_its_table_changed_type_runs_again(
    postgres_url: str,
) -> None:
    """A column's type changes under a connection that has prepared a statement reading
    it (another process's ALTER TABLE): the server refuses the prepared statement, and
    the store prepares it again and answers, as asyncpg's `fetch` does."""
    store = SqlStore(postgres_url)
    try:
        await store.create_session(APP, USER, session_id=SessionId("s1"))
        await store.commit_step(step(key(), "inv-1", 0, events=(event("a"),), checkpoint={"at": 1}))
        before = await store.load_invocation(key(), InvocationId("inv-1"))
        other: Any = await asyncpg.connect(**asyncpg_connect_args(open_dialect(postgres_url).url))  # pyright: ignore[reportUnknownMemberType]
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
