"""The SQL memory service after a real crash, on each SQL backend: a node adds its
session to memory and its process is SIGKILLed before the node's step commits; a new
process resumes the run, the node adds the session again, and memory holds it once."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from baton.database_memory import SqlMemoryService
from baton.sessions.sql import SqlStore
from baton.sessions.store import InvocationStatus, SessionKey
from baton.types import SessionId
from tests.forked import FORKS, run_forked
from tests.store import memory_crash_child as child

pytestmark = pytest.mark.slow

FORKS.set_forkserver_preload(["tests.store.memory_crash_child"])


def run_child(url: str, work: Path, action: str) -> int:
    return run_forked(child.run, url, str(work), action)


async def test_a_session_added_again_after_a_crash_is_remembered_once(
    emptied_store_url: str, tmp_path: Path
) -> None:
    key = SessionKey(child.APP_NAME, child.USER_ID, SessionId(child.SESSION_ID))
    store = SqlStore(emptied_store_url)
    await store.create_session(key.app_name, key.user_id, session_id=key.session_id)

    killed = await asyncio.to_thread(run_child, emptied_store_url, tmp_path, "start")
    resumed = await asyncio.to_thread(run_child, emptied_store_url, tmp_path, "resume")

    try:
        assert (killed, resumed) == (-signal.SIGKILL, 0)
        [invocation] = await store.list_invocations(key)
        assert invocation.status == InvocationStatus.COMPLETED
        found = await SqlMemoryService(store).search_memory(
            app_name=key.app_name, user_id=key.user_id, query="milk"
        )
        assert [m.content.text for m in found.memories] == ["milk"]
    finally:
        await store.close()
