"""Human-in-the-loop runs over HTTP against real `baton api_server` processes (loopback).

    .venv/bin/python bench/http_bench.py [--quick] [--clients 16] [--runs 4000] [--rounds 2]
        [--seconds 60] [--backend sqlite|postgres] [--processes 1|2] [--affinity]

Each of N concurrent clients repeats a whole run: create a session, `POST /run` (the
run asks its question and pauses), then answer it with `POST .../respond` (the run
finishes). Requests go to the server processes in turn, as a load balancer would; with
`--affinity`, every request of client i goes to process i mod N, as a load balancer
keeping each session to one process would (the figures say so). The
clients live in a load generator of their own, cheap enough that the servers' CPU is
what is measured, not the client's: on 2 cores the two compete, and the client's CPU
lowers the most two server processes can give. It is `http_load.c` (one thread, epoll,
keep-alive HTTP/1.1, checking every response as the Python one does), built with the
machine's C compiler into the temporary directory, once per version of its source; where
no compiler builds it, `http_load.py`, the same runs and checks in Python at more than
twice the CPU per request (0.08 ms against 0.035), said on stderr and in the figures.

Prints, per backend and process count: completed runs per second, the median and 99th
percentile of the answering call, and the CPU per request of each part (user + system
time from /proc over the measured runs, divided by the requests served): the servers
(S), the load generator (C), and on PostgreSQL the database (D: the backends serving
the servers' connections, and the server's own processes, which write and flush the
WAL); with the CPU the rest of the machine used meanwhile (other
processes), as cores. From one process's S, D and C on PostgreSQL it also gives the
most two processes' runs/s can be of one's on this machine's cores (`bound`: two
processes keep every core busy, one keeps its own core busy). Where the database has
pg_stat_statements (`BATON_BENCH_POSTGRES_URL` naming a scratch server started with
it), it also counts the statements per run, by kind, and the commits per run.
The floor is the same runs through the library in this process, measured in the same
run: the servers' CPU per request is also given as a ratio to it, and two
processes' runs/s as a ratio to one's, since on a shared machine the absolute figures
move with the load (printed with each). The load is bounded in runs and in seconds;
every server listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import figures
from baton_bench import POSTGRES_URL, run_on_postgres
from sqlalchemy.engine import make_url

from baton import Runner, types
from baton.server.catalog import load_app, open_session_service

ROOT = Path(__file__).parents[1]
APPS = Path(__file__).parent / "http_apps"
LOAD = Path(__file__).parent / "http_load.py"
LOAD_C = Path(__file__).parent / "http_load.c"
BATON = ROOT / ".venv" / "bin" / "baton"
APP = "approve"
_URL = re.compile(rb"http://127\.0\.0\.1:(\d+)")
_TICKS = os.sysconf("SC_CLK_TCK")
_POSTGRES_PORT = make_url(POSTGRES_URL).port or 5432
SUMMARY_LIMIT = 64 * 1024 * 1024  # bytes of the load generator's summary line


def cpu_seconds(pid: int) -> float:
    """User + system CPU time process `pid` used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def machine_cpu_seconds() -> float:
    """CPU time every core of the machine spent busy so far (/proc/stat)."""
    counters = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = counters[3] + counters[4]  # idle, iowait
    return (sum(counters[:8]) - idle) / _TICKS


@dataclass
class Server:
    """A `baton api_server` process this benchmark started."""

    process: asyncio.subprocess.Process
    url: str

    def cpu_seconds(self) -> float:
        """User + system CPU time the process used so far."""
        return cpu_seconds(self.process.pid)

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), 15)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


async def start_server(
    db: str, errors: Path, *, under: tuple[str, ...] = (), start_within: float = 60
) -> Server:
    """`baton api_server` on the bench app and `db`, on a free loopback port; run by the
    command `under` when given (e.g. valgrind, which is given `.venv`'s Python and the
    `baton` script), given `start_within` seconds to start."""
    command = (*under, sys.executable, str(BATON)) if under else (str(BATON),)
    with errors.open("w") as sink:
        process = await asyncio.create_subprocess_exec(
            *command,
            "api_server",
            str(APPS),
            "--db",
            db,
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--grace",
            "1",
            stdout=asyncio.subprocess.PIPE,
            stderr=sink,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"},
        )
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), start_within)
    found = _URL.search(line)
    if found is None:
        process.kill()
        raise RuntimeError(f"the server did not start: {line!r} {errors.read_text()[-500:]}")
    asyncio.get_running_loop().create_task(_drain(process.stdout))
    return Server(process, f"http://127.0.0.1:{found.group(1).decode()}")


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


@asynccontextmanager
async def database(backend: str, folder: Path) -> AsyncIterator[str]:
    """A fresh database for the servers: a SQLite file, or a PostgreSQL schema."""
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'http.db'}"
        return
    schema = f"baton_httpbench_{uuid.uuid4().hex[:8]}"
    await run_on_postgres(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{POSTGRES_URL}?search_path={schema}"
    finally:
        await run_on_postgres(f'DROP SCHEMA "{schema}" CASCADE')


@dataclass(frozen=True)
class Load:
    """What the load generator reported of the measured runs."""

    runs: int
    requests: int
    answers: list[float]
    failures: list[str]
    elapsed: float
    client_cpu: float  # the load generator's own CPU seconds while measuring

    def __add__(self, other: Load) -> Load:
        """Two measurements' runs as one."""
        return Load(
            self.runs + other.runs,
            self.requests + other.requests,
            self.answers + other.answers,
            self.failures + other.failures,
            self.elapsed + other.elapsed,
            self.client_cpu + other.client_cpu,
        )


@dataclass(frozen=True)
class Result:
    """One measurement's figures."""

    processes: int
    clients: int
    affinity: bool  # each client kept to one process (not each request to the next)
    load: Load
    server_cpu: float  # seconds, the server processes together
    # Seconds of PostgreSQL's processes (None: SQLite): the backends serving the servers,
    # and the server's own (postmaster, WAL writer, checkpointer, background writer...).
    database_cpu: float | None
    machine_cpu: float  # seconds, every core busy with anything
    statements: Statements | None = None  # what the database ran meanwhile, if it counts

    def __add__(self, other: Result) -> Result:
        """Two rounds of the same measurement as one."""
        database = None
        if self.database_cpu is not None and other.database_cpu is not None:
            database = self.database_cpu + other.database_cpu
        return Result(
            self.processes,
            self.clients,
            self.affinity,
            self.load + other.load,
            self.server_cpu + other.server_cpu,
            database,
            self.machine_cpu + other.machine_cpu,
            _add_statements(self.statements, other.statements),
        )

    @property
    def runs_per_second(self) -> float:
        return self.load.runs / self.load.elapsed

    def per_request(self, cpu: float) -> float:
        """Milliseconds of `cpu` (seconds) per request served."""
        return cpu / self.load.requests * 1000 if self.load.requests else float("nan")

    @property
    def where(self) -> str:
        processes = f"{self.processes} process{'es' if self.processes > 1 else ''}"
        kept = ", each client kept to one" if self.affinity and self.processes > 1 else ""
        return f"{processes}{kept}, {self.clients} clients"


async def measure(
    backend: str, processes: int, clients: int, runs: int, seconds: float, affinity: bool = False
) -> Result:
    """Serve with `processes` servers and drive `clients` clients against them (each kept
    to one server with `affinity`)."""
    with tempfile.TemporaryDirectory() as folder:
        async with database(backend, Path(folder)) as db:
            servers = [await start_server(db, Path(folder) / f"s{i}.err") for i in range(processes)]
            try:
                return await _drive(servers, backend, clients, runs, seconds, affinity)
            finally:
                for server in servers:
                    await server.stop()


async def _drive(
    servers: list[Server], backend: str, clients: int, runs: int, seconds: float, affinity: bool
) -> Result:
    """Run the load generator against `servers`; read the CPU of every part around the
    runs it measures (after its warm-up)."""
    load = await asyncio.create_subprocess_exec(
        *load_generator().command,
        *(s.url for s in servers),
        *("--clients", str(clients), "--runs", str(runs), "--seconds", str(seconds)),
        # Warm enough that each database connection has planned its statements.
        *("--warm", str(clients * 8)),
        *(("--affinity",) if affinity else ()),
        stdout=asyncio.subprocess.PIPE,
        # Its summary is one line with every answer's latency: past 64 KiB (some 3,000
        # runs), the default limit, reading it failed.
        limit=SUMMARY_LIMIT,
    )
    assert load.stdout is not None
    try:
        async with asyncio.timeout(seconds + 120):  # bounded, whatever the servers do
            line = await load.stdout.readline()
            if line.strip() != b"measuring":
                raise RuntimeError(f"the warm-up runs failed: {line[:600]!r}")
            statements_before = await count_statements() if backend == "postgres" else None
            machine_before = machine_cpu_seconds()
            server_before = sum(s.cpu_seconds() for s in servers)
            database_before = await database_cpu(servers) if backend == "postgres" else None
            summary = json.loads(await load.stdout.readline())
            server_cpu = sum(s.cpu_seconds() for s in servers) - server_before
            machine = machine_cpu_seconds() - machine_before
            database = None
            if database_before is not None:
                database = _cpu_spent(database_before, await database_cpu(servers))
            statements = None
            if statements_before is not None:
                statements = (await count_statements() or statements_before) - statements_before
    finally:
        if load.returncode is None:
            load.kill()
        await load.wait()
    return Result(
        len(servers), clients, affinity, Load(**summary), server_cpu, database, machine, statements
    )


@dataclass(frozen=True)
class LoadGenerator:
    command: tuple[str, ...]
    name: str  # which one, for the figures' notes


@functools.cache
def load_generator() -> LoadGenerator:
    """`http_load.c` built with the machine's C compiler (cached in the temporary
    directory by the source's hash), or, where none builds it, `http_load.py` (the same
    runs and checks, at more than twice the CPU a request), saying why on stderr."""
    source = LOAD_C.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    built = Path(tempfile.gettempdir()) / f"baton-http-load-{digest}"
    if not built.exists():
        compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if compiler is None:
            return _python_load("no C compiler (cc, gcc or clang) found")
        partial = built.with_name(f"{built.name}.{os.getpid()}")
        compiled = subprocess.run(
            [compiler, "-O2", "-o", str(partial), str(LOAD_C)],
            capture_output=True,
            text=True,
            check=False,
        )
        if compiled.returncode != 0:
            return _python_load(f"{compiler} failed: {compiled.stderr.strip()[-300:]}")
        partial.replace(built)  # whole or not at all, whoever builds it at the same time
    return LoadGenerator((str(built),), LOAD_C.name)


def _python_load(why: str) -> LoadGenerator:
    print(f"http_bench: {why}; the load generator is {LOAD.name}", file=sys.stderr)
    return LoadGenerator((sys.executable, str(LOAD)), LOAD.name)


@dataclass(frozen=True)
class Statements:
    """The database's statement counters (pg_stat_statements): calls by statement text
    (normalized: constants are $n), and transactions committed."""

    calls: dict[str, int]
    commits: int

    def __sub__(self, before: Statements) -> Statements:
        """What ran between two readings."""
        calls = {q: n - before.calls.get(q, 0) for q, n in self.calls.items()}
        return Statements({q: n for q, n in calls.items() if n > 0}, self.commits - before.commits)

    def __add__(self, other: Statements) -> Statements:
        calls = dict(self.calls)
        for query, n in other.calls.items():
            calls[query] = calls.get(query, 0) + n
        return Statements(calls, self.commits + other.commits)


def _add_statements(one: Statements | None, other: Statements | None) -> Statements | None:
    return one + other if one is not None and other is not None else None


async def count_statements() -> Statements | None:
    """The benchmark database's statement counters, or None where it has no
    pg_stat_statements (the extension, created in that database, and the library
    preloaded). They count every client of the database: use a server of its own."""
    connection = await asyncpg.connect(POSTGRES_URL.replace("+asyncpg", ""))
    try:
        installed = await connection.fetchval(
            "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'"
        )
        if not installed:
            return None
        rows = await connection.fetch(
            "SELECT query, sum(calls)::bigint AS calls FROM pg_stat_statements "
            "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "GROUP BY query"
        )
        commits = await connection.fetchval(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        )
    except asyncpg.PostgresError:  # installed but not preloaded: it cannot count
        return None
    finally:
        await connection.close()
    return Statements({" ".join(r["query"].split()): r["calls"] for r in rows}, commits)


async def database_cpu(servers: list[Server]) -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL process working for `servers`, by pid: the
    backends serving their connections (found by the servers' local ports in
    pg_stat_activity), and the server's own processes, which write and flush the WAL
    their commits make (the WAL writer, checkpointer, background writer and the
    postmaster; on a server other clients share, these count the others' work too)."""
    ports = _database_ports([s.process.pid for s in servers])
    connection = await asyncpg.connect(POSTGRES_URL.replace("+asyncpg", ""))
    try:
        rows = await connection.fetch(
            "SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::int[]) "
            "OR backend_type NOT IN ('client backend', 'autovacuum worker')",
            list(ports),
        )
        postmaster = _parent(await connection.fetchval("SELECT pg_backend_pid()"))
    finally:
        await connection.close()
    pids = {row["pid"] for row in rows} | {postmaster}
    spent: dict[int, float] = {}
    for pid in pids:
        with contextlib.suppress(OSError):  # a backend that just ended
            spent[pid] = cpu_seconds(pid)
    return spent


def _parent(pid: int) -> int:
    """The id of process `pid`'s parent (/proc)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _cpu_spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU spent between two readings; a backend started in between counts whole."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def _database_ports(pids: list[int]) -> set[int]:
    """The local ports of the processes' TCP connections to PostgreSQL (/proc)."""
    inodes: set[str] = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):  # closed meanwhile
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    ports: set[int] = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pids[0]}/net/{table}").read_text().splitlines()[1:]:
            local, remote, inode = (line.split()[i] for i in (1, 2, 9))
            if inode in inodes and int(remote.rsplit(":", 1)[1], 16) == _POSTGRES_PORT:
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def report(backend: str, result: Result, floor: float) -> None:
    """Emit a measurement's figures; `floor` is the library's CPU per request (ms)."""
    load, where = result.load, result.where
    note = f"{_busy(result)}; {load.runs} runs in {load.elapsed:.1f} s"
    if load.failures:
        note += f"; {len(load.failures)} failed, e.g. {load.failures[0]}"
    answers = sorted(load.answers)
    p99 = answers[min(len(answers) - 1, int(len(answers) * 0.99))] if answers else float("nan")
    median = statistics.median(answers) if answers else float("nan")
    rate = round(result.runs_per_second, 1)
    # The target for one process on SQLite: at least 300 runs/s.
    least = {"at_least": 300.0} if result.processes == 1 and backend == "sqlite" else {}
    figures.emit("baton", f"http/runs, {where}", backend, rate, "runs/s", note, **least)
    figures.emit("baton", f"http/answer p50, {where}", backend, round(median * 1000, 2), "ms", note)
    figures.emit(
        "baton", f"http/answer p99, {where}", backend, round(p99 * 1000, 2), "ms", note, target=50.0
    )
    per_request = result.per_request(result.server_cpu)
    figures.emit(
        "baton",
        f"http/server CPU per request, {where}",
        backend,
        round(per_request, 3),
        "ms",
        f"{per_request / floor:.2f}x the library's {floor:.3f} ms from the same run; {note}",
        floor=round(floor, 3),
        target=1.0,
    )
    _report_other_cpu(backend, result, note)
    if result.statements is not None:
        _report_statements(backend, result, note)


# The counters' own reading statements, run between the readings.
_READINGS = ("pg_stat_statements", "pg_stat_database", "pg_extension", "pg_stat_activity")


_CTE = re.compile(r"(?:^WITH|\),) (\w+) AS \(")


def _kind(query: str) -> str:
    """A statement's kind: its CTEs' names (a step's are what it writes), or its start."""
    names = _CTE.findall(query)
    return f"WITH {', '.join(names)}" if names else query[:70]


def _report_statements(backend: str, result: Result, note: str) -> None:
    """The statements per run the database ran, by kind (`_kind`)."""
    assert result.statements is not None
    runs = result.load.runs
    calls: dict[str, int] = {}
    for query, n in result.statements.calls.items():
        if not any(reading in query for reading in _READINGS):
            calls[_kind(query)] = calls.get(_kind(query), 0) + n
    kinds = sorted(calls.items(), key=lambda item: -item[1])
    listed = "; ".join(f"{n / runs:.2f} x {kind}" for kind, n in kinds)
    figures.emit(
        "baton",
        f"http/database statements per run, {result.where}",
        backend,
        round(sum(calls.values()) / runs, 2),
        "statements",
        f"commits per run {result.statements.commits / runs:.2f} (with the readings' "
        f"few); {listed}; {note}",
    )


def _report_other_cpu(backend: str, result: Result, note: str) -> None:
    """The load generator's and the database's CPU per request, beside the servers'."""
    client = result.per_request(result.load.client_cpu)
    figures.emit(
        "baton",
        f"http/load generator CPU per request, {result.where}",
        backend,
        round(client, 3),
        "ms",
        f"{load_generator().name}; {client / result.per_request(result.server_cpu):.2f}x the "
        f"servers'; {note}",
    )
    if result.database_cpu is not None:
        database = result.per_request(result.database_cpu)
        figures.emit(
            "baton",
            f"http/database CPU per request, {result.where}",
            backend,
            round(database, 3),
            "ms",
            f"PostgreSQL's backends serving the servers' connections and its own processes "
            f"(postmaster, WAL writer, checkpointer...); {note}",
        )


def report_bound(backend: str, one: Result) -> None:
    """Emit the most two processes' runs/s can be of one's on this machine's cores, from
    one process's CPU per request: S (its server), D (the database), C (the load
    generator). One process keeps its own core busy at most: 1/S requests a second; two
    keep every core busy: cores/(S + D + C)."""
    if one.database_cpu is None:
        return
    cores = os.cpu_count() or 1
    server, database = one.per_request(one.server_cpu), one.per_request(one.database_cpu)
    client = one.per_request(one.load.client_cpu)
    bound = min(2.0, cores * server / (server + database + client))
    figures.emit(
        "baton",
        f"http/bound on 2 processes / 1 from CPU per request, {one.clients} clients",
        backend,
        round(bound, 2),
        "x",
        f"{cores} cores x S / (S + D + C), one process's S {server:.3f}, D {database:.3f}, "
        f"C {client:.3f} ms per request",
    )


def _busy(result: Result) -> str:
    """How busy the machine's cores were while measuring: ours, and everything else."""
    elapsed = result.load.elapsed
    ours = result.server_cpu + result.load.client_cpu + (result.database_cpu or 0.0)
    others = max(0.0, result.machine_cpu - ours)
    return (
        f"cores busy: servers {result.server_cpu / elapsed:.2f}, load generator "
        f"{result.load.client_cpu / elapsed:.2f}, database "
        f"{(result.database_cpu or 0.0) / elapsed:.2f}, other processes {others / elapsed:.2f}"
    )


def report_scaling(backend: str, ones: list[Result], twos: list[Result]) -> None:
    """Emit how much two server processes on one database add to one: the median of
    the rounds' ratios, each of two measurements made one after the other."""
    pairs = zip(ones, twos, strict=True)
    ratios = [two.runs_per_second / one.runs_per_second for one, two in pairs]
    one, two = sum(ones[1:], ones[0]), sum(twos[1:], twos[0])
    figures.emit(
        "baton",
        f"http/runs of 2 processes / 1, {one.clients} clients",
        backend,
        round(statistics.median(ratios), 2),
        "x",
        f"rounds: {', '.join(f'{r:.2f}' for r in ratios)}; "
        f"{two.runs_per_second:.1f} / {one.runs_per_second:.1f} runs/s",
        # The target, for PostgreSQL: two processes give at least 1.6 times one's.
        **({"at_least": 1.6} if backend == "postgres" else {}),
    )


async def library_floor(backend: str, runs: int) -> float:
    """The same runs through the library in this process, one after another: the engine
    and store's CPU per run, which the servers' three requests per run add HTTP to.
    Returns the CPU per request (a third of a run), in milliseconds."""
    app = load_app(APPS / APP)
    with tempfile.TemporaryDirectory() as folder:
        async with database(backend, Path(folder)) as db:
            service = open_session_service(db, default=Path(folder) / "unused.db")
            runner = Runner(app=app, session_service=service)
            try:
                await _library_runs(runner, 20)  # warm
                cpu = time.process_time()
                await _library_runs(runner, runs)
                per_run = (time.process_time() - cpu) / runs * 1000
            finally:
                await runner.close()
    figures.emit(
        "baton",
        "http/library floor: CPU per run in process (create, run, answer)",
        backend,
        round(per_run, 3),
        "ms",
        f"load average {os.getloadavg()[0]:.2f}; per request of the 3: {per_run / 3:.3f} ms",
    )
    return per_run / 3


async def _library_runs(runner: Runner, runs: int) -> None:
    message = types.Content(role="user", parts=[types.Part(text="taxi")])
    for _ in range(runs):
        session = await runner.session_service.create_session(app_name=APP, user_id="u")
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass
        answered = runner.answer(user_id="u", session_id=session.id, answers={"ok": True})
        async for _ in answered:
            pass


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer runs, shorter")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--runs", type=int, default=0, help="runs per measurement")
    parser.add_argument("--seconds", type=float, default=0.0, help="longest measurement")
    parser.add_argument("--rounds", type=int, default=0, help="measurements per figure")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], action="append")
    parser.add_argument("--processes", type=int, choices=[1, 2], action="append")
    parser.add_argument(
        "--affinity", action="store_true", help="keep each client to one server process"
    )
    args = parser.parse_args()
    runs = args.runs or (1000 if args.quick else 4000)
    seconds = args.seconds or (15.0 if args.quick else 60.0)
    rounds = args.rounds or (1 if args.quick else 2)
    for backend in args.backend or ["sqlite", "postgres"]:
        floor = await library_floor(backend, 100 if args.quick else 300)
        # Rounds alternate the process counts, so a change in the machine's load
        # between them weighs on both.
        measured: dict[int, list[Result]] = {}
        for _ in range(rounds):
            for processes in sorted(set(args.processes or [1, 2])):
                result = await measure(
                    backend, processes, args.clients, runs, seconds, args.affinity
                )
                measured.setdefault(processes, []).append(result)
        for results in measured.values():
            report(backend, sum(results[1:], results[0]), floor)
        if 1 in measured:
            report_bound(backend, sum(measured[1][1:], measured[1][0]))
        if 1 in measured and 2 in measured:
            report_scaling(backend, measured[1], measured[2])


if __name__ == "__main__":
    asyncio.run(main())
