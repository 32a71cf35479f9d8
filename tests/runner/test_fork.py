"""Runner.checkpoints and Runner.fork on every backend: a fork at a question waits there
again to be answered differently, the source never changes, refusals write nothing."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from baton import Workflow
from baton.errors import (
    CheckpointNotFoundError,
    CheckpointUnavailableError,
    SessionExistsError,
    SessionNotFoundError,
)
from baton.sessions.store import SessionKey
from baton.types import SessionId
from tests.harness import Harness, MakeHarness
from tests.runner.test_rewind import ask, asking_workflow, remember, session_events


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
        ("question", first),
        ("end", first),
        ("start", second),
        ("question", second),
    ]
    asked = points[1]
    assert asked.interrupt_ids == ["ok"]
    assert asked.answers == {"ok": {"approved": True}}
    assert asked.answered_by == {"ok": "boss"}
    assert "OK?" in asked.label
    assert "one" in points[0].label
    await h.runner.rewind_async(
        user_id="u", session_id=h.session_id, rewind_before_invocation_id=second
    )
    after = await h.runner.checkpoints(user_id="u", session_id=h.session_id)
    assert [p.invocation_id for p in after] == [first] * 3


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
    assert [p.kind for p in again] == ["start", "question", "end"]
    await h.runner.fork(
        user_id="u", session_id="f1", checkpoint_id=again[1].id, new_session_id="f2"
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
