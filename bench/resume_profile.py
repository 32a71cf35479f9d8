"""The cost in baton's process of answering a paused run, measured in a way that holds
under load.

    .venv/bin/python bench/resume_profile.py [--runs N] [--backend memory|sqlite|postgres]
        [--agent none|default] [--no-answer] [--cprofile]

Pauses `--runs` sessions of baton_bench's resume workflow (`START -> a -> ask -> b`),
then answers each with one `run_async` call (postgres_bench's pg/resume). Wall time is
noisy on a shared machine; instruction counts are not. Count them with callgrind, once
answering and once with `--no-answer` (the same start-up, imports and paused runs), and
divide the difference by the runs:

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.answer \\
        .venv/bin/python bench/resume_profile.py --runs 20
    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.paused \\
        .venv/bin/python bench/resume_profile.py --runs 20 --no-answer
    # instructions per resume = (Ir of cg.answer - Ir of cg.paused) / 20

`--agent none` (or `default`) pauses and answers baton_bench's agent-resume LlmAgent
instead (a scripted model paused at its long-running call, answered with the call's
result; `default` shows its model the session's history), as `agent-resume@0` (and
`agent-resume-history@0`) does.
`--cprofile` prints the Python functions the answering calls spend their time in.
The heap is frozen (`gc.freeze`) before the answers, as in engine_profile.py.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import statistics
import time
from typing import Literal

from baton_bench import (
    agent_with_a_job,
    answer_message,
    drain,
    job_result,
    open_service,
    resume_workflow,
    runner_for,
    text_message,
)
from engine_profile import print_profile

WARM_UP_RUNS = 2


async def measure(
    backend: str,
    runs: int,
    answer: bool,
    profiler: cProfile.Profile | None,
    agent: Literal["none", "default"] | None = None,
) -> list[float]:
    """Seconds of each measured answering call (of the workflow, or of the agent showing
    its model the contents `agent`)."""
    seconds: list[float] = []
    root = resume_workflow() if agent is None else agent_with_a_job(agent)
    start = text_message("go" if agent is None else "make the report")
    reply = answer_message() if agent is None else job_result()
    async with open_service(backend) as service:
        runner = runner_for(root, service)
        sessions: list[str] = []
        for _ in range(WARM_UP_RUNS + runs):
            session = await service.create_session(app_name="bench", user_id="u")
            await drain(runner, session.id, start)
            sessions.append(session.id)
        for session_id in sessions[:WARM_UP_RUNS]:
            await drain(runner, session_id, reply)
        gc.collect()
        gc.freeze()
        if not answer:
            return seconds
        for session_id in sessions[WARM_UP_RUNS:]:
            if profiler is not None:
                profiler.enable()
            started = time.perf_counter()
            events = await drain(runner, session_id, reply)
            seconds.append(time.perf_counter() - started)
            if profiler is not None:
                profiler.disable()
            assert events >= 1, "the answer produced no events"
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="answered runs (after 2 warm-up)")
    parser.add_argument("--backend", choices=("memory", "sqlite", "postgres"), default="memory")
    parser.add_argument(
        "--agent", choices=("none", "default"), help="resume an LlmAgent with these contents"
    )
    parser.add_argument("--no-answer", action="store_true", help="pause the runs only")
    parser.add_argument("--cprofile", action="store_true", help="print where the time goes")
    args = parser.parse_args()
    profiler = cProfile.Profile() if args.cprofile else None
    answer = not args.no_answer
    seconds = asyncio.run(measure(args.backend, args.runs, answer, profiler, args.agent))
    if seconds:
        ms = statistics.median(seconds) * 1e3
        what = "resume" if args.agent is None else f"agent-resume ({args.agent})"
        print(f"{what} {args.backend}: {ms:.3f} ms (median of {len(seconds)})")
    if profiler is not None:
        print_profile(profiler)


if __name__ == "__main__":
    main()
