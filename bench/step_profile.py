"""The client's cost of one chain step's commit, apart from the engine, measured in a way
that holds under load.

    .venv/bin/python bench/step_profile.py [--steps N] [--backend postgres|memory] [--floor]

Commits `--steps` plain chain steps (one event, the chain's checkpoint, under the run's
lease: what each node of a chain commits) with `Store.commit_step`, one after another,
after five warm-up steps. Every step's commit is built beforehand, the same number
whatever `--steps` is, so only the commits differ between two counts. `--floor` sends
postgres_bench's pg/raw-step instead (ONE prepared statement through asyncpg's
`Connection.execute`, its JSON given as text), on a bare connection to the same schema.
Count instructions with callgrind, once with few steps and once with more, and divide
the difference by the extra steps:

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.50 \\
        .venv/bin/python bench/step_profile.py --steps 50
    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.550 \\
        .venv/bin/python bench/step_profile.py --steps 550
    # instructions per step = (Ir of cg.550 - Ir of cg.50) / 500

`callgrind_annotate --inclusive=yes` of both, subtracted function by function, splits a
step between asyncpg's protocol (`BaseProtocol.bind_execute`, `data_received`), the
event loop and pydantic-core's JSON encoding.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
import uuid
from dataclasses import replace
from typing import Any

import asyncpg
from baton_bench import open_service
from postgres_bench import _FLOOR_TABLES, _RAW_STEP, CHAIN_CHECKPOINT, CHECKPOINT, EVENT

from baton.events import Event
from baton.sessions.services import DatabaseSessionService
from baton.sessions.sql.postgres import asyncpg_connect_args
from baton.sessions.store import Lease, SessionKey, StepCommit
from baton.types import InvocationId

WARM_UP_STEPS = 5
BUILT_STEPS = 1_000
"""Steps built beforehand, whatever `--steps` is (at most this many)."""


async def commit_steps(backend: str, steps: int) -> None:
    async with open_service(backend) as service:
        store: Any = service.store  # pyright: ignore[reportAttributeAccessIssue] -- each service has one
        session = await service.create_session(app_name="bench", user_id="u")
        key = SessionKey("bench", "u", session.id)
        run = InvocationId(f"e-{uuid.uuid4()}")
        lease = Lease(run, "bench", time.time() + 3600, 1)
        first = StepCommit(key, run, 0, (Event(invocation_id=run, author="user"),))
        version = await store.commit_step(replace(first, fingerprint="bench", lease=lease))
        built = [
            replace(
                first,
                expected_version=version + i,
                events=(
                    Event.of_output(
                        "go", invocation_id=run, author="chain", path=f"chain@1/n{i}@1", run_id="1"
                    ),
                ),
                checkpoint=CHAIN_CHECKPOINT,
                lease=lease,
            )
            for i in range(BUILT_STEPS + WARM_UP_STEPS)
        ]
        for commit in built[:WARM_UP_STEPS]:
            await store.commit_step(commit)
        gc.collect()
        gc.freeze()
        started = time.perf_counter()
        for commit in built[WARM_UP_STEPS : WARM_UP_STEPS + steps]:
            await store.commit_step(commit)
        report(backend, steps, started)


async def floor_steps(steps: int) -> None:
    async with open_service("postgres") as service:
        assert isinstance(service, DatabaseSessionService)
        url = service.store._dialect.url  # pyright: ignore[reportAttributeAccessIssue] -- its schema
        connection: Any = await asyncpg.connect(**asyncpg_connect_args(url))  # pyright: ignore[reportUnknownMemberType]
        try:
            await connection.execute(_FLOOR_TABLES)
            events = [EVENT % i for i in range(BUILT_STEPS + WARM_UP_STEPS)]
            for event in events[:WARM_UP_STEPS]:
                await connection.execute(_RAW_STEP, "run-1", CHECKPOINT, event)
            gc.collect()
            gc.freeze()
            started = time.perf_counter()
            for event in events[WARM_UP_STEPS : WARM_UP_STEPS + steps]:
                await connection.execute(_RAW_STEP, "run-1", CHECKPOINT, event)
            report("floor", steps, started)
        finally:
            await connection.close()


def report(what: str, steps: int, started: float) -> None:
    per_step = (time.perf_counter() - started) / max(steps, 1) * 1e6
    print(f"{what}: {steps} steps, {per_step:.1f} us/step (wall time: compare instructions)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--backend", choices=("postgres", "memory"), default="postgres")
    parser.add_argument("--floor", action="store_true", help="pg/raw-step's statement instead")
    args = parser.parse_args()
    if not 0 <= args.steps <= BUILT_STEPS:
        parser.error(f"--steps must be between 0 and {BUILT_STEPS}")
    if args.floor:
        asyncio.run(floor_steps(args.steps))
    else:
        asyncio.run(commit_steps(args.backend, args.steps))


if __name__ == "__main__":
    main()
