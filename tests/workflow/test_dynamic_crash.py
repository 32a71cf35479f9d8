"""Dynamic children after a real crash: the run is SIGKILLed right after its k-th step
commit, for every k, on a SQLite file; a new process resumes it by invocation id. A
child whose result was committed never runs again; only a child in flight at the kill
(one of the two gathered ones) may run a second time.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import threading
from collections import Counter
from pathlib import Path

import pytest

from baton.history import acting_node
from baton.sessions.sql import SqlStore
from baton.sessions.store import InvocationStatus, SessionKey
from baton.types import SessionId
from tests.conftest import migrated_sqlite
from tests.workflow import dynamic_crash_child as child

pytestmark = pytest.mark.slow

_FORKS = multiprocessing.get_context("forkserver")
# Children start one at a time (they then run side by side): the forkserver, asked by
# several threads at once, once read a start request garbled (UnpicklingError in CI).
_STARTS = threading.Lock()
_FORKS.set_forkserver_preload(["tests.workflow.dynamic_crash_child"])

CHILDREN = ("s1", "s2", "s3", "g1", "g2")
GATHERED = {"g1", "g2"}
# The start, five children, and the parent's end, which lands with the workflow's (no
# code runs between them); checked below.
COMMITS = 7
PARENT_END = 7


def parent_runs(kill_at: int) -> int:
    """The parent reruns after a kill between its start and its own commit."""
    return 2 if 1 < kill_at < PARENT_END else 1


def run_child(url: str, work: Path, action: str, kill_at: int | None) -> int:
    argv = ["--url", url, "--work", str(work), "--action", action]
    if kill_at is not None:
        argv += ["--kill-at", str(kill_at)]
    process = _FORKS.Process(target=child.run, args=(argv, str(work / "log")), daemon=True)
    with _STARTS:
        process.start()
    process.join(60)
    code = process.exitcode
    if code is None:  # hung: end it here rather than leave it running past the test
        process.kill()
        process.join()
    assert code is not None, "the child did not finish in 60 s"
    process.close()
    return code


async def prepare(work: Path) -> tuple[str, SessionKey]:
    # A copy of a migrated file: each case's new file is not migrated again.
    url = f"sqlite+aiosqlite:///{await migrated_sqlite(work / 'dynamic.db')}"
    key = SessionKey(child.APP_NAME, child.USER_ID, SessionId(child.SESSION_ID))
    store = SqlStore(url)
    await store.create_session(key.app_name, key.user_id, session_id=key.session_id)
    await store.close()
    return url, key


BRANCHES = {"<s1>": None, "<s2>": "step@2", "<s3>": None, "<g1>": "gathered", "<g2>": None}


async def outcome(url: str, key: SessionKey) -> tuple[InvocationStatus, str | None]:
    store = SqlStore(url)
    try:
        [invocation] = await store.list_invocations(key)
        session = await store.get_session(key)
        assert session is not None
        outputs = [e.output for e in session.events if acting_node(e) == "parent" and e.output]
        return invocation.status, str(outputs[-1]) if outputs else None
    finally:
        await store.close()


async def branches(url: str, key: SessionKey) -> dict[str, str | None]:
    """The branch of each child's output event (use_sub_branch, override_branch)."""
    store = SqlStore(url)
    try:
        session = await store.get_session(key)
        assert session is not None
        return {
            str(e.output): e.branch
            for e in session.events
            if e.output is not None and acting_node(e) == "step"
        }
    finally:
        await store.close()


def executions(work: Path) -> Counter[str]:
    return Counter((work / "runs").read_text().split())


async def test_an_uninterrupted_run_commits_each_child_once(tmp_path: Path) -> None:
    url, key = await prepare(tmp_path)

    assert await asyncio.to_thread(run_child, url, tmp_path, "start", None) == 0

    assert executions(tmp_path) == Counter({name: 1 for name in ("parent", *CHILDREN)})
    assert int((tmp_path / "commits").read_text()) == COMMITS
    assert await outcome(url, key) == (InvocationStatus.COMPLETED, "<s1><s2><s3><g1><g2>")
    assert await branches(url, key) == BRANCHES


async def test_a_run_killed_after_any_commit_resumes_without_redoing_children(
    tmp_path: Path,
) -> None:
    slots = asyncio.Semaphore(4)

    async def case(kill_at: int) -> str:
        async with slots:
            return await kill_and_resume(tmp_path / f"kill{kill_at}", kill_at)

    problems = await asyncio.gather(*(case(k) for k in range(1, COMMITS)))

    assert [p for p in problems if p] == []


async def kill_and_resume(work: Path, kill_at: int) -> str:
    """Kill a run after commit `kill_at`, resume it; what went wrong ('' for nothing)."""
    work.mkdir()
    url, key = await prepare(work)
    killed = await asyncio.to_thread(run_child, url, work, "start", kill_at)
    if killed == 255 and int((work / "commits").read_text()) == kill_at:
        killed = -signal.SIGKILL  # the forkserver lost the status; the counter shows the kill
    resumed = await asyncio.to_thread(run_child, url, work, "resume", None)
    if resumed == 255 and (work / "resume-returned").exists():
        resumed = 0
    ran = executions(work)
    status, result = await outcome(url, key)
    problems = [
        f"start exited {killed}" if killed != -signal.SIGKILL else "",
        f"resume exited {resumed}" if resumed != 0 else "",
        f"status {status}" if status != InvocationStatus.COMPLETED else "",
        f"result {result}" if result != "<s1><s2><s3><g1><g2>" else "",
        f"branches {found}" if (found := await branches(url, key)) != BRANCHES else "",
        f"parent ran {ran['parent']} times" if ran["parent"] != parent_runs(kill_at) else "",
        *(
            f"{name} ran {ran[name]} times"
            for name in CHILDREN
            if ran[name] != 1 and not (name in GATHERED and ran[name] == 2)
        ),
    ]
    found = "; ".join(p for p in problems if p)
    return f"killed after commit {kill_at}: {found}" if found else ""
