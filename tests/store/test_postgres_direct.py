"""PostgreSQL's hot path (`postgres.DirectConnections`) answers as asyncpg's `fetch` does."""

from __future__ import annotations

from typing import Any

import asyncpg  # pyright: ignore[reportMissingTypeStubs] -- altering the schema beside the store
import pytest

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
