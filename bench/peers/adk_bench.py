"""google-adk's side of the benchmark, run from bench/.venv (never baton's venv).

Same shapes as bench/baton_bench.py: "chain" (a 100-node Workflow of trivial function
nodes, fresh session per run, µs per node) and "resume" (a START -> a -> ask -> b
Workflow paused on a RequestInput in a session already holding H events, resumed by
a FunctionResponse; ms for that call). ADK has no PostgreSQL run here (its
DatabaseSessionService would need a sync/async driver pairing of its own).

Histories are appended through the session service's public `append_event`; when
building one would take longer than BUILD_BUDGET_S the size is reported as skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/figures.py

import figures  # noqa: E402

from google.adk.apps import App, ResumabilityConfig  # noqa: E402
from google.adk.events import Event, RequestInput  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.adk.sessions.sqlite_session_service import SqliteSessionService  # noqa: E402
from google.adk.workflow import FunctionNode, Workflow  # noqa: E402
from google.genai import types  # noqa: E402

CHAIN_NODES = 100
HISTORY_SIZES = (0, 1_000, 10_000, 100_000)
BUILD_BUDGET_S = 60.0
SLOW_RESUME_S = 5.0


def emit(workload, backend, value, unit, note=""):
    figures.emit("adk", workload, backend, value, unit, note)


def chain_workflow():
    def step(node_input):
        return node_input

    nodes = [FunctionNode(func=step, name=f"n{i}") for i in range(CHAIN_NODES)]
    return Workflow(name="chain", edges=[("START", *nodes)])


def resume_workflow():
    def a(node_input):
        return node_input

    def ask(node_input):
        return RequestInput(interrupt_id="ask", message="ok?", response_schema=bool)

    def b(node_input):
        return node_input

    return Workflow(name="resume", edges=[("START", a, ask, b)])


def make_runner(root, service):
    config = ResumabilityConfig(is_resumable=True)
    return Runner(
        app=App(name="bench", root_agent=root, resumability_config=config),
        session_service=service,
    )


def text_message(value):
    return types.Content(role="user", parts=[types.Part(text=value)])


def answer_message():
    response = types.FunctionResponse(id="ask", name="adk_request_input", response={"result": True})
    return types.Content(role="user", parts=[types.Part(function_response=response)])


async def drain(runner, session_id, message):
    count = 0
    async for _ in runner.run_async(user_id="u", session_id=session_id, new_message=message):
        count += 1
    return count


async def bench_chain(service, runs):
    runner = make_runner(chain_workflow(), service)
    seconds = []
    for attempt in range(runs + 1):
        session = await service.create_session(app_name="bench", user_id="u")
        started = time.perf_counter()
        await drain(runner, session.id, text_message("go"))
        if attempt >= 1:
            seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) / CHAIN_NODES * 1e6


async def fill_history(service, session, size):
    """Append `size` events; False when that would blow BUILD_BUDGET_S (appends slow down
    as the session grows, so the budget is checked as it goes, not estimated up front)."""
    started = time.perf_counter()
    for i in range(size):
        await service.append_event(session, Event(author="user", content=text_message(f"m{i}")))
        if i % 100 == 99 and time.perf_counter() - started > BUILD_BUDGET_S:
            return False
    return True


async def bench_resume(service, history, runs):
    runner = make_runner(resume_workflow(), service)
    session = await service.create_session(app_name="bench", user_id="u")
    if not await fill_history(service, session, history):
        return None
    seconds = []
    for attempt in range(runs + 1):
        await drain(runner, session.id, text_message("go"))
        started = time.perf_counter()
        await drain(runner, session.id, answer_message())
        elapsed = time.perf_counter() - started
        if attempt >= 1 or elapsed > SLOW_RESUME_S:
            seconds.append(elapsed)
        if sum(seconds) > SLOW_RESUME_S:
            break  # slow enough that a few runs tell the story
    return statistics.median(seconds) * 1e3


def open_service(backend, folder):
    if backend == "memory":
        return InMemorySessionService()
    return SqliteSessionService(str(Path(folder) / f"adk-{time.monotonic_ns()}.db"))


async def measure(backend, quick):
    sizes = HISTORY_SIZES[:2] if quick else HISTORY_SIZES
    with tempfile.TemporaryDirectory() as folder:
        try:
            value = await bench_chain(open_service(backend, folder), 3 if quick else 5)
            emit("chain", backend, value, "us/node")
        except Exception as error:  # a peer's API drifting must not stop the others
            emit("chain", backend, None, "us/node", f"failed: {type(error).__name__}: {error}")
        for size in sizes:
            workload = f"resume@{size}"
            try:
                value = await bench_resume(open_service(backend, folder), size, 3 if quick else 5)
                note = "" if value is not None else f"history build > {BUILD_BUDGET_S:.0f} s"
                emit(workload, backend, value, "ms", note)
            except Exception as error:
                emit(workload, backend, None, "ms", f"failed: {type(error).__name__}: {error}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backends", default="memory,sqlite")
    args = parser.parse_args()
    for backend in args.backends.split(","):
        if backend in ("memory", "sqlite"):
            asyncio.run(measure(backend, args.quick))


if __name__ == "__main__":
    main()
