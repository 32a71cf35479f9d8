"""The Worker on every backend: it continues runs nobody holds and ends questions nobody
answered, without any client call. Real time with short leases; every wait is bounded."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from baton import App, RequestInput, ResumabilityConfig, Runner, Workflow, types
from baton.errors import InputExpiredError, InputTimeoutError
from baton.sessions.memory import MemoryStore
from baton.sessions.services import BaseSessionService
from baton.sessions.sql.store import SqlStore
from baton.sessions.store import (
    TIMEOUT_ANSWERER,
    InterruptStatus,
    InvocationStatus,
    SessionKey,
    StepCommit,
    Store,
)
from baton.types import InterruptId, InvocationId
from baton.worker import Worker
from baton.workflow import JoinNode
from baton.workflow.checkpoint import RunRecord
from baton.workflow.graph import fingerprint_of
from tests.conftest import FakeClock, StoreFactory
from tests.store.builders import snapshot

TTL = timedelta(seconds=1)  # a lease that must lapse, or a worker that looks once per TTL
WITHIN = 30.0  # seconds any awaited outcome may take on a loaded machine
# The lease of a run that is alive: a loaded machine can stall its renewals (each third of
# the TTL) past a TTL of a second, and a lapsed lease is any worker's to take (it ran twice).
LONG_TTL = timedelta(minutes=5)
# Where the store pushes wake-ups (PostgreSQL), the worker also looks once per its runners'
# TTL: the tests of that look give the runs it continues this one, short but with renewals
# that a loaded machine's stalls of a second or two do not outlast.
LOOK_TTL = timedelta(seconds=5)


class Decision(BaseModel):
    approved: bool


@pytest.fixture
def store(live_store: Store) -> Store:
    """A store on real time (the worker sleeps real seconds)."""
    return live_store


def _chain(counts: dict[str, int]) -> Workflow:
    def first(node_input: str) -> str:
        counts["first"] = counts.get("first", 0) + 1
        return f"1:{node_input}"

    def second(node_input: str) -> str:
        counts["second"] = counts.get("second", 0) + 1
        return f"2:{node_input}"

    return Workflow(name="chain", edges=[("START", first, second)])


def _runner(
    store: Store,
    root: Any,
    *,
    worker_id: str = "here",
    name: str = "app",
    lease_ttl: timedelta = TTL,
    clock: FakeClock | None = None,
) -> Runner:
    app = App(name=name, root_agent=root, resumability_config=ResumabilityConfig(is_resumable=True))
    timed: dict[str, Any] = {} if clock is None else {"clock": clock}
    return Runner(
        app=app,
        session_service=BaseSessionService(store),
        lease_ttl=lease_ttl,
        worker_id=worker_id,
        **timed,
    )


async def _left_by_a_dead_process(runner: Runner, owner: str, ttl: timedelta = TTL) -> SessionKey:
    """The store as a process leaves it when it dies right after starting a run: the
    invocation running, its first commit in, its lease held by the dead owner."""
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
    root = runner.root
    record = RunRecord(node=root.name, path=f"{root.name}@1", run_id="1", input="go")
    key = session.key
    await runner.store.commit_step(
        StepCommit(
            session=key,
            invocation_id=InvocationId("inv-dead"),
            expected_version=0,
            checkpoint=record.to_json(),
            status=InvocationStatus.RUNNING,
            fingerprint=fingerprint_of(root),
            lease=runner.store.lease_new(InvocationId("inv-dead"), owner, ttl),
        )
    )
    return key


async def _status_becomes(
    store: Store, key: SessionKey, status: InvocationStatus, *, within: float = WITHIN
) -> float:
    """Wait until the session's invocation has `status`; the seconds it took."""
    began = time.monotonic()
    async with asyncio.timeout(within):
        while True:
            (invocation,) = await store.list_invocations(key)
            if invocation.status is status:
                return time.monotonic() - began
            await asyncio.sleep(0.02)


async def _rounds_done(worker: Worker, rounds: int) -> None:
    """Wait until `worker` completed `rounds` rounds of looking for work."""
    async with asyncio.timeout(WITHIN):
        while worker.rounds < rounds:  # noqa: ASYNC110 - a counter, not an event
            await asyncio.sleep(0.01)


@asynccontextmanager
async def _working(*runners: Runner, worker_id: str = "here") -> AsyncIterator[Worker]:
    async with Worker(runners, worker_id=worker_id, poll=0.2) as worker:
        yield worker


async def test_a_dead_holders_run_is_continued_after_its_lease_lapses(store: Store) -> None:
    counts: dict[str, int] = {}
    runner = _runner(store, _chain(counts), lease_ttl=LONG_TTL)
    began = time.monotonic()  # before the lease is taken: it lapses a TTL after this
    key = await _left_by_a_dead_process(runner, "dead-host:1/abc")

    async with _working(runner):
        await _status_becomes(store, key, InvocationStatus.COMPLETED)
    took = time.monotonic() - began

    assert counts == {"first": 1, "second": 1}
    assert took >= TTL.total_seconds() * 0.9  # it waited for the lease to lapse (clocks differ)
    (invocation,) = await store.list_invocations(key)
    assert invocation.checkpoint is not None


async def test_an_idle_worker_still_continues_a_run_that_started_after_it_looked(
    store: Store,
) -> None:
    counts: dict[str, int] = {}
    runner = _runner(store, _chain(counts), lease_ttl=LOOK_TTL)

    async with Worker([runner], worker_id="here", poll=0.2, idle_check=3600) as worker:
        await _rounds_done(worker, 1)  # it looked, found nothing due, and sleeps
        key = await _left_by_a_dead_process(runner, "dead-host:1/abc")
        # Not in an hour: within a look (LOOK_TTL), and what a loaded machine adds.
        await _status_becomes(store, key, InvocationStatus.COMPLETED, within=60)


async def test_a_lease_taken_while_the_worker_sleeps_is_seen_before_it_lapses(
    emptied_store_url: str,
) -> None:
    # The worker goes idle first (nothing due, an idle sleep of an hour); then another
    # process starts a run and dies. Taking a lease wakes no other process, so the worker
    # must look again within a TTL, not only after its idle sleep. (Its LOOK_TTL + 1 s is
    # the target; a loaded machine adds seconds: the bound is the test's, far from an hour.)
    here, there = SqlStore(emptied_store_url), SqlStore(emptied_store_url)
    counts: dict[str, int] = {}
    runner = _runner(here, _chain(counts), lease_ttl=LOOK_TTL)
    try:
        async with Worker([runner], worker_id="here", idle_check=3600) as worker:
            await _rounds_done(worker, 1)  # its first round is over: it sleeps
            dead = _runner(there, _chain(counts), worker_id="dead-host:2")
            key = await _left_by_a_dead_process(dead, "dead-host:2/abc")
            await _status_becomes(here, key, InvocationStatus.COMPLETED, within=60)
    finally:
        await here.close()
        await there.close()

    assert counts == {"first": 1, "second": 1}


async def test_a_restarted_process_takes_its_own_runs_back_at_once(store: Store) -> None:
    counts: dict[str, int] = {}
    runner = _runner(store, _chain(counts), worker_id="host:8000", lease_ttl=LONG_TTL)
    key = await _left_by_a_dead_process(runner, "host:8000/abc", ttl=timedelta(minutes=5))

    async with _working(runner, worker_id="host:8000"):
        took = await _status_becomes(store, key, InvocationStatus.COMPLETED)

    assert took < 60  # not the five minutes its lease had left
    assert counts == {"first": 1, "second": 1}


async def test_runs_of_apps_this_process_does_not_serve_are_left_alone(store: Store) -> None:
    counts: dict[str, int] = {}
    theirs = _runner(store, _chain(counts), name="theirs")
    key = await _left_by_a_dead_process(theirs, "dead/1", ttl=timedelta(milliseconds=1))
    ours = _runner(store, _chain(counts), name="ours")

    async with _working(ours) as worker:
        await _rounds_done(worker, 2)  # the second comes after the 1 ms lease lapsed

    (invocation,) = await store.list_invocations(key)
    assert invocation.status is InvocationStatus.RUNNING
    assert counts == {}


async def test_a_run_handed_over_is_continued_at_once(store: Store) -> None:
    counts: dict[str, int] = {}
    gate = asyncio.Event()
    started = asyncio.Event()

    async def slow(node_input: str) -> str:
        counts["slow"] = counts.get("slow", 0) + 1
        started.set()
        if counts["slow"] == 1:
            await gate.wait()  # the first holder never gets past here
        return "done"

    # A lease far longer than a loaded machine's handover: waiting for it to lapse would
    # show as a wait near LONG_TTL, the handover itself takes a poll or a notification.
    workflow = Workflow(name="w", edges=[("START", slow)])
    runner = _runner(store, workflow, worker_id="a", lease_ttl=LONG_TTL)
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="go")])

    async def hold() -> None:
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass

    holder = asyncio.create_task(hold())
    async with asyncio.timeout(WITHIN):
        await started.wait()
    holder.cancel()  # e.g. its server shut down: the run's lease is released, not lost
    await asyncio.gather(holder, return_exceptions=True)

    async with _working(runner, worker_id="b"):
        took = await _status_becomes(store, session.key, InvocationStatus.COMPLETED)

    assert took < WITHIN < LONG_TTL.total_seconds()  # no lease expiry to wait for
    assert counts == {"slow": 2}  # in flight at the handover: at least once


def _asking(*, on_timeout: bool, then: bool = False) -> Workflow:
    """A workflow whose first node asks with a 0.3 s deadline; `then` adds a last node
    (another version of its code)."""

    def ask(node_input: str):
        extra: dict[str, Any] = {"on_timeout": {"approved": False}} if on_timeout else {}
        return RequestInput(
            interrupt_id="approve",
            message="Approve?",
            response_schema=Decision,
            timeout=0.3,
            **extra,
        )

    def decide(node_input: dict[str, Any]) -> str:
        return "approved" if node_input["approved"] else "escalated"

    def after(node_input: str) -> str:
        return node_input

    return Workflow(
        name="w", edges=[("START", ask, decide, after) if then else ("START", ask, decide)]
    )


async def _paused(runner: Runner) -> SessionKey:
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="go")])
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        pass
    return session.key


async def test_a_deadline_answers_with_on_timeout_and_the_run_goes_on(store: Store) -> None:
    runner = _runner(store, _asking(on_timeout=True), lease_ttl=LONG_TTL)
    key = await _paused(runner)
    (pending,) = await store.list_interrupts("app", "u")
    assert pending.expires_at is not None
    assert abs(pending.expires_at - (pending.created_at + 0.3)) < 1e-6

    async with _working(runner):
        await _status_becomes(store, key, InvocationStatus.COMPLETED)

    (row,) = await store.list_interrupts("app", "u", status=None)
    assert (row.status, row.answer, row.answered_by) == (
        InterruptStatus.ANSWERED,
        {"approved": False},
        TIMEOUT_ANSWERER,
    )
    (invocation,) = await store.list_invocations(key)
    assert invocation.checkpoint is not None
    session = await store.get_session(key)
    assert session is not None
    assert [e.output for e in session.events if e.output is not None][-1] == "escalated"
    assert row.answered_at is not None
    # Fired soon after the deadline: within about a second, or as soon as the worker (started
    # once the run paused) took its first look. A loaded machine adds seconds to either.
    assert row.answered_at - pending.expires_at < WITHIN


async def test_a_deadline_without_on_timeout_fails_the_node(store: Store) -> None:
    runner = _runner(store, _asking(on_timeout=False), lease_ttl=LONG_TTL)
    key = await _paused(runner)

    async with _working(runner):
        await _status_becomes(store, key, InvocationStatus.FAILED)

    (invocation,) = await store.list_invocations(key)
    assert invocation.error is not None
    assert "InputTimeoutError" in invocation.error
    session = await store.get_session(key)
    assert session is not None
    errors = [e.error_code for e in session.events if e.error_code]
    assert errors == [InputTimeoutError.__name__]


async def test_an_answer_after_the_deadline_is_refused_and_changes_nothing(store: Store) -> None:
    runner = _runner(store, _asking(on_timeout=True), lease_ttl=LONG_TTL)
    key = await _paused(runner)
    await asyncio.sleep(0.4)  # past the deadline; no worker runs, so it is still open
    before = await snapshot(store, key)
    late = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id="approve", name="adk_request_input", response={"approved": True}
                )
            )
        ],
    )

    with pytest.raises(InputExpiredError, match="'approve' of invocation .* expired at"):
        await _drain(runner.run_async(user_id="u", session_id=key.session_id, new_message=late))

    assert await snapshot(store, key) == before


def test_a_worker_id_that_could_take_anothers_runs_is_refused(store: Store) -> None:
    counts: dict[str, int] = {}
    for bad in ("", "web/1", "web\n1", "w" * 201):
        with pytest.raises(ValueError, match="worker id"):
            _runner(store, _chain(counts), worker_id=bad)
        with pytest.raises(ValueError, match="worker id"):
            Worker([_runner(store, _chain(counts))], worker_id=bad)


async def test_on_timeout_is_checked_against_the_schema_when_asked() -> None:
    with pytest.raises(ValueError, match="on_timeout .* does not match the response_schema"):
        RequestInput(response_schema=Decision, timeout=5, on_timeout={"approved": "maybe"})
    with pytest.raises(ValueError, match="on_timeout= needs timeout="):
        RequestInput(response_schema=Decision, on_timeout={"approved": False})
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        RequestInput(timeout=0)
    bad: list[Any] = [True, "5", -1, float("nan"), float("inf"), 10**400, 1e20, timedelta.max]
    for each in bad:
        with pytest.raises(ValueError, match="timeout must be a positive number"):
            RequestInput(timeout=each)
    assert RequestInput(timeout=7).timeout_seconds == 7.0
    assert RequestInput(timeout=timedelta(minutes=2)).timeout_seconds == 120.0


async def _drain(events: AsyncIterator[Any]) -> None:
    async for _ in events:
        pass


async def test_a_worker_never_takes_back_the_runs_its_own_process_is_running(
    store: Store,
) -> None:
    gate = asyncio.Event()
    started = asyncio.Event()

    async def slow(node_input: str) -> str:
        started.set()
        await gate.wait()
        return "done"

    # A live lease is the point (a lapsed one is any other process's to take).
    workflow = Workflow(name="w", edges=[("START", slow)])
    runner = _runner(store, workflow, worker_id="same", lease_ttl=LONG_TTL)
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="go")])

    async def hold() -> list[object]:
        return [
            e
            async for e in runner.run_async(user_id="u", session_id=session.id, new_message=message)
        ]

    holder = asyncio.create_task(hold())
    async with asyncio.timeout(WITHIN):
        await started.wait()
    # The worker's first round reclaims runs of this worker id's earlier incarnations
    # (a restart); this process's own live run is not one of them.
    async with _working(runner, worker_id="same") as worker:
        await _rounds_done(worker, 1)  # the round that takes back an earlier incarnation's
        gate.set()
        events = await holder

    assert [getattr(e, "output", None) for e in events][-1] == "done"


def _held(counts: dict[str, int], started: asyncio.Event, gate: asyncio.Event) -> Workflow:
    """A one-node workflow whose node counts its starts and then waits for `gate`."""

    async def held(node_input: str) -> str:
        counts["held"] = counts.get("held", 0) + 1
        started.set()
        await gate.wait()
        return "done"

    return Workflow(name="w", edges=[("START", held)])


def _held_runner(
    stores: StoreFactory, clock: FakeClock
) -> tuple[Runner, dict[str, int], asyncio.Event, asyncio.Event]:
    """A runner of `_held` on the test's clock, with its node's counts, its `started` and
    its `gate`."""
    counts: dict[str, int] = {}
    started, gate = asyncio.Event(), asyncio.Event()
    workflow = _held(counts, started, gate)
    return _runner(stores.open(), workflow, lease_ttl=LONG_TTL, clock=clock), counts, started, gate


async def test_a_run_this_worker_continues_is_not_started_again_when_its_lease_lapses(
    stores: StoreFactory, clock: FakeClock
) -> None:
    # The worker's rounds driven one at a time on the test's clock. Its run's renewals
    # stalled (a loaded machine, the database away a while): by the store's clock the
    # lease lapsed while the node still runs here. The next round must not claim that
    # run and start it a second time in this process.
    runner, counts, started, gate = _held_runner(stores, clock)
    store = runner.store
    key = await _left_by_a_dead_process(runner, "dead-host:1/abc", ttl=LONG_TTL)
    lapse = LONG_TTL.total_seconds() + 1
    clock.advance(lapse)
    worker = Worker([runner], worker_id="here")

    async with asyncio.timeout(WITHIN), asyncio.TaskGroup() as group:
        await worker._recover_orphans(group, reclaim_own=False)  # pyright: ignore[reportPrivateUsage] -- one round
        await started.wait()
        clock.advance(lapse)
        await worker._recover_orphans(group, reclaim_own=False)  # pyright: ignore[reportPrivateUsage] -- the next
        gate.set()

    assert counts == {"held": 1}
    (invocation,) = await store.list_invocations(key)
    assert invocation.status is InvocationStatus.COMPLETED


async def test_a_task_that_ends_leaves_a_newer_task_of_its_invocation_tracked() -> None:
    # Two tasks of one invocation, the newer spawned while the older still ran: the older's
    # end must not drop the newer from what the worker tracks (what `stop` gives its grace
    # and then cuts off, and what a round checks before starting an invocation's work).
    worker = Worker([_runner(MemoryStore(), _chain({}))], worker_id="here")
    older_ends = asyncio.Event()

    async def older() -> None:
        await older_ends.wait()

    async def newer() -> None:
        await asyncio.Event().wait()  # runs until cut off

    async with asyncio.timeout(WITHIN), asyncio.TaskGroup() as group:
        worker._spawn(group, "inv-1", older())  # pyright: ignore[reportPrivateUsage] -- as a round does
        first = worker._active["inv-1"]  # pyright: ignore[reportPrivateUsage] -- what it tracks
        worker._spawn(group, "inv-1", newer())  # pyright: ignore[reportPrivateUsage]
        second = worker._active["inv-1"]  # pyright: ignore[reportPrivateUsage]
        older_ends.set()
        await first

        assert worker._active == {"inv-1": second}  # pyright: ignore[reportPrivateUsage]
        worker.drain(grace=0)
        await worker._finish_active()  # pyright: ignore[reportPrivateUsage] -- the end of `run`

    assert second.cancelled()


async def test_a_deadline_the_worker_cannot_end_holds_back_no_other(
    stores: StoreFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # The earliest deadline belongs to a run started with other code (a deploy came in
    # between): this worker cannot end it, and each round it comes first again. It is
    # tried again only after a while, and the deadlines after it are ended meanwhile.
    store = stores.open()
    older = _runner(store, _asking(on_timeout=True), lease_ttl=LONG_TTL, clock=clock)
    stuck = await _paused(older)
    runner = _runner(store, _asking(on_timeout=True, then=True), lease_ttl=LONG_TTL, clock=clock)
    key = await _paused(runner)
    clock.advance(1)  # both deadlines passed
    worker = Worker([runner], worker_id="here", concurrency=1)

    with caplog.at_level(logging.WARNING, logger="baton.worker"):
        async with asyncio.timeout(WITHIN), asyncio.TaskGroup() as group:
            for _ in range(3):  # three rounds' worth of deadlines, each round's work done
                await worker._expire_due(group)  # pyright: ignore[reportPrivateUsage] -- a round's
                await asyncio.gather(*worker._active.values())  # pyright: ignore[reportPrivateUsage]

    (ended,) = await store.find_interrupts(key, InterruptId("approve"))
    assert (ended.status, ended.answered_by) == (InterruptStatus.ANSWERED, TIMEOUT_ANSWERER)
    (left,) = await store.find_interrupts(stuck, InterruptId("approve"))
    assert left.status is InterruptStatus.OPEN
    tries = [r for r in caplog.records if "changed since invocation" in r.getMessage()]
    assert len(tries) == 1, [r.getMessage() for r in caplog.records]
    # Nor do rounds come at once meanwhile (every 50 ms, each a write, while it waits).
    assert await worker._time_to_next() > 0.5  # pyright: ignore[reportPrivateUsage] -- the sleep


async def test_runs_claimed_as_the_worker_is_asked_to_stop_are_handed_back_not_started(
    stores: StoreFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stop request (SIGTERM) comes while a round's claim is under way: the runs it
    # claimed are released for another process at once, not started in the grace period,
    # and the round starts no deadline's work either.
    store = stores.open()
    counts: dict[str, int] = {}
    runner = _runner(store, _chain(counts), lease_ttl=LONG_TTL, clock=clock)
    key = await _left_by_a_dead_process(runner, "dead-host:1/abc", ttl=LONG_TTL)
    asking = _runner(store, _asking(on_timeout=True), name="asks", lease_ttl=LONG_TTL, clock=clock)
    asked = await _paused(asking)
    clock.advance(LONG_TTL.total_seconds() + 1)  # the lease lapsed, the deadline passed
    worker = Worker([runner, asking], worker_id="here")
    claim = store.claim_orphans

    async def stopped_meanwhile(*args: Any, **kwargs: Any) -> Any:
        worker.drain()
        return await claim(*args, **kwargs)

    monkeypatch.setattr(store, "claim_orphans", stopped_meanwhile)
    async with asyncio.timeout(WITHIN), asyncio.TaskGroup() as group:
        await worker._recover_orphans(group, reclaim_own=False)  # pyright: ignore[reportPrivateUsage] -- a round
        await worker._expire_due(group)  # pyright: ignore[reportPrivateUsage]
        assert worker._active == {}  # pyright: ignore[reportPrivateUsage]

    assert counts == {}
    assert await store.holder(InvocationId("inv-dead")) is None  # any process may take it now
    (invocation,) = await store.list_invocations(key)
    assert invocation.status is InvocationStatus.RUNNING
    (question,) = await store.find_interrupts(asked, InterruptId("approve"))
    assert question.status is InterruptStatus.OPEN  # the next worker ends it


async def test_a_run_a_caller_of_this_process_holds_is_not_started_again_here(
    stores: StoreFactory, clock: FakeClock
) -> None:
    # A caller's run in this process (run_async) whose renewals stalled past its lease by
    # the store's clock: the node still runs here, so this process's worker leaves it be
    # (another process may take it over; then this one's commits are fenced out).
    runner, counts, started, gate = _held_runner(stores, clock)
    store = runner.store
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="go")])

    async def call() -> list[Any]:
        stream = runner.run_async(user_id="u", session_id=session.id, new_message=message)
        return [getattr(e, "output", None) async for e in stream]

    caller = asyncio.create_task(call())
    async with asyncio.timeout(WITHIN):
        await started.wait()
    clock.advance(LONG_TTL.total_seconds() + 1)
    worker = Worker([runner], worker_id="here")
    async with asyncio.timeout(WITHIN), asyncio.TaskGroup() as group:
        await worker._recover_orphans(group, reclaim_own=False)  # pyright: ignore[reportPrivateUsage] -- a round
        gate.set()
        outputs = await caller

    assert counts == {"held": 1}
    assert outputs[-1] == "done"
    (invocation,) = await store.list_invocations(session.key)
    assert invocation.status is InvocationStatus.COMPLETED


def _asking_beside_a_failure(boomed: list[int], *, fails: int) -> Workflow:
    """Two branches: one asks with a 0.3 s deadline and `on_timeout`, the other fails its
    first `fails` times (after the question is asked), failing the invocation."""
    asked = asyncio.Event()

    def ask(node_input: str):
        asked.set()
        return RequestInput(
            interrupt_id="approve",
            message="Approve?",
            response_schema=Decision,
            timeout=0.3,
            on_timeout={"approved": False},
        )

    async def boom(node_input: str) -> str:
        boomed.append(1)
        await asked.wait()
        if len(boomed) <= fails:
            raise RuntimeError("boom")
        return "fine"

    return Workflow(name="w", edges=[("START", (ask, boom), JoinNode(name="j"))])


async def _failed_with_a_question_open(runner: Runner) -> SessionKey:
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
    key = session.key
    message = types.Content(role="user", parts=[types.Part(text="go")])
    with pytest.raises(RuntimeError, match="boom"):
        await _drain(runner.run_async(user_id="u", session_id=session.id, new_message=message))
    (invocation,) = await runner.store.list_invocations(key)
    assert invocation.status is InvocationStatus.FAILED
    (row,) = await runner.store.find_interrupts(key, InterruptId("approve"))
    assert row.status is InterruptStatus.OPEN
    return key


async def _rounds(worker: Worker, count: int) -> None:
    """`count` rounds' worth of deadlines, each round's work done."""
    async with asyncio.timeout(WITHIN), asyncio.TaskGroup() as group:
        for _ in range(count):
            await worker._expire_due(group)  # pyright: ignore[reportPrivateUsage] -- a round's
            await asyncio.gather(*worker._active.values())  # pyright: ignore[reportPrivateUsage]


async def test_a_deadline_does_not_continue_a_failed_invocation_until_a_person_does(
    stores: StoreFactory, clock: FakeClock
) -> None:
    # A branch failed the invocation while the other's question was open. Its deadline
    # passing must not continue the run (the failed branch would run again, nobody having
    # asked), nor keep the worker busy; a person continuing the run makes it count again.
    store = stores.open()
    boomed: list[int] = []
    runner = _runner(
        store, _asking_beside_a_failure(boomed, fails=1), lease_ttl=LONG_TTL, clock=clock
    )
    key = await _failed_with_a_question_open(runner)
    clock.advance(1)  # the deadline passed
    worker = Worker([runner], worker_id="here")

    await _rounds(worker, 2)

    assert len(boomed) == 1
    assert await store.due_interrupts(["app"], limit=5) == []
    (row,) = await store.find_interrupts(key, InterruptId("approve"))
    assert (row.status, row.answered_by) == (InterruptStatus.OPEN, None)
    (invocation,) = await store.list_invocations(key)
    assert invocation.status is InvocationStatus.FAILED
    # Nothing is due: the worker sleeps instead of a round every 50 ms.
    assert await store.next_due(["app"]) is None
    assert await worker._time_to_next() > 0.5  # pyright: ignore[reportPrivateUsage] -- the sleep

    # A person's answer is refused as after any deadline, and changes nothing.
    late = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id="approve", name="adk_request_input", response={"approved": True}
                )
            )
        ],
    )
    with pytest.raises(InputExpiredError, match="once it is continued"):
        await _drain(runner.run_async(user_id="u", session_id=key.session_id, new_message=late))
    assert len(boomed) == 1

    # A person continues it: the failed branch runs again and the run waits on the question,
    # whose deadline, long past, the worker now ends.
    await _drain(
        runner.run_async(user_id="u", session_id=key.session_id, invocation_id=row.invocation_id)
    )
    assert len(boomed) == 2
    await _status_becomes(store, key, InvocationStatus.PAUSED)
    await _rounds(worker, 1)

    (row,) = await store.find_interrupts(key, InterruptId("approve"))
    assert (row.status, row.answered_by) == (InterruptStatus.ANSWERED, TIMEOUT_ANSWERER)
    await _status_becomes(store, key, InvocationStatus.COMPLETED)
    assert len(boomed) == 2


async def test_a_deadline_read_before_its_invocation_failed_leaves_it(
    stores: StoreFactory, clock: FakeClock
) -> None:
    # The worker read the deadline while the run was paused; the run failed before the
    # worker claimed it. Ending the question then would continue the failed run.
    store = stores.open()
    boomed: list[int] = []
    runner = _runner(
        store, _asking_beside_a_failure(boomed, fails=1), lease_ttl=LONG_TTL, clock=clock
    )
    key = await _failed_with_a_question_open(runner)
    clock.advance(1)
    (row,) = await store.find_interrupts(key, InterruptId("approve"))

    await runner.expire(row)  # as the worker does with what it read

    assert len(boomed) == 1
    (row,) = await store.find_interrupts(key, InterruptId("approve"))
    assert row.status is InterruptStatus.OPEN
    (invocation,) = await store.list_invocations(key)
    assert invocation.status is InvocationStatus.FAILED
