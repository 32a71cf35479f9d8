"""Callbacks and agent transfer after a real crash: the agents run in a child process on
a SQLite file, SIGKILLed right after its k-th step commit, for every k; a new process
resumes it. Every callback, model and tool call ran exactly once: what committed is
not called again, and nothing was in flight at a kill. A transferred-to agent resumes
in place: the agent that handed over does not ask its model again. A sub-agent its
parent called as a tool (mode="single_turn") runs once: a run of it that ended is not
run again for a result that was not committed yet.
"""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path

import pytest

from baton.sessions.store import InvocationStatus
from tests.agents.test_crash import executions, outcome, prepare, run_child

pytestmark = pytest.mark.slow

CALLBACKS = Counter(
    {
        "before_agent": 1,
        "before_model": 2,
        "model": 1,
        "after_model": 2,
        "before_tool": 1,
        "t1": 1,
        "after_tool": 1,
        "model-final": 1,
        "after_agent": 1,
    }
)
TRANSFER = Counter({"triage": 1, "refunds": 1, "t1": 1, "refunds-final": 1})
HANDBACK = Counter(
    {"triage": 1, "refunds": 1, "sales": 1, "t1": 1, "sales-final": 1, "triage-final": 1}
)
DELEGATION = Counter({"boss": 1, "helper": 1, "t1": 1, "helper-final": 1, "boss-final": 1})
LONG_RUNNING = Counter({"model": 1, "job": 1, "t2": 1, "model-pending": 1})
STRUCTURED = Counter({"model": 1, "t1": 1, "model-final": 1})
COMPLETED, PAUSED = InvocationStatus.COMPLETED, InvocationStatus.PAUSED
# (root, executions, commits of an uninterrupted run[, the run's status at its end])
ROOTS = [
    # the start, two turns (the first with the agent's checkpoint), the tool result, the
    # end, the node run
    pytest.param("callbacks", CALLBACKS, 6, COMPLETED, id="callbacks"),
    # the start, triage's turn and transfer, refunds' two turns, the tool result, refunds'
    # end, triage's end with the node run
    pytest.param("transfer", TRANSFER, 8, COMPLETED, id="transfer"),
    # the start; triage's turn and transfer; refunds' turn, transfer and end; sales' turn,
    # tool result, turn, transfer and end; triage's second turn; its end with the node run
    pytest.param("handback", HANDBACK, 13, COMPLETED, id="handback"),
    # the start; boss's turn; helper's turn, tool result, turn and end; boss's tool
    # result and turn; its end with the node run
    pytest.param("delegation", DELEGATION, 9, COMPLETED, id="delegation"),
    # the start; the turn; job's result as it ends (t2 still runs); the turn's results
    # (job's interim one and t2's); the model's reply; the pause. It waits for the job.
    pytest.param("long_running", LONG_RUNNING, 6, PAUSED, id="long_running"),
    # the start; the turn calling t1; its result; the turn calling set_model_response;
    # its answer; the structured reply; the end with the node run
    pytest.param("structured", STRUCTURED, 7, COMPLETED, id="structured"),
]


@pytest.mark.parametrize(("root", "expected", "commits", "end"), ROOTS)
async def test_an_uninterrupted_run_is_the_baseline(
    tmp_path: Path, root: str, expected: Counter[str], commits: int, end: InvocationStatus
) -> None:
    url, key = await prepare(tmp_path)

    code = await asyncio.to_thread(run_child, url, key.session_id, tmp_path, "start", None, root)

    assert code == 0
    assert executions(tmp_path) == expected
    assert int((tmp_path / "commits").read_text()) == commits
    assert (await outcome(url, key))[0] == end


@pytest.mark.parametrize(("root", "expected", "commits", "end"), ROOTS)
async def test_a_run_killed_after_any_commit_redoes_nothing(
    tmp_path: Path, root: str, expected: Counter[str], commits: int, end: InvocationStatus
) -> None:
    async def case(kill_at: int) -> str:
        work = tmp_path / f"kill{kill_at}"
        work.mkdir()
        url, key = await prepare(work)
        killed = await asyncio.to_thread(
            run_child, url, key.session_id, work, "start", kill_at, root
        )
        if killed == 255 and int((work / "commits").read_text()) == kill_at:
            killed = -signal.SIGKILL  # the forkserver lost the status; the counter shows it
        resumed = await asyncio.to_thread(
            run_child, url, key.session_id, work, "resume", None, root
        )
        if resumed == 255 and (work / "resume-returned").exists():
            resumed = 0
        status, _ = await outcome(url, key)
        ran = executions(work)
        problems = [
            f"start exited {killed}" if killed != -signal.SIGKILL else "",
            f"resume exited {resumed}" if resumed != 0 else "",
            f"status {status}" if status != end else "",
            f"ran {dict(ran)}" if ran != expected else "",
        ]
        found = "; ".join(p for p in problems if p)
        return f"killed after commit {kill_at}: {found}" if found else ""

    slots = asyncio.Semaphore(4)

    async def limited(kill_at: int) -> str:
        async with slots:
            return await case(kill_at)

    problems = await asyncio.gather(*(limited(k) for k in range(1, commits)))

    assert [p for p in problems if p] == []
