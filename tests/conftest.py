"""Store fixtures shared by every test package: real backends, fresh per test.

- `store`: a `Store` on each backend in turn: memory, a SQLite file in `tmp_path`,
  the local PostgreSQL and the local MariaDB/MySQL, each in a database with no rows.
- `stores`: the `StoreFactory` behind `store`, to open more stores on the same
  database (separate SQL engines, like separate processes) with the test's clock.
  Its PostgreSQL and MySQL databases are reused: see `_reused_database_url`.
- `emptied_store_url`: a database URL with no rows, SQLite, PostgreSQL then MySQL, for
  code that opens its own store: `SqlStore(url)`, `DatabaseSessionService(url)`, a
  crash test's subprocess or a server. Its databases are at the latest schema; the
  PostgreSQL and MySQL ones are reused (see `_reused_database_url`). Pass it on as
  is: the PostgreSQL URL carries its schema as `?search_path=...`, which `SqlStore`
  understands.
- `emptied_postgres_url`: `emptied_store_url`'s PostgreSQL database alone, for tests of
  what only PostgreSQL does (`postgres_url` is a new schema, never migrated).
- `store_url`: like `emptied_store_url`, but a new, empty database, never migrated: for
  tests of what a store does to a new or old database (its migrations). Migrating one
  costs 2-4 s on MariaDB (every DDL statement commits and syncs), 0.3-0.4 s on
  PostgreSQL.
- `clock`: the `FakeClock` every fixture store reads; `clock.advance(s)` moves time.
- `live_store`: a store on each backend that reads real time, for workers and deadlines.

PostgreSQL is `postgresql+asyncpg://postgres@127.0.0.1:5432/test` unless
`BATON_TEST_POSTGRES_URL` says otherwise; MySQL is `mysql+asyncmy://root@127.0.0.1:3306/test`
unless `BATON_TEST_MYSQL_URL` says otherwise. When one cannot be reached its tests are
skipped, except under `CI=true`, where they fail. Whether it can is decided once per test
process, at its first use: a server that refuses is decided at once, one slow to answer
(a loaded machine) is given up to `CONNECT_BUDGET` (see `run_on_server`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest
from hypothesis import HealthCheck, settings
from sqlalchemy import make_url, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from baton.models import OpenAiModel
from baton.sessions.memory import MemoryStore
from baton.sessions.sql import SqlStore
from baton.sessions.sql.migrations import LATEST_VERSION
from baton.sessions.sql.schema import metadata, schema_version
from baton.sessions.store import Store
from tests.models.chat_server import ChatServer, serve_chat

if TYPE_CHECKING:  # the MCP test helpers import the MCP SDK: only the MCP tests load them
    from tests.tools.mcp_servers import CallLog

POSTGRES_URL = os.environ.get(
    "BATON_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)

MYSQL_URL = os.environ.get("BATON_TEST_MYSQL_URL", "mysql+asyncmy://root@127.0.0.1:3306/test")

Backend = Literal["memory", "sqlite", "postgres", "mysql"]

# Hypothesis's checks of time (200 ms an example, data generated fast enough) fail on a
# loaded machine (seen: "Data generation is extremely slow" with CPUs busy) and assert no
# behaviour: the properties themselves are checked as before.
settings.register_profile("baton", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("baton")

_POSTGRES = pytest.param("postgres", marks=pytest.mark.postgres)
_MYSQL = pytest.param("mysql", marks=pytest.mark.mysql)
reachability: dict[str, str | None] = {}
"""Per server, once per test process: None if it answered, else why it could not be reached."""


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


@pytest.fixture(params=["sqlite", _POSTGRES, _MYSQL])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh, empty, unmigrated database URL: a SQLite file, a new PostgreSQL schema,
    a new MySQL database. Tests that need no unmigrated database take
    `emptied_store_url`."""
    async with _database_url(request.param, tmp_path) as url:
        yield url


@pytest.fixture(params=["sqlite", _POSTGRES, _MYSQL])
async def emptied_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database URL with no rows, like `store_url`, but the PostgreSQL and MySQL ones are
    databases an earlier test left, emptied (see `_reused_database_url`): for servers and
    stores that need no unmigrated database."""
    async with _reused_database_url(request.param, tmp_path) as url:
        yield url


@pytest.fixture(params=[_POSTGRES])
async def postgres_url(tmp_path: Path) -> AsyncIterator[str]:
    """A new PostgreSQL schema's URL, for tests of what only PostgreSQL does."""
    async with _database_url("postgres", tmp_path) as url:
        yield url


@pytest.fixture(params=[_POSTGRES])
async def emptied_postgres_url(tmp_path: Path) -> AsyncIterator[str]:
    """A PostgreSQL schema's URL with no rows, at the latest schema: like `postgres_url`,
    but a schema an earlier test left, emptied (see `_reused_database_url`)."""
    async with _reused_database_url("postgres", tmp_path) as url:
        yield url


@pytest.fixture(params=[_POSTGRES, _MYSQL])
async def two_server_urls(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[str, str]]:
    """Two new databases on one server (PostgreSQL schemas, MySQL databases), unmigrated."""
    async with (
        _database_url(request.param, tmp_path) as first,
        _database_url(request.param, tmp_path) as second,
    ):
        yield first, second


@pytest.fixture
async def mysql_url(tmp_path: Path) -> AsyncIterator[str]:
    """A new MySQL/MariaDB database's URL, for tests of what only MySQL does."""
    async with _database_url("mysql", tmp_path) as url:
        yield url


@pytest.fixture(params=["memory", "sqlite", _POSTGRES, _MYSQL])
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
    async with _reused_database_url(backend, tmp_path) as url:
        factory = StoreFactory(backend, url, clock)
        try:
            yield factory
        finally:
            await factory.close()


@pytest.fixture(params=["memory", "sqlite", _POSTGRES, _MYSQL])
async def live_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A store on a fresh database of each backend in turn, on real time: for code that
    sleeps until something falls due (workers, deadlines)."""
    backend: Backend = request.param
    if backend == "memory":
        yield MemoryStore()
        return
    async with _reused_database_url(backend, tmp_path) as url:
        opened = SqlStore(url)
        try:
            yield opened
        finally:
            await opened.close()


@pytest.fixture
def store(stores: StoreFactory) -> Store:
    """A store on a fresh database of each backend in turn."""
    return stores.open()


def own_loop() -> asyncio.Runner:
    """A runner on an event loop of its own, for a sync test that runs async code: like
    `asyncio.run`, but it leaves the thread's current loop (the one pytest-asyncio set
    after an async test, and closes) in place. `asyncio.run` would put its own there and
    drop that one unclosed: its self-pipe, a Unix socket, then warned unclosed in
    whichever later test the garbage collector ran in."""
    return asyncio.Runner(loop_factory=asyncio.new_event_loop)


def sqlite_url(tmp_path: Path) -> str:
    """The URL of a new SQLite file in `tmp_path`."""
    return f"sqlite+aiosqlite:///{tmp_path / f'baton-{uuid.uuid4().hex[:8]}.db'}"


_sqlite_template: list[Path] = []  # the migrated SQLite file, once made (see migrated_sqlite)


async def migrated_sqlite(path: Path) -> Path:
    """Put a SQLite file at `path` with the latest schema and no rows; return `path`.

    It is a copy of one file migrated once per test run: copying costs a fraction of a
    millisecond, running every migration step 15-20 ms, and a store on the copy finds
    its schema up to date as on any database it used before. Tests of what a store does
    to a new or old file make their own (`sqlite_url`, `store_url`).
    """
    if not _sqlite_template:
        template = Path(tempfile.mkdtemp(prefix="baton-tests-")) / "migrated.db"
        store = SqlStore(f"sqlite+aiosqlite:///{template}")
        try:
            await store.list_sessions("template")  # a store migrates on first use
        finally:
            await store.close()
        _sqlite_template.append(template)
    shutil.copyfile(_sqlite_template[0], path)
    return path


@dataclass(frozen=True)
class _ServerDatabase:
    """A database made for tests on PostgreSQL (a schema) or MySQL (a database)."""

    backend: Backend
    name: str

    @property
    def url(self) -> str:
        if self.backend == "mysql":
            return str(make_url(MYSQL_URL).set(database=self.name))
        return f"{POSTGRES_URL}?search_path={self.name}"

    def table(self, name: str) -> str:
        """`name` qualified with this database, quoted for its server."""
        if self.backend == "mysql":
            return f"`{self.name}`.`{name}`"
        return f'"{self.name}"."{name}"'

    async def create(self) -> None:
        if self.backend == "mysql":
            await run_on_server("MySQL", MYSQL_URL, f"CREATE DATABASE `{self.name}`")
        else:
            await run_on_server("PostgreSQL", POSTGRES_URL, f'CREATE SCHEMA "{self.name}"')

    async def drop(self) -> None:
        if self.backend == "mysql":
            await run_on_server("MySQL", MYSQL_URL, f"DROP DATABASE IF EXISTS `{self.name}`")
        else:
            statement = f'DROP SCHEMA IF EXISTS "{self.name}" CASCADE'
            await run_on_server("PostgreSQL", POSTGRES_URL, statement)

    async def empty(self) -> bool:
        """Delete every row but the schema version's; False (and nothing deleted) unless
        the schema is at the latest version."""
        url = MYSQL_URL if self.backend == "mysql" else POSTGRES_URL
        version = f"SELECT version FROM {self.table(schema_version.name)}"
        try:
            async with _connection(url) as connection, connection.begin():
                if await connection.scalar(text(version)) != LATEST_VERSION:
                    return False
                for table in reversed(metadata.sorted_tables):
                    if table is not schema_version:
                        await connection.execute(text(f"DELETE FROM {self.table(table.name)}"))
            return True
        except DBAPIError:  # never migrated: no version table
            return False


_used: dict[Backend, list[_ServerDatabase]] = {"postgres": [], "mysql": []}
"""Databases earlier tests had from `_reused_database_url`, to be emptied for the next."""


def _new_server_database(backend: Backend) -> _ServerDatabase:
    return _ServerDatabase(backend, f"baton_test_{uuid.uuid4().hex[:12]}")


@asynccontextmanager
async def _database_url(backend: Backend, tmp_path: Path) -> AsyncIterator[str]:
    """Create a database for one test; remove it afterwards."""
    if backend == "sqlite":
        yield sqlite_url(tmp_path)
        return
    database = _new_server_database(backend)
    await database.create()
    try:
        yield database.url
    finally:
        await database.drop()


@asynccontextmanager
async def _reused_database_url(backend: Backend, tmp_path: Path) -> AsyncIterator[str]:
    """Like `_database_url`, but hands PostgreSQL and MySQL databases on from test to test.

    Creating a database and running every migration step on it costs 0.1-0.2 s a test
    on those servers; emptying one costs a few hundredths. So a database an earlier test
    left at the latest schema version is emptied (every row but the version row deleted)
    and given to the next test, whose first store finds the schema up to date; any other
    is dropped. It is emptied when the next test takes it, not when the last one ends:
    by then every fixture of that test has been torn down, whatever their order, so no
    server or store of it can still be writing. Ids and sequence numbers carry on from
    the last test rather than starting again. A test that changes the schema itself, or
    needs an unmigrated database, takes `store_url`. The databases left over are dropped
    when the test run ends. SQLite's is a new file, copied from a migrated one (see
    `migrated_sqlite`).
    """
    if backend == "sqlite":
        path = await migrated_sqlite(tmp_path / f"baton-{uuid.uuid4().hex[:8]}.db")
        yield f"sqlite+aiosqlite:///{path}"
        return
    free = _used[backend]
    database = None
    while free and database is None:
        left = free.pop()
        if await left.empty():
            database = left
        else:
            await left.drop()
    if database is None:
        database = _new_server_database(backend)
        await database.create()
    try:
        yield database.url
    finally:
        free.append(database)


def pytest_sessionfinish() -> None:
    """Drop the databases `_reused_database_url` kept for a next test, and remove the
    migrated SQLite file."""
    left = [database for free in _used.values() for database in free]
    if left:
        with own_loop() as runner:
            runner.run(_drop_all(left))
    for template in _sqlite_template:
        shutil.rmtree(template.parent, ignore_errors=True)


async def _drop_all(databases: list[_ServerDatabase]) -> None:
    for database in databases:
        gone = (pytest.skip.Exception, pytest.fail.Exception, OSError, DBAPIError)
        with suppress(*gone):  # its server went away
            await database.drop()


async def run_on_server(server: str, url: str, statement: str) -> None:
    """Run `statement` on `server`, once it is known to answer (see `_reachable`).

    A server found there that fails later (a statement's error, or no connection within
    `CONNECT_BUDGET`) fails the test at hand, not every test after it."""
    await _reachable(server, url)
    await _execute(url, statement)


CONNECT_BUDGET = 90.0
"""Seconds a server may take, over every try, to answer a connection before it counts as
not answering: a loaded machine (two test processes beside other work) has made single
connects take several seconds; a server that needs a minute and a half is broken."""

CONNECT_ATTEMPT = 15.0  # one try's bound


async def _reachable(server: str, url: str) -> None:
    """Skip (fail under CI=true) unless `server` answers; decided once per test process.

    A refusal, an unknown host, a login or database the server refuses is decided at
    once: the server is not there as the tests need it, and asking again will not change
    that. A connection that does not answer in time is asked again until
    `CONNECT_BUDGET` is spent, so a slow connect under load is not taken for an absent
    server (which under CI=true failed every test of that server that followed).
    """
    if server not in reachability:
        try:
            await _execute(url, "SELECT 1")
            reachability[server] = None
        except (OSError, TimeoutError, DBAPIError) as error:
            reachability[server] = _why(error)
    reason = reachability[server]
    if reason is not None:
        _skip_or_fail(server, url, reason)


async def _execute(url: str, statement: str) -> None:
    async with _connection(url) as connection, connection.begin():
        await connection.execute(text(statement))


@asynccontextmanager
async def _connection(url: str) -> AsyncIterator[AsyncConnection]:
    """A connection to `url` for the fixtures' own statements (see `_connect`)."""
    mysql = make_url(url).get_backend_name() == "mysql"
    bound = {"connect_timeout": round(CONNECT_ATTEMPT)} if mysql else {"timeout": CONNECT_ATTEMPT}
    engine = create_async_engine(url, connect_args=bound)
    try:
        connection = await _connect(engine)
        try:
            yield connection
        finally:
            await connection.close()
    finally:
        await engine.dispose()


async def _connect(engine: AsyncEngine) -> AsyncConnection:
    """Connect, trying again while the server is slow or busy (a try timed out, or it
    has no connection free) until `CONNECT_BUDGET` is spent; any other error is raised
    at once. The statements are not bounded: pytest's own timeout bounds a test."""
    deadline = time.monotonic() + CONNECT_BUDGET
    while True:
        try:
            # The drivers' own bound goes first; asyncmy's leaves the handshake unbounded.
            async with asyncio.timeout(2 * CONNECT_ATTEMPT):
                return await engine.connect()
        except (TimeoutError, DBAPIError) as error:
            if not _is_busy(error) or time.monotonic() >= deadline:
                raise
        await asyncio.sleep(0.5)  # a busy server's connections free up over time


def _is_busy(error: BaseException) -> bool:
    """True for an error that says "later", not "never": a timeout (asyncmy wraps its
    own in an OperationalError), too many connections (PostgreSQL 53300, MySQL 1040), a
    PostgreSQL still starting (57P03)."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, TimeoutError):
            return True
        code = getattr(cause, "sqlstate", None) or (getattr(cause, "args", None) or [None])[0]
        if code in {"53300", "57P03", 1040}:
            return True
        cause = cause.__cause__ or getattr(cause, "orig", None)
    return False


def _why(error: BaseException) -> str:
    last = f"{type(error).__name__}: {error}"
    return f"no connection within {CONNECT_BUDGET:.0f} s; {last}" if _is_busy(error) else last


def _skip_or_fail(server: str, url: str, reason: str) -> None:
    message = f"{server} isn't available at {url} ({reason})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI=true requires it.")
    pytest.skip(f"{message}; start it (make services) to run these tests.")


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A chat-completions server on 127.0.0.1 (see tests/models/chat_server.py)."""
    with serve_chat() as server:
        yield server


@pytest.fixture
async def openai_model(chat_server: ChatServer) -> AsyncIterator[OpenAiModel]:
    """The real OpenAI adapter, talking to `chat_server`."""
    model = OpenAiModel(
        model="openai/served-model", base_url=chat_server.url, api_key="k", max_retries=0
    )
    yield model
    await model.aclose()


@pytest.fixture
def log(tmp_path: Path) -> CallLog:
    """The MCP test server's log of its starts and calls (tests/tools/mcp_servers.py)."""
    from tests.tools.mcp_servers import CallLog

    return CallLog(tmp_path / "calls.log")
