"""Any JSON value survives every store: in events, state, checkpoints and interrupts."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from baton.events import Event
from baton.sessions.store import Store
from baton.types import InterruptId, InvocationId, SessionId
from tests.store.builders import APP, USER, key, question, step

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
json_values: st.SearchStrategy[JsonValue] = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(
    max_examples=25,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(value=json_values, text=st.text())
# Bare integers beyond 64 bits: SQLite's numeric affinity once stored them as rounded REALs.
@example(value=2**64, text="")
@example(value=-(2**63) - 1, text="")
async def test_json_values_round_trip(store: Store, value: JsonValue, text: str) -> None:
    sid = uuid.uuid4().hex
    inv = f"inv-{sid}"
    await store.create_session(APP, USER, session_id=SessionId(sid), state={"v": value})
    written = Event(invocation_id=inv, author="agent", message=text, output=value)
    asked = question(key(sid), inv, "q").model_copy(update={"payload": value})
    await store.commit_step(
        step(key(sid), inv, 0, events=(written,), checkpoint={"v": value}, opened=(asked,))
    )
    await store.commit_step(step(key(sid), inv, 1, answered={"q": value}))

    found = await store.get_session(key(sid))
    invocation = await store.load_invocation(key(sid), InvocationId(inv))
    [row] = await store.find_interrupts(key(sid), InterruptId("q"))
    assert found is not None
    assert invocation is not None
    assert (found.events, found.state, invocation.checkpoint) == (
        [written],
        {"v": value},
        {"v": value},
    )
    assert (row.payload, row.answer) == (value, value)
