"""The process the dynamic-node crash test kills: starts or resumes one run.

    run(["--url", URL, "--work", DIR, "--action", "start"|"resume", "--kill-at", K], log)

The parent node runs three dynamic children one after another (the second on a
sub-branch), then two at once with `asyncio.gather` (the first on a given branch).
Every child execution appends its name to DIR/runs (fsynced first); every step
commit that returned is counted in DIR/commits, and the process SIGKILLs itself right
after the K-th. A resuming process reads time a minute ahead, so the killed process's
lease has expired for it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from datetime import timedelta
from pathlib import Path

from baton import App, Context, ResumabilityConfig, Runner, Workflow, node
from baton.sessions.services import BaseSessionService
from baton.sessions.sql import SqlStore
from baton.sessions.store import SessionKey
from baton.types import SessionId
from tests.agents.crash_child import count_commits
from tests.harness import start_or_resume

APP_NAME = "dynamic_crash"
USER_ID = "u"
SESSION_ID = "s"


def build_root(runs: Path) -> Workflow:
    def record(name: str) -> None:
        with runs.open("a") as file:
            file.write(f"{name}\n")
            file.flush()
            os.fsync(file.fileno())

    async def step(node_input: str) -> str:
        record(node_input)
        return f"<{node_input}>"

    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> str:
        record("parent")
        done = [
            await ctx.run_node(step, "s1"),
            await ctx.run_node(step, "s2", use_sub_branch=True),
            await ctx.run_node(step, "s3"),
        ]
        done += await asyncio.gather(
            ctx.run_node(step, "g1", override_branch="gathered"), ctx.run_node(step, "g2")
        )
        return "".join(done)

    return Workflow(name="wf", edges=[("START", parent)])


async def main(args: argparse.Namespace) -> None:
    work = Path(args.work)
    resuming = args.action == "resume"
    store = SqlStore(args.url, clock=(lambda: time.time() + 60) if resuming else time.time)
    count_commits(store, work / "commits", args.kill_at)
    runner = Runner(
        app=App(
            name=APP_NAME,
            root_agent=build_root(work / "runs"),
            resumability_config=ResumabilityConfig(is_resumable=True),
        ),
        session_service=BaseSessionService(store),
        lease_ttl=timedelta(seconds=30),
    )
    key = SessionKey(APP_NAME, USER_ID, SessionId(SESSION_ID))
    await start_or_resume(runner, key, resuming=resuming, text="go")


def run(argv: list[str], log: str) -> None:
    """Entry point in a forked process: output to `log`, then one run of `main`."""
    with open(log, "ab", buffering=0) as file:
        os.dup2(file.fileno(), 1)
        os.dup2(file.fileno(), 2)
    args = parse(argv)
    asyncio.run(main(args))
    (Path(args.work) / f"{args.action}-returned").touch()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--action", choices=["start", "resume"], required=True)
    parser.add_argument("--kill-at", type=int)
    return parser.parse_args(argv)
