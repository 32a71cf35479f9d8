"""The app of the artifact crash test, and the process it kills.

    python -m tests.runner.artifact_crash URL SESSION WORKDIR

starts the app in SESSION; the node `write` saves two versions of 'doc.txt' and one
'user:log.txt', then (on its first execution only) SIGKILLs its own process before
its step commits. The test then continues the run in another process, whose clock
reads a minute ahead, so the killed process's lease has lapsed for it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path

from baton import App, Context, ResumabilityConfig, Runner, Workflow, types
from baton.artifacts import BaseArtifactService
from baton.sessions.services import BaseSessionService
from baton.sessions.sql import SqlStore

LEASE = timedelta(seconds=1)


def build_runner(url: str, work: Path, *, ahead: float = 0.0) -> Runner:
    """The app over the store at `url`, its clock `ahead` seconds ahead of time; `work`
    keeps the execution count and kill marker."""

    async def write(ctx: Context) -> list[int]:
        runs = work / "runs"
        run = int(runs.read_text()) + 1 if runs.exists() else 1
        runs.write_text(str(run))
        versions = [
            await ctx.save_artifact("doc.txt", types.Part.from_text(text=f"draft of run {run}")),
            await ctx.save_artifact("doc.txt", types.Part.from_text(text=f"final of run {run}")),
            await ctx.save_artifact("user:log.txt", types.Part.from_text(text=f"run {run}")),
        ]
        marker = work / "killed"
        if not marker.exists():
            marker.write_text("yes")
            os.kill(os.getpid(), signal.SIGKILL)
        return versions

    async def read(ctx: Context, node_input: list[int]) -> str | None:
        doc = await ctx.load_artifact("doc.txt")
        return doc.text if doc else None

    store = SqlStore(url, clock=lambda: time.time() + ahead)
    return Runner(
        app=App(
            name="crash",
            root_agent=Workflow(name="crash_wf", edges=[("START", write, read)]),
            resumability_config=ResumabilityConfig(is_resumable=True),
        ),
        session_service=BaseSessionService(store),
        artifact_service=BaseArtifactService(store),
        lease_ttl=LEASE,
    )


async def start(url: str, session_id: str, work: Path) -> None:
    runner = build_runner(url, work)
    message = types.Content(role="user", parts=[types.Part(text="go")])
    async for _ in runner.run_async(user_id="u", session_id=session_id, new_message=message):
        pass


def run(url: str, session_id: str, work: str) -> None:
    """Entry point in a forked process (see tests/forked.py)."""
    asyncio.run(start(url, session_id, Path(work)))


if __name__ == "__main__":
    asyncio.run(start(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
