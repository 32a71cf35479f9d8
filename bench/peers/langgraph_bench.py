"""LangGraph's side of the benchmark, run from bench/.venv (never baton's venv).

Same shapes as bench/baton_bench.py: "chain" (a StateGraph of 100 trivial nodes, a
fresh thread per run, µs per node) and "resume" (START -> a -> ask -> b where `ask`
calls `interrupt()`, resumed with `Command(resume=True)` in a thread that already
holds H checkpoints; ms for that call). A LangGraph thread's history is its
checkpoints, so H checkpoints are written through the saver's public `put` first.
Checkpointers: InMemorySaver and SqliteSaver (a file, WAL); PostgresSaver is not
installed here.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import TypedDict

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/figures.py

import figures  # noqa: E402

from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402

CHAIN_NODES = 100
HISTORY_SIZES = (0, 1_000, 10_000, 100_000)


class State(TypedDict):
    value: str


def emit(workload, backend, value, unit, note=""):
    figures.emit("langgraph", workload, backend, value, unit, note)


def chain_graph(saver):
    def step(state):
        return {"value": state["value"]}

    graph = StateGraph(State)
    names = [f"n{i}" for i in range(CHAIN_NODES)]
    for name in names:
        graph.add_node(name, step)
    for first, second in zip([START, *names], [*names, END], strict=True):
        graph.add_edge(first, second)
    return graph.compile(checkpointer=saver)


def resume_graph(saver):
    def a(state):
        return {"value": state["value"]}

    def ask(state):
        return {"value": str(interrupt("ok?"))}

    def b(state):
        return {"value": state["value"]}

    graph = StateGraph(State)
    for name, fn in (("a", a), ("ask", ask), ("b", b)):
        graph.add_node(name, fn)
    for first, second in ((START, "a"), ("a", "ask"), ("ask", "b"), ("b", END)):
        graph.add_edge(first, second)
    return graph.compile(checkpointer=saver)


def thread(thread_id):
    return {"configurable": {"thread_id": thread_id}}


def bench_chain(saver, runs):
    graph = chain_graph(saver)
    seconds = []
    for attempt in range(runs + 1):
        started = time.perf_counter()
        graph.invoke({"value": "go"}, thread(str(uuid.uuid4())), durability="sync")
        if attempt >= 1:
            seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) / CHAIN_NODES * 1e6


def fill_history(saver, thread_id, size):
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for step in range(size):
        metadata = {"source": "input", "step": step, "parents": {}}
        config = saver.put(config, empty_checkpoint(), metadata, {})


def bench_resume(saver, history, runs):
    graph = resume_graph(saver)
    thread_id = str(uuid.uuid4())
    fill_history(saver, thread_id, history)
    seconds = []
    for attempt in range(runs + 1):
        graph.invoke({"value": "go"}, thread(thread_id), durability="sync")
        started = time.perf_counter()
        result = graph.invoke(Command(resume=True), thread(thread_id), durability="sync")
        if attempt >= 1:
            seconds.append(time.perf_counter() - started)
        assert result["value"] == "True", result
    return statistics.median(seconds) * 1e3


def open_saver(backend, folder):
    if backend == "memory":
        return InMemorySaver()
    connection = sqlite3.connect(
        str(Path(folder) / f"lg-{time.monotonic_ns()}.db"), check_same_thread=False
    )
    connection.execute("PRAGMA journal_mode=WAL")
    return SqliteSaver(connection)


def measure(backend, quick):
    sizes = HISTORY_SIZES[:2] if quick else HISTORY_SIZES
    with tempfile.TemporaryDirectory() as folder:
        try:
            value = bench_chain(open_saver(backend, folder), 3 if quick else 10)
            emit("chain", backend, value, "us/node")
        except Exception as error:  # a peer's API drifting must not stop the others
            emit("chain", backend, None, "us/node", f"failed: {type(error).__name__}: {error}")
        for size in sizes:
            try:
                value = bench_resume(open_saver(backend, folder), size, 3 if quick else 10)
                emit(f"resume@{size}", backend, value, "ms")
            except Exception as error:
                note = f"failed: {type(error).__name__}: {error}"
                emit(f"resume@{size}", backend, None, "ms", note)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backends", default="memory,sqlite")
    args = parser.parse_args()
    for backend in args.backends.split(","):
        if backend in ("memory", "sqlite"):
            measure(backend, args.quick)


if __name__ == "__main__":
    main()
