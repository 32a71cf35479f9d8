"""A stateful test: random sequences of store calls (leases too) agree with a dict model.

Each example runs in its own event loop and its own app name, so SQL examples can
share the test's database without seeing each other's rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,  # pyright: ignore[reportUnknownVariableType] -- its factory parameter is unannotated
)
from pydantic import JsonValue

from baton.errors import (
    InvocationBusyError,
    InvocationNotFoundError,
    LeaseLostError,
    SessionExistsError,
    SessionNotFoundError,
    StaleVersionError,
)
from baton.sessions.memory import MemoryStore
from baton.sessions.sql import SqlStore
from baton.sessions.store import InterruptStatus, Lease, SessionKey, Store, strip_temp_state
from baton.types import InvocationId, SessionId
from tests.conftest import FakeClock, StoreFactory, own_loop
from tests.store.builders import USER, event, question, step

T = TypeVar("T")

SESSIONS = ("a", "b")
INVOCATIONS = ("i1", "i2")
QUESTIONS = ("q1", "q2")
OWNERS = ("w1", "w2")
LIMIT = 2

_keys = st.sampled_from(["x", "y", "temp:t"])


def _as_json(flags: list[bool]) -> JsonValue:
    return list[JsonValue](flags)


_values: st.SearchStrategy[JsonValue] = st.one_of(
    st.integers(-3, 3),
    st.text(max_size=3),
    st.none(),
    st.lists(st.booleans(), max_size=2).map(_as_json),
)
_deltas = st.dictionaries(_keys, _values, max_size=3)
_questions = st.lists(st.sampled_from(QUESTIONS), unique=True, max_size=2)


@dataclass
class _SessionModel:
    state: dict[str, JsonValue]
    event_ids: list[str] = field(default_factory=list[str])
    versions: dict[str, int] = field(default_factory=dict[str, int])
    # (invocation, interrupt) -> (status, answer)
    interrupts: dict[tuple[str, str], tuple[InterruptStatus, JsonValue]] = field(
        default_factory=dict[tuple[str, str], tuple[InterruptStatus, JsonValue]]
    )


class StoreMachine(RuleBasedStateMachine):
    """Drives one store and a dict model with the same calls; they must agree."""

    database_url: str | None = None  # None: a MemoryStore

    def __init__(self) -> None:
        super().__init__()
        self.loop = own_loop()
        self.clock = clock = FakeClock()
        url = self.database_url
        self.store: Store = MemoryStore(clock=clock) if url is None else SqlStore(url, clock=clock)
        self.app = f"app-{uuid.uuid4().hex[:8]}"
        self.model: dict[str, _SessionModel] = {}
        # invocation -> (owner, expires at, token) of its lease, and every token it had
        self.leases: dict[str, tuple[str, float, int]] = {}
        self.tokens: dict[str, list[int]] = {}

    def run(self, call: Coroutine[Any, Any, T]) -> T:
        return self.loop.run(call)

    def key(self, sid: str) -> SessionKey:
        return SessionKey(self.app, USER, SessionId(sid))

    def invocation(self, sid: str, name: str) -> str:
        # Invocation ids are unique across sessions (and across examples sharing a database).
        return f"{self.app}-{sid}-{name}"

    @rule(sid=st.sampled_from(SESSIONS), state=_deltas)
    def create_session(self, sid: str, state: dict[str, JsonValue]) -> None:
        call = self.store.create_session(self.app, USER, session_id=SessionId(sid), state=state)
        if sid in self.model:
            with pytest.raises(SessionExistsError):
                self.run(call)
            return
        self.run(call)
        self.model[sid] = _SessionModel(state=strip_temp_state(state))

    @rule(sid=st.sampled_from(SESSIONS))
    def delete_session(self, sid: str) -> None:
        assert self.run(self.store.delete_session(self.key(sid))) is (sid in self.model)
        deleted = self.model.pop(sid, None)
        for inv in deleted.versions if deleted else ():
            self.leases.pop(inv, None)
            self.tokens.pop(inv, None)

    @rule(sid=st.sampled_from(SESSIONS), n_events=st.integers(0, 2), delta=_deltas)
    def append_outside_a_run(self, sid: str, n_events: int, delta: dict[str, JsonValue]) -> None:
        events = tuple(event(f"e{i}") for i in range(n_events))
        call = self.store.commit_step(step(self.key(sid), None, 0, events=events, state=delta))
        if sid not in self.model:
            with pytest.raises(SessionNotFoundError):
                self.run(call)
            return
        assert self.run(call) == 0
        self._apply(self.model[sid], events, delta)

    @rule(
        sid=st.sampled_from(SESSIONS),
        name=st.sampled_from(INVOCATIONS),
        stale=st.booleans(),
        n_events=st.integers(0, 2),
        delta=_deltas,
        opened=_questions,
        answered=_questions,
    )
    def commit(
        self,
        sid: str,
        name: str,
        stale: bool,
        n_events: int,
        delta: dict[str, JsonValue],
        opened: list[str],
        answered: list[str],
    ) -> None:
        inv = self.invocation(sid, name)
        model = self.model.get(sid)
        actual = model.versions.get(inv, 0) if model else 0
        events = tuple(event(f"e{i}", invocation_id=inv) for i in range(n_events))
        commit = step(
            self.key(sid),
            inv,
            actual + 1 if stale else actual,
            events=events,
            state=delta,
            opened=tuple(question(self.key(sid), inv, q) for q in opened),
            answered={q: f"answer-{q}" for q in answered},
        )
        if model is None:
            with pytest.raises(SessionNotFoundError):
                self.run(self.store.commit_step(commit))
            return
        if stale:
            with pytest.raises(StaleVersionError):
                self.run(self.store.commit_step(commit))
            return
        assert self.run(self.store.commit_step(commit)) == actual + 1
        model.versions[inv] = actual + 1
        self._apply(model, events, delta)
        for q in opened:
            model.interrupts[(inv, q)] = (InterruptStatus.OPEN, None)
        for q in answered:
            if (inv, q) in model.interrupts:
                model.interrupts[(inv, q)] = (InterruptStatus.ANSWERED, f"answer-{q}")

    @rule(
        sid=st.sampled_from(SESSIONS),
        name=st.sampled_from(INVOCATIONS),
        owner=st.sampled_from(OWNERS),
        ttl=st.sampled_from([1.0, 5.0]),
    )
    def claim(self, sid: str, name: str, owner: str, ttl: float) -> None:
        inv = self.invocation(sid, name)
        exists = sid in self.model and inv in self.model[sid].versions
        try:
            lease = self.run(self.store.claim(InvocationId(inv), owner, timedelta(seconds=ttl)))
        except InvocationNotFoundError:
            assert not exists
            return
        except InvocationBusyError:
            lease = None
        assert exists
        now = self.clock.now  # the one reading the claim made
        held = self.leases.get(inv)
        assert (lease is not None) is (held is None or held[0] == owner or held[1] <= now)
        if lease is not None:
            assert lease.expires_at == now + ttl
            earlier = self.tokens.setdefault(inv, [0])  # created without a lease: token 0
            assert lease.token not in earlier  # a claim never takes an earlier claim's token
            earlier.append(lease.token)
            self.leases[inv] = (owner, lease.expires_at, lease.token)

    def _lease_of(self, inv: str, owner: str) -> Lease:
        """The lease `owner` would present: the held one if it is theirs, else a stale one."""
        held = self.leases.get(inv)
        token = held[2] if held and held[0] == owner else min(self.tokens.get(inv, [0])) - 1
        return Lease(InvocationId(inv), owner, 0.0, token)

    @rule(
        sid=st.sampled_from(SESSIONS),
        name=st.sampled_from(INVOCATIONS),
        owner=st.sampled_from(OWNERS),
    )
    def renew(self, sid: str, name: str, owner: str) -> None:
        inv = self.invocation(sid, name)
        call = self.store.renew(self._lease_of(inv, owner), timedelta(seconds=5))
        held = self.leases.get(inv)
        if held is None or held[0] != owner:
            with pytest.raises(LeaseLostError):
                self.run(call)
            return
        self.leases[inv] = (owner, self.run(call).expires_at, held[2])

    @rule(
        sid=st.sampled_from(SESSIONS),
        name=st.sampled_from(INVOCATIONS),
        owner=st.sampled_from(OWNERS),
    )
    def release(self, sid: str, name: str, owner: str) -> None:
        inv = self.invocation(sid, name)
        self.run(self.store.release(self._lease_of(inv, owner)))
        if inv in self.leases and self.leases[inv][0] == owner:
            del self.leases[inv]

    @rule(seconds=st.sampled_from([0.5, 2.0, 6.0]))
    def advance_time(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @staticmethod
    def _apply(model: _SessionModel, events: tuple[Any, ...], delta: dict[str, JsonValue]) -> None:
        model.event_ids.extend(e.id for e in events)
        model.state.update(strip_temp_state(delta))

    @invariant()
    def store_agrees_with_model(self) -> None:
        for sid in SESSIONS:
            self.run(self._check(sid, self.model.get(sid)))

    async def _check(self, sid: str, model: _SessionModel | None) -> None:
        key = self.key(sid)
        found = await self.store.get_session(key, event_limit=LIMIT)
        if model is None:
            assert found is None
            return
        assert found is not None
        assert found.state == model.state
        assert [e.id for e in found.events] == model.event_ids[-LIMIT:]
        invocations = await self.store.list_invocations(key)
        assert {i.id: i.version for i in invocations} == model.versions
        rows = await self.store.list_interrupts(
            self.app, USER, session_id=key.session_id, status=None
        )
        assert {(r.invocation_id, r.interrupt_id): (r.status, r.answer) for r in rows} == (
            model.interrupts
        )

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()


def test_store_agrees_with_a_dict_model(stores: StoreFactory) -> None:
    class Machine(StoreMachine):
        database_url = stores.url

    run_state_machine_as_test(
        Machine,
        settings=settings(max_examples=15, stateful_step_count=20, deadline=None),
    )
