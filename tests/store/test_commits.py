"""Step commits on every backend: atomicity, optimistic versions, the interrupt index."""

from __future__ import annotations

import asyncio

import pytest

from baton.errors import StaleVersionError
from baton.sessions.store import Interrupt, InterruptStatus, InvocationStatus, SessionKey, Store
from baton.types import InterruptId, InvocationId, SessionId
from tests.conftest import FakeClock, StoreFactory
from tests.store.builders import APP, USER, event, key, question, snapshot, step, texts

RACERS = 6


async def _paused_run(store: Store, session_id: str = "s1", invocation_id: str = "inv-1") -> None:
    """A session with one invocation at version 1, paused on interrupt 'q1'."""
    await store.create_session(APP, USER, session_id=SessionId(session_id), state={"n": 0})
    await store.commit_step(
        step(
            key(session_id),
            invocation_id,
            0,
            events=(event("asked", invocation_id=invocation_id),),
            state={"n": 1},
            checkpoint={"at": "ask"},
            status=InvocationStatus.PAUSED,
            opened=(question(key(session_id), invocation_id, "q1"),),
        )
    )


async def _ask(store: Store, session: SessionKey, invocation_id: str, interrupt_id: str) -> None:
    """Start an invocation that opens one interrupt."""
    opened = (question(session, invocation_id, interrupt_id),)
    await store.commit_step(step(session, invocation_id, 0, opened=opened))


async def test_first_commit_creates_the_invocation_at_version_1(
    store: Store, clock: FakeClock
) -> None:
    await _paused_run(store)

    invocation = await store.load_invocation(key(), InvocationId("inv-1"))

    assert invocation is not None
    assert (invocation.version, invocation.status, invocation.fingerprint) == (
        1,
        InvocationStatus.PAUSED,
        "fp",
    )
    assert invocation.checkpoint == {"at": "ask"}
    assert invocation.session_key == key()
    assert invocation.created_at == invocation.updated_at <= clock.now
    assert await store.list_invocations(key()) == [invocation]


async def test_commit_advances_version_and_keeps_unchanged_fields(store: Store) -> None:
    await _paused_run(store)

    assert await store.commit_step(step(key(), "inv-1", 1, events=(event("more"),))) == 2
    assert (
        await store.commit_step(
            step(key(), "inv-1", 2, status=InvocationStatus.FAILED, checkpoint={"at": "end"})
        )
        == 3
    )

    invocation = await store.load_invocation(key(), InvocationId("inv-1"))
    assert invocation is not None
    assert (invocation.version, invocation.status, invocation.checkpoint) == (
        3,
        InvocationStatus.FAILED,
        {"at": "end"},
    )
    assert invocation.created_at < invocation.updated_at


@pytest.mark.parametrize("expected", [0, 2, 7])
async def test_stale_commit_lands_nothing(store: Store, expected: int) -> None:
    await _paused_run(store)
    before = await snapshot(store, key())

    with pytest.raises(StaleVersionError, match=rf"'inv-1' is at version 1, not {expected}"):
        await store.commit_step(
            step(
                key(),
                "inv-1",
                expected,
                events=(event("late"),),
                state={"n": 99, "new": True},
                checkpoint={"at": "elsewhere"},
                status=InvocationStatus.COMPLETED,
                opened=(question(key(), "inv-1", "q2"),),
                answered={"q1": {"approved": True}},
            )
        )

    assert await snapshot(store, key()) == before


async def test_commit_to_unknown_invocation_with_a_version_is_stale(store: Store) -> None:
    await store.create_session(APP, USER, session_id=SessionId("s1"))
    before = await snapshot(store, key())

    with pytest.raises(StaleVersionError, match=r"'inv-9' is at version 0, not 3"):
        await store.commit_step(step(key(), "inv-9", 3, events=(event("x"),)))

    assert await snapshot(store, key()) == before


async def _race(stores: StoreFactory, make_version: int) -> list[int | BaseException]:
    racers = [stores.open() for _ in range(RACERS)]
    commits = [
        racer.commit_step(
            step(key(), "inv-1", make_version, events=(event(f"racer-{i}"),), state={"by": i})
        )
        for i, racer in enumerate(racers)
    ]
    return await asyncio.gather(*commits, return_exceptions=True)


async def test_concurrent_commits_with_one_version_exactly_one_wins(
    stores: StoreFactory,
) -> None:
    store = stores.open()
    await _paused_run(store)

    results = await _race(stores, make_version=1)

    winners = [i for i, r in enumerate(results) if r == 2]
    assert len(winners) == 1, results
    assert all(isinstance(r, StaleVersionError) for r in results if r != 2), results
    found = await store.get_session(key())
    assert found is not None
    assert texts(found.events) == ["asked", f"racer-{winners[0]}"]
    assert found.state == {"n": 1, "by": winners[0]}


async def test_concurrent_creations_of_one_invocation_exactly_one_wins(
    stores: StoreFactory,
) -> None:
    store = stores.open()
    await store.create_session(APP, USER, session_id=SessionId("s1"))

    results = await _race(stores, make_version=0)

    assert sorted(r if isinstance(r, int) else -1 for r in results) == [-1] * (RACERS - 1) + [1]
    assert [i.version for i in await store.list_invocations(key())] == [1]


async def test_answer_marks_the_interrupt_answered_with_who_and_when(
    store: Store, clock: FakeClock
) -> None:
    await _paused_run(store)

    await store.commit_step(step(key(), "inv-1", 1, answered={"q1": {"approved": True}}))

    [row] = await store.find_interrupts(key(), InterruptId("q1"))
    assert row == question(key(), "inv-1", "q1").model_copy(
        update={
            "status": InterruptStatus.ANSWERED,
            "created_at": row.created_at,
            "answered_at": clock.now,
            "answer": {"approved": True},
            "answered_by": "alice",
        }
    )
    assert row.created_at < clock.now
    assert await store.list_interrupts(APP, USER) == []


async def test_reopening_an_answered_interrupt_replaces_its_row(store: Store) -> None:
    await _paused_run(store)
    await store.commit_step(step(key(), "inv-1", 1, answered={"q1": "first"}))
    asked_again = question(key(), "inv-1", "q1", message="Approve again?")

    await store.commit_step(step(key(), "inv-1", 2, opened=(asked_again,)))

    [row] = await store.find_interrupts(key(), InterruptId("q1"))
    assert row == asked_again.model_copy(update={"created_at": row.created_at})
    assert [r.interrupt_id for r in await store.list_interrupts(APP, USER)] == ["q1"]


async def test_find_interrupts_sees_every_invocation_of_the_session(store: Store) -> None:
    await _paused_run(store, invocation_id="inv-1")
    await _ask(store, key(), "inv-2", "q1")
    await store.create_session(APP, USER, session_id=SessionId("s2"))
    await _ask(store, key("s2"), "inv-3", "q1")

    rows = await store.find_interrupts(key(), InterruptId("q1"))

    assert [(r.invocation_id, r.status) for r in rows] == [
        ("inv-1", InterruptStatus.OPEN),
        ("inv-2", InterruptStatus.OPEN),
    ]
    assert await store.find_interrupts(key(), InterruptId("q-unknown")) == []


async def test_find_asking_reads_the_session_with_its_open_questions_of_one_function(
    store: Store,
) -> None:
    await _paused_run(store, invocation_id="inv-1")  # q1, adk_request_input
    replies = [
        question(key(), invocation, interrupt_id).model_copy(update={"function_name": "reply"})
        for invocation, interrupt_id in (("inv-2", "r1"), ("inv-2", "r2"), ("inv-3", "r3"))
    ]
    await store.commit_step(step(key(), "inv-2", 0, opened=tuple(replies[:2])))
    await store.commit_step(step(key(), "inv-3", 0, opened=(replies[2],)))
    await store.commit_step(step(key(), "inv-2", 1, answered={"r1": "done"}))
    await store.create_session(APP, USER, session_id=SessionId("s2"))
    await _ask(store, key("s2"), "inv-4", "q1")

    session, rows = await store.find_asking(key(), "reply")

    assert session == await store.get_session(key(), with_events=False)
    assert [(r.invocation_id, r.interrupt_id) for r in rows] == [("inv-2", "r2"), ("inv-3", "r3")]
    assert rows == [r for r in await store.list_interrupts(APP, USER) if r.function_name == "reply"]
    assert await store.find_asking(key("s2"), "reply") == (
        await store.get_session(key("s2"), with_events=False),
        [],
    )
    assert await store.find_asking(key("missing"), "reply") == (None, [])


async def test_answering_an_unknown_interrupt_changes_no_row(store: Store) -> None:
    await _paused_run(store)
    rows_before = await store.list_interrupts(APP, status=None)

    await store.commit_step(step(key(), "inv-1", 1, answered={"nope": 1}))

    assert await store.list_interrupts(APP, status=None) == rows_before


async def test_list_interrupts_filters(store: Store) -> None:
    await _paused_run(store, "s1", "inv-1")  # s1/inv-1/q1 open
    await store.commit_step(step(key(), "inv-1", 1, opened=(question(key(), "inv-1", "q2"),)))
    await store.commit_step(step(key(), "inv-1", 2, answered={"q1": True}))
    await _paused_run(store, "s2", "inv-2")  # s2/inv-2/q1 open
    await store.create_session(APP, "v", session_id=SessionId("s3"))
    await _ask(store, key("s3", user="v"), "inv-3", "q9")
    await store.create_session("other", USER, session_id=SessionId("s4"))
    await _ask(store, key("s4", app="other"), "inv-4", "q1")

    def ids(rows: list[Interrupt]) -> list[str]:
        return [f"{r.invocation_id}/{r.interrupt_id}" for r in rows]

    assert ids(await store.list_interrupts(APP)) == ["inv-1/q2", "inv-2/q1", "inv-3/q9"]
    assert ids(await store.list_interrupts(APP, USER)) == ["inv-1/q2", "inv-2/q1"]
    assert ids(await store.list_interrupts(APP, status=None)) == [
        "inv-1/q1",
        "inv-1/q2",
        "inv-2/q1",
        "inv-3/q9",
    ]
    assert ids(await store.list_interrupts(APP, status=InterruptStatus.ANSWERED)) == ["inv-1/q1"]
    assert ids(await store.list_interrupts(APP, session_id=SessionId("s2"))) == ["inv-2/q1"]
    assert ids(
        await store.list_interrupts(APP, invocation_id=InvocationId("inv-1"), status=None)
    ) == ["inv-1/q1", "inv-1/q2"]
    assert ids(await store.list_interrupts("other", USER)) == ["inv-4/q1"]
    assert await store.list_interrupts(APP, "nobody") == []
