"""The engine's own cost per node, measured in a way that holds under load.

    .venv/bin/python bench/engine_profile.py [--runs N] [--backend B] [--plain] [--cprofile]

B is memory (the default), sqlite or postgres.

Runs baton_bench.py's chain-async workload (a 100-node linear workflow of `async def`
nodes, a fresh session per run; with `--plain` its chain workload of plain `def` nodes,
each run in a worker thread) `--runs` times after two warm-up runs, and prints the
median µs per node. Wall time is noisy on a shared machine; instruction counts are not.
Count them with callgrind, once with few runs and once with more, and divide the
difference by the extra nodes (this cancels start-up, imports and the warm-up):

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.2 \\
        .venv/bin/python bench/engine_profile.py --runs 2
    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.12 \\
        .venv/bin/python bench/engine_profile.py --runs 12
    # instructions per node = (Ir of cg.12 - Ir of cg.2) / (10 x 100)
    # (callgrind_annotate FILE | head prints the "PROGRAM TOTALS" Ir)

With `--plain` the caller's quick wait for a node's thread (`baton.threads.HANDOFF_WAIT`)
is lengthened to 2 s: under valgrind a thread runs ~50x slower, so each call would
outlast the usual wait and take the path through the event loop that real runs rarely
take.

`--backend postgres` runs on `BATON_BENCH_POSTGRES_URL` (baton_bench's, in a schema of
its own): callgrind then counts this process's side of each step (building and
encoding the statement, asyncpg, the event loop), not the server's.

`--cprofile` prints the Python functions the measured runs spend their time in
(cumulative and own time, call counts per run show work done more than once a node).

Before the measured runs the heap is frozen (`gc.freeze`): a full collection walks
every object loaded so far, so its cost depends on the imports and the warm-up, not on
the engine, and whether one falls into the measured runs blurs an A/B comparison by
several percent. Collections of what the runs themselves allocate still count. Run
valgrind with PYTHONHASHSEED=0 too: string hashes then do not vary between runs.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import pstats
import statistics
import time

from baton_bench import (
    CHAIN_NODES,
    async_chain_workflow,
    chain_workflow,
    drain,
    open_service,
    runner_for,
    text_message,
)

from baton import threads
from baton.sessions.services import BaseSessionService

WARM_UP_RUNS = 2


async def run_chains(
    service: BaseSessionService, runs: int, profiler: cProfile.Profile | None, *, plain: bool
) -> list[float]:
    """Seconds of each measured run of the async (or the plain) chain."""
    runner = runner_for(chain_workflow() if plain else async_chain_workflow(), service)
    seconds: list[float] = []
    for attempt in range(WARM_UP_RUNS + runs):
        session = await service.create_session(app_name="bench", user_id="u")
        measured = attempt >= WARM_UP_RUNS
        if attempt == WARM_UP_RUNS:
            gc.collect()
            gc.freeze()
        if measured and profiler is not None:
            profiler.enable()
        started = time.perf_counter()
        events = await drain(runner, session.id, text_message("go"))
        elapsed = time.perf_counter() - started
        if measured and profiler is not None:
            profiler.disable()
        assert events == CHAIN_NODES, f"expected {CHAIN_NODES} output events, got {events}"
        if measured:
            seconds.append(elapsed)
    return seconds


async def measure(
    backend: str, runs: int, profiler: cProfile.Profile | None, *, plain: bool
) -> list[float]:
    async with open_service(backend) as service:
        return await run_chains(service, runs, profiler, plain=plain)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="measured runs (after 2 warm-up)")
    parser.add_argument("--backend", choices=("memory", "sqlite", "postgres"), default="memory")
    parser.add_argument("--plain", action="store_true", help="the chain of plain `def` nodes")
    parser.add_argument("--cprofile", action="store_true", help="print where the time goes")
    args = parser.parse_args()
    profiler = cProfile.Profile() if args.cprofile else None
    if args.plain:
        threads.HANDOFF_WAIT = 2.0
    seconds = asyncio.run(measure(args.backend, args.runs, profiler, plain=args.plain))
    if seconds:
        per_node = statistics.median(seconds) / CHAIN_NODES * 1e6
        workload = "chain" if args.plain else "chain-async"
        print(f"{workload} {args.backend}: {per_node:.1f} us/node (median of {len(seconds)})")
    if profiler is not None:
        print_profile(profiler)


def print_profile(profiler: cProfile.Profile) -> None:
    """The functions with the most own time, then the most time inside them."""
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(45)
    stats.sort_stats("cumulative").print_stats(60)


if __name__ == "__main__":
    main()
