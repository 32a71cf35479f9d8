"""baton's side of the benchmark: "chain" and "resume" on memory, SQLite and PostgreSQL.

    .venv/bin/python bench/baton_bench.py [--quick] [--backends memory,sqlite,postgres]

- chain: a 100-node linear workflow of trivial sync functions, a fresh session per
  run; the figure is the median microseconds per node. Its target is relative:
  chain-async + 1.5 x thread-hop, both measured in the same run (a plain node runs
  in a worker thread, `baton.threads`: the engine's cost plus one hop).
- chain-async: the same workflow of `async def` functions (no thread): the engine's
  own cost per node, interleaved run by run with chain.
- thread-hop: the floor of one plain call: the median microseconds of
  `baton.threads.run_sync` on a no-op, between two stretches of event-loop work as
  long as a node's, measured alongside the chains.
- resume: a session already holds H events (0, 1,000, 10,000, 100,000, committed
  straight through the store with `invocation_id=None`); a `START -> a -> ask -> b`
  run pauses in it; the figure is the median latency, in milliseconds, of the
  `run_async` call whose answer completes the run.
- agent-resume: the same, for an LlmAgent (a scripted model) paused at its
  long-running tool's call, with `include_contents="none"`: the call answering it
  resumes the agent and asks the model once more. Flat in H: the resume reads the
  run's checkpoint and its invocation's events, never the session's history.
- agent-resume-history: the same agent showing the model the session's history
  (`include_contents="default"`): the model's request needs every earlier message,
  so this grows with H (up to 10,000 here); the resume's own bookkeeping does not.

Prints one JSON object per figure (see `bench/report.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import figures
from pydantic import JsonValue
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from baton import (
    App,
    FunctionNode,
    LlmAgent,
    LongRunningFunctionTool,
    RequestInput,
    ResumabilityConfig,
    Runner,
    Workflow,
    types,
)
from baton.events import REQUEST_INPUT_FUNCTION, Event
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.services import (
    BaseSessionService,
    DatabaseSessionService,
    InMemorySessionService,
    SqliteSessionService,
)
from baton.sessions.store import SessionKey, StepCommit
from baton.threads import run_sync
from baton.types import FunctionCall, SessionId

POSTGRES_URL = os.environ.get(
    "BATON_BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
CHAIN_NODES = 100
HISTORY_SIZES = (0, 1_000, 10_000, 100_000)
AGENT_HISTORY_SIZES = HISTORY_SIZES[:3]  # the model's request holds the whole history
HISTORY_BATCH = 1_000  # events per commit while building a history


def emit(workload: str, backend: str, value: float | None, unit: str, note: str = "") -> None:
    figures.emit("baton", workload, backend, value, unit, note)


def emit_chains(backend: str, measured: dict[str, float]) -> None:
    """The chain figures; chain's target is the engine's cost plus the hop floor."""
    floor = measured["chain-async"] + HOP_FLOOR_FACTOR * measured["thread-hop"]
    figures.emit("baton", "chain", backend, measured["chain"], "us/node", target=floor)
    emit("chain-async", backend, measured["chain-async"], "us/node")
    emit("thread-hop", backend, measured["thread-hop"], "us")


HOP_CALLS = 200  # no-op hops timed after each measured round of the chains
HOP_FLOOR_FACTOR = 1.5  # chain's target: chain-async + this many thread hops a node


def chain_workflow() -> Workflow:
    def step(node_input: JsonValue) -> JsonValue:
        return node_input

    nodes = [FunctionNode(step, name=f"n{i}") for i in range(CHAIN_NODES)]
    return Workflow(name="chain", edges=[("START", *nodes)])


def async_chain_workflow() -> Workflow:
    async def step(node_input: JsonValue) -> JsonValue:
        return node_input

    nodes = [FunctionNode(step, name=f"n{i}") for i in range(CHAIN_NODES)]
    return Workflow(name="chain", edges=[("START", *nodes)])


def resume_workflow() -> Workflow:
    def a(node_input: JsonValue) -> JsonValue:
        return node_input

    def ask(node_input: JsonValue) -> RequestInput:
        return RequestInput(interrupt_id="ask", message="ok?", response_schema=bool)

    def b(node_input: JsonValue) -> JsonValue:
        return node_input

    return Workflow(name="resume", edges=[("START", a, ask, b)])


def runner_for(root: Workflow | LlmAgent, service: BaseSessionService) -> Runner:
    config = ResumabilityConfig(is_resumable=True)
    return Runner(
        app=App(name="bench", root_agent=root, resumability_config=config),
        session_service=service,
    )


def text_message(value: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=value)])


def answer_message() -> types.Content:
    response = types.FunctionResponse(
        id="ask", name=REQUEST_INPUT_FUNCTION, response={"result": True}
    )
    return types.Content(role="user", parts=[types.Part(function_response=response)])


async def drain(runner: Runner, session_id: str, message: types.Content) -> int:
    count = 0
    async for _ in runner.run_async(user_id="u", session_id=session_id, new_message=message):
        count += 1
    return count


async def bench_chains(service: BaseSessionService, runs: int) -> dict[str, float]:
    """µs per node of the plain and the async chain, run by run in turn, and the
    thread-hop floor measured between them: one machine state for all three."""
    runners = {
        "chain": runner_for(chain_workflow(), service),
        "chain-async": runner_for(async_chain_workflow(), service),
    }
    seconds: dict[str, list[float]] = {name: [] for name in runners}
    hops: list[float] = []
    for attempt in range(runs + 2):
        for name, runner in runners.items():
            session = await service.create_session(app_name="bench", user_id="u")
            started = time.perf_counter()
            events = await drain(runner, session.id, text_message("go"))
            elapsed = time.perf_counter() - started
            assert events == CHAIN_NODES, f"expected {CHAIN_NODES} output events, got {events}"
            if attempt >= 2:  # the first two runs warm caches and connection pools
                seconds[name].append(elapsed)
        if attempt >= 2:
            hops.append(await hop_floor(statistics.median(seconds["chain-async"]) / CHAIN_NODES))
    figures = {name: statistics.median(s) / CHAIN_NODES * 1e6 for name, s in seconds.items()}
    figures["thread-hop"] = statistics.median(hops) * 1e6
    return figures


def _noop() -> None:
    return None


async def hop_floor(gap: float) -> float:
    """Median seconds of one `run_sync` no-op, each after `gap` seconds of loop work (a
    worker thread idle that long wakes as slowly as between two nodes of a chain)."""
    taken: list[float] = []
    for _ in range(HOP_CALLS):
        busy_until = time.perf_counter() + gap
        while time.perf_counter() < busy_until:
            pass
        started = time.perf_counter()
        await run_sync(_noop)
        taken.append(time.perf_counter() - started)
    return statistics.median(taken)


async def fill_history(service: BaseSessionService, key: SessionKey, size: int) -> None:
    """Append `size` events to the session, a batch per commit, outside any run."""
    for start in range(0, size, HISTORY_BATCH):
        batch = tuple(
            Event(author="user", content=text_message(f"earlier message {i}"))
            for i in range(start, min(size, start + HISTORY_BATCH))
        )
        await service.store.commit_step(
            StepCommit(session=key, invocation_id=None, expected_version=0, events=batch)
        )


async def bench_resume(service: BaseSessionService, history: int, runs: int) -> float:
    runner = runner_for(resume_workflow(), service)
    return await time_answers(
        runner, history, runs, start=text_message("go"), answer=answer_message()
    )


async def time_answers(
    runner: Runner, history: int, runs: int, *, start: types.Content, answer: types.Content
) -> float:
    """Median ms of the call answering a run that `start` paused, in a session holding
    `history` earlier events (each run adds its own few)."""
    service = runner.session_service
    session = await service.create_session(app_name="bench", user_id="u")
    await fill_history(service, SessionKey("bench", "u", SessionId(session.id)), history)
    seconds: list[float] = []
    for attempt in range(runs + 1):
        await drain(runner, session.id, start)
        started = time.perf_counter()
        await drain(runner, session.id, answer)
        if attempt >= 1:
            seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) * 1e3


def start_job(what: str) -> None:
    """Start a job; its result arrives later (None: no interim status for the model)."""
    del what


def respond(request: LlmRequest) -> str | FunctionCall:
    """Call the long-running tool; once its result is in, answer."""
    if request.contents[-1].function_responses:
        return "done"
    return FunctionCall(id="job", name="start_job", args={"what": "report"})


def agent_with_a_job(contents: Literal["default", "none"]) -> LlmAgent:
    model = ScriptedModel(responder=respond)
    tool = LongRunningFunctionTool(start_job)
    return LlmAgent(name="assistant", model=model, tools=[tool], include_contents=contents)


def job_result() -> types.Content:
    result = types.FunctionResponse(id="job", name="start_job", response={"url": "r.pdf"})
    return types.Content(role="user", parts=[types.Part(function_response=result)])


async def bench_agent_resume(
    service: BaseSessionService, history: int, runs: int, contents: Literal["default", "none"]
) -> float:
    runner = runner_for(agent_with_a_job(contents), service)
    start = text_message("make the report")
    return await time_answers(runner, history, runs, start=start, answer=job_result())


@asynccontextmanager
async def open_service(backend: str) -> AsyncIterator[BaseSessionService]:
    if backend == "memory":
        yield InMemorySessionService()
        return
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            service = SqliteSessionService(str(Path(folder) / "bench.db"))
            try:
                yield service
            finally:
                await service.close()
        return
    schema = f"baton_bench_{uuid.uuid4().hex[:8]}"
    await run_on_postgres(f'CREATE SCHEMA "{schema}"')
    service = DatabaseSessionService(f"{POSTGRES_URL}?search_path={schema}")
    try:
        yield service
    finally:
        await service.close()
        await run_on_postgres(f'DROP SCHEMA "{schema}" CASCADE')


async def run_on_postgres(statement: str) -> None:
    engine = create_async_engine(POSTGRES_URL, connect_args={"timeout": 5})
    try:
        async with engine.begin() as connection:
            await connection.execute(text(statement))
    finally:
        await engine.dispose()


Job = Callable[[BaseSessionService], Awaitable[float | dict[str, float]]]
"""Measures one figure, or several named ones (workload -> value)."""


def jobs_for(quick: bool) -> list[tuple[str, str, Job]]:
    chain_runs = 5 if quick else 20
    resume_runs = 5 if quick else 15
    sizes = HISTORY_SIZES[:2] if quick else HISTORY_SIZES

    def resume_job(history: int) -> Job:
        return lambda service: bench_resume(service, history, resume_runs)

    def agent_job(history: int, contents: Literal["default", "none"]) -> Job:
        return lambda service: bench_agent_resume(service, history, resume_runs, contents)

    jobs: list[tuple[str, str, Job]] = [
        ("chain", "us/node", lambda service: bench_chains(service, chain_runs))
    ]
    jobs += [(f"resume@{h}", "ms", resume_job(h)) for h in sizes]
    jobs += [(f"agent-resume@{h}", "ms", agent_job(h, "none")) for h in sizes]
    shown = [h for h in sizes if h in AGENT_HISTORY_SIZES]
    return jobs + [(f"agent-resume-history@{h}", "ms", agent_job(h, "default")) for h in shown]


async def measure(backend: str, quick: bool) -> None:
    for workload, unit, job in jobs_for(quick):
        try:
            async with open_service(backend) as service:
                value = await job(service)
            if isinstance(value, dict):
                emit_chains(backend, value)
            else:
                emit(workload, backend, value, unit)
        except (OSError, TimeoutError) as error:
            emit(workload, backend, None, unit, f"{backend} unavailable: {error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer runs, histories up to 1,000")
    parser.add_argument("--backends", default="memory,sqlite,postgres")
    args = parser.parse_args()
    for backend in str(args.backends).split(","):
        asyncio.run(measure(backend, bool(args.quick)))


if __name__ == "__main__":
    main()
