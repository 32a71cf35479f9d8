"""The HTTP servers' instructions per request, with one and two processes: their work,
measured in a way that holds under load.

    .venv/bin/python bench/http_profile.py [--runs 150] [--clients 16] [--rounds 2]
        [--backend sqlite|postgres] [--processes 1|2]

`bench/http_bench.py`'s HITL runs (create a session, `/run` to the question, answer it,
from its load generator, requests going to the processes in turn), with every
`baton api_server` run by callgrind, counting only while the measured runs go
(`callgrind_control -i on` after the warm-up, `-i off` after the last run): instructions
per request, the processes together. Under valgrind a server runs some 50 times slower,
so only a few hundred runs fit in minutes, and each of the servers' event-loop passes
takes more requests than at full speed; what it counts does not move with what else
the machine runs. CPU time does: `http_bench.py`'s servers' CPU per request is
instructions times the time each takes, which grows when more processes share the
cores (caches and the processor's other state refilled after each switch).

Where two processes' CPU per request is much above one's in `http_bench.py` but their
instructions per request here are not, the second process does no more work: the same
work takes longer. Where the instructions grow too, a per-function comparison of the
dumps (`callgrind_annotate`, kept with `--keep DIR`) shows what is done more often.

Needs valgrind (with callgrind_control). The database is `http_bench`'s: a SQLite file,
or a schema of its own on `BATON_BENCH_POSTGRES_URL` (the default). On SQLite one try
failed (the load generator's warm-up runs, bounded at 30 s, did not all finish under
valgrind) and one ran (`--runs 100`, 2026-11-25): there the slowdown inflates what real
time paces, the retries of a transaction waiting for the other process's write lock and
the workers' once-a-second rounds, so two processes' count is above the work they do at
full speed (see the README's HTTP section).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import figures
from http_bench import SUMMARY_LIMIT, Server, database, load_generator, start_server

_START = 600.0  # seconds a server under valgrind may take to start (imports, 50x slower)


def _callgrind_control(*args: str) -> None:
    done = subprocess.run(["callgrind_control", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"callgrind_control {' '.join(args)}: {done.stderr.strip()[-300:]}")


def _instructions(dumps: Path, pid: int) -> int:
    """Instructions callgrind counted in process `pid` (its dumps' totals)."""
    total = 0
    for dump in dumps.glob(f"cg.{pid}*"):
        for line in dump.read_text().splitlines():
            if line.startswith("totals:"):
                total += int(line.split()[1])
    return total


async def measure(
    backend: str, processes: int, clients: int, runs: int, keep: Path | None
) -> tuple[int, int, int]:
    """Instructions the servers ran over the measured runs, the requests they served and
    the runs that failed."""
    with tempfile.TemporaryDirectory() as folder:
        dumps = Path(folder)
        under = (
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={dumps}/cg.%p",
        )
        async with database(backend, dumps) as db:
            servers: list[Server] = []
            try:
                for i in range(processes):
                    errors = dumps / f"s{i}.err"
                    servers.append(await start_server(db, errors, under=under, start_within=_START))
                requests, failed = await _drive(servers, clients, runs)
            finally:
                for server in servers:
                    await server.stop()
        pids = [s.process.pid for s in servers]
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            for dump in dumps.glob("cg.*"):
                shutil.copy(dump, keep / f"{processes}p.{dump.name}")
        return sum(_instructions(dumps, pid) for pid in pids), requests, failed


async def _drive(servers: list[Server], clients: int, runs: int) -> tuple[int, int]:
    """Warm the servers, count their instructions over `runs` runs; the requests served
    and the runs that failed."""
    load = await asyncio.create_subprocess_exec(
        *load_generator().command,
        *(s.url for s in servers),
        *("--clients", str(clients), "--runs", str(runs), "--seconds", "3600"),
        # Its warm-up is bounded at 30 s: what a slowed server completes in that time.
        *("--warm", str(clients * 2)),
        stdout=asyncio.subprocess.PIPE,
        limit=SUMMARY_LIMIT,
    )
    assert load.stdout is not None
    try:
        line = await load.stdout.readline()
        if line.strip() != b"measuring":
            raise RuntimeError(f"the warm-up runs failed: {line[:600]!r}")
        for server in servers:
            _callgrind_control("-i", "on", str(server.process.pid))
        summary = json.loads(await load.stdout.readline())
        for server in servers:
            _callgrind_control("-i", "off", str(server.process.pid))
    finally:
        if load.returncode is None:
            load.kill()
        await load.wait()
    failures: list[str] = summary["failures"]
    # A client's connection to one server can sit idle past the server's keep-alive (5 s)
    # while its requests go to the other, 50 times slower than usual: a few runs fail on
    # the connection it closed. Their requests are not counted, their instructions are (a
    # few per cent more a request, as many runs failed); more failures are something else.
    if len(failures) > runs // 10:
        raise RuntimeError(f"{len(failures)} runs failed, e.g. {failures[0]}")
    return int(summary["requests"]), len(failures)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--runs", type=int, default=150, help="runs per measurement")
    parser.add_argument("--rounds", type=int, default=2, help="measurements per figure")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], action="append")
    parser.add_argument("--processes", type=int, choices=[1, 2], action="append")
    parser.add_argument("--keep", type=Path, help="copy callgrind's dumps to this folder")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("http_profile: needs valgrind and callgrind_control")
    # Repeatable counts: the same string hashes in every server, no loop-block watchdog.
    os.environ.update(PYTHONHASHSEED="0", BATON_LOOP_BLOCK_WARNING="0")
    for backend in args.backend or ["postgres"]:
        # Rounds alternate the process counts, as http_bench's do.
        counted: dict[int, list[float]] = {}
        failed: dict[int, int] = {}
        for _ in range(args.rounds):
            for processes in sorted(set(args.processes or [1, 2])):
                instructions, requests, failures = await measure(
                    backend, processes, args.clients, args.runs, args.keep
                )
                counted.setdefault(processes, []).append(instructions / requests)
                failed[processes] = failed.get(processes, 0) + failures
        for processes, per_request in counted.items():
            where = f"{processes} process{'es' if processes > 1 else ''}, {args.clients} clients"
            figures.emit(
                "baton",
                f"http/server instructions per request, {where}",
                backend,
                round(statistics.median(per_request)),
                "instructions",
                f"callgrind, the servers together; rounds: "
                f"{', '.join(f'{n / 1e6:.3f}M' for n in per_request)}; "
                f"{failed[processes]} runs failed (a connection kept idle too long)",
            )
        if 1 in counted and 2 in counted:
            ratio = statistics.median(counted[2]) / statistics.median(counted[1])
            figures.emit(
                "baton",
                f"http/server instructions per request, 2 processes / 1, {args.clients} clients",
                backend,
                round(ratio, 3),
                "x",
                "above 1: work a process does that one process alone would not",
            )


if __name__ == "__main__":
    asyncio.run(main())
