"""Artifacts saved by a step whose process was SIGKILLed before the step committed exist
once: the node executes again in a new process, and its saves land on the versions the
killed execution saved (with the new execution's content), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest

from baton.errors import InvocationBusyError
from baton.sessions.store import InvocationStatus, SessionKey
from baton.types import InvocationId, SessionId
from tests.forked import FORKS, run_forked
from tests.runner import artifact_crash
from tests.runner.artifact_crash import build_runner

pytestmark = pytest.mark.slow


FORKS.set_forkserver_preload(["tests.runner.artifact_crash"])


async def _run_killed_child(url: str, session_id: str, work: Path) -> int:
    return await asyncio.to_thread(run_forked, artifact_crash.run, url, session_id, str(work))


async def test_a_step_killed_after_saving_saves_once_when_it_runs_again(
    emptied_store_url: str, tmp_path: Path
) -> None:
    runner = build_runner(emptied_store_url, tmp_path, ahead=60)  # the child's lease lapsed
    session = await runner.session_service.create_session(app_name="crash", user_id="u")
    key = SessionKey("crash", "u", SessionId(session.id))

    assert await _run_killed_child(emptied_store_url, session.id, tmp_path) == -signal.SIGKILL
    [invocation] = await runner.store.list_invocations(key)
    assert invocation.status is InvocationStatus.RUNNING
    async with asyncio.timeout(30):
        while True:
            try:
                events = [
                    e
                    async for e in runner.run_async(
                        user_id="u",
                        session_id=session.id,
                        invocation_id=InvocationId(invocation.id),
                    )
                ]
                break
            except InvocationBusyError:  # the killed process's lease has not lapsed yet
                await asyncio.sleep(0.1)

    assert (tmp_path / "runs").read_text() == "2"
    assert [e.output for e in events if e.output is not None] == [[0, 1, 0], "final of run 2"]
    artifacts = runner.artifact_service
    assert artifacts is not None
    scope: dict[str, Any] = {"app_name": "crash", "user_id": "u", "session_id": session.id}
    assert await artifacts.list_versions(**scope, filename="doc.txt") == [0, 1]
    assert await artifacts.list_versions(**scope, filename="user:log.txt") == [0]
    texts = [
        part.text if part else None
        for part in [
            await artifacts.load_artifact(**scope, filename="doc.txt", version=0),
            await artifacts.load_artifact(**scope, filename="doc.txt", version=1),
            await artifacts.load_artifact(**scope, filename="user:log.txt"),
        ]
    ]
    assert texts == ["draft of run 2", "final of run 2", "run 2"]
    await runner.close()
