"""The process the memory crash test kills: starts or resumes one run.

    python -m tests.store.memory_crash_child URL WORK start|resume

(The test forks it from a fork server instead: `run`.)

The run's node adds the session to memory (the SQL memory service the Runner uses
by default), then, on its first execution, SIGKILLs its process: the memory write
committed, the node's step did not. A resuming process reads time a minute ahead, so
the killed process's lease has expired for it; the node runs again and adds the
session again.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from baton import App, Context, ResumabilityConfig, Runner, Workflow
from baton.sessions.services import BaseSessionService
from baton.sessions.sql import SqlStore
from baton.sessions.store import SessionKey
from baton.types import SessionId
from tests.harness import start_or_resume

APP_NAME = "memory_crash"
USER_ID = "u"
SESSION_ID = "s"


def build_root(work: Path) -> Workflow:
    async def note(ctx: Context) -> str:
        await ctx.add_session_to_memory()
        marker = work / "killed"
        if not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return "noted"

    return Workflow(name="wf", edges=[("START", note)])


async def main(url: str, work: Path, action: str) -> None:
    resuming = action == "resume"
    store = SqlStore(url, clock=(lambda: time.time() + 60) if resuming else time.time)
    runner = Runner(
        app=App(
            name=APP_NAME,
            root_agent=build_root(work),
            resumability_config=ResumabilityConfig(is_resumable=True),
        ),
        session_service=BaseSessionService(store),
    )
    key = SessionKey(APP_NAME, USER_ID, SessionId(SESSION_ID))
    await start_or_resume(runner, key, resuming=resuming, text="milk")


def run(url: str, work: str, action: str) -> None:
    """Entry point in a forked process: output to WORK/ACTION.log, then `main`."""
    with open(Path(work) / f"{action}.log", "ab", buffering=0) as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    asyncio.run(main(url, Path(work), action))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
