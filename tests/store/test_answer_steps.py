"""Steps that answer interrupts (the first step of a resume), without a state change
or a new interrupt: PostgreSQL lands them in one statement (see `sql.step`). The same
guarantees as any step commit, checked on every backend.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import JsonValue

from baton.errors import SessionNotFoundError, StaleVersionError
from baton.sessions.store import Interrupt, InterruptStatus, InvocationStatus, Store
from baton.types import InterruptId, InvocationId, SessionId
from tests.conftest import FakeClock, StoreFactory
from tests.store.builders import (
    APP,
    USER,
    event,
    key,
    question,
    race_one_winner,
    snapshot,
    step,
    texts,
)

RACERS = 6


async def _asking(store: Store, *interrupt_ids: str) -> None:
    """Invocation inv-1 at version 2 in session s1, paused on `interrupt_ids`."""
    await store.create_session(APP, USER, session_id=SessionId("s1"))
    await store.commit_step(step(key(), "inv-1", 0, events=(event("hi"),)))
    opened = tuple(question(key(), "inv-1", i) for i in interrupt_ids)
    await store.commit_step(step(key(), "inv-1", 1, opened=opened, status=InvocationStatus.PAUSED))


async def _rows(store: Store) -> dict[str, Interrupt]:
    rows = await store.list_interrupts(APP, status=None)
    return {r.interrupt_id: r for r in rows}


async def test_answers_land_with_the_events_and_the_new_status(
    store: Store, clock: FakeClock
) -> None:
    await _asking(store, "q1", "q2", "q3")
    clock.advance(3)

    answers: dict[str, JsonValue] = {"q1": {"approved": True}, "q2": None, "q3": [1, "two"]}
    commit = step(
        key(),
        "inv-1",
        2,
        events=(event("answered"), event("then")),
        checkpoint={"at": "b"},
        status=InvocationStatus.RUNNING,
        answered=answers,
    )
    assert await store.commit_step(commit) == 3

    rows = await _rows(store)
    for interrupt_id, answer in answers.items():
        row = rows[interrupt_id]
        assert (row.status, row.answer, row.answered_by, row.answered_at) == (
            InterruptStatus.ANSWERED,
            answer,
            "alice",
            clock.now,
        )
    session = await store.get_session(key())
    invocation = await store.load_invocation(key(), InvocationId("inv-1"))
    assert session is not None
    assert invocation is not None
    assert texts(session.events) == ["hi", "answered", "then"]
    assert (invocation.version, invocation.status, invocation.checkpoint) == (
        3,
        InvocationStatus.RUNNING,
        {"at": "b"},
    )
    assert session.last_update_time == clock.now


@pytest.mark.parametrize("answer", [{"approved": True}, None, [1, "two"], "a\u0000b", 0])
async def test_one_answer_lands_as_given(store: Store, answer: JsonValue) -> None:
    # One answer is bound as plain values on PostgreSQL, several as JSON texts (above).
    await _asking(store, "q1", "q2")
    commit = step(key(), "inv-1", 2, events=(event("answered"),), answered={"q1": answer})

    assert await store.commit_step(commit) == 3

    rows = await _rows(store)
    assert (rows["q1"].status, rows["q1"].answer) == (InterruptStatus.ANSWERED, answer)
    assert rows["q2"].status == InterruptStatus.OPEN


async def test_an_id_answered_twice_keeps_the_last_answer(store: Store) -> None:
    await _asking(store, "q1")
    twice = ((InterruptId("q1"), "first"), (InterruptId("q1"), "last"))
    commit = replace(step(key(), "inv-1", 2, answered={"q1": "first"}), answered=twice)

    await store.commit_step(commit)

    assert (await _rows(store))["q1"].answer == "last"


async def test_answering_an_unknown_or_other_invocations_interrupt_changes_no_row(
    store: Store,
) -> None:
    await _asking(store, "q1")
    await store.commit_step(step(key(), "inv-2", 0, opened=(question(key(), "inv-2", "q9"),)))
    before = await _rows(store)

    assert await store.commit_step(step(key(), "inv-1", 2, answered={"nope": 1, "q9": 2})) == 3

    assert await _rows(store) == before


@pytest.mark.parametrize("expected", [1, 3, 9])
async def test_stale_answering_step_lands_nothing(
    store: Store, clock: FakeClock, expected: int
) -> None:
    await _asking(store, "q1", "q2")
    before = await snapshot(store, key())
    clock.advance(5)

    with pytest.raises(StaleVersionError, match=rf"'inv-1' is at version 2, not {expected}"):
        await store.commit_step(
            step(
                key(),
                "inv-1",
                expected,
                events=(event("late"),),
                checkpoint={"at": "elsewhere"},
                status=InvocationStatus.RUNNING,
                answered={"q1": True, "q2": False},
            )
        )

    assert await snapshot(store, key()) == before


async def test_answering_step_in_a_missing_or_other_session_lands_nothing(store: Store) -> None:
    await _asking(store, "q1")
    before = await snapshot(store, key())

    with pytest.raises(SessionNotFoundError, match="app/u/nope"):
        await store.commit_step(step(key("nope"), "inv-1", 2, answered={"q1": True}))
    await store.create_session(APP, USER, session_id=SessionId("s2"))
    with pytest.raises(StaleVersionError, match=r"'inv-1' is at version \d, not 2"):
        await store.commit_step(step(key("s2"), "inv-1", 2, answered={"q1": True}))

    assert await snapshot(store, key()) == before


async def test_concurrent_answers_with_one_version_exactly_one_lands(
    stores: StoreFactory,
) -> None:
    await _asking(stores.open(), "q1")
    racers = [stores.open() for _ in range(RACERS)]

    winner = await race_one_winner(
        racers,
        lambda i: step(key(), "inv-1", 2, events=(event(f"racer-{i}"),), answered={"q1": i}),
    )
    session = await racers[0].get_session(key())
    assert session is not None
    assert texts(session.events) == ["hi", f"racer-{winner}"]
    assert (await _rows(racers[0]))["q1"].answer == winner
