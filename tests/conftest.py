"""Store fixtures shared by every test package: real backends, fresh per test.

- `store`: a `Store` on each backend in turn: memory, a SQLite file in `tmp_path`,
  and the local PostgreSQL in a schema created for the test and dropped after it.
- `stores`: the `StoreFactory` behind `store`, to open more stores on the same
  database (separate SQL engines, like separate processes) with the test's clock.
- `store_url`: a fresh, empty database URL, SQLite then PostgreSQL, for code that
  opens its own store: `SqlStore(url)`, `DatabaseSessionService(url)`, a crash
  test's subprocess or a server. Pass it on as is: the PostgreSQL URL carries its
  schema as `?search_path=...`, which `SqlStore` understands.
- `clock`: the `FakeClock` every fixture store reads; `clock.advance(s)` moves time.
- `live_store`: a store on each backend that reads real time, for workers and deadlines.

PostgreSQL is `postgresql+asyncpg://postgres@127.0.0.1:5432/test` unless
`BATON_TEST_POSTGRES_URL` says otherwise. When it cannot be reached its tests are
skipped, except under `CI=true`, where they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from baton.sessions.memory import MemoryStore
from baton.sessions.sql import SqlStore
from baton.sessions.store import Store

POSTGRES_URL = os.environ.get(
    "BATON_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)

Backend = Literal["memory", "sqlite", "postgres"]

_POSTGRES = pytest.param("postgres", marks=pytest.mark.postgres)
_unreachable: list[str] = []  # why PostgreSQL could not be reached, once per test run


class FakeClock:
    """A clock that moves only when told, plus a millisecond per reading.

    The tick keeps timestamps strictly increasing, so "oldest first" orderings are
    the same on every backend.
    """

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 0.001
        return self.now

    def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`."""
        self.now += seconds


@dataclass
class StoreFactory:
    """Opens stores on one test's database; closes them when the test ends."""

    backend: Backend
    url: str | None
    clock: FakeClock
    opened: list[Store] = field(default_factory=list[Store])
    _memory: MemoryStore | None = None

    def open(self) -> Store:
        """A store on this test's database.

        SQL backends get a new engine each time (as another process would); memory
        has one shared instance, since its data lives in that object.
        """
        if self.url is None:
            if self._memory is None:
                self._memory = MemoryStore(clock=self.clock)
                self.opened.append(self._memory)
            return self._memory
        store = SqlStore(self.url, clock=self.clock)
        self.opened.append(store)
        return store

    async def close(self) -> None:
        """Close every store opened here."""
        for store in self.opened:
            await store.close()


@pytest.fixture
def clock() -> FakeClock:
    """The test's clock (see FakeClock)."""
    return FakeClock()


@pytest.fixture(params=["sqlite", _POSTGRES])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh, empty database URL: a SQLite file, then a new PostgreSQL schema."""
    async with _database_url(request.param, tmp_path) as url:
        yield url


@pytest.fixture(params=[_POSTGRES])
async def postgres_url(tmp_path: Path) -> AsyncIterator[str]:
    """A new PostgreSQL schema's URL, for tests of what only PostgreSQL does."""
    async with _database_url("postgres", tmp_path) as url:
        yield url


@pytest.fixture(params=["memory", "sqlite", _POSTGRES])
async def stores(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[StoreFactory]:
    """Opens stores on a fresh database of each backend in turn."""
    backend: Backend = request.param
    if backend == "memory":
        factory = StoreFactory(backend, None, clock)
        yield factory
        await factory.close()
        return
    async with _database_url(backend, tmp_path) as url:
        factory = StoreFactory(backend, url, clock)
        try:
            yield factory
        finally:
            await factory.close()


@pytest.fixture(params=["memory", "sqlite", _POSTGRES])
async def live_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A store on a fresh database of each backend in turn, on real time: for code that
    sleeps until something falls due (workers, deadlines)."""
    backend: Backend = request.param
    if backend == "memory":
        yield MemoryStore()
        return
    async with _database_url(backend, tmp_path) as url:
        opened = SqlStore(url)
        try:
            yield opened
        finally:
            await opened.close()


@pytest.fixture
def store(stores: StoreFactory) -> Store:
    """A store on a fresh database of each backend in turn."""
    return stores.open()


def sqlite_url(tmp_path: Path) -> str:
    """The URL of a new SQLite file in `tmp_path`."""
    return f"sqlite+aiosqlite:///{tmp_path / f'baton-{uuid.uuid4().hex[:8]}.db'}"


@asynccontextmanager
async def _database_url(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    """Create a database for one test; remove it afterwards."""
    if backend == "sqlite":
        yield sqlite_url(tmp_path)
        return
    schema = f"baton_test_{uuid.uuid4().hex[:12]}"
    await _run_on_postgres(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{POSTGRES_URL}?search_path={schema}"
    finally:
        await _run_on_postgres(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def _run_on_postgres(statement: str) -> None:
    if _unreachable:
        _skip_or_fail(_unreachable[0])
    engine = create_async_engine(POSTGRES_URL, connect_args={"timeout": 5})
    try:
        async with engine.begin() as connection:
            await connection.execute(text(statement))
    except (OSError, TimeoutError) as error:
        _unreachable.append(f"{type(error).__name__}: {error}")
        _skip_or_fail(_unreachable[0])
    finally:
        await engine.dispose()


def _skip_or_fail(reason: str) -> None:
    message = f"PostgreSQL isn't available at {POSTGRES_URL} ({reason})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI=true requires it.")
    pytest.skip(f"{message}; start it to run these tests.")
