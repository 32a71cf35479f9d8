"""Agents after a real crash: the agent tree runs in a child process on a SQLite file,
SIGKILLed right after its k-th step commit, for every k; a new process resumes it by
invocation id. Every agent, tool and model call whose result was committed ran once;
only a parallel branch that was in flight at the kill runs again.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import threading
from collections import Counter
from pathlib import Path

import pytest
from pydantic import JsonValue

from baton.sessions.sql import SqlStore
from baton.sessions.store import InvocationStatus, SessionKey
from baton.types import SessionId
from tests.agents import crash_child
from tests.conftest import migrated_sqlite

pytestmark = pytest.mark.slow

# Children fork from a server that imported baton once: a fresh process per run
# without paying an interpreter start each time.
_FORKS = multiprocessing.get_context("forkserver")
# Children start one at a time (they then run side by side): the forkserver, asked by
# several threads at once, once read a start request garbled (UnpicklingError in CI).
_STARTS = threading.Lock()
_FORKS.set_forkserver_preload(["tests.agents.crash_child"])

EXECUTIONS = Counter(
    {
        "first": 1,
        "model": 1,
        "t1": 1,
        "t2": 1,
        "model-final": 1,
        "p1": 1,
        "p2": 1,
        "l1": 2,
        "last": 1,
    }
)
COMMITS = 23  # an uninterrupted run's step commits (checked below)
PARALLEL = {"p1", "p2"}  # a branch in flight at the kill runs again
KILL_POINTS = range(1, COMMITS)

# Seed 002's StoryFlowAgent (examples/story_agent): its model calls, by agent.
STORY_EXECUTIONS = Counter(
    {"StoryGenerator": 1, "Critic": 2, "Reviser": 2, "GrammarCheck": 1, "ToneCheck": 1}
)
STORY_COMMITS = 28


def run_child(
    url: str, session: str, work: Path, action: str, kill_at: int | None, root: str = "tree"
) -> int:
    argv = ["--url", url, "--session", session, "--work", str(work), "--action", action]
    argv += ["--root", root]
    if kill_at is not None:
        argv += ["--kill-at", str(kill_at)]
    process = _FORKS.Process(target=crash_child.run, args=(argv, str(work / "log")), daemon=True)
    with _STARTS:
        process.start()
    process.join(60)
    code = process.exitcode
    if code is None:  # hung: end it here rather than leave it running past the test
        process.kill()
        process.join()
    assert code is not None, "the child did not finish in 60 s"
    process.close()  # its status pipe, now rather than at garbage collection
    return code


async def prepare(tmp_path: Path) -> tuple[str, SessionKey]:
    # A copy of a migrated file: each case's new file is not migrated again.
    url = f"sqlite+aiosqlite:///{await migrated_sqlite(tmp_path / 'agents.db')}"
    key = SessionKey(crash_child.APP_NAME, crash_child.USER_ID, SessionId("s"))
    store = SqlStore(url)
    await store.create_session(key.app_name, key.user_id, session_id=key.session_id)
    await store.close()
    return url, key


async def outcome(url: str, key: SessionKey) -> tuple[InvocationStatus, dict[str, JsonValue]]:
    store = SqlStore(url)
    try:
        [invocation] = await store.list_invocations(key)
        session = await store.get_session(key, with_events=False)
        assert session is not None
        return invocation.status, session.state
    finally:
        await store.close()


def executions(work: Path) -> Counter[str]:
    return Counter((work / "runs").read_text().split())


async def test_an_uninterrupted_run_is_the_baseline(tmp_path: Path) -> None:
    url, key = await prepare(tmp_path)

    assert await asyncio.to_thread(run_child, url, key.session_id, tmp_path, "start", None) == 0

    assert executions(tmp_path) == EXECUTIONS
    assert int((tmp_path / "commits").read_text()) == COMMITS
    status, state = await outcome(url, key)
    assert status == InvocationStatus.COMPLETED
    assert state == {n: "done" for n in ("first", "p1", "p2", "l1", "last")} | {"text": "written"}


async def test_a_run_killed_after_any_commit_resumes_without_redoing_work(
    tmp_path: Path,
) -> None:
    results = await kill_everywhere(tmp_path, "tree", KILL_POINTS)

    assert [r for r in results if r] == []


async def test_the_story_example_uninterrupted_is_the_baseline(tmp_path: Path) -> None:
    url, key = await prepare(tmp_path)

    code = await asyncio.to_thread(run_child, url, key.session_id, tmp_path, "start", None, "story")

    assert code == 0
    assert executions(tmp_path) == STORY_EXECUTIONS
    assert int((tmp_path / "commits").read_text()) == STORY_COMMITS


async def test_the_story_example_killed_after_any_commit_resumes_at_its_checkpoint(
    tmp_path: Path,
) -> None:
    results = await kill_everywhere(tmp_path, "story", range(1, STORY_COMMITS))

    assert [r for r in results if r] == []


async def kill_everywhere(tmp_path: Path, root: str, kill_points: range) -> list[str]:
    """Kill and resume once per kill point: independent cases, four at a time."""
    slots = asyncio.Semaphore(4)

    async def case(kill_at: int) -> str:
        async with slots:
            return await kill_and_resume(tmp_path / f"{root}{kill_at}", kill_at, root)

    return await asyncio.gather(*(case(k) for k in kill_points))


async def kill_and_resume(work: Path, kill_at: int, root: str) -> str:
    """Kill a run after commit `kill_at`, resume it; what went wrong ('' for nothing)."""
    work.mkdir()
    url, key = await prepare(work)
    killed = await asyncio.to_thread(run_child, url, key.session_id, work, "start", kill_at, root)
    if killed == 255 and int((work / "commits").read_text()) == kill_at:
        # The forkserver reports 255 when it loses a child's status (several children
        # ending at once); the counter shows the child reached its kill point.
        killed = -signal.SIGKILL
    resumed = await asyncio.to_thread(run_child, url, key.session_id, work, "resume", None, root)
    if resumed == 255 and (work / "resume-returned").exists():
        resumed = 0  # the same lost status; the child wrote that its run returned
    ran = executions(work)
    status, state = await outcome(url, key)
    expected = EXECUTIONS if root == "tree" else STORY_EXECUTIONS
    done = "last" in state and state.get("text") == "written" if root == "tree" else True
    problems = [
        f"start exited {killed}" if killed != -signal.SIGKILL else "",
        f"resume exited {resumed}" if resumed != 0 else "",
        f"status {status}" if status != InvocationStatus.COMPLETED else "",
        f"state {state}" if not done else "",
        *(
            f"{name} ran {ran[name]} times"
            for name in expected
            if ran[name] != expected[name] and not (name in PARALLEL and ran[name] == 2)
        ),
    ]
    found = "; ".join(p for p in problems if p)
    return f"killed after commit {kill_at}: {found}" if found else ""


async def test_a_parallel_agent_killed_after_an_escalation_ends_without_its_branches(
    tmp_path: Path,
) -> None:
    # root: seq[par[p1 escalates, p2 slow], last]; commit 4 holds p1's escalation, and a
    # run killed right after it must end par on resume, not run p1 and p2 again.
    for kill_at in range(1, 6):
        work = tmp_path / f"escalation{kill_at}"
        work.mkdir()
        url, key = await prepare(work)
        start = (url, key.session_id, work, "start", kill_at, "escalation")
        await asyncio.to_thread(run_child, *start)
        await asyncio.to_thread(run_child, url, key.session_id, work, "resume", None, "escalation")

        status, _ = await outcome(url, key)
        assert (kill_at, status) == (kill_at, InvocationStatus.COMPLETED)
        assert (kill_at, executions(work)) == (kill_at, Counter({"p1": 1, "p2": 1, "last": 1}))


SHARED_WRITES = {
    "cart": ["b", "c", "a"],  # the latest write: a's, on c's, on b's
    "seen": {"a": True, "b": True, "c": True},
    "last": "c",  # a scalar key keeps the later call in the turn, as in the reference
}


async def test_a_turn_killed_between_its_calls_ends_with_the_state_of_an_uninterrupted_one(
    tmp_path: Path,
) -> None:
    """The calls of one turn write a list, a dict and a scalar key, building on what the
    others wrote (b adds its item, c adds on it and ends, b ends, a adds on both): a run
    killed after any commit (the first two hold c's, then b's result as they ended)
    ends with the uninterrupted run's state, each call that ended having run once."""
    url, key = await prepare(tmp_path)
    code = await asyncio.to_thread(
        run_child, url, key.session_id, tmp_path, "start", None, "shared_writes"
    )
    assert code == 0
    assert await outcome(url, key) == (InvocationStatus.COMPLETED, SHARED_WRITES)
    commits = int((tmp_path / "commits").read_text())
    assert commits == 7

    problems: list[str] = []
    for kill_at in range(1, commits):
        work = tmp_path / f"killed{kill_at}"
        work.mkdir()
        url, key = await prepare(work)
        await asyncio.to_thread(
            run_child, url, key.session_id, work, "start", kill_at, "shared_writes"
        )
        await asyncio.to_thread(
            run_child, url, key.session_id, work, "resume", None, "shared_writes"
        )
        found = await outcome(url, key)
        if found != (InvocationStatus.COMPLETED, SHARED_WRITES):
            problems.append(f"killed after commit {kill_at}: {found}")
        if executions(work) != Counter({"add-a": 1, "add-b": 1, "add-c": 1}):
            problems.append(f"killed after commit {kill_at}: ran {executions(work)}")
    assert problems == []
