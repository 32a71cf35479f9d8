"""Pages of pending questions and of sessions at scale: 10,000 open questions and
1,000,000 events.

    .venv/bin/python bench/paging_bench.py [--quick] [--backend sqlite|postgres]

Builds a database the way a busy deployment looks (1,000 sessions of one user with 10
runs each, every run waiting on a question; as many questions of other users; 1,000
events per session), with the rows generated inside the database (a recursive CTE on
SQLite, generate_series on PostgreSQL) after baton's own migrations made the tables.
Then times, through the library (`baton.listings.pending_page`, what the Runner, the
server and the CLI call): the first page, a page in the middle (cursor after 5,000),
the last page, each of 100 questions; and, as the floor it replaces, reading the
user's whole pending list. The same for the user's sessions (`sessions_page`): the first
page and the page after the 500th, against the whole list of the user's sessions.
Figures are medians of several reads, in ms, one JSON line each (see figures.py), with
the load average at the start.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import figures
from sqlalchemy import create_engine, text
from sqlalchemy.ext.asyncio import create_async_engine

from baton.listings import pending_page, sessions_page
from baton.sessions.paging import encode_cursor
from baton.sessions.sql import SqlStore
from baton.sessions.store import Store

K = TypeVar("K")

APP = "bench"
USER = "u"
POSTGRES = os.environ.get(
    "BATON_BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)


def _fill_statements(sessions: int, runs: int, events_per_session: int, series: str) -> list[str]:
    """SQL that fills the tables; `series` is a row source of n = 1..N for a count N
    (given as {N}), so each dialect generates rows in the database."""
    others = sessions  # as many sessions (and questions) of other users
    all_sessions = sessions + others
    return [
        f"""INSERT INTO baton_sessions (pk, app_name, user_id, session_id, state, updated_at)
        SELECT n, '{APP}', CASE WHEN n <= {sessions} THEN '{USER}' ELSE 'other-' || n END,
               's-' || n, '{{}}', 1700000000.0 + n
        FROM {series.format(N=all_sessions)}""",
        f"""INSERT INTO baton_invocations (id, session_pk, status, checkpoint,
               version, created_at, updated_at, lease_expires_at, lease_token)
        SELECT 'inv-' || n, (n - 1) / {runs} + 1, 'paused', NULL, 3,
               1700000000.0 + n, 1700000000.0 + n, 0, 1
        FROM {series.format(N=all_sessions * runs)}""",
        f"""INSERT INTO baton_interrupts (invocation_id, interrupt_id, session_pk, app_name,
               user_id, session_id, node_path, function_name, message, payload,
               response_schema, status, created_at, answers_on_timeout)
        SELECT 'inv-' || n, 'approve', (n - 1) / {runs} + 1, '{APP}',
               CASE WHEN (n - 1) / {runs} + 1 <= {sessions} THEN '{USER}'
                    ELSE 'other-' || ((n - 1) / {runs} + 1) END,
               's-' || ((n - 1) / {runs} + 1), 'flow@1/ask@1', 'adk_request_input',
               'Approve expense ' || n || '?', '{{"amount": 120, "item": "taxi"}}',
               '{{"type": "object", "properties": {{"approved": {{"type": "boolean"}}}}}}',
               'open', 1700000000.0 + n, false
        FROM {series.format(N=all_sessions * runs)}""",
        f"""INSERT INTO baton_events (session_pk, invocation_id, author, timestamp, event)
        SELECT (n - 1) / {events_per_session} + 1, 'inv-x', 'node', 1700000000.0 + n,
               '{{"author": "node", "invocationId": "inv-x", "content": {{"parts":
               [{{"text": "step output"}}]}}}}'
        FROM {series.format(N=sessions * events_per_session)}""",
    ]


_SQLITE_SERIES = (
    "(WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < {N}) "
    "SELECT n FROM c) AS series"
)
_PG_SERIES = "generate_series(1, {N}) AS n"


def _build_sqlite(path: Path, statements: list[str]) -> None:
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(text(statement))
        connection.execute(text("ANALYZE"))
    engine.dispose()


async def _build_postgres(schema: str, statements: list[str]) -> None:
    engine = create_async_engine(
        POSTGRES, connect_args={"server_settings": {"search_path": schema}}
    )
    async with engine.begin() as connection:
        for statement in statements:
            await connection.execute(text(statement))
    async with engine.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")
        await connection.execute(text("VACUUM ANALYZE"))
    await engine.dispose()


async def _timings(
    reads: dict[K, Callable[[], Awaitable[Any]]], repeats: int
) -> dict[K, list[float]]:
    """Milliseconds of each read, `repeats` rounds of every read in turn, so a busy moment
    of a shared machine slows all of them alike."""
    for read in reads.values():
        await read()  # warm: statement caches, connection
    times: dict[K, list[float]] = {name: [] for name in reads}
    for _ in range(repeats):
        for name, read in reads.items():
            started = time.perf_counter()
            await read()
            times[name].append((time.perf_counter() - started) * 1000)
    return times


async def measure(backend: str, store: Store, questions: int, sessions: int, repeats: int) -> None:
    """Emit the page and whole-list figures for one backend: median and best of the reads."""
    middle = encode_cursor("pending", (1700000000.0 + questions // 2, "", ""))
    last = encode_cursor("pending", (1700000000.0 + questions - 100, "", ""))
    after_half = encode_cursor("sessions", (USER, f"s-{sessions // 2}"))
    asked = f"{questions:,} open questions"
    owned = f"{sessions:,} sessions of the user ({2 * sessions:,} in the app)"
    reads: dict[tuple[str, str], Callable[[], Awaitable[Any]]] = {
        ("pending first page", asked): lambda: pending_page(store, APP, user_id=USER, limit=100),
        ("pending middle page", asked): lambda: pending_page(
            store, APP, user_id=USER, limit=100, cursor=middle
        ),
        ("pending last page", asked): lambda: pending_page(
            store, APP, user_id=USER, limit=100, cursor=last
        ),
        ("pending whole list (before)", asked): lambda: store.list_interrupts(APP, USER),
        ("sessions first page", owned): lambda: sessions_page(store, APP, user_id=USER, limit=100),
        ("sessions middle page", owned): lambda: sessions_page(
            store, APP, user_id=USER, limit=100, cursor=after_half
        ),
        ("sessions whole list (before)", owned): lambda: store.list_sessions(APP, USER),
    }
    for name, read in reads.items():
        if "page" in name[0]:
            assert len((await read()).items) == 100, name
    load = os.getloadavg()[0]
    for (name, scale), times in (await _timings(reads, repeats)).items():
        figures.emit(
            "baton",
            f"{name}, {scale}",
            backend,
            round(statistics.median(times), 2),
            "ms",
            f"median of {repeats}; best {min(times):.2f} ms; load average {load:.2f}",
            best=round(min(times), 2),
            **({} if "whole" in name else {"target": 10.0}),
        )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="1,000 questions, 100k events")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], action="append")
    args = parser.parse_args()
    sessions = 100 if args.quick else 1000
    runs, events_per_session = 10, 1000
    for backend in args.backend or ["sqlite", "postgres"]:
        await _run(backend, sessions, runs, events_per_session, 5 if args.quick else 20)


async def _run(backend: str, sessions: int, runs: int, per_session: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "paging.db"
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        if backend == "sqlite":
            url = f"sqlite:///{path}"
        else:
            url = f"{POSTGRES}?search_path={schema}"
            await _schema(f"CREATE SCHEMA {schema}")
        store = SqlStore(url)
        try:
            await store.list_sessions(APP)  # migrates: baton's own tables and indexes
            started = time.perf_counter()
            if backend == "sqlite":
                fill = _fill_statements(sessions, runs, per_session, _SQLITE_SERIES)
                await asyncio.to_thread(_build_sqlite, path, fill)
            else:
                fill = _fill_statements(sessions, runs, per_session, _PG_SERIES)
                await _build_postgres(schema, fill)
            figures.emit(
                "baton",
                f"paging bench: build {sessions * runs:,} questions, "
                f"{sessions * per_session:,} events",
                backend,
                round(time.perf_counter() - started, 1),
                "s",
            )
            await measure(backend, store, sessions * runs, sessions, repeats)
        finally:
            await store.close()
            if backend == "postgres":
                await _schema(f"DROP SCHEMA {schema} CASCADE")


async def _schema(statement: str) -> None:
    engine = create_async_engine(POSTGRES)
    async with engine.begin() as connection:
        await connection.execute(text(statement))
    await engine.dispose()


if __name__ == "__main__":
    asyncio.run(main())
