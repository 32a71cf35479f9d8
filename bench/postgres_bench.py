"""baton on PostgreSQL against its floors, measured in the same run, interleaved.

    .venv/bin/python bench/postgres_bench.py [--quick]

- pg/raw-step: one step written by hand as ONE prepared asyncpg statement on one
  connection (advance the run's row, append the event row), durable commit: the floor
  of a chain step. pg/chain: baton's 100-node chain of async nodes (baton_bench's
  chain-async: no thread hop, like the floor), µs per node.
- pg/step-statement: baton's own one-statement step (`step.step_at_once` for a running
  run's step of one output event and its checkpoint, as the chain's nodes commit) sent
  100 times in a row on one asyncpg connection as the floor's is (prepared, arguments
  encoded beforehand), µs per step. Its ratio to pg/raw-step is what the statement
  costs beyond the floor's (the server's work and its bytes on the wire, the client's
  being the floor's); pg/chain minus it is baton's client side a node (engine,
  encoding, the store's path to asyncpg: its CPU and what that CPU brings, see
  pg/raw-step+cpu), which only the client can cut or hide.
- pg/raw-step-cpu, pg/chain-cpu: the client thread's CPU (`time.thread_time`, user and
  system) per floor step and per chain node, in the same rounds. pg/raw-step+cpu: the
  floor again, burning before each statement (a busy loop on the thread's CPU clock, no
  I/O) the CPU a chain node spent beyond a floor step in the round before: the floor's
  step with baton's client CPU and nothing else of baton's. pg/chain-beyond-cpu is
  pg/chain against it: near 1x when what a chain step costs beyond the floor is its
  client CPU and what that CPU brings with it (the server's backend idle meanwhile and
  woken again; the client's CPU counts more than its own length against pg/raw-step),
  not a wait of baton's own (a round trip, a wake-up, a thread hop).
- pg/raw-txn3: a hand-written resume as a 3-statement asyncpg transaction (lock and
  read the checkpoint, append the answer's event, write the new checkpoint): the floor
  of a resume. pg/resume: the `run_async` call answering a paused
  `START -> a -> ask -> b` run (as baton_bench's resume@0), ms.
- pg/raw-resume: a hand-written resume with baton's guarantee and round trips: read the
  checkpoint, then the answer's step and the next node's step, each one prepared
  statement (as pg/raw-step) committed durably, since the answer must be on disk before
  the next node runs: 3 round trips, 2 WAL flushes where pg/raw-txn3 waits for one.
  pg/resume-durable: pg/resume again, against this floor.
- pg/resume-round-trips: statements baton sends during that call, plus BEGIN and
  COMMIT of each explicit transaction. pg/resume-announcements, apart: the NOTIFYs
  telling other processes the question was answered, which a task of their own sends
  once the run's next step is sent, while that step waits for its commit (the pause's
  own is sent before the call, as it is long before a person answers).
- pg/bytes-per-step: growth of baton's tables (`pg_total_relation_size`, after VACUUM)
  over N chain steps, divided by N. VACUUM runs after every chain, as autovacuum does
  on a busy database: each step rewrites the run's and the session's rows, and their
  old copies are pruned as steps go, unless a transaction older than them is open
  anywhere on the server (a snapshot's horizon spans every database), when they wait
  for VACUUM and new copies move to new pages meanwhile. Vacuumed once at the end,
  the figure counted those pages: 440-900 B, with other test suites on the server.

Rounds alternate floor and baton so both see the same machine load; each figure is
the median over rounds. A chain round gives baton's mean µs per node (a run can only be
timed whole), so a floor round gives the mean of its 100 steps too, timed whole: the
same statistic on both sides (a median of single steps would leave out the floor's slow
commits while the chain's mean counts baton's). Prints one JSON object per figure (see
`bench/report.py`), ratios included (`ratio` = baton / floor).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import asyncpg  # pyright: ignore[reportMissingTypeStubs] -- the floor is asyncpg itself
import baton_bench as bench
import figures
from sqlalchemy import event as sa_event

from baton.events import Event
from baton.sessions.services import BaseSessionService, DatabaseSessionService
from baton.sessions.sql.backends import open_dialect
from baton.sessions.sql.direct import plan_for
from baton.sessions.sql.listener import ANNOUNCE
from baton.sessions.sql.postgres import asyncpg_connect_args
from baton.sessions.sql.step import step_at_once
from baton.sessions.store import Lease, SessionKey, StepCommit
from baton.types import InvocationId

CHECKPOINT = '{"node":"chain","path":"chain@1","run_id":"1","status":"running"}'
EVENT = '{"id":"%s","author":"n1","content":{"role":"model","parts":[{"text":"x"}]}}'
_FLOOR_TABLES = """
CREATE TABLE runs (id text PRIMARY KEY, version int NOT NULL, checkpoint json NOT NULL);
CREATE TABLE steps (seq bigserial PRIMARY KEY, run_id text NOT NULL, event json NOT NULL);
INSERT INTO runs VALUES ('run-1', 0, '{}');
"""
_RAW_STEP = """
WITH advanced AS (
  UPDATE runs SET version = version + 1, checkpoint = $2::json WHERE id = $1 RETURNING id
) INSERT INTO steps (run_id, event) SELECT id, $3::json FROM advanced
"""
_RESUME_READ = "SELECT version, checkpoint FROM runs WHERE id = $1"
_TXN = (
    "SELECT version, checkpoint FROM runs WHERE id = $1 FOR UPDATE",
    "INSERT INTO steps (run_id, event) VALUES ($1, $2::json)",
    "UPDATE runs SET version = $2, checkpoint = $3::json WHERE id = $1",
)


def emit(workload: str, value: float | None, unit: str, **extra: float) -> None:
    figures.emit("baton", workload, "postgres", value, unit, **extra)


@asynccontextmanager
async def floor_connection() -> AsyncIterator[Any]:
    """An asyncpg connection in a schema of its own holding the floor's two tables."""
    schema = f"baton_floor_{uuid.uuid4().hex[:8]}"
    await bench.run_on_postgres(f'CREATE SCHEMA "{schema}"')
    url = open_dialect(f"{bench.POSTGRES_URL}?search_path={schema}").url
    connection: Any = await asyncpg.connect(**asyncpg_connect_args(url))  # pyright: ignore[reportUnknownMemberType]
    try:
        await connection.execute(_FLOOR_TABLES)
        yield connection
    finally:
        await connection.close()
        await bench.run_on_postgres(f'DROP SCHEMA "{schema}" CASCADE')


async def raw_steps(connection: Any, steps: int, cpu: float = 0.0) -> float:
    """Mean µs of a step, one prepared statement each, over `steps` steps in a row:
    the statistic `chain_once` gives for baton (a run's time over its nodes). With
    `cpu`, each statement is sent after burning that many seconds of this thread's CPU
    (see pg/raw-step+cpu)."""
    started = time.perf_counter()
    for i in range(steps):
        if cpu:
            burn(cpu)
        await connection.execute(_RAW_STEP, "run-1", CHECKPOINT, EVENT % i)
    return (time.perf_counter() - started) / steps * 1e6


def burn(seconds: float) -> None:
    """Keep this thread busy until it has spent `seconds` more of CPU."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


async def on_cpu(measured: Awaitable[float]) -> tuple[float, float]:
    """`measured`'s figure (µs per step) and this thread's CPU meanwhile, µs per step
    (every figure here is over `bench.CHAIN_NODES` steps)."""
    started = time.thread_time()
    figure = await measured
    return figure, (time.thread_time() - started) / bench.CHAIN_NODES * 1e6


class StepStatements:
    """baton's one-statement step of a chain node, replayed on a bare asyncpg connection to
    the service's schema (see pg/step-statement): each series of steps advances a run of
    its own in a session of its own, as each chain run does."""

    def __init__(self, service: DatabaseSessionService, connection: Any) -> None:
        self._service = service
        self._dialect: Any = service.store._executor._engine.dialect  # pyright: ignore[reportAttributeAccessIssue] -- the store's own compiled statement
        self._connection = connection

    async def steps(self, steps: int) -> float:
        """Mean µs of a step over `steps` steps in a row, as `raw_steps` times the floor."""
        sql, arguments = await self._new_run(steps)
        started = time.perf_counter()
        for each in arguments:
            await self._connection.fetch(sql, *each)
        return (time.perf_counter() - started) / steps * 1e6

    async def _new_run(self, steps: int) -> tuple[str, list[list[Any]]]:
        """A running invocation in a new session, and the SQL and arguments of its next
        `steps` steps, encoded as the store encodes them."""
        session = await self._service.create_session(app_name="bench", user_id="u")
        key = SessionKey("bench", "u", session.id)
        run = InvocationId(f"e-{uuid.uuid4()}")
        lease = Lease(run, "bench", time.time() + 3600, 1)
        first = StepCommit(key, run, 0, (Event(invocation_id=run, author="user"),))
        created = replace(first, fingerprint="bench", lease=lease)
        version = await self._service.store.commit_step(created)
        sql, arguments = "", []
        for i in range(steps):
            event = Event.of_output(
                "go", invocation_id=run, author="chain", path=f"chain@1/n{i}@1", run_id="1"
            )
            step = replace(
                first,
                expected_version=version + i,
                events=(event,),
                checkpoint=CHAIN_CHECKPOINT,
                lease=lease,
            )
            statement, params = step_at_once(step, time.time())
            plan = plan_for(statement, tuple(params), self._dialect, convert_results=False)
            sql = plan.sql
            arguments.append(plan.arguments(params))
        return sql, arguments


# A chain's checkpoint between two nodes, as the engine writes it.
CHAIN_CHECKPOINT = {
    "node": "chain",
    "path": "chain@1",
    "run_id": "1",
    "status": "running",
    "attempt": 1,
    "input": {"role": "user", "parts": [{"text": "go"}]},
    "message_input": True,
    "child": {"started": True, "queue": [{"node": "n50", "input": "go"}]},
}


@asynccontextmanager
async def step_statements(service: BaseSessionService) -> AsyncIterator[StepStatements]:
    """`StepStatements` on a connection of its own to the service's schema."""
    assert isinstance(service, DatabaseSessionService)
    url = service.store._dialect.url  # pyright: ignore[reportAttributeAccessIssue] -- its schema
    connection: Any = await asyncpg.connect(**asyncpg_connect_args(url))  # pyright: ignore[reportUnknownMemberType]
    try:
        yield StepStatements(service, connection)
    finally:
        await connection.close()


async def raw_transactions(connection: Any, count: int) -> float:
    """Median ms of a 3-statement transaction (BEGIN, 3 statements, COMMIT)."""
    seconds: list[float] = []
    for i in range(count):
        started = time.perf_counter()
        async with connection.transaction():
            row = await connection.fetchrow(_TXN[0], "run-1")
            await connection.execute(_TXN[1], "run-1", EVENT % i)
            await connection.execute(_TXN[2], "run-1", row["version"] + 1, CHECKPOINT)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) * 1e3


async def raw_resumes(connection: Any, count: int) -> float:
    """Median ms of a resume as baton must make it (see pg/raw-resume): one read, then
    two steps, each a statement committed durably on its own."""
    seconds: list[float] = []
    for i in range(count):
        started = time.perf_counter()
        await connection.fetchrow(_RESUME_READ, "run-1")
        await connection.execute(_RAW_STEP, "run-1", CHECKPOINT, EVENT % f"answer-{i}")
        await connection.execute(_RAW_STEP, "run-1", CHECKPOINT, EVENT % f"next-{i}")
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) * 1e3


class RoundTrips:
    """Counts what a store sends PostgreSQL: each statement (through the engine or
    straight to asyncpg), and BEGIN and COMMIT of each explicit transaction; apart, the
    NOTIFY statements announcing a step's questions to other processes, which a task
    of their own sends after the step's commit while the run goes on (see
    `baton.sessions.sql.listener.Announcer`)."""

    def __init__(self, service: DatabaseSessionService) -> None:
        executor: Any = service.store._executor  # pyright: ignore[reportAttributeAccessIssue] -- counting what reaches the database
        self._engine = executor._engine.sync_engine
        self._direct = executor._direct
        self._announcing = str(ANNOUNCE.compile(dialect=self._engine.dialect))
        self.count = 0
        self.announcements = 0

    def _statement(self, *_args: Any) -> None:
        self.count += 1

    def _direct_statement(self, sql: str) -> None:
        if sql == self._announcing:
            self.announcements += 1
        else:
            self.count += 1

    def _commit(self, *_args: Any) -> None:
        self.count += 2

    @asynccontextmanager
    async def counting(self) -> AsyncIterator[None]:
        sa_event.listen(self._engine, "before_cursor_execute", self._statement)
        sa_event.listen(self._engine, "commit", self._commit)
        try:
            with self._direct.watching(self._direct_statement):
                yield
        finally:
            sa_event.remove(self._engine, "before_cursor_execute", self._statement)
            sa_event.remove(self._engine, "commit", self._commit)


async def chain_once(service: DatabaseSessionService, runner: Any) -> float:
    """µs per node of one 100-node chain run in a fresh session."""
    session = await service.create_session(app_name="bench", user_id="u")
    started = time.perf_counter()
    events = await bench.drain(runner, session.id, bench.text_message("go"))
    elapsed = time.perf_counter() - started
    assert events == bench.CHAIN_NODES, f"expected {bench.CHAIN_NODES} events, got {events}"
    return elapsed / bench.CHAIN_NODES * 1e6


async def resume_once(service: DatabaseSessionService, runner: Any) -> tuple[float, int, int]:
    """One paused run answered: (ms of the answering call, its round trips, the
    announcements sent meanwhile)."""
    session = await service.create_session(app_name="bench", user_id="u")
    await bench.drain(runner, session.id, bench.text_message("go"))
    await service.store._announcer.flush()  # pyright: ignore[reportAttributeAccessIssue,reportOptionalMemberAccess] -- the pause's own, sent before the count begins
    trips = RoundTrips(service)
    async with trips.counting():
        started = time.perf_counter()
        await bench.drain(runner, session.id, bench.answer_message())
        elapsed = time.perf_counter() - started
    return elapsed * 1e3, trips.count, trips.announcements


async def table_bytes(service: DatabaseSessionService) -> int:
    """baton's tables with their indexes and TOAST, after VACUUM, in bytes."""
    engine: Any = service.store._executor._engine  # pyright: ignore[reportAttributeAccessIssue] -- the store's own schema
    autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
    async with autocommit.connect() as connection:
        tables = (await connection.exec_driver_sql(_BATON_TABLES)).scalars().all()
        for table in tables:
            await connection.exec_driver_sql(f'VACUUM "{table}"')
        sizes = await connection.exec_driver_sql(_SIZES)
        return int(sizes.scalar() or 0)


_BATON_TABLES = (
    "SELECT tablename FROM pg_tables "
    "WHERE schemaname = current_schema() AND tablename LIKE 'baton%'"
)
_SIZES = (
    "SELECT sum(pg_total_relation_size(format('%I.%I', schemaname, tablename))) "
    "FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'baton%'"
)


async def bytes_per_step(service: DatabaseSessionService, runs: int) -> float:
    """Growth of the tables per chain step over `runs` chains (after one warm-up run),
    vacuumed after each."""
    runner = bench.runner_for(bench.async_chain_workflow(), service)
    await chain_once(service, runner)
    before = after = await table_bytes(service)
    for _ in range(runs):
        await chain_once(service, runner)
        after = await table_bytes(service)
    return (after - before) / (runs * bench.CHAIN_NODES)


@asynccontextmanager
async def own_database() -> AsyncIterator[DatabaseSessionService]:
    """A service on a database of its own: VACUUM there removes every dead row version,
    whatever snapshots other users of the shared test database hold."""
    name = f"baton_bytes_{uuid.uuid4().hex[:8]}"
    admin: Any = await asyncpg.connect(**asyncpg_connect_args(open_dialect(bench.POSTGRES_URL).url))  # pyright: ignore[reportUnknownMemberType]
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')  # outside a transaction: autocommit
        url = open_dialect(bench.POSTGRES_URL).url.set(database=name)
        service = DatabaseSessionService(url.render_as_string(hide_password=False))
        try:
            yield service
        finally:
            await service.close()
            await admin.execute(f'DROP DATABASE "{name}"')
    finally:
        await admin.close()


async def measure(rounds: int, size_runs: int) -> None:
    chain: list[float] = []
    floor_step: list[float] = []
    cpu = CpuFigures([], [], [])
    statement_step: list[float] = []
    resume: list[float] = []
    floor_txn: list[float] = []
    floor_resume: list[float] = []
    trips: list[int] = []
    announced: list[int] = []
    async with (
        floor_connection() as floor,
        bench.open_service("postgres") as service,
        step_statements(service) as statements,
    ):
        assert isinstance(service, DatabaseSessionService)
        resumer = bench.runner_for(bench.resume_workflow(), service)
        chainer = bench.runner_for(bench.async_chain_workflow(), service)
        await chain_once(service, chainer)  # warm caches and connections
        await resume_once(service, resumer)
        await raw_steps(floor, 20)
        await statements.steps(20)
        extra_cpu = 0.0  # seconds a chain node spent beyond a floor step, the round before
        for _ in range(rounds):
            step, step_cpu = await on_cpu(raw_steps(floor, bench.CHAIN_NODES))
            floor_step.append(step)
            node, node_cpu = await on_cpu(chain_once(service, chainer))
            chain.append(node)
            cpu.floor.append(step_cpu)
            cpu.chain.append(node_cpu)
            if extra_cpu:
                cpu.floor_burning.append(await raw_steps(floor, bench.CHAIN_NODES, extra_cpu))
            extra_cpu = max(0.0, node_cpu - step_cpu) / 1e6
            statement_step.append(await statements.steps(bench.CHAIN_NODES))
            floor_txn.append(await raw_transactions(floor, 5))
            floor_resume.append(await raw_resumes(floor, 5))
            for _ in range(5):
                ms, count, announcements = await resume_once(service, resumer)
                resume.append(ms)
                trips.append(count)
                announced.append(announcements)
    async with own_database() as service:
        per_step = await bytes_per_step(service, size_runs)
    floors = Floors(floor_step, floor_txn, floor_resume)
    report(chain, statement_step, resume, floors, trips, announced, per_step)
    report_cpu(chain, floors, cpu)


@dataclass(frozen=True)
class Floors:
    """What each floor measured, round by round (see the module docstring)."""

    step: list[float]  # pg/raw-step
    txn: list[float]  # pg/raw-txn3
    resume: list[float]  # pg/raw-resume


@dataclass(frozen=True)
class CpuFigures:
    """The client thread's CPU per step, round by round, and the floor burning the
    chain's extra CPU (see pg/raw-step+cpu)."""

    floor: list[float]  # pg/raw-step-cpu
    chain: list[float]  # pg/chain-cpu
    floor_burning: list[float]  # pg/raw-step+cpu


def report_cpu(chain: list[float], floors: Floors, cpu: CpuFigures) -> None:
    floor_cpu, chain_cpu = statistics.median(cpu.floor), statistics.median(cpu.chain)
    emit("pg/raw-step-cpu", floor_cpu, "us")
    emit("pg/chain-cpu", chain_cpu, "us/node", ratio=chain_cpu / floor_cpu)
    if cpu.floor_burning:
        burning, raw_step = statistics.median(cpu.floor_burning), statistics.median(floors.step)
        emit("pg/raw-step+cpu", burning, "us", ratio=burning / raw_step)
        step = statistics.median(chain)
        emit("pg/chain-beyond-cpu", step, "us/node", ratio=step / burning)


def report(
    chain: list[float],
    statement_step: list[float],
    resume: list[float],
    floors: Floors,
    trips: list[int],
    announced: list[int],
    per_step: float,
) -> None:
    step, raw_step = statistics.median(chain), statistics.median(floors.step)
    emit("pg/raw-step", raw_step, "us")
    emit("pg/chain", step, "us/node", ratio=step / raw_step, target=1.3)
    statement = statistics.median(statement_step)
    emit("pg/step-statement", statement, "us", ratio=statement / raw_step)
    answer, raw_txn = statistics.median(resume), statistics.median(floors.txn)
    emit("pg/raw-txn3", raw_txn, "ms")
    emit("pg/resume", answer, "ms", ratio=answer / raw_txn, target=2.0)
    raw_resume = statistics.median(floors.resume)
    emit("pg/raw-resume", raw_resume, "ms")
    emit("pg/resume-durable", answer, "ms", ratio=answer / raw_resume)
    emit("pg/resume-round-trips", float(max(trips)), "round trips", target=3.0)
    emit("pg/resume-announcements", float(max(announced)), "statements")
    emit("pg/bytes-per-step", per_step, "bytes", target=600.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    quick = bool(args.quick)
    asyncio.run(measure(rounds=3 if quick else 10, size_runs=10 if quick else 20))


if __name__ == "__main__":
    main()
