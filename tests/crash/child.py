"""The process a crash test kills: starts, answers or resumes the crash workflow once.

    python -m tests.crash.child --url URL --session S --work DIR --action start|answer|resume
        [--invocation ID] [--kill-at K] [--kill-after-claim] [--block NODE] [--fail NODE]
        [--replay] [--ahead SECONDS]

`--replay` runs the app non-resumable: recovery re-walks the workflow from START and
fast-forwards completed runs from the recorded outputs.

The tests start it as `run(argv, log)` in a process forked from a multiprocessing
fork server that has already imported this module: a fresh process each time, at a
fraction of an interpreter start's cost.

It counts every step commit that returned in DIR/commits, across processes, and
SIGKILLs itself right after the K-th: the store really committed that step,
nothing after it ran; `--kill-after-claim` SIGKILLs it right after an answer's claim
took the run, before its first step. Its store reads time `--ahead` seconds ahead of
the clock (the tests give each process of a run a minute more than the one before),
so the lease of a process killed before it has lapsed for it; a claim refused all the
same (a lease still live) is retried until it lapses.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import time
from datetime import timedelta
from pathlib import Path

from pydantic import JsonValue

from baton import App, ResumabilityConfig, Runner, types
from baton.errors import InvocationBusyError, NodeFailedError
from baton.events import REQUEST_INPUT_FUNCTION
from baton.sessions.services import BaseSessionService
from baton.sessions.sql import SqlStore
from baton.sessions.store import AnswerClaim, Answering, SessionKey, StepCommit
from tests.crash.workflow import (
    APP_NAME,
    INTERRUPT_ID,
    USER_ID,
    NodeTrouble,
    Probe,
    build_workflow,
)

LEASE_SECONDS = 1.0
ANSWER: dict[str, JsonValue] = {"approved": True, "note": "window seat"}


def count_commits(store: SqlStore, counter: Path, kill_at: int | None) -> None:
    """Wrap the store's commit_step: count each returned commit, die right after the K-th."""
    commit = store.commit_step

    async def counted(step: StepCommit) -> int:
        version = await commit(step)
        done = int(counter.read_text()) + 1 if counter.exists() else 1
        # Write-and-rename: a SIGKILL from the test (inside another node) never leaves
        # the counter half-written.
        staged = counter.with_name(f"{counter.name}.{os.getpid()}")
        staged.write_text(str(done))
        staged.replace(counter)
        if done == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return version

    # The real store commits; only what happens after it returns is added.
    setattr(store, "commit_step", counted)  # noqa: B010 -- SqlStore is final, so no subclass


def kill_after_claim(store: SqlStore) -> None:
    """Wrap the store's claim_answering: SIGKILL the process once an answer claimed a run."""
    claim_answering = store.claim_answering

    async def claimed(key: SessionKey, claim: AnswerClaim) -> Answering:
        answering = await claim_answering(key, claim)
        if answering.claimed is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return answering

    setattr(store, "claim_answering", claimed)  # noqa: B010 -- as in count_commits


def message_for(action: str) -> types.Content | None:
    if action == "start":
        return types.Content(role="user", parts=[types.Part(text="trip to Oslo")])
    if action == "answer":
        response = types.FunctionResponse(
            id=INTERRUPT_ID, name=REQUEST_INPUT_FUNCTION, response=ANSWER
        )
        return types.Content(role="user", parts=[types.Part(function_response=response)])
    return None


async def main(args: argparse.Namespace) -> None:
    work = Path(args.work)
    probe = Probe(counts=work / "counts", marker=work / "marker", block=args.block, fail=args.fail)
    store = SqlStore(args.url, clock=lambda: time.time() + args.ahead)
    count_commits(store, work / "commits", args.kill_at)
    if args.kill_after_claim:
        kill_after_claim(store)
    runner = Runner(
        app=App(
            name=APP_NAME,
            root_agent=build_workflow(probe),
            resumability_config=ResumabilityConfig(is_resumable=not args.replay),
        ),
        session_service=BaseSessionService(store),
        lease_ttl=timedelta(seconds=LEASE_SECONDS),
    )
    try:
        async with asyncio.timeout(30):
            while True:
                try:
                    stream = runner.run_async(
                        user_id=USER_ID,
                        session_id=args.session,
                        invocation_id=args.invocation,
                        new_message=message_for(args.action),
                    )
                    async for _ in stream:
                        pass
                    return
                except (NodeTrouble, NodeFailedError) as failure:
                    # The run failed, as --fail asked (a process that continued it after a
                    # kill hands the recorded failure on): what this caller was raised.
                    with (work / "raised").open("a") as file:
                        file.write(f"{describe(failure)}\n")
                    return
                except InvocationBusyError:
                    # The killed process's lease has not expired yet.
                    await asyncio.sleep(0.05)
    finally:
        await runner.close()


def describe(failure: Exception) -> str:
    """`<class raised>: <class it stands for>: <message>`."""
    kind = failure.error_type if isinstance(failure, NodeFailedError) else type(failure).__name__
    return f"{type(failure).__name__}: {kind}: {failure}"


def run(argv: list[str], log: str) -> None:
    """Entry point in a forked process: output to `log`, then one run of `main`."""
    with open(log, "ab", buffering=0) as file:
        os.dup2(file.fileno(), 1)
        os.dup2(file.fileno(), 2)
    asyncio.run(main(parse(argv)))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--action", choices=["start", "answer", "resume"], required=True)
    parser.add_argument("--invocation")
    parser.add_argument("--kill-at", type=int)
    parser.add_argument("--kill-after-claim", action="store_true")
    parser.add_argument("--block")
    parser.add_argument("--fail")
    parser.add_argument("--replay", action="store_true")
    parser.add_argument("--ahead", type=float, default=0.0)
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))
