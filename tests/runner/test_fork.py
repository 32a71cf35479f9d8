"""Runner.checkpoints and Runner.fork on every backend: a fork at a question waits there
again to be answered differently, the source never changes, refusals write nothing."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from baton import Context, Event, Runner, Workflow
from baton.errors import (
    CheckpointNotFoundError,
    CheckpointUnavailableError,
    SessionExistsError,
    SessionNotFoundError,
)
from baton.server.catalog import load_app
from baton.sessions.checkpoints import Checkpoint
from baton.sessions.services import BaseSessionService, InMemorySessionService
from baton.sessions.store import InvocationStatus, SessionKey
from baton.types import Content, Part, SessionId
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, MakeHarness, build_harness
from tests.runner.test_rewind import ask, asking_workflow, remember, session_events
from tests.server.conftest import EXAMPLES


def steps_in(points: list[Checkpoint]) -> list[Checkpoint]:
    """The checkpoints after a step (fork there to re-run from it)."""
    return [p for p in points if p.kind == "step"]


def what_each_gave(steps: list[Checkpoint]) -> list[str]:
    """Each step's label after its 'after ': the node run and what it gave."""
    return [p.label.partition(" after ")[2] for p in steps]


async def two_runs(make_harness: MakeHarness) -> tuple[Harness, str, str]:
    """Run 1 asked and was approved; run 2 waits at the same question."""
    h = await make_harness(asking_workflow())
    await h.start("one")
    answering = h.runner.answer(
        user_id="u", session_id=h.session_id, answers={"ok": {"approved": True}}, answered_by="boss"
    )
    assert [e.output async for e in answering][-1] == "approved=True"
    first = (await h.invocation()).id
    await h.start("two")
    return h, first, (await h.invocation()).id


async def test_checkpoints_list_starts_questions_and_ends_in_order(
    make_harness: MakeHarness,
) -> None:
    h, first, second = await two_runs(make_harness)
    points = await h.runner.checkpoints(user_id="u", session_id=h.session_id)
    assert [(p.kind, p.invocation_id) for p in points] == [
        ("start", first),
        ("step", first),  # remember's output
        ("question", first),
        ("step", first),  # ask's output: the answer
        ("step", first),  # decide's output
        ("end", first),
        ("start", second),
        ("step", second),
        ("question", second),
    ]
    assert what_each_gave(steps_in(points)) == [
        'remember@1: "one"',
        'ask@1: {"approved": true}',
        'decide@1: "approved=True"',
        'remember@1: "two"',
    ]
    asked = points[2]
    assert asked.interrupt_ids == ["ok"]
    assert asked.answers == {"ok": {"approved": True}}
    assert asked.answered_by == {"ok": "boss"}
    assert "OK?" in asked.label
    assert "one" in points[0].label
    await h.runner.rewind_async(
        user_id="u", session_id=h.session_id, rewind_before_invocation_id=second
    )
    after = await h.runner.checkpoints(user_id="u", session_id=h.session_id)
    assert [p.invocation_id for p in after] == [first] * 6


async def test_a_fork_at_an_answered_question_is_answered_differently(
    make_harness: MakeHarness,
) -> None:
    h, first, _ = await two_runs(make_harness)
    source = await session_events(h)
    points = await h.runner.checkpoints(user_id="u", session_id=h.session_id)
    question = next(p for p in points if p.kind == "question" and p.invocation_id == first)

    fork = await h.runner.fork(
        user_id="u", session_id=h.session_id, checkpoint_id=question.id, new_session_id="f1"
    )

    assert fork.id == "f1"
    assert fork.state == {"saw_one": True, "last": "one", "asked": "one"}
    [waiting] = await h.runner.pending(user_id="u", session_id="f1")
    assert waiting.interrupt_id == "ok"
    assert waiting.invocation_id != first
    forked = Harness(h.runner, h.service, "f1")
    events = await forked.answer(("ok", {"approved": False}))
    assert events[-1].output == "approved=False"
    # The source is as it was: its first run approved, its second still waiting.
    assert await session_events(h) == source
    [still] = await h.runner.pending(user_id="u", session_id=h.session_id)
    assert still.invocation_id != waiting.invocation_id
    # The fork has checkpoints of its own, its question included: a fork of the fork.
    again = await h.runner.checkpoints(user_id="u", session_id="f1")
    assert [p.kind for p in again] == ["start", "step", "question", "step", "step", "end"]
    await h.runner.fork(
        user_id="u", session_id="f1", checkpoint_id=again[2].id, new_session_id="f2"
    )
    [reopened] = await h.runner.pending(user_id="u", session_id="f2")
    assert reopened.interrupt_id == "ok"


async def test_a_fork_before_a_run_holds_the_earlier_runs_only(make_harness: MakeHarness) -> None:
    h, first, second = await two_runs(make_harness)
    fork = await h.runner.fork(
        user_id="u", session_id=h.session_id, checkpoint_id=f"start:{second}"
    )
    assert fork.state == {"saw_one": True, "last": "one", "asked": "one"}
    assert await h.runner.pending(user_id="u", session_id=fork.id) == []
    runs = await h.runner.invocations(user_id="u", session_id=fork.id)
    assert [r.status.value for r in runs] == ["completed"]
    assert first not in [r.id for r in runs]
    key = SessionKey("app", "u", SessionId(fork.id))
    copied = await h.service.store.get_session(key)
    assert copied is not None
    outputs = [e.output for e in copied.events if e.output is not None]
    assert outputs == ["one", {"approved": True}, "approved=True"]  # the answer is ask's output


async def test_bad_forks_write_nothing(make_harness: MakeHarness) -> None:
    h, first, _ = await two_runs(make_harness)
    before = await h.service.store.list_sessions("app", "u")
    with pytest.raises(CheckpointNotFoundError, match="no checkpoint 'start:e-nope'"):
        await h.runner.fork(user_id="u", session_id=h.session_id, checkpoint_id="start:e-nope")
    with pytest.raises(SessionExistsError):
        await h.runner.fork(
            user_id="u",
            session_id=h.session_id,
            checkpoint_id=f"start:{first}",
            new_session_id=h.session_id,
        )
    with pytest.raises(SessionNotFoundError):
        await h.runner.fork(user_id="u", session_id="nope", checkpoint_id=f"start:{first}")
    with pytest.raises(SessionNotFoundError):
        await h.runner.checkpoints(user_id="u", session_id="nope")
    after = await h.service.store.list_sessions("app", "u")
    assert [s.id for s in after] == [s.id for s in before]


async def test_no_fork_where_another_run_was_executing(make_harness: MakeHarness) -> None:
    gate = asyncio.Event()
    entered = asyncio.Event()

    async def slow(node_input: Any) -> str:
        entered.set()
        await gate.wait()
        return "slow done"

    h = await make_harness(Workflow(name="wf", edges=[("START", remember, ask, slow)]))
    await h.start("a")
    first = (await h.invocation()).id
    # The first run is answered and executes `slow` while a second run starts and pauses.
    resumed = asyncio.create_task(h.answer(("ok", {"approved": True}), invocation_id=first))
    await entered.wait()
    await h.start("b")
    second = (await h.invocation()).id
    gate.set()
    await resumed
    sessions = await h.service.store.list_sessions("app", "u")

    with pytest.raises(CheckpointUnavailableError, match=f"run '{first}' was executing"):
        await h.runner.fork(user_id="u", session_id=h.session_id, checkpoint_id=f"start:{second}")
    assert len(await h.service.store.list_sessions("app", "u")) == len(sessions)
    # At the first run's question it had paused: a fork there works.
    points = await h.runner.checkpoints(user_id="u", session_id=h.session_id)
    asked = next(p for p in points if p.kind == "question" and p.invocation_id == first)
    fork = await h.runner.fork(user_id="u", session_id=h.session_id, checkpoint_id=asked.id)
    [waiting] = await h.runner.pending(user_id="u", session_id=fork.id)
    assert waiting.interrupt_id == "ok"


async def test_a_fork_notifies_only_the_question_it_asks_again(make_harness: MakeHarness) -> None:
    h, first, _ = await two_runs(make_harness)
    store = h.service.store
    ttl = timedelta(seconds=30)
    while claimed := await store.claim_notifications("http://r", "t", ttl=ttl, limit=50):
        await store.accept_notification("http://r", "t", claimed.notifications[-1].seq, ttl=ttl)
    points = await h.runner.checkpoints(user_id="u", session_id=h.session_id)
    question = next(p for p in points if p.kind == "question" and p.invocation_id == first)

    await h.runner.fork(user_id="u", session_id=h.session_id, checkpoint_id=question.id)
    await h.runner.fork(user_id="u", session_id=h.session_id, checkpoint_id=f"end:{first}")

    notes = await store.claim_notifications("http://r", "t", ttl=ttl, limit=50)
    assert notes is not None
    assert [n.kind for n in notes.notifications] == ["question.opened"]  # no answer, run end


RUNS = Counter()


def first(node_input: Any) -> str:
    RUNS.bump("first")
    return "x"


def routed(node_input: str) -> Event:
    RUNS.bump("routed")
    return Event(output=f"{node_input}y", route="go")


def inner_a(node_input: str) -> str:
    RUNS.bump("inner_a")
    return f"{node_input}a"


def inner_b(node_input: str) -> str:
    RUNS.bump("inner_b")
    return f"{node_input}b"


def last(node_input: str) -> str:
    RUNS.bump("last")
    return f"{node_input}!"


def nested_workflow() -> Workflow:
    inner = Workflow(name="inner", edges=[("START", inner_a, inner_b)])
    return Workflow(name="wf", edges=[("START", first, routed, {"go": inner}), (inner, last)])


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_a_fork_at_a_step_reruns_from_there_and_the_source_is_unchanged(
    stores: StoreFactory, resumable: bool
) -> None:
    RUNS.runs.clear()
    service = BaseSessionService(stores.open())
    h = await build_harness(nested_workflow(), service, resumable=resumable)
    await h.start("go")
    run = (await h.invocation()).id
    source = await session_events(h)
    points = await h.runner.checkpoints(user_id="u", session_id=h.session_id)
    steps = steps_in(points)
    assert what_each_gave(steps) == [
        'first@1: "x"',
        'routed@1: "xy" (route "go")',
        'inner@1/inner_a@1: "xya"',
        'inner@1/inner_b@1: "xyab"',
        'last@1: "xyab!"',
    ]
    inside = steps[2]  # after the nested workflow's first node

    fork = await h.runner.fork(user_id="u", session_id=h.session_id, checkpoint_id=inside.id)

    [waiting] = await h.runner.invocations(user_id="u", session_id=fork.id)
    assert (waiting.status, waiting.id != run) == (InvocationStatus.RUNNING, True)
    assert RUNS.runs == dict.fromkeys(["first", "routed", "inner_a", "inner_b", "last"], 1)
    forked = Harness(h.runner, service, fork.id)
    rerun = await forked.collect(invocation_id=waiting.id)
    # What had its result at that step is not run again; the rest is, to the same end.
    assert [(e.node_info.path if e.node_info else "", e.output) for e in rerun] == [
        ("wf@1/inner@1/inner_b@1", "xyab"),
        ("wf@1/last@1", "xyab!"),
    ]
    assert RUNS.runs == {"first": 1, "routed": 1, "inner_a": 1, "inner_b": 2, "last": 2}
    assert (await forked.invocation()).status is InvocationStatus.COMPLETED
    copied = await session_events(forked)
    assert [e.output for e in copied] == [None, "x", "xy", "xya", "xyab", "xyab!"]
    # The source session is exactly as it was, its checkpoints too.
    assert await session_events(h) == source
    assert await h.runner.checkpoints(user_id="u", session_id=h.session_id) == points


async def test_a_fork_at_a_step_before_a_question_asks_it_again(
    make_harness: MakeHarness,
) -> None:
    h, first_run, _ = await two_runs(make_harness)
    points = await h.runner.checkpoints(user_id="u", session_id=h.session_id)
    remembered = next(p for p in points if p.kind == "step" and p.invocation_id == first_run)
    fork = await h.runner.fork(user_id="u", session_id=h.session_id, checkpoint_id=remembered.id)
    [run] = await h.runner.invocations(user_id="u", session_id=fork.id)
    forked = Harness(h.runner, h.service, fork.id)
    await forked.collect(invocation_id=run.id)
    [waiting] = await h.runner.pending(user_id="u", session_id=fork.id)
    assert waiting.interrupt_id == "ok"
    answered = await forked.answer(("ok", {"approved": False}))
    assert answered[-1].output == "approved=False"


async def test_a_step_of_an_unknown_or_rewound_run_cannot_be_forked(
    make_harness: MakeHarness,
) -> None:
    h, _, second = await two_runs(make_harness)
    points = await h.runner.checkpoints(user_id="u", session_id=h.session_id)
    later = next(p for p in points if p.kind == "step" and p.invocation_id == second)
    await h.runner.rewind_async(
        user_id="u", session_id=h.session_id, rewind_before_invocation_id=second
    )
    sessions = await h.service.store.list_sessions("app", "u")
    with pytest.raises(CheckpointNotFoundError, match=later.id):
        await h.runner.fork(user_id="u", session_id=h.session_id, checkpoint_id=later.id)
    with pytest.raises(CheckpointNotFoundError, match="step:nope"):
        await h.runner.fork(user_id="u", session_id=h.session_id, checkpoint_id="step:nope")
    assert len(await h.service.store.list_sessions("app", "u")) == len(sessions)


async def test_a_tools_question_is_labelled_with_the_tool_that_waits() -> None:
    service = InMemorySessionService()
    runner = Runner(app=load_app(EXAMPLES / "approval_agent"), session_service=service)
    session = await service.create_session(app_name=runner.app_name, user_id="u")
    message = Content(role="user", parts=[Part(text="Please refund order 7")])
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        pass

    points = await runner.checkpoints(user_id="u", session_id=session.id)

    [asked] = [p for p in points if p.kind == "question"]
    assert asked.label.endswith("asks: issue_refund")


def routes_on_ctx(ctx: Context, node_input: str) -> str:
    RUNS.bump("routes_on_ctx")
    ctx.route = "go"
    return f"{node_input}y"


async def test_a_fork_after_a_run_that_routed_on_ctx_keeps_its_output_and_route(
    make_harness: MakeHarness,
) -> None:
    RUNS.runs.clear()
    h = await make_harness(
        Workflow(name="wf", edges=[("START", first, routes_on_ctx, {"go": last})])
    )
    await h.start("go")
    points = await h.runner.checkpoints(user_id="u", session_id=h.session_id)
    # Its output and its route are on two events, as the reference emits them.
    steps = steps_in(points)
    assert what_each_gave(steps) == [
        'first@1: "x"',
        'routes_on_ctx@1: "xy" (route "go")',
        'last@1: "xy!"',
    ]
    routed_step = steps[1]

    fork = await h.runner.fork(user_id="u", session_id=h.session_id, checkpoint_id=routed_step.id)
    [waiting] = await h.runner.invocations(user_id="u", session_id=fork.id)
    rerun = await Harness(h.runner, h.service, fork.id).collect(invocation_id=waiting.id)

    assert [(e.node_info.path if e.node_info else "", e.output) for e in rerun] == [
        ("wf@1/last@1", "xy!")
    ]
    assert RUNS.runs == {"first": 1, "routes_on_ctx": 1, "last": 2}


async def moves_to_side(ctx: Context, node_input: str) -> Any:
    RUNS.bump("moves_to_side")
    yield Event(state={"moved": True}, branch="side")
    yield f"{node_input}y"


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_a_fork_after_a_run_that_moved_to_a_branch_continues_on_that_branch(
    stores: StoreFactory, resumable: bool
) -> None:
    RUNS.runs.clear()
    service = BaseSessionService(stores.open())
    h = await build_harness(
        Workflow(name="wf", edges=[("START", first, moves_to_side, last)]),
        service,
        resumable=resumable,
    )
    source = await h.start("go")
    steps = steps_in(await h.runner.checkpoints(user_id="u", session_id=h.session_id))
    assert what_each_gave(steps) == ['first@1: "x"', 'moves_to_side@1: "xy"', 'last@1: "xy!"']

    fork = await h.runner.fork(user_id="u", session_id=h.session_id, checkpoint_id=steps[1].id)
    [waiting] = await h.runner.invocations(user_id="u", session_id=fork.id)
    rerun = await Harness(h.runner, service, fork.id).collect(invocation_id=waiting.id)

    # `last` runs again on the branch its predecessor moved the run to, as it did first.
    assert [(e.branch, e.output) for e in source if e.output == "xy!"] == [("side", "xy!")]
    assert [(e.branch, e.node_info.path if e.node_info else "", e.output) for e in rerun] == [
        ("side", "wf@1/last@1", "xy!")
    ]
    assert RUNS.runs == {"first": 1, "moves_to_side": 1, "last": 2}


async def test_a_fork_before_a_fan_out_runs_its_branches_at_once(
    make_harness: MakeHarness,
) -> None:
    """The fork takes `first`'s output and starts both of its successors, as the run it
    came from did: `waits` ends only once `signals` has run beside it."""
    signalled = asyncio.Event()

    async def waits(node_input: str) -> str:
        async with asyncio.timeout(10):  # a guard against a hang, not a measure
            await signalled.wait()
        return f"{node_input} waited"

    def signals(node_input: str) -> None:
        signalled.set()

    h = await make_harness(Workflow(name="wf", edges=[("START", first, (waits, signals))]))
    await h.start("go")
    steps = steps_in(await h.runner.checkpoints(user_id="u", session_id=h.session_id))
    assert what_each_gave(steps)[0] == 'first@1: "x"'
    signalled.clear()

    fork = await h.runner.fork(user_id="u", session_id=h.session_id, checkpoint_id=steps[0].id)
    [waiting] = await h.runner.invocations(user_id="u", session_id=fork.id)
    rerun = await Harness(h.runner, h.service, fork.id).collect(invocation_id=waiting.id)

    assert [e.output for e in rerun if e.output is not None] == ["x waited"]
