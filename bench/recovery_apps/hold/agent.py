"""The recovery benchmark's run: `first` commits, then `hang` stops its process's run.

In the process started with BATON_BENCH_HANG=<file>, `hang` writes the time to that
file and sleeps for an hour: the benchmark kills that process there. Anywhere else
(the process that continues the run) it returns at once, and its output event is the
run's next commit.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from baton import App, ResumabilityConfig, Workflow

HANG = "BATON_BENCH_HANG"
CONTINUED = "continued"


def first(node_input: str) -> str:
    return node_input


def hang(node_input: str) -> str:
    marker = os.environ.get(HANG)
    if marker:
        Path(marker).write_text(repr(time.time()))
        time.sleep(3600)
    return CONTINUED


def last(node_input: str) -> str:
    return node_input


app = App(
    name="hold",
    root_agent=Workflow(name="hold", edges=[("START", first, hang, last)]),
    resumability_config=ResumabilityConfig(is_resumable=True),
)
