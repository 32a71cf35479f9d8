"""An MCP call in flight at a real crash: the agent runs in a child process on a SQLite
file and dies (SIGKILL) after its call reached the MCP server and before the result was
committed; the run resumed (here, in the test's process) calls the server again (at
least once) with the same idempotency key in the request's `_meta`, so the server can
deduplicate."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from baton.sessions.sql import SqlStore
from baton.sessions.store import InvocationStatus, SessionKey
from baton.types import SessionId
from tests.tools import mcp_crash_child
from tests.tools.mcp_servers import CallLog, serve_http


def child(db_url: str, mcp_url: str, action: str) -> int:
    argv = [sys.executable, "-m", "tests.tools.mcp_crash_child", db_url, "s", mcp_url, action]
    return subprocess.run(argv, timeout=60, check=False).returncode


async def test_a_call_in_flight_at_a_crash_runs_again_with_the_same_idempotency_key(
    tmp_path: Path, log: CallLog
) -> None:
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}"
    key = SessionKey(mcp_crash_child.APP_NAME, mcp_crash_child.USER_ID, SessionId("s"))
    store = SqlStore(db_url)
    await store.create_session(key.app_name, key.user_id, session_id=key.session_id)
    with serve_http(log) as mcp_url:
        killed = child(db_url, mcp_url, "start")
        [sent] = log.calls()
        await mcp_crash_child.main(db_url, "s", mcp_url, "resume")

    assert killed == -signal.SIGKILL
    [invocation] = await store.list_invocations(key)
    assert invocation.status == InvocationStatus.COMPLETED
    await store.close()
    [first, again] = log.calls()
    assert first == sent
    assert again == first
    assert first.startswith('charge {"amount": 5, "key": "')
    assert '"key": null' not in first
