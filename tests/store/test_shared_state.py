"""`app:` and `user:` state keys on every backend: an `app:` key is shared by every
session of the app, a `user:` key by every session of the same user in the app, as the
reference's session services share them; `temp:` keys are never stored."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from pydantic import JsonValue

from baton.errors import SessionExistsError, SessionNotFoundError, StaleVersionError
from baton.sessions.store import AnswerClaim, InvocationStatus, Session, SessionKey, Store
from baton.types import InterruptId, SessionId
from tests.store.builders import APP, USER, event, key, question, step

OTHER = "v"


async def _states(store: Store, *keys: SessionKey) -> list[dict[str, JsonValue]]:
    """Each session's state as `get_session` gives it."""
    found: list[dict[str, JsonValue]] = []
    for each in keys:
        session = await store.get_session(each)
        assert session is not None
        found.append(session.state)
    return found


async def _shared(store: Store) -> tuple[list[Session], dict[str, JsonValue]]:
    """Every session of the app as listed, and the user's shared keys."""
    return await store.list_sessions(APP), await store.get_user_state(APP, USER)


async def test_keys_given_at_creation_are_shared_by_the_app_and_by_the_user(
    store: Store,
) -> None:
    created = await store.create_session(
        APP,
        USER,
        session_id=SessionId("s1"),
        state={"user:a": 1, "app:b": 2, "temp:c": 3, "d": 4},
    )
    second = await store.create_session(APP, USER, session_id=SessionId("s2"))
    theirs = await store.create_session(APP, OTHER, session_id=SessionId("s3"))
    elsewhere = await store.create_session("other-app", USER, session_id=SessionId("s4"))

    assert created.state == {"d": 4, "app:b": 2, "user:a": 1}
    assert second.state == {"app:b": 2, "user:a": 1}
    assert theirs.state == {"app:b": 2}
    assert elsewhere.state == {}
    assert await _states(store, key("s1"), key("s2"), key("s3", user=OTHER)) == [
        {"d": 4, "app:b": 2, "user:a": 1},
        {"app:b": 2, "user:a": 1},
        {"app:b": 2},
    ]
    assert await store.get_user_state(APP, USER) == {"a": 1}
    assert await store.get_user_state(APP, OTHER) == {}


async def test_a_steps_prefixed_keys_reach_every_read_of_the_other_sessions(
    store: Store,
) -> None:
    for session_id, user in (("s1", USER), ("s2", USER), ("s3", OTHER)):
        await store.create_session(APP, user, session_id=SessionId(session_id), state={"own": 1})
    await store.commit_step(
        step(
            key("s2"),
            "inv-1",
            0,
            events=(event("asked", invocation_id="inv-1"),),
            state={"user:e": 5, "app:f": [1, 2], "temp:g": 6, "own": 2},
            status=InvocationStatus.PAUSED,
            opened=(question(key("s2"), "inv-1", "q1"),),
        )
    )
    mine = {"own": 1, "app:f": [1, 2], "user:e": 5}
    theirs = {"own": 1, "app:f": [1, 2]}

    assert await _states(store, key("s1"), key("s2"), key("s3", user=OTHER)) == [
        mine,
        {**mine, "own": 2},
        theirs,
    ]
    assert [s.state for s in await store.list_sessions(APP)] == [mine, {**mine, "own": 2}, theirs]
    recent = await store.recent_sessions(APP, USER, limit=5)
    assert sorted(a.session.id for a in recent) == ["s1", "s2"]
    assert all(a.session.state["user:e"] == 5 for a in recent)
    asking, _ = await store.find_asking(key("s1"), "adk_request_input")
    answering = await store.claim_answering(
        key("s2"), AnswerClaim(InterruptId("q1"), "answerer", timedelta(seconds=30))
    )
    assert asking is not None
    assert asking.state == mine
    assert answering.session is not None
    assert answering.session.state == {**mine, "own": 2}
    assert answering.claimed is not None


async def test_later_writes_replace_shared_keys_and_the_users_keys_come_last(
    store: Store,
) -> None:
    await store.create_session(APP, USER, session_id=SessionId("s1"), state={"app:n": 1})
    await store.create_session(APP, USER, session_id=SessionId("s2"))
    await store.commit_step(step(key("s1"), None, 0, state={"app:n": 2, "user:x": None}))
    await store.commit_step(step(key("s2"), None, 0, state={"app:m": {"deep": [1]}}))

    assert (
        await _states(store, key("s1"), key("s2"))
        == [{"app:n": 2, "app:m": {"deep": [1]}, "user:x": None}] * 2
    )


async def test_deleting_sessions_leaves_the_shared_keys(store: Store) -> None:
    await store.create_session(APP, USER, session_id=SessionId("s1"), state={"user:a": 1})
    await store.commit_step(step(key("s1"), None, 0, state={"app:b": 2}))
    assert await store.delete_session(key("s1"))

    fresh = await store.create_session(APP, USER, session_id=SessionId("s1"))

    assert fresh.state == {"app:b": 2, "user:a": 1}
    assert await store.get_user_state(APP, USER) == {"a": 1}


async def test_sessions_of_one_user_writing_at_once_lose_no_shared_key(store: Store) -> None:
    racers = 6
    for n in range(racers):
        await store.create_session(APP, USER, session_id=SessionId(f"s{n}"))
    same = {"user:same": "any", "app:same": "any"}

    await asyncio.gather(
        *(
            store.commit_step(
                step(key(f"s{n}"), f"inv-{n}", 0, state={f"user:k{n}": n, f"app:k{n}": n, **same})
            )
            for n in range(racers)
        )
    )

    expected = {f"user:k{n}": n for n in range(racers)}
    assert await store.get_user_state(APP, USER) == {k[5:]: v for k, v in expected.items()} | {
        "same": "any"
    }
    (state,) = await _states(store, key("s0"))
    assert state == {**{f"app:k{n}": n for n in range(racers)}, **expected, **same}


async def test_a_session_id_taken_refuses_its_shared_keys_too(store: Store) -> None:
    await store.create_session(APP, USER, session_id=SessionId("s1"), state={"user:a": 1})
    before = await _shared(store)

    with pytest.raises(SessionExistsError, match="'s1'"):
        await store.create_session(
            APP, USER, session_id=SessionId("s1"), state={"user:a": 2, "app:b": 3}
        )

    assert await _shared(store) == before


async def test_a_refused_step_writes_no_shared_key(store: Store) -> None:
    await store.create_session(APP, USER, session_id=SessionId("s1"), state={"user:a": 1})
    await store.commit_step(step(key("s1"), "inv-1", 0))
    before = await _shared(store)

    with pytest.raises(StaleVersionError, match="'inv-1'"):
        await store.commit_step(step(key("s1"), "inv-1", 0, state={"user:a": 2, "app:b": 3}))
    with pytest.raises(SessionNotFoundError, match="s9"):
        await store.commit_step(step(key("s9"), None, 0, state={"user:a": 2, "app:b": 3}))

    assert await _shared(store) == before
