"""DESIGN §3: bad input changes nothing, one resumer at a time, changed code detected,
no completed work redone."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel, JsonValue

from baton import App, Context, Event, RequestInput, ResumabilityConfig, Runner, Workflow, types
from baton.errors import (
    AlreadyAnsweredError,
    BatonError,
    InvalidMessageError,
    InvalidResponseError,
    InvocationBusyError,
    InvocationFinishedError,
    InvocationNotFoundError,
    InvocationWaitingError,
    SessionNotFoundError,
    UnknownInterruptError,
    WorkflowChangedError,
)
from baton.events import REQUEST_INPUT_FUNCTION
from baton.sessions.memory import MemoryStore
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InterruptStatus, InvocationStatus, Session, SessionKey, StepCommit
from baton.types import InvocationId, SessionId
from tests.conftest import FakeClock
from tests.harness import Harness, MakeHarness, asked, build_harness, outputs


class Amount(BaseModel):
    amount: int
    reason: str


def _approval_workflow(counter: dict[str, int], *, extra: bool = False) -> Workflow:
    def prepare(node_input: str) -> str:
        counter["prepare"] = counter.get("prepare", 0) + 1
        return f"prepared {node_input}"

    async def ask(ctx: Context, node_input: str):
        counter["ask"] = counter.get("ask", 0) + 1
        yield RequestInput(interrupt_id="approve", message="How much?", response_schema=Amount)

    def book(node_input: dict[str, Any]) -> str:
        counter["book"] = counter.get("book", 0) + 1
        return f"booked {node_input['amount']}"

    def notify(node_input: str) -> str:
        return node_input

    chain: tuple[object, ...] = (
        ("START", prepare, ask, book, notify) if extra else ("START", prepare, ask, book)
    )
    return Workflow(name="expenses", edges=[chain])


async def snapshot(service: BaseSessionService, key: SessionKey) -> dict[str, JsonValue]:
    store = service.store
    session = await store.get_session(key)
    invocations = await store.list_invocations(key)
    interrupts = await store.list_interrupts(key.app_name, key.user_id, status=None)
    return {
        "session": None if session is None else session.model_dump(mode="json"),
        "invocations": [i.model_dump(mode="json") for i in invocations],
        "interrupts": [i.model_dump(mode="json") for i in interrupts],
    }


def fr(
    iid: str, response: dict[str, JsonValue] | None, *, name: str = REQUEST_INPUT_FUNCTION
) -> types.Content:
    part = types.Part(
        function_response=types.FunctionResponse(id=iid, name=name, response=response)
    )
    return types.Content(role="user", parts=[part])


GOOD: dict[str, JsonValue] = {"amount": 12, "reason": "taxi"}


async def paused(make_harness: MakeHarness, counter: dict[str, int]) -> Harness:
    h = await make_harness(_approval_workflow(counter))
    assert asked(await h.start("trip")) == ["approve"]
    return h


@pytest.mark.parametrize(
    ("call", "error", "named"),
    [
        (
            {"session_id": "nope", "new_message": fr("approve", GOOD)},
            SessionNotFoundError,
            "'nope'",
        ),
        ({"invocation_id": "inv-missing"}, InvocationNotFoundError, "'inv-missing'"),
        ({"new_message": fr("approve-2", GOOD)}, UnknownInterruptError, "'approve-2'"),
        (
            {"new_message": fr("approve", {"amount": "lots", "reason": "x"})},
            InvalidResponseError,
            "amount",
        ),
        ({"new_message": fr("approve", {"result": 5})}, InvalidResponseError, "'approve'"),
        (
            {
                "new_message": types.Content(
                    role="user",
                    parts=[*(fr("approve", GOOD).parts or []), types.Part(text="also this")],
                )
            },
            InvalidMessageError,
            "mix function responses",
        ),
        ({"new_message": fr("", GOOD)}, InvalidMessageError, "has no id"),
        (
            {"new_message": fr("approve", GOOD), "invocation_id": "other-inv"},
            InvocationNotFoundError,
            "'other-inv'",
        ),
    ],
)
async def test_bad_input_raises_specific_error_and_changes_nothing(
    make_harness: MakeHarness,
    call: dict[str, Any],
    error: type[BatonError],
    named: str,
) -> None:
    counter: dict[str, int] = {}
    h = await paused(make_harness, counter)
    before = await snapshot(h.service, h.key)
    with pytest.raises(error) as caught:
        await h.collect(**call)
    assert named in str(caught.value)
    assert await snapshot(h.service, h.key) == before
    done = await h.collect(new_message=fr("approve", GOOD))
    assert outputs(done)[-1] == ("book", "booked 12")
    assert counter == {"prepare": 1, "ask": 1, "book": 1}


@pytest.mark.parametrize("text", [None, "any news?"])
async def test_continuing_a_paused_invocation_without_answers_is_refused(
    make_harness: MakeHarness, text: str | None
) -> None:
    counter: dict[str, int] = {}
    h = await paused(make_harness, counter)
    invocation = await h.invocation()
    before = await snapshot(h.service, h.key)
    message = None if text is None else types.Content(role="user", parts=[types.Part(text=text)])
    with pytest.raises(InvocationWaitingError) as caught:
        await h.collect(invocation_id=invocation.id, new_message=message)
    assert str(caught.value) == (
        f"invocation '{invocation.id}' is waiting for answers to its interrupts ('approve'); "
        "nothing runs until one is answered. Send a function response whose id is an open "
        "interrupt id."
    )
    assert await snapshot(h.service, h.key) == before
    done = await h.collect(new_message=fr("approve", GOOD))
    assert outputs(done)[-1] == ("book", "booked 12")
    assert counter == {"prepare": 1, "ask": 1, "book": 1}


async def test_unknown_interrupt_message_lists_the_open_ones(make_harness: MakeHarness) -> None:
    h = await paused(make_harness, {})
    with pytest.raises(UnknownInterruptError) as caught:
        await h.collect(new_message=fr("approve-2", GOOD))
    assert str(caught.value) == (
        f"interrupt 'approve-2' is not open in session '{h.session_id}' (open: 'approve'); "
        "answer one of the open ids."
    )


async def test_answered_twice_and_finished_invocation_are_refused(
    make_harness: MakeHarness,
) -> None:
    counter: dict[str, int] = {}
    h = await paused(make_harness, counter)
    await h.collect(new_message=fr("approve", GOOD))
    invocation = await h.invocation()
    assert invocation.status == InvocationStatus.COMPLETED
    before = await snapshot(h.service, h.key)
    with pytest.raises(
        AlreadyAnsweredError, match="'approve' of invocation .* was already answered"
    ):
        await h.collect(new_message=fr("approve", {"amount": 99, "reason": "again"}))
    with pytest.raises(InvocationFinishedError, match="already completed"):
        await h.collect(invocation_id=invocation.id)
    with pytest.raises(InvocationFinishedError, match="already completed"):
        await h.collect(
            invocation_id=invocation.id,
            new_message=types.Content(role="user", parts=[types.Part(text="hi")]),
        )
    assert await snapshot(h.service, h.key) == before
    assert counter == {"prepare": 1, "ask": 1, "book": 1}


async def test_changed_workflow_is_detected_and_the_old_code_still_resumes(
    make_harness: MakeHarness,
) -> None:
    counter: dict[str, int] = {}
    h = await paused(make_harness, counter)
    before = await snapshot(h.service, h.key)
    changed = Runner(
        app=App(
            name="app",
            root_agent=_approval_workflow(counter, extra=True),
            resumability_config=ResumabilityConfig(is_resumable=True),
        ),
        session_service=h.service,
    )
    stream = changed.run_async(
        user_id="u", session_id=h.session_id, new_message=fr("approve", GOOD)
    )
    with pytest.raises(WorkflowChangedError) as caught:
        await anext(stream)
    invocation = await h.invocation()
    assert str(caught.value) == (
        f"workflow 'expenses' changed since invocation '{invocation.id}' started: node 'notify' "
        "was added; edge book -> notify was added. Resume with the code it started with, or start "
        "a new run."
    )
    assert await snapshot(h.service, h.key) == before
    assert outputs(await h.collect(new_message=fr("approve", GOOD)))[-1] == ("book", "booked 12")


async def test_of_concurrent_resumes_exactly_one_runs(make_harness: MakeHarness) -> None:
    gate = asyncio.Event()
    runs: list[str] = []

    def ask() -> RequestInput:
        return RequestInput(interrupt_id="go")

    slow_started = asyncio.Event()

    async def slow(node_input: Any) -> str:
        runs.append("slow")
        slow_started.set()
        await gate.wait()
        return "done"

    h = await make_harness(Workflow(name="wf", edges=[("START", ask, slow)]))
    await h.start()

    async def resume() -> list[Event] | BaseException:
        try:
            return await h.collect(new_message=fr("go", {"result": 1}))
        except InvocationBusyError as busy:
            return busy

    tasks = [asyncio.create_task(resume()) for _ in range(5)]
    await slow_started.wait()
    async with asyncio.timeout(30):  # a bound for a loaded machine, not a measure
        # The winner is held at the gate, so the four losers must finish on their own.
        while sum(t.done() for t in tasks) < 4:
            await asyncio.wait(
                [t for t in tasks if not t.done()], return_when=asyncio.FIRST_COMPLETED
            )
    busy = [t for t in tasks if t.done()]
    assert len(busy) == 4
    assert all(isinstance(t.result(), InvocationBusyError) for t in busy)
    gate.set()
    results = await asyncio.gather(*tasks)
    winners = [r for r in results if isinstance(r, list)]
    assert len(winners) == 1
    assert runs == ["slow"]
    assert "is being run by" in str(busy[0].result())


async def test_lease_of_a_dead_holder_expires_and_the_run_recovers(
    make_harness: MakeHarness, clock: FakeClock
) -> None:
    h = await make_harness(_approval_workflow({}))
    service = h.service
    await h.start("trip")
    invocation = await h.invocation()
    dead = await service.store.claim(
        InvocationId(invocation.id), "dead-host:1", timedelta(seconds=30)
    )
    with pytest.raises(InvocationBusyError, match="dead-host:1"):
        await h.collect(new_message=fr("approve", GOOD))
    assert [r.status for r in await service.store.list_interrupts("app", "u", status=None)] == [
        InterruptStatus.OPEN
    ]
    clock.advance(31)
    assert outputs(await h.collect(new_message=fr("approve", GOOD)))[-1] == ("book", "booked 12")
    with pytest.raises(InvocationBusyError, match="was taken over by another runner"):
        await service.store.renew(dead, timedelta(seconds=30))


async def test_interrupted_run_resumes_in_flight_node_with_the_same_idempotency_key(
    make_harness: MakeHarness,
) -> None:
    started = asyncio.Event()
    keys: list[str] = []
    counter: dict[str, int] = {}

    def first() -> str:
        counter["first"] = counter.get("first", 0) + 1
        return "1"

    async def charge(ctx: Context, node_input: str) -> str:
        keys.append(ctx.idempotency_key)
        counter["charge"] = counter.get("charge", 0) + 1
        if len(keys) == 1:
            started.set()
            await asyncio.Event().wait()  # the "crash" happens while this waits
        return "charged"

    h = await make_harness(Workflow(name="wf", edges=[("START", first, charge)]))
    stream = h.runner.run_async(
        user_id="u",
        session_id=h.session_id,
        new_message=types.Content(role="user", parts=[types.Part(text="x")]),
    )
    consumer = asyncio.create_task(anext(stream))
    first_event = await consumer
    assert first_event.output == "1"
    pending = asyncio.create_task(anext(stream))
    await started.wait()
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    await stream.aclose()
    invocation = await h.invocation()
    assert invocation.status == InvocationStatus.RUNNING
    events = await h.collect(invocation_id=invocation.id)
    assert outputs(events) == [("charge", "charged")]
    assert counter == {"first": 1, "charge": 2}
    assert keys[0] == keys[1] == f"{invocation.id}/wf@1/charge@1"


async def test_session_crud_through_the_in_memory_service(make_harness: MakeHarness) -> None:
    h = await make_harness(_approval_workflow({}))
    service = h.service
    made = await service.create_session(
        app_name="app", user_id="u", session_id="s2", state={"a": 1}
    )
    assert (made.id, made.state) == ("s2", {"a": 1})
    listed = await service.list_sessions(app_name="app", user_id="u")
    assert sorted(s.id for s in listed.sessions) == sorted([h.session_id, "s2"])
    await service.delete_session(app_name="app", user_id="u", session_id="s2")
    assert await service.get_session(app_name="app", user_id="u", session_id="s2") is None
    key = SessionKey("app", "u", SessionId("s2"))
    assert await service.store.get_session(key) is None


class RecordingStore(MemoryStore):  # pyright: ignore[reportGeneralTypeIssues] -- a test-only recorder over the real store
    """The real memory store, noting which reads load a session's events."""

    def __init__(self) -> None:
        super().__init__()
        self.event_loads = 0

    async def get_session(
        self,
        key: SessionKey,
        *,
        with_events: bool = True,
        event_limit: int | None = None,
        events_after: float | None = None,
    ) -> Session | None:
        if with_events and event_limit != 0:
            self.event_loads += 1
        return await super().get_session(
            key, with_events=with_events, event_limit=event_limit, events_after=events_after
        )


async def test_resume_never_loads_the_session_history() -> None:
    store = RecordingStore()
    service = BaseSessionService(store)
    h = await build_harness(_approval_workflow({}), service, resumable=True)
    for n in range(50):  # an unrelated history in the same session
        await service.append_event(
            await _session(service, h), Event(author="user", message=f"note {n}")
        )
    await h.start("trip")
    store.event_loads = 0
    done = await h.collect(new_message=fr("approve", GOOD))
    assert outputs(done)[-1] == ("book", "booked 12")
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
    assert store.event_loads == 0


async def _session(service: BaseSessionService, h: Harness) -> Session:
    session = await service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    return session


class FailingStore(MemoryStore):  # pyright: ignore[reportGeneralTypeIssues] -- a test-only fault injector over the real store
    """The real memory store, whose commits start failing after a number of them."""

    def __init__(self, healthy_commits: int) -> None:
        super().__init__()
        self.healthy_commits = healthy_commits

    async def commit_step(self, commit: StepCommit) -> int:
        if self.healthy_commits <= 0:
            raise ConnectionError("database went away")
        self.healthy_commits -= 1
        return await super().commit_step(commit)


async def test_a_failing_store_surfaces_from_run_async_and_the_run_stays_resumable() -> None:
    counter: dict[str, int] = {}
    store = FailingStore(healthy_commits=2)  # the start, then `prepare`
    service = BaseSessionService(store)
    h = await build_harness(_approval_workflow(counter), service, resumable=True)
    with pytest.raises(ConnectionError, match="database went away"):
        await h.start("trip")
    invocation = await h.invocation()
    assert invocation.status == InvocationStatus.RUNNING
    store.healthy_commits = 100
    events = await h.collect(invocation_id=invocation.id)
    assert asked(events) == ["approve"]
    assert counter == {"prepare": 1, "ask": 2}


async def _long_run(clock: FakeClock) -> tuple[Runner, MemoryStore, asyncio.Event, asyncio.Event]:
    """A runner with a 0.3 s lease on a fake-clock store, and a node that waits to be let go."""
    started, release = asyncio.Event(), asyncio.Event()

    async def slow() -> str:
        started.set()
        await release.wait()
        return "done"

    store = MemoryStore(clock=clock)
    runner = Runner(
        app=App(
            name="app",
            root_agent=Workflow(name="wf", edges=[("START", slow)]),
            resumability_config=ResumabilityConfig(is_resumable=True),
        ),
        session_service=BaseSessionService(store),
        lease_ttl=timedelta(seconds=0.3),
    )
    await store.create_session("app", "u", session_id=SessionId("s"))
    return runner, store, started, release


async def _collect(runner: Runner) -> list[Event]:
    message = types.Content(role="user", parts=[types.Part(text="go")])
    return [e async for e in runner.run_async(user_id="u", session_id="s", new_message=message)]


async def test_a_long_run_keeps_its_lease_alive(clock: FakeClock) -> None:
    runner, store, started, release = await _long_run(clock)
    run = asyncio.create_task(_collect(runner))
    await started.wait()
    (invocation,) = await store.list_invocations(SessionKey("app", "u", SessionId("s")))
    for _ in range(5):  # 1 s of store time passes, over three lease lifetimes
        clock.advance(0.2)
        await asyncio.sleep(0.15)  # a renewal every 0.1 s of loop time
    with pytest.raises(InvocationBusyError):
        await store.claim(InvocationId(invocation.id), "other-host:1", timedelta(seconds=30))
    release.set()
    assert [e.output for e in await run] == ["done"]


async def test_a_run_whose_lease_was_taken_over_stops_with_busy(clock: FakeClock) -> None:
    runner, store, started, release = await _long_run(clock)
    run = asyncio.create_task(_collect(runner))
    await started.wait()
    (invocation,) = await store.list_invocations(SessionKey("app", "u", SessionId("s")))
    clock.advance(5)  # the holder looks dead (it was stuck), so another host takes over
    await store.claim(InvocationId(invocation.id), "other-host:1", timedelta(seconds=30))
    with pytest.raises(InvocationBusyError, match="was taken over by another runner"):
        await asyncio.wait_for(run, timeout=30)  # a bound: it stops at its next renewal
    assert not release.is_set()  # stopped by the lost lease, not by finishing
    reloaded = await store.load_invocation(
        SessionKey("app", "u", SessionId("s")), InvocationId(invocation.id)
    )
    assert reloaded is not None
    assert reloaded.status == InvocationStatus.RUNNING
