"""A task agent's conversation after a real crash: the app runs in child processes on
each backend (SQLite, PostgreSQL, MariaDB), SIGKILLed right after its k-th step commit
(counted across the processes that start the run, resume it and send the user's
reply), for every k; new processes carry it to the end, resuming a run cut short and
replying where the task agent waits.
Every model and tool call whose result was committed ran once, and the task's result
reached what follows it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from baton.sessions.sql import SqlStore
from baton.sessions.store import InvocationStatus, SessionKey
from baton.types import SessionId
from tests.agents import crash_child
from tests.agents.test_crash import executions, run_child

pytestmark = pytest.mark.slow

NODE = Counter({"question": 1, "lookup": 1, "t1": 1, "finish": 1, "after": 1})
SEQUENCE = NODE - Counter(["after"]) + Counter(['after:{"result":"Bob"}'])
DELEGATION = Counter({"delegate": 1, "question": 1, "lookup": 1, "t1": 1, "finish": 1, "thanks": 1})
# (root, executions, commits of an uninterrupted conversation)
ROOTS = [
    # the start; the question (with the agent's checkpoint), the node's wait; the reply;
    # the lookup, t1's result, finish_task, its result (the output), the end with the node
    # run, after, the run
    pytest.param("task_node", NODE, 10, id="node"),
    # as "node", the task agent inside a sequence (two more commits: the sequence's
    # checkpoint and its end): what follows gets the task's result
    pytest.param("task_sequence", SEQUENCE, 12, id="sequence"),
    # the start; coord's call (its checkpoint); asker's question (its checkpoint); the
    # wait; the reply; the lookup, t1's result, finish_task, its result, asker's end; the
    # call's answer; coord's reply, its end with the node run, and the run
    pytest.param("task_delegation", DELEGATION, 13, id="delegation"),
]
MOST_PROCESSES = 6


@dataclass(frozen=True)
class Database:
    """The database the child processes use, and the test's own store on it for every
    case: a store (an engine, its connections, its schema check) per read cost more than
    the read on PostgreSQL and MariaDB."""

    url: str
    store: SqlStore


@pytest.fixture
async def database(emptied_store_url: str) -> AsyncIterator[Database]:
    opened = SqlStore(emptied_store_url)
    try:
        yield Database(emptied_store_url, opened)
    finally:
        await opened.close()


async def status(store: SqlStore, key: SessionKey) -> InvocationStatus | None:
    invocations = await store.list_invocations(key)
    return invocations[-1].status if invocations else None


async def converse(
    database: Database, work: Path, root: str, kill_at: int | None
) -> tuple[str, InvocationStatus]:
    """Start in a session of its own, then resume or reply until the conversation ends;
    the processes' exits."""
    url, store = database.url, database.store
    key = SessionKey(crash_child.APP_NAME, crash_child.USER_ID, SessionId(work.name))
    await store.create_session(key.app_name, key.user_id, session_id=key.session_id)
    exits: list[str] = []
    action = "start"
    for _ in range(MOST_PROCESSES):
        code = await asyncio.to_thread(run_child, url, key.session_id, work, action, kill_at, root)
        exits.append(f"{action}:{code}")
        now = await status(store, key)
        if now is InvocationStatus.COMPLETED:
            return " ".join(exits), now
        action = "start" if now is None else "reply" if now is InvocationStatus.PAUSED else "resume"
    return " ".join(exits), await status(store, key) or InvocationStatus.RUNNING


@pytest.mark.parametrize(("root", "expected", "commits"), ROOTS)
async def test_an_uninterrupted_conversation_is_the_baseline(
    database: Database, tmp_path: Path, root: str, expected: Counter[str], commits: int
) -> None:
    exits, final = await converse(database, tmp_path, root, None)

    assert final is InvocationStatus.COMPLETED, exits
    assert exits == "start:0 reply:0"
    assert executions(tmp_path) == expected
    assert int((tmp_path / "commits").read_text()) == commits


@pytest.mark.parametrize(("root", "expected", "commits"), ROOTS)
async def test_a_conversation_killed_after_any_commit_redoes_nothing(
    database: Database, tmp_path: Path, root: str, expected: Counter[str], commits: int
) -> None:
    slots = asyncio.Semaphore(4)

    async def case(kill_at: int) -> str:
        async with slots:
            work = tmp_path / f"kill{kill_at}"
            work.mkdir()
            exits, final = await converse(database, work, root, kill_at)
        ran = executions(work)
        problems = [
            f"status {final} ({exits})" if final is not InvocationStatus.COMPLETED else "",
            f"ran {dict(ran)}" if ran != expected else "",
        ]
        found = "; ".join(p for p in problems if p)
        return f"killed after commit {kill_at}: {found}" if found else ""

    problems = await asyncio.gather(*(case(k) for k in range(1, commits)))

    assert [p for p in problems if p] == []
