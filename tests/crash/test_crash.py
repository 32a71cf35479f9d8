"""Crash recovery, for real: the crash workflow runs in child processes that are SIGKILLed
after every step commit, or inside a node, on a SQLite file and on PostgreSQL. New
processes carry it to the end (resume by invocation id, answer the HITL pause), and
the result must equal an uninterrupted run's while every node whose step had been
committed when the process died ran exactly once (DESIGN §3).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TypeVar

import pytest
from pydantic import JsonValue

from baton.history import acting_node
from baton.sessions.sql import SqlStore
from baton.sessions.store import InterruptStatus, InvocationStatus, SessionKey
from baton.types import SessionId
from baton.workflow.checkpoint import RunRecord
from tests.conftest import sqlite_url
from tests.crash import child
from tests.crash.workflow import APP_NAME, FAILURE, USER_ID, read_counts

pytestmark = pytest.mark.slow

# Children fork from a server that imported baton once: a fresh process per run
# without paying an interpreter start and baton's imports each time.
_FORKS = multiprocessing.get_context("forkserver")
# Children start one at a time (they then run side by side): the forkserver, asked by
# several threads at once, once read a start request garbled (UnpicklingError in CI).
_STARTS = threading.Lock()
_FORKS.set_forkserver_preload(["tests.crash.child"])
LEAVES = ("prepare", "fan_a", "fan_b", "fan_c", "shape", "check", "ask", "book")
EXPECTED_RESULT: JsonValue = {"booked": True, "note": "window seat"}
EXPECTED_OUTPUTS: list[tuple[str, JsonValue]] = [
    ("ask", {"approved": True, "note": "window seat"}),
    ("book", {"booked": True, "note": "window seat"}),
    ("check", "a(prepared trip to Oslo) + b(prepared trip to Oslo) + c(prepared trip to Oslo)"),
    ("fan_a", "a(prepared trip to Oslo)"),
    ("fan_b", "b(prepared trip to Oslo)"),
    ("fan_c", "c(prepared trip to Oslo)"),
    (
        "gather",
        {
            "fan_a": "a(prepared trip to Oslo)",
            "fan_b": "b(prepared trip to Oslo)",
            "fan_c": "c(prepared trip to Oslo)",
        },
    ),
    ("prepare", "prepared trip to Oslo"),
    (
        "shape",
        ["a(prepared trip to Oslo)", "b(prepared trip to Oslo)", "c(prepared trip to Oslo)"],
    ),
]
MAX_PROCESSES = 6  # start, resume, answer, resume: a run needs at most four
T = TypeVar("T")
PARALLEL_CASES = 4  # children mostly wait out a dead holder's lease


@dataclass(frozen=True)
class Case:
    """One run of the crash workflow in its own session and work directory."""

    url: str
    store: SqlStore  # the test's: reads what the children wrote
    work: Path
    key: SessionKey
    kill_at: int | None = None
    block: str | None = None
    replay: bool = False
    kill_after_claim: bool = False
    fail: bool = False  # `check` raises on every execution

    @property
    def marker(self) -> Path:
        return self.work / "marker"


@dataclass(frozen=True)
class Outcome:
    """What a run left behind once it completed."""

    result: JsonValue
    outputs: list[tuple[str, JsonValue]]
    executions: dict[str, list[str]]
    committed_at_kill: frozenset[str] | None  # None: no process was killed
    invocation_id: str
    commits: int


@pytest.fixture
async def reader(emptied_store_url: str) -> AsyncIterator[SqlStore]:
    """The test's own store on the database its children use, for every case: a store (an
    engine, its connections, its schema check) per case cost more than its reads on
    PostgreSQL and MariaDB."""
    opened = SqlStore(emptied_store_url)
    try:
        yield opened
    finally:
        await opened.close()


async def test_uninterrupted_run_gives_the_expected_result(
    reader: SqlStore, emptied_store_url: str, tmp_path: Path
) -> None:
    outcome = await carry_through(await new_case(reader, emptied_store_url, tmp_path, "plain"))
    assert outcome.committed_at_kill is None
    assert_recovered(outcome, "uninterrupted")
    assert all(len(keys) == 1 for keys in outcome.executions.values())


async def test_sigkill_after_every_step_commit_recovers_without_redoing_work(
    reader: SqlStore, emptied_store_url: str, tmp_path: Path
) -> None:
    await sweep_step_kills(reader, emptied_store_url, tmp_path, replay=False)


async def test_replay_mode_sigkill_after_every_step_commit_on_sqlite(tmp_path: Path) -> None:
    """Non-resumable apps recover by replaying from START; one backend keeps the suite short."""
    url = sqlite_url(tmp_path)
    store = SqlStore(url)
    try:
        await sweep_step_kills(store, url, tmp_path, replay=True)
    finally:
        await store.close()


async def sweep_step_kills(store: SqlStore, url: str, tmp_path: Path, *, replay: bool) -> None:
    reference = await carry_through(
        await new_case(store, url, tmp_path, "reference", replay=replay)
    )

    async def killed_after(k: int) -> Outcome:
        case = await new_case(store, url, tmp_path, f"kill-{k}", kill_at=k, replay=replay)
        return await carry_through(case)

    steps = range(1, reference.commits + 1)
    outcomes = await each_limited(killed_after, steps)
    for k, outcome in zip(steps, outcomes, strict=True):
        assert outcome.committed_at_kill is not None, f"commit {k}: nothing was killed"
        assert_recovered(outcome, f"SIGKILL after commit {k} of {reference.commits}")


@pytest.mark.parametrize("block", ["fan_b", "check", "book"])
@pytest.mark.parametrize("replay", [False, True], ids=["resumable", "replay"])
async def test_sigkill_inside_a_node_reruns_it_with_the_same_idempotency_key(
    reader: SqlStore, emptied_store_url: str, tmp_path: Path, block: str, replay: bool
) -> None:
    name = f"block-{block}"
    case = await new_case(reader, emptied_store_url, tmp_path, name, block=block, replay=replay)
    outcome = await carry_through(case)
    assert outcome.committed_at_kill is not None
    assert block not in outcome.committed_at_kill
    assert_recovered(outcome, f"SIGKILL inside {block}")
    keys = outcome.executions[block]
    assert len(keys) == 2, f"{block} ran {len(keys)} times, expected twice (killed, re-run)"
    assert case.marker.read_text() == keys[0]


async def test_sigkill_right_after_an_answers_claim_lets_the_next_answer_through(
    reader: SqlStore, emptied_store_url: str, tmp_path: Path
) -> None:
    """The claim is the answer's only write before its first step (on PostgreSQL it does
    not wait for its flush): a process killed right after it leaves the question open,
    and the next answer, once the dead holder's lease lapsed, completes the run."""
    case = await new_case(reader, emptied_store_url, tmp_path, "claim", kill_after_claim=True)
    outcome = await carry_through(case)
    assert outcome.committed_at_kill is not None
    assert "ask" in outcome.committed_at_kill  # the question, asked before the kill
    assert_recovered(outcome, "SIGKILL right after the answer's claim")
    assert all(len(keys) == 1 for keys in outcome.executions.values())
    assert (case.work / "log-1-answer").exists()  # killed there, answered again after


async def test_sigkill_after_every_commit_of_a_failing_run_hands_its_failure_on_once(
    reader: SqlStore, emptied_store_url: str, tmp_path: Path
) -> None:
    """`check` (inside the nested workflow) raises: its failure, then `inner`'s, then the
    run's land in turn. Killed after any commit, the process continuing the run hands on
    what had failed instead of running it again: a node whose failure committed ran once,
    its error is recorded once, and the run fails with the same error as without a kill."""
    url = emptied_store_url
    reference = await carry_to_failure(await new_case(reader, url, tmp_path, "fails", fail=True))
    assert reference.committed_at_kill is None
    assert reference.error == f"node run 'trip@1' failed: NodeTrouble: {FAILURE}"
    assert reference.raised == [f"NodeTrouble: NodeTrouble: {FAILURE}"]

    async def killed_after(k: int) -> Failure:
        case = await new_case(reader, url, tmp_path, f"fails-{k}", kill_at=k, fail=True)
        return await carry_to_failure(case)

    steps = range(1, reference.commits + 1)
    outcomes = await each_limited(killed_after, steps)
    for k, outcome in zip(steps, outcomes, strict=True):
        what = f"SIGKILL after commit {k} of {reference.commits}"
        assert outcome.committed_at_kill is not None, what
        assert outcome.error == reference.error, what
        assert outcome.errors == reference.errors, what
        if "check" in outcome.committed_at_kill:
            assert len(outcome.executions["check"]) == 1, what
            # Handed on from its record by the process that continued the run.
            assert outcome.raised in ([], [f"NodeFailedError: NodeTrouble: {FAILURE}"]), what
        else:
            assert 1 <= len(outcome.executions["check"]) <= 2, what
            assert outcome.raised == reference.raised, what
        assert "ask" not in outcome.executions, what
        assert "book" not in outcome.executions, what


async def each_limited(carry: Callable[[int], Awaitable[T]], steps: range) -> list[T]:
    """`carry(k)` for each k in `steps`, side by side, PARALLEL_CASES at a time."""
    limit = asyncio.Semaphore(PARALLEL_CASES)

    async def limited(k: int) -> T:
        async with limit:
            return await carry(k)

    return await asyncio.gather(*(limited(k) for k in steps))


def assert_recovered(outcome: Outcome, what: str) -> None:
    """Same result as an uninterrupted run; committed nodes ran once, in-flight ones twice
    at most, always under the same idempotency key."""
    assert outcome.result == EXPECTED_RESULT, what
    assert outcome.outputs == EXPECTED_OUTPUTS, what
    assert sorted(outcome.executions) == sorted(LEAVES), what
    committed = outcome.committed_at_kill or frozenset()
    for node, keys in outcome.executions.items():
        limit = 1 if node in committed else 2
        assert 1 <= len(keys) <= limit, f"{what}: {node} ran {len(keys)} times"
        assert set(keys) == {f"{outcome.invocation_id}/{_path_of(node)}"}, what


@dataclass(frozen=True)
class Failure:
    """What a failing run left behind."""

    error: str | None  # the invocation's
    errors: list[tuple[str, str | None, str | None]]  # (node, code, message) of error events
    raised: list[str]  # what its callers were raised, in turn (see child.describe)
    executions: dict[str, list[str]]
    committed_at_kill: frozenset[str] | None
    commits: int


async def carry_to_failure(case: Case) -> Failure:
    """Start the run, then continue it by id in new processes until it failed."""
    store = case.store
    committed: frozenset[str] | None = None
    invocation_id: str | None = None
    for attempt in range(MAX_PROCESSES):
        action = "start" if invocation_id is None else "resume"
        killed = await run_child(case, action, invocation_id, attempt)
        if killed and committed is None:
            committed = await committed_nodes(store, case.key)
        invocation = (await store.list_invocations(case.key))[-1]
        invocation_id = invocation.id
        if invocation.status == InvocationStatus.FAILED:
            session = await store.get_session(case.key)
            assert session is not None
            raised = case.work / "raised"
            counter = case.work / "commits"
            return Failure(
                error=invocation.error,
                errors=[
                    (acting_node(e), e.error_code, e.error_message)
                    for e in session.events
                    if e.error_code
                ],
                raised=raised.read_text().splitlines() if raised.exists() else [],
                executions=read_counts(case.work / "counts"),
                committed_at_kill=committed,
                commits=int(counter.read_text()) if counter.exists() else 0,
            )
        assert invocation.status == InvocationStatus.RUNNING, invocation.status
    pytest.fail(f"{case.work.name}: not failed after {MAX_PROCESSES} processes")


def _path_of(node: str) -> str:
    inner = {"shape", "check"}
    return f"trip@1/inner@1/{node}@1" if node in inner else f"trip@1/{node}@1"


async def new_case(
    store: SqlStore,
    url: str,
    tmp_path: Path,
    name: str,
    *,
    kill_at: int | None = None,
    block: str | None = None,
    replay: bool = False,
    kill_after_claim: bool = False,
    fail: bool = False,
) -> Case:
    work = tmp_path / name
    work.mkdir()
    session = await store.create_session(APP_NAME, USER_ID, session_id=SessionId(name))
    return Case(
        url,
        store,
        work,
        session.key,
        kill_at=kill_at,
        block=block,
        replay=replay,
        kill_after_claim=kill_after_claim,
        fail=fail,
    )


async def carry_through(case: Case) -> Outcome:
    """Start the run, then answer or resume it in new processes until it completes."""
    store = case.store
    committed: frozenset[str] | None = None
    action, invocation_id = "start", None
    history: list[str] = []
    for attempt in range(MAX_PROCESSES):
        killed = await run_child(case, action, invocation_id, attempt)
        if killed and committed is None:
            committed = await committed_nodes(store, case.key)
        invocation = (await store.list_invocations(case.key))[-1]
        history.append(f"{action}{' (killed)' if killed else ''} -> {invocation.status}")
        if invocation.status == InvocationStatus.COMPLETED:
            return await outcome_of(store, case, committed)
        assert invocation.status != InvocationStatus.FAILED, invocation.error
        asking = await store.list_interrupts(
            APP_NAME, USER_ID, session_id=case.key.session_id, status=InterruptStatus.OPEN
        )
        action, invocation_id = ("answer", None) if asking else ("resume", invocation.id)
    pytest.fail(f"{case.work.name}: not completed after {', '.join(history)}")


async def run_child(case: Case, action: str, invocation_id: str | None, attempt: int) -> bool:
    """Run one child process to its end; True when it was SIGKILLed (by itself or here)."""
    argv = ["--url", case.url, "--session", case.key.session_id, "--work", str(case.work)]
    argv += ["--action", action]
    if invocation_id is not None:
        argv += ["--invocation", invocation_id]
    if case.kill_at is not None:
        argv += ["--kill-at", str(case.kill_at)]
    if case.kill_after_claim and action == "answer" and attempt == 1:
        argv += ["--kill-after-claim"]
    watch = case.block is not None and not case.marker.exists()
    if watch:
        argv += ["--block", str(case.block)]
    if case.replay:
        argv += ["--replay"]
    if case.fail:
        argv += ["--fail", "check"]
    argv += ["--ahead", str(60 * attempt)]  # the leases of the processes before have lapsed
    log = case.work / f"log-{attempt}-{action}"
    process = _FORKS.Process(target=child.run, args=(argv, str(log)), daemon=True)
    with _STARTS:
        process.start()
    try:
        async with asyncio.timeout(60):
            exited = asyncio.ensure_future(exit_of(process))
            while watch and not exited.done() and not case.marker.exists():
                await asyncio.wait([exited], timeout=0.02)
            if watch and not exited.done():
                process.kill()
            code = await exited
    except TimeoutError:  # hung: end it here rather than leave it running past the test
        process.kill()
        process.join()
        raise
    killed = code == -signal.SIGKILL
    assert code == 0 or killed, f"{action} exited {code}:\n{log.read_text()}"
    return killed


async def exit_of(process: BaseProcess) -> int | None:
    """Wait for a child's exit code without blocking the loop.

    The fork server writes it to the process's sentinel. Reading it happens on this
    thread only: `Process.start` polls earlier children too, and two threads polling one
    child would race for the same bytes.
    """
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    loop.add_reader(process.sentinel, lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        loop.remove_reader(process.sentinel)
    process.join()
    return process.exitcode


async def committed_nodes(store: SqlStore, key: SessionKey) -> frozenset[str]:
    """Leaves whose step (an output or the interrupt it asked) was committed."""
    session = await store.get_session(key)
    assert session is not None
    return frozenset(acting_node(e) for e in session.events if acting_node(e) in LEAVES)


async def outcome_of(store: SqlStore, case: Case, committed: frozenset[str] | None) -> Outcome:
    session = await store.get_session(case.key)
    invocation = (await store.list_invocations(case.key))[-1]
    assert session is not None
    root = RunRecord.from_json(invocation.checkpoint)
    counter = case.work / "commits"
    return Outcome(
        result=root.output,
        outputs=sorted(
            ((acting_node(e), e.output) for e in session.events if e.output is not None),
            key=lambda pair: pair[0],
        ),
        executions=read_counts(case.work / "counts"),
        committed_at_kill=committed,
        invocation_id=invocation.id,
        commits=int(counter.read_text()) if counter.exists() else 0,
    )
