"""Where the wall time of a resume on PostgreSQL goes (postgres_bench's pg/resume: the
`run_async` call answering a paused `START -> a -> ask -> b` run), next to its floors.

    .venv/bin/python bench/resume_timeline.py [--runs N]

Answers `--runs` paused runs, each followed by one of each floor of postgres_bench
(pg/raw-resume: a read and two durable one-statement steps; pg/raw-txn3: a 3-statement
transaction), so all three see the same machine. For each it measures the wall time, the
CPU time of the calling thread (`time.thread_time`: the client's work), the CPU time the
server's backend spent meanwhile (`/proc/<pid>/schedstat` of the connection's backend:
the server's work, parsing, planning, executing and committing), and what is left: the
waits for the WAL's flush to disk, the network and the wake-ups between processes.

For baton it also splits the call at each statement: the client's CPU before the
statement is sent (from the call's start, or from the previous statement's reply), and
the statement's round trip with its server CPU. Prints medians in ms. Needs the server
on this machine (its backends' /proc entries); a loaded machine inflates every figure,
so compare the columns of one run, not runs on different loads.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import time
from collections.abc import Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import postgres_bench as pg
from baton_bench import (
    answer_message,
    drain,
    open_service,
    resume_workflow,
    runner_for,
    text_message,
)

from baton.sessions.sql.direct import Statement
from baton.sessions.sql.postgres import DirectConnections


def server_ms(pid: int) -> float:
    """CPU time the process `pid` has run, in ms (schedstat's first field, ns)."""
    with open(f"/proc/{pid}/schedstat") as stat:
        return int(stat.read().split()[0]) / 1e6


@dataclass
class Sample:
    wall: float = 0.0
    client: float = 0.0
    server: float = 0.0


@dataclass
class Split:
    """One baton call, statement by statement: (client CPU before it, its round trip,
    the client's CPU and the server's during it), and the client's CPU after the last
    reply."""

    statements: list[tuple[float, float, float, float]] = field(default_factory=list)
    tail: float = 0.0


class Watch:
    """Times each statement the store's direct connections send during a call."""

    def __init__(self, direct: DirectConnections) -> None:
        self._direct = direct
        self._fetch = direct.fetch
        self.split: Split | None = None
        self._mark = 0.0

    def begin(self) -> None:
        self.split = Split()
        self._mark = time.thread_time()

    def end(self) -> Split:
        split, self.split = self.split, None
        assert split is not None
        split.tail = (time.thread_time() - self._mark) * 1e3
        return split

    async def fetch(self, statement: Statement, params: Mapping[str, Any]) -> Any:
        split = self.split
        if split is None:
            return await self._fetch(statement, params)
        before = (time.thread_time() - self._mark) * 1e3
        pid = self._direct._idle[-1][0].get_server_pid() if self._direct._idle else None  # pyright: ignore[reportPrivateUsage]
        cpu = server_ms(pid) if pid else 0.0
        started, client = time.perf_counter(), time.thread_time()
        rows = await self._fetch(statement, params)
        trip = (time.perf_counter() - started) * 1e3
        self._mark = time.thread_time()
        server = server_ms(pid) - cpu if pid else float("nan")
        split.statements.append((before, trip, (self._mark - client) * 1e3, server))
        return rows

    @asynccontextmanager
    async def installed(self) -> Any:
        self._direct.fetch = self.fetch  # type: ignore[method-assign]
        try:
            yield self
        finally:
            self._direct.fetch = self._fetch  # type: ignore[method-assign]


async def timed(pid: int, call: Any) -> Sample:
    server, client, started = server_ms(pid), time.thread_time(), time.perf_counter()
    await call()
    return Sample(
        (time.perf_counter() - started) * 1e3,
        (time.thread_time() - client) * 1e3,
        server_ms(pid) - server,
    )


async def measure(runs: int) -> None:
    samples: dict[str, list[Sample]] = {"baton": [], "raw-resume": [], "raw-txn3": []}
    splits: list[Split] = []
    async with pg.floor_connection() as floor, open_service("postgres") as service:
        runner = runner_for(resume_workflow(), service)
        store: Any = service.store  # pyright: ignore[reportAttributeAccessIssue]
        direct: DirectConnections = store._executor._direct
        for _ in range(3):  # prepares every statement, warms the caches
            await pg.resume_once(service, runner)  # pyright: ignore[reportArgumentType]
        floor_pid = floor.get_server_pid()
        async with Watch(direct).installed() as watch:
            for i in range(runs):
                session = await service.create_session(app_name="bench", user_id="u")
                await drain(runner, session.id, text_message("go"))
                await store._announcer.flush()
                message = answer_message()
                pid = direct._idle[-1][0].get_server_pid()  # pyright: ignore[reportPrivateUsage]
                watch.begin()
                answering = functools.partial(drain, runner, session.id, message)
                samples["baton"].append(await timed(pid, answering))
                splits.append(watch.end())
                samples["raw-resume"].append(
                    await timed(floor_pid, lambda: pg.raw_resumes(floor, 1))
                )
                samples["raw-txn3"].append(
                    await timed(floor_pid, lambda: pg.raw_transactions(floor, 1))
                )
                del i
    report(samples, splits)


def report(samples: dict[str, list[Sample]], splits: list[Split]) -> None:
    print("median ms      wall  client CPU  server CPU  rest (flush, network, wake-ups)")
    for name, rows in samples.items():
        wall = statistics.median(s.wall for s in rows)
        client = statistics.median(s.client for s in rows)
        server = statistics.median(s.server for s in rows)
        rest = statistics.median(s.wall - s.client - s.server for s in rows)
        print(f"{name:12} {wall:7.3f} {client:11.3f} {server:11.3f} {rest:11.3f}")
    shapes = {len(s.statements) for s in splits}
    count = max(shapes, key=lambda n: sum(len(s.statements) == n for s in splits))
    same = [s for s in splits if len(s.statements) == count]
    print(f"\nbaton, statement by statement ({len(same)} of {len(splits)} calls sent {count}):")
    for k in range(count):
        before = statistics.median(s.statements[k][0] for s in same)
        trip = statistics.median(s.statements[k][1] for s in same)
        inside = statistics.median(s.statements[k][2] for s in same)
        server = statistics.median(s.statements[k][3] for s in same)
        print(
            f"  statement {k + 1}: client CPU before it {before:.3f}; its round trip "
            f"{trip:.3f}: client CPU {inside:.3f} (asyncpg, the event loop), server CPU "
            f"{server:.3f}"
        )
    print(f"  client CPU after the last reply: {statistics.median(s.tail for s in same):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=60, help="answered runs")
    asyncio.run(measure(parser.parse_args().runs))


if __name__ == "__main__":
    main()
