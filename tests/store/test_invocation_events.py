"""`Store.list_events`: one invocation's events, oldest first, on every backend; what an
agent resuming its run reads instead of the session's history."""

from __future__ import annotations

from baton.sessions.store import Store
from baton.types import InvocationId, SessionId
from tests.store.builders import APP, USER, event, key, step, texts


async def test_an_invocations_events_come_in_order_without_the_rest_of_the_session(
    store: Store,
) -> None:
    await store.create_session(APP, USER, session_id=SessionId("s1"))
    await store.create_session(APP, USER, session_id=SessionId("s2"))
    await store.commit_step(step(key(), None, 0, events=(event("before"),)))
    await store.commit_step(step(key(), "inv-1", 0, events=(event("a1", invocation_id="inv-1"),)))
    await store.commit_step(step(key(), "inv-2", 0, events=(event("b1", invocation_id="inv-2"),)))
    both = (event("a2", invocation_id="inv-1"), event("a3", invocation_id="inv-1"))
    await store.commit_step(step(key(), "inv-1", 1, events=both))
    elsewhere = (event("other session", invocation_id="inv-1"),)  # the same id, elsewhere
    await store.commit_step(step(key("s2"), None, 0, events=elsewhere))

    assert texts(await store.list_events(key(), InvocationId("inv-1"))) == ["a1", "a2", "a3"]
    assert texts(await store.list_events(key(), InvocationId("inv-2"))) == ["b1"]


async def test_no_events_for_an_unknown_invocation_or_session(store: Store) -> None:
    await store.create_session(APP, USER, session_id=SessionId("s1"))
    await store.commit_step(step(key(), "inv-1", 0, events=(event("a1", invocation_id="inv-1"),)))

    assert await store.list_events(key(), InvocationId("inv-9")) == []
    assert await store.list_events(key("nobody"), InvocationId("inv-1")) == []
