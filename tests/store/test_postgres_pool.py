"""PostgreSQL's engine keeps enough connections open for a busy server's transactions."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import make_url

from baton.sessions.sql.dialect_postgres import POOLED_CONNECTIONS, create_postgres_engine


async def test_concurrent_transactions_reuse_the_pooled_connections(
    emptied_postgres_url: str,
) -> None:
    engine = create_postgres_engine(make_url(emptied_postgres_url))
    opened: list[object] = []

    def count(connection: Any, _record: Any) -> None:
        opened.append(connection)

    event.listen(engine.sync_engine, "connect", count)

    async def burst() -> None:
        """POOLED_CONNECTIONS transactions open at once, then all committed."""
        inside = 0
        all_in, release = asyncio.Event(), asyncio.Event()

        async def hold() -> None:
            nonlocal inside
            async with engine.begin() as connection:
                await connection.execute(text("SELECT 1"))
                inside += 1
                if inside == POOLED_CONNECTIONS:
                    all_in.set()
                await release.wait()

        async with asyncio.TaskGroup() as group:
            for _ in range(POOLED_CONNECTIONS):
                group.create_task(hold())
            await all_in.wait()
            release.set()

    try:
        await burst()
        await burst()
        await burst()
    finally:
        await engine.dispose()
    # The first burst opened them; the later ones found every one of them kept.
    assert len(opened) == POOLED_CONNECTIONS
