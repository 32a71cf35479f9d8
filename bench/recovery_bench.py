"""Recovery and deadline figures, with real processes on this machine (loopback only).

    .venv/bin/python bench/recovery_bench.py [--quick] [--backends sqlite,postgres] [--ttl 2]

The runs are bench/recovery_apps' `hold` (first -> hang -> last) and `deadline` (a
question with a deadline). Times are the wall clock (`time.time()`) of this machine,
shared by every process; a commit's time is its event's timestamp.

- recovery/dead-holder: a process (`recovery_bench.py hold`, a Runner with its own
  worker id and the lease TTL) starts a run; after `first` commits, `hang` sleeps and
  the process is SIGKILLed at t0, each repetition at another point of its lease's
  renewal cycle. A `baton worker` with another --worker-id, idle since before the run
  started, continues it: the figure is t(`hang`'s output event, the run's next commit)
  - t0. Target: TTL + 1 s.
- recovery/restarted-holder: the same, under a 30 s lease; after the kill, `baton
  worker` starts with the SAME --worker-id: from its ready line to the run's next
  commit. Target: 1 s.
- deadline/same-process, deadline/other-process: questions with `timeout=2` and
  `on_timeout`, opened a few at a time by this process; a Worker in this process, or
  a `baton worker` in another one, answers them: lateness = answered_at - expires_at.
  Target: 1 s.

Prints one JSON object per figure (see bench/report.py): the median over the
repetitions, and their max, the lease TTL and the target.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import figures
from baton_bench import POSTGRES_URL, run_on_postgres

from baton import App, Runner, types
from baton.server.catalog import load_app
from baton.sessions.services import (
    BaseSessionService,
    DatabaseSessionService,
    SqliteSessionService,
)
from baton.sessions.store import TIMEOUT_ANSWERER, InvocationStatus, SessionKey
from baton.types import SessionId
from baton.worker import Worker

BATON = Path(sys.executable).parent / "baton"
APPS = Path(__file__).resolve().parent / "recovery_apps"
HANG = "BATON_BENCH_HANG"  # bench/recovery_apps/hold/agent.py reads it
CONTINUED = "continued"  # the output of `hang` where it does not hang
USER = "bench"
RESTART_TTL = 30.0  # the restarted holder's lease: far from lapsing during the figure
DEADLINE = 2.0  # seconds each question waits for an answer
QUESTION_SPACING = 0.3  # seconds between two questions opened
WITHIN = 30.0  # seconds beyond the expected that any awaited outcome may take
POLL = 0.01  # how often this process looks at a file or the store


def emit(
    workload: str,
    backend: str,
    samples: list[float] | None,
    ttl: float,
    target: float,
    note: str = "",
) -> None:
    """The median of the samples, with their max, the lease TTL and the target."""
    if not samples:
        figures.emit("baton", workload, backend, None, "s", note, ttl=ttl, target=target)
        return
    figures.emit(
        "baton",
        workload,
        backend,
        statistics.median(samples),
        "s",
        note,
        max=max(samples),
        ttl=ttl,
        target=target,
        samples=len(samples),
    )


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Backend:
    """A fresh database: the `--db` value for baton processes, and this process's service."""

    name: str
    db: str
    service: BaseSessionService


@asynccontextmanager
async def open_backend(name: str, folder: Path) -> AsyncIterator[Backend]:
    if name == "sqlite":
        path = folder / "recovery.db"
        service = SqliteSessionService(str(path))
        try:
            yield Backend(name, str(path), service)
        finally:
            await service.close()
        return
    if name != "postgres":
        raise ValueError(f"unknown backend '{name}': use sqlite or postgres.")
    schema = f"baton_recbench_{uuid.uuid4().hex[:8]}"
    await run_on_postgres(f'CREATE SCHEMA "{schema}"')
    url = f"{POSTGRES_URL}?search_path={schema}"
    service = DatabaseSessionService(url)
    try:
        yield Backend(name, url, service)
    finally:
        await service.close()
        await run_on_postgres(f'DROP SCHEMA "{schema}" CASCADE')


@dataclass
class Child:
    """A process this benchmark started; its stdout lines are read as they come."""

    process: asyncio.subprocess.Process
    name: str
    errors: Path
    ready_at: float = 0.0

    async def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would."""
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not stopped within 10 s."""
        if self.process.returncode is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), 10)
        except TimeoutError:
            await self.kill()

    def why(self) -> str:
        tail = self.errors.read_text().strip().splitlines()[-3:]
        return f"{self.name}: " + (" / ".join(tail) or f"exit {self.process.returncode}")


async def spawn(name: str, args: list[str], folder: Path, env: dict[str, str]) -> Child:
    errors = folder / f"{name}.err"
    with errors.open("w") as sink:
        process = await asyncio.create_subprocess_exec(
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=sink,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200", **env},
        )
    return Child(process, name, errors)


async def start_worker(backend: Backend, worker_id: str, ttl: float, folder: Path) -> Child:
    """`baton worker` on the bench apps; returns once it printed its ready line."""
    args = [str(BATON), "worker", str(APPS), "--db", backend.db]
    args += ["--worker-id", worker_id, "--lease-ttl", f"{ttl:g}"]
    child = await spawn(f"worker-{worker_id}", args, folder, {})
    assert child.process.stdout is not None
    try:
        line = await asyncio.wait_for(child.process.stdout.readline(), WITHIN)
    except TimeoutError:
        line = b""
    child.ready_at = time.time()
    if b"continuing runs of" not in line:
        await child.stop()
        raise RuntimeError(f"baton worker did not start: {line!r} {child.why()}")
    asyncio.get_running_loop().create_task(_discard(child.process.stdout))
    return child


async def _discard(stream: asyncio.StreamReader) -> None:
    while await stream.read(4096):
        pass


async def start_holder(
    backend: Backend, worker_id: str, ttl: float, key: SessionKey, folder: Path
) -> Child:
    """A process running `key`'s run until `hang`; returns once `hang` began there."""
    marker = folder / f"hang-{worker_id}"
    args = [sys.executable, __file__, "hold", "--db", backend.db, "--worker-id", worker_id]
    args += ["--ttl", f"{ttl:g}", "--session", key.session_id]
    child = await spawn(f"holder-{worker_id}", args, folder, {HANG: str(marker)})
    try:
        await until(marker.exists, WITHIN)
    except TimeoutError:
        await child.kill()
        raise RuntimeError(f"the holder never reached `hang`: {child.why()}") from None
    return child


async def until(condition: Callable[[], bool], within: float) -> None:
    async with asyncio.timeout(within):
        while True:  # a file another process writes: nothing to await but time
            if condition():
                return
            await asyncio.sleep(POLL)


async def new_session(backend: Backend, app_name: str) -> SessionKey:
    session = await backend.service.create_session(app_name=app_name, user_id=USER)
    return SessionKey(app_name, USER, SessionId(session.id))


async def next_commit(backend: Backend, key: SessionKey, within: float) -> float:
    """When the continued `hang` committed its output; waits for the run to complete."""
    store = backend.service.store
    async with asyncio.timeout(within):
        while True:
            (invocation,) = await store.list_invocations(key)
            if invocation.status is InvocationStatus.COMPLETED:
                break
            if invocation.status is InvocationStatus.FAILED:
                raise RuntimeError(f"the continued run failed: {invocation.error}")
            await asyncio.sleep(POLL)
    session = await store.get_session(key)
    assert session is not None
    return next(e.timestamp for e in session.events if e.output == CONTINUED)


async def dead_holder(backend: Backend, ttl: float, reps: int, folder: Path) -> list[float]:
    """Seconds from SIGKILL of the holder to the run's next commit by another worker."""
    samples: list[float] = []
    rescuer = await start_worker(backend, "bench-rescuer", ttl, folder)
    try:
        for rep in range(reps):
            key = await new_session(backend, "hold")
            holder = await start_holder(backend, f"bench-dead-{rep}", ttl, key, folder)
            await asyncio.sleep(ttl / 3 * rep / reps)  # another point of the renewal cycle
            killed = time.time()
            await holder.kill()
            try:
                committed = await next_commit(backend, key, ttl + WITHIN)
            except TimeoutError:
                raise RuntimeError(f"no worker continued the run: {rescuer.why()}") from None
            samples.append(committed - killed)
            say(f"  dead holder {rep + 1}/{reps}: {samples[-1]:.3f} s")
    finally:
        await rescuer.stop()
    return samples


async def restarted_holder(backend: Backend, reps: int, folder: Path) -> list[float]:
    """Seconds from a restarted worker's ready line to its own run's next commit."""
    samples: list[float] = []
    for rep in range(reps):
        worker_id = f"bench-restarted-{rep}"
        key = await new_session(backend, "hold")
        holder = await start_holder(backend, worker_id, RESTART_TTL, key, folder)
        await holder.kill()
        again = await start_worker(backend, worker_id, RESTART_TTL, folder)
        try:
            committed = await next_commit(backend, key, WITHIN)
        except TimeoutError:
            raise RuntimeError(f"the restarted worker did not continue: {again.why()}") from None
        finally:
            await again.stop()
        samples.append(committed - again.ready_at)
        say(f"  restarted holder {rep + 1}/{reps}: {samples[-1]:.3f} s")
    return samples


def deadline_runner(backend: Backend) -> Runner:
    app: App = load_app(APPS / "deadline")
    return Runner(app=app, session_service=backend.service, worker_id="bench-asker")


async def deadlines(runner: Runner, questions: int) -> list[float]:
    """Open `questions` questions a little apart; seconds each was answered after its
    deadline, once every one was (by whichever worker runs)."""
    keys: list[SessionKey] = []
    for _ in range(questions):
        key = await new_session_of(runner)
        message = types.Content(role="user", parts=[types.Part(text=f"{DEADLINE:g}")])
        async for _ in runner.run_async(
            user_id=USER, session_id=key.session_id, new_message=message
        ):
            pass
        keys.append(key)
        await asyncio.sleep(QUESTION_SPACING)
    return [await lateness(runner, key) for key in keys]


async def new_session_of(runner: Runner) -> SessionKey:
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id=USER)
    return SessionKey(runner.app_name, USER, SessionId(session.id))


async def lateness(runner: Runner, key: SessionKey) -> float:
    store = runner.store
    async with asyncio.timeout(DEADLINE + WITHIN):
        while True:
            (row,) = await store.list_interrupts(
                key.app_name, USER, session_id=key.session_id, status=None
            )
            if row.answered_at is not None:
                break
            await asyncio.sleep(POLL)
    assert row.answered_by == TIMEOUT_ANSWERER, f"answered by {row.answered_by}"
    assert row.expires_at is not None
    return row.answered_at - row.expires_at


async def deadlines_here(backend: Backend, questions: int) -> list[float]:
    runner = deadline_runner(backend)
    # Its own identity: a Worker under the Runner's id takes back, in its first round,
    # the runs that id holds (as after a restart), including one this process just began.
    async with Worker([runner], worker_id="bench-asker-worker"):
        samples = await deadlines(runner, questions)
    say(f"  deadlines, worker in this process: {_listed(samples)}")
    return samples


async def deadlines_elsewhere(backend: Backend, questions: int, folder: Path) -> list[float]:
    worker = await start_worker(backend, "bench-deadlines", RESTART_TTL, folder)
    try:
        samples = await deadlines(deadline_runner(backend), questions)
    finally:
        await worker.stop()
    say(f"  deadlines, worker in another process: {_listed(samples)}")
    return samples


def _listed(samples: list[float]) -> str:
    return ", ".join(f"{s:.3f}" for s in samples) + " s"


Measure = Callable[[Backend, Path], Awaitable[list[float]]]


def measures(ttl: float, reps: int) -> list[tuple[str, float, float, Measure]]:
    """(workload, lease TTL, target, measure) for each figure."""
    return [
        ("recovery/dead-holder", ttl, ttl + 1, lambda b, f: dead_holder(b, ttl, reps, f)),
        ("recovery/restarted-holder", RESTART_TTL, 1.0, lambda b, f: restarted_holder(b, reps, f)),
        ("deadline/same-process", RESTART_TTL, 1.0, lambda b, f: deadlines_here(b, reps)),
        (
            "deadline/other-process",
            RESTART_TTL,
            1.0,
            lambda b, f: deadlines_elsewhere(b, reps, f),
        ),
    ]


async def measure(backend_name: str, ttl: float, reps: int) -> None:
    say(f"== recovery and deadlines on {backend_name} (lease TTL {ttl:g} s)")
    for workload, lease, target, job in measures(ttl, reps):
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            try:
                async with open_backend(backend_name, folder) as backend:
                    samples = await job(backend, folder)
                emit(workload, backend_name, samples, lease, target)
            except (OSError, TimeoutError, RuntimeError) as error:
                say(f"  {workload}: {error}")
                emit(workload, backend_name, None, lease, target, f"not measured: {error}")


async def hold(db: str, worker_id: str, ttl: float, session_id: str) -> None:
    """The holder process: run the session's `hold` run until killed in `hang`."""
    # The same choice `baton --db` makes between a database URL and a SQLite file.
    service = DatabaseSessionService(db) if "://" in db else SqliteSessionService(db)
    runner = Runner(
        app=load_app(APPS / "hold"),
        session_service=service,
        lease_ttl=timedelta(seconds=ttl),
        worker_id=worker_id,
    )
    message = types.Content(role="user", parts=[types.Part(text="go")])
    async for _ in runner.run_async(user_id=USER, session_id=session_id, new_message=message):
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command")
    holder = commands.add_parser("hold", help="(internal) the process that is killed")
    holder.add_argument("--db", required=True)
    holder.add_argument("--worker-id", required=True)
    holder.add_argument("--ttl", type=float, required=True)
    holder.add_argument("--session", required=True)
    parser.add_argument("--quick", action="store_true", help="3 repetitions instead of 5")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--ttl", type=float, default=2.0, help="the dead holder's lease TTL")
    args = parser.parse_args()
    if args.command == "hold":
        asyncio.run(hold(args.db, args.worker_id, args.ttl, args.session))
        return
    reps = 3 if args.quick else 5
    for backend in str(args.backends).split(","):
        asyncio.run(measure(backend, float(args.ttl), reps))


if __name__ == "__main__":
    main()
