"""Sessions on every backend: create, read, list, delete, events and state."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, cast

import pytest
from pydantic import JsonValue

from baton import types
from baton.errors import SessionExistsError, SessionNotFoundError
from baton.events import Event, NodeInfo
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InterruptStatus, Session, SessionKey, Store
from baton.types import InterruptId, InvocationId, SessionId
from tests.conftest import FakeClock, StoreFactory
from tests.store.builders import APP, USER, event, key, question, snapshot, step, texts

RACERS = 6


async def test_create_then_get_returns_the_same_session(store: Store, clock: FakeClock) -> None:
    created = await store.create_session(
        APP, USER, session_id=SessionId("s1"), state={"topic": "expenses"}
    )

    assert created.id == "s1"
    assert created.state == {"topic": "expenses"}
    assert created.events == []
    assert created.last_update_time <= clock.now
    assert await store.get_session(key("s1")) == created


async def test_every_step_advances_the_sessions_last_update(store: Store, clock: FakeClock) -> None:
    created = await store.create_session(APP, USER, session_id=SessionId("s1"))
    seen = [created.last_update_time]
    outside = step(key("s1"), None, 0, events=(event("a note"),))
    inside = [step(key("s1"), "inv-1", v, events=(event(f"step {v}"),)) for v in range(3)]
    for commit in (outside, *inside):
        clock.advance(5)
        await store.commit_step(commit)
        session = await store.get_session(key("s1"), with_events=False)
        assert session is not None
        (listed,) = await store.list_sessions(APP, USER)
        assert listed.last_update_time == session.last_update_time
        seen.append(session.last_update_time)
    assert seen == sorted(seen)
    assert len(set(seen)) == len(seen)  # each step moved it forward
    assert seen[-1] <= clock.now


async def test_create_without_id_gets_a_fresh_unique_id(store: Store) -> None:
    first = await store.create_session(APP, USER)
    second = await store.create_session(APP, USER)

    assert first.id != second.id
    assert await store.get_session(first.key) == first


async def test_duplicate_session_id_raises_and_keeps_the_original(store: Store) -> None:
    original = await store.create_session(APP, USER, session_id=SessionId("s1"), state={"a": 1})

    with pytest.raises(SessionExistsError, match="'s1'"):
        await store.create_session(APP, USER, session_id=SessionId("s1"), state={"a": 2})

    assert await store.get_session(key("s1")) == original


async def test_concurrent_creations_of_one_session_id_exactly_one_wins(
    stores: StoreFactory,
) -> None:
    creators = [stores.open() for _ in range(RACERS)]

    results = await asyncio.gather(
        *(
            c.create_session(APP, USER, session_id=SessionId("s1"), state={"by": i})
            for i, c in enumerate(creators)
        ),
        return_exceptions=True,
    )

    winners = [r for r in results if isinstance(r, Session)]
    assert len(winners) == 1, results
    assert all(isinstance(r, SessionExistsError) for r in results if r is not winners[0])
    assert await creators[0].get_session(key("s1")) == winners[0]


async def test_same_session_id_is_separate_per_user_and_app(store: Store) -> None:
    await store.create_session(APP, USER, session_id=SessionId("s1"), state={"who": "u"})
    await store.create_session(APP, "v", session_id=SessionId("s1"), state={"who": "v"})
    await store.create_session("other", USER, session_id=SessionId("s1"), state={"who": "o"})

    owners = [(APP, USER), (APP, "v"), ("other", USER)]
    found = [await store.get_session(key("s1", app=a, user=u)) for a, u in owners]
    assert [s.state["who"] if s else None for s in found] == ["u", "v", "o"]


async def test_unknown_session_reads_as_none_and_commit_raises(store: Store) -> None:
    missing = key("nope")

    assert await store.get_session(missing) is None
    assert await store.list_invocations(missing) == []
    assert await store.find_interrupts(missing, InterruptId("q")) == []
    with pytest.raises(SessionNotFoundError, match="app/u/nope"):
        await store.commit_step(step(missing, "inv-1", 0, events=(event("hi"),)))
    assert await store.get_session(missing) is None


async def test_list_sessions_filters_by_app_and_user_without_events(store: Store) -> None:
    for app, user, sid in [(APP, USER, "a"), (APP, USER, "b"), (APP, "v", "c"), ("x", USER, "d")]:
        await store.create_session(app, user, session_id=SessionId(sid))
    await store.commit_step(step(key("a"), None, 0, events=(event("hi"),)))

    mine = await store.list_sessions(APP, USER)
    everyone = await store.list_sessions(APP)

    assert sorted(s.id for s in mine) == ["a", "b"]
    assert sorted(s.id for s in everyone) == ["a", "b", "c"]
    assert all(s.events == [] for s in everyone)
    assert await store.list_sessions("nobody") == []


async def test_temp_state_is_never_stored(store: Store) -> None:
    await store.create_session(
        APP, USER, session_id=SessionId("s1"), state={"keep": 1, "temp:scratch": 2}
    )
    await store.commit_step(
        step(key("s1"), "inv-1", 0, state={"temp:draft": "x", "answer": 42, "keep": 3})
    )

    found = await store.get_session(key("s1"))
    assert found is not None
    assert found.state == {"keep": 3, "answer": 42}


async def test_event_limit_loads_only_the_newest_events(store: Store) -> None:
    await store.create_session(APP, USER, session_id=SessionId("s1"))
    written = [event(f"e{i}") for i in range(6)]
    await store.commit_step(step(key("s1"), None, 0, events=tuple(written[:4])))
    await store.commit_step(step(key("s1"), None, 0, events=tuple(written[4:])))

    async def texts(limit: int | None) -> list[Event]:
        found = await store.get_session(key("s1"), event_limit=limit)
        assert found is not None
        return found.events

    assert await texts(None) == written
    assert await texts(2) == written[4:]
    assert await texts(1) == written[5:]
    assert await texts(0) == []
    assert await texts(100) == written
    without = await store.get_session(key("s1"), with_events=False)
    assert without is not None
    assert without.events == []


async def test_events_round_trip_unicode_and_nested_json(store: Store) -> None:
    await store.create_session(APP, USER, session_id=SessionId("s1"), state={"名前": "Zoë"})
    rich = Event(
        invocation_id="inv-1",
        author="réviseur",
        content=types.Content(
            role="model",
            parts=[
                types.Part(text='Ça va? 日本語 🎉 \u2028 "quoted" \\ back \x00 nul'),
                types.Part(
                    function_call=types.FunctionCall(
                        id="fc-1", name="adk_request_input", args={"interruptId": "ok?"}
                    )
                ),
            ],
        ),
        output={"list": [1, 2.5, -3e-9, None, True, "ß"], "nested": {"ü": {"deep": []}}},
        node_info=NodeInfo(path="wf/ask", run_id="r1"),
        long_running_tool_ids={"fc-1"},
        custom_metadata={"emoji": "🙂"},
        state={"😀": "smile"},
    )
    checkpoint: JsonValue = {"nodes": {"ask": {"status": "waiting", "note": "née ✓"}}, "n": 10**18}
    opened = question(key("s1"), "inv-1", "q-ü", message="Approve €12?")
    await store.commit_step(
        step(key("s1"), "inv-1", 0, events=(rich,), checkpoint=checkpoint, opened=(opened,))
    )

    found = await store.get_session(key("s1"))
    invocation = await store.load_invocation(key("s1"), InvocationId("inv-1"))
    [row] = await store.find_interrupts(key("s1"), InterruptId("q-ü"))
    assert found is not None
    assert invocation is not None
    assert found.events == [rich]
    assert found.state == {"名前": "Zoë"}
    assert invocation.checkpoint == checkpoint
    assert (row.message, row.payload, row.response_schema) == (
        "Approve €12?",
        {"amount": 12},
        {"type": "object"},
    )


async def test_gemini_only_part_fields_are_kept_as_they_came(store: Store) -> None:
    # A session recorded with Gemini (imported from the reference) carries fields baton's
    # models never send; they are stored and read back unchanged.
    await store.create_session(APP, USER, session_id=SessionId("s1"))
    turn = types.Content.model_validate(
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"id": "c1", "name": "run", "args": {}},
                    "thoughtSignature": "q80=",
                },
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
                {"text": "done", "videoMetadata": {"fps": 2.0}, "mediaProcessing": "X"},
            ],
        }
    )
    said = Event(invocation_id="inv-1", author="gemini_agent", content=turn)
    await store.commit_step(step(key("s1"), "inv-1", 0, events=(said,)))

    found = await store.get_session(key("s1"))

    assert found is not None
    assert found.events == [said]
    [stored] = found.events
    assert stored.content is not None
    assert stored.content.to_wire() == {
        "role": "model",
        "parts": [
            {"functionCall": {"id": "c1", "name": "run", "args": {}}, "thoughtSignature": "q80="},
            {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
            {"text": "done", "videoMetadata": {"fps": 2.0}, "mediaProcessing": "X"},
        ],
    }


async def test_changing_what_the_store_returned_changes_nothing_stored(store: Store) -> None:
    created = await store.create_session(
        APP, USER, session_id=SessionId("s1"), state={"tags": ["a"], "n": {"x": 1}}
    )
    asked = question(key("s1"), "inv-1", "q")
    await store.commit_step(step(key("s1"), "inv-1", 0, opened=(asked,)))
    await store.commit_step(step(key("s1"), "inv-1", 1, answered={"q": {"ok": [True]}}))
    read = await store.get_session(key("s1"), with_events=False)
    [found] = await store.find_interrupts(key("s1"), InterruptId("q"))
    [listed] = await store.list_interrupts(APP, USER, status=None)
    assert read is not None
    assert found.answer == {"ok": [True]}

    for session in (created, read):
        cast(list[str], session.state["tags"]).append("changed")
        cast(dict[str, int], session.state["n"])["x"] = 2
    for row in (found, listed):
        assert row.response_schema is not None
        row.response_schema["type"] = "string"
        cast(dict[str, int], row.payload)["amount"] = 0
        cast(dict[str, list[bool]], row.answer)["ok"].append(False)

    again = await store.get_session(key("s1"), with_events=False)
    [row] = await store.find_interrupts(key("s1"), InterruptId("q"))
    assert again is not None
    assert again.state == {"tags": ["a"], "n": {"x": 1}}
    assert (row.payload, row.response_schema, row.answer) == (
        {"amount": 12},
        {"type": "object"},
        {"ok": [True]},
    )


async def test_delete_session_removes_everything_in_it(store: Store) -> None:
    await store.create_session(APP, USER, session_id=SessionId("gone"))
    await store.create_session(APP, USER, session_id=SessionId("kept"))
    for sid in ("gone", "kept"):
        inv = f"inv-{sid}"
        await store.commit_step(
            step(
                key(sid),
                inv,
                0,
                events=(event("hi", invocation_id=inv),),
                state={"x": 1},
                checkpoint={"at": sid},
                opened=(question(key(sid), inv, "q"),),
            )
        )
        await store.claim(InvocationId(inv), "worker-1", timedelta(minutes=5))
    kept_before = await snapshot(store, key("kept"))

    assert await store.delete_session(key("gone")) is True

    assert await snapshot(store, key("gone")) == await snapshot(store, key("nope"))
    assert await store.load_invocation(key("gone"), InvocationId("inv-gone")) is None
    assert await store.find_interrupts(key("gone"), InterruptId("q")) == []
    assert [r.session_id for r in await store.list_interrupts(APP, status=None)] == ["kept"]
    # Its lease went with its invocation; the kept one's lease holds.
    assert await store.holder(InvocationId("inv-gone")) is None
    held = await store.holder(InvocationId("inv-kept"))
    assert held is not None
    assert held.owner == "worker-1"
    assert await snapshot(store, key("kept")) == kept_before
    assert await store.delete_session(key("gone")) is False


async def test_a_session_deleted_and_created_again_takes_steps_afresh(store: Store) -> None:
    session = key("again")  # one key object for every call, as a run passes its own
    await store.create_session(APP, USER, session_id=SessionId("again"))
    await store.commit_step(step(session, None, 0, events=(event("old"),), state={"x": 1}))
    assert await store.delete_session(session) is True

    with pytest.raises(SessionNotFoundError, match="app/u/again"):
        await store.commit_step(step(session, None, 0, events=(event("lost"),)))
    await store.create_session(APP, USER, session_id=SessionId("again"))
    await store.commit_step(step(session, None, 0, events=(event("new"),)))

    loaded = await store.get_session(session)
    assert loaded is not None
    assert texts(loaded.events) == ["new"]
    assert loaded.state == {}


async def test_session_events_and_invocation_events_share_one_order(store: Store) -> None:
    await store.create_session(APP, USER, session_id=SessionId("s1"))
    first, second, third = event("a"), event("b", invocation_id="inv-1"), event("c")
    await store.commit_step(step(key("s1"), None, 0, events=(first,)))
    await store.commit_step(step(key("s1"), "inv-1", 0, events=(second,)))
    await store.commit_step(step(key("s1"), None, 0, events=(third,)))

    found = await store.get_session(key("s1"))
    assert found is not None
    assert found.events == [first, second, third]
    assert await store.list_interrupts(APP, status=InterruptStatus.OPEN) == []


async def test_session_ids_differing_in_case_or_accents_are_different_sessions(
    store: Store,
) -> None:
    """Ids compare by their characters on every backend (MySQL's default collation
    would take these for one id; its binary one still ignores trailing spaces)."""
    ids = ["Ann-1", "ann-1", "ánn-1"]
    for number, each in enumerate(ids):
        await store.create_session(APP, USER, session_id=SessionId(each), state={"n": number})

    found = [await store.get_session(key(each)) for each in ids]

    assert [(s.id, s.state) for s in found if s is not None] == [
        (each, {"n": number}) for number, each in enumerate(ids)
    ]


async def test_session_ids_starting_or_ending_with_a_space_are_refused(store: Store) -> None:
    """MySQL would take 's1 ' for 's1' (the reference strips ids on some backends and
    keeps them on others): a padded id is refused on every backend, before anything is
    stored; an empty id asks for a fresh one."""
    from baton.errors import InvalidIdError
    from baton.sessions.services import BaseSessionService

    service = BaseSessionService(store)
    await service.create_session(app_name=APP, user_id=USER, session_id="s1", state={"n": 1})
    for padded in [" s1", "s1 ", "  "]:
        with pytest.raises(InvalidIdError, match="starts or ends with a space"):
            await service.create_session(app_name=APP, user_id=USER, session_id=padded)
        with pytest.raises(InvalidIdError, match="starts or ends with a space"):
            await service.get_session(app_name=APP, user_id=USER, session_id=padded)
        with pytest.raises(InvalidIdError, match="starts or ends with a space"):
            await service.delete_session(app_name=APP, user_id=USER, session_id=padded)
    with pytest.raises(InvalidIdError, match="user_id ' u' starts"):
        await service.create_session(app_name=APP, user_id=" u")
    listed = await service.list_sessions(app_name=APP, user_id=USER)
    assert [(s.id, s.state) for s in listed.sessions] == [("s1", {"n": 1})]
    fresh = await service.create_session(app_name=APP, user_id=USER, session_id="")
    assert fresh.id not in {"", "s1"}


async def test_sessions_an_older_baton_stored_under_padded_ids_can_be_read_and_deleted(
    store: Store,
) -> None:
    """Ids starting or ending with a space are refused since 69baf3c, but an older baton
    stored them: those sessions are listed, read and deleted under exactly their names,
    while a padded spelling of another session's id stays refused (MySQL would take
    's1 ' for 's1') and deletes nothing."""
    from baton.errors import InvalidIdError

    service = BaseSessionService(store)
    await service.create_session(app_name=APP, user_id=USER, session_id="s1", state={"n": 1})
    older = [(USER, " lead"), (USER, "trail "), (" u", "s2")]
    for user, session in older:  # as the older baton stored them: the store takes any id
        await store.create_session(APP, user, session_id=SessionId(session), state={"n": 2})

    listed = await service.list_sessions(app_name=APP)
    assert sorted((s.user_id, s.id) for s in listed.sessions) == sorted([*older, (USER, "s1")])
    for user, session in older:
        found = await service.get_session(app_name=APP, user_id=user, session_id=session)
        assert found is not None
        assert (found.user_id, found.id, found.state) == (user, session, {"n": 2})
    for padded in ["s1 ", " s1"]:
        with pytest.raises(InvalidIdError, match=f"session 'app/u/{padded}' starts or ends"):
            await service.get_session(app_name=APP, user_id=USER, session_id=padded)
        with pytest.raises(InvalidIdError, match="starts or ends with a space"):
            await service.delete_session(app_name=APP, user_id=USER, session_id=padded)

    for user, session in older:
        await service.delete_session(app_name=APP, user_id=user, session_id=session)

    listed = await service.list_sessions(app_name=APP)
    assert [(s.user_id, s.id, s.state) for s in listed.sessions] == [(USER, "s1", {"n": 1})]


async def test_ids_differing_only_in_trailing_spaces_name_different_sessions(store: Store) -> None:
    """An older baton stored 'trail ' (and user 'ann '); 'trail' is another session, and
    each is read, listed and deleted only under its exact id (MariaDB's PAD SPACE
    collation took 'trail' for 'trail ': the create collided, and a get read the other)."""
    service = BaseSessionService(store)
    for user, session in ((USER, "trail "), ("ann ", "s1")):  # the store takes any id
        await store.create_session(APP, user, session_id=SessionId(session), state={"n": 1})
    await service.create_session(app_name=APP, user_id=USER, session_id="trail", state={"n": 2})
    await service.create_session(app_name=APP, user_id="ann", session_id="s1", state={"n": 2})

    for user, session, n in ((USER, "trail", 2), (USER, "trail ", 1), ("ann", "s1", 2)):
        found = await service.get_session(app_name=APP, user_id=user, session_id=session)
        assert found is not None
        assert (found.user_id, found.id, found.state) == (user, session, {"n": n})
    listed = await service.list_sessions(app_name=APP, user_id="ann")
    assert [(s.user_id, s.state) for s in listed.sessions] == [("ann", {"n": 2})]

    await service.delete_session(app_name=APP, user_id=USER, session_id="trail")
    await service.delete_session(app_name=APP, user_id="ann", session_id="s1")
    assert await service.get_session(app_name=APP, user_id=USER, session_id="trail") is None
    listed = await service.list_sessions(app_name=APP)
    assert sorted((s.user_id, s.id, s.state) for s in listed.sessions) == [
        ("ann ", "s1", {"n": 1}),
        (USER, "trail ", {"n": 1}),
    ]


async def test_get_session_config_keeps_the_newest_events_from_a_timestamp_on(
    store: Store, clock: FakeClock
) -> None:
    from pydantic import ValidationError

    from baton.sessions.services import BaseSessionService, GetSessionConfig

    service = BaseSessionService(store, clock=clock)
    session = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    for text in ("one", "two", "three", "four"):
        clock.advance(10)
        said = Event(author="user", content=types.UserContent(text), timestamp=clock.now)
        await service.append_event(session, said)
    stored = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert stored is not None
    third = stored.events[2].timestamp

    async def kept(config: GetSessionConfig) -> list[str]:
        got = await service.get_session(app_name=APP, user_id=USER, session_id="s1", config=config)
        assert got is not None
        return texts(got.events)

    assert await kept(GetSessionConfig(after_timestamp=third)) == ["three", "four"]
    assert await kept(GetSessionConfig(after_timestamp=third + 1)) == ["four"]
    assert await kept(GetSessionConfig(num_recent_events=3, after_timestamp=0)) == [
        "two",
        "three",
        "four",
    ]
    assert await kept(GetSessionConfig(num_recent_events=0)) == []
    with pytest.raises(ValidationError, match="num_recent_events must be 0 or more"):
        GetSessionConfig(num_recent_events=-1)


@pytest.mark.parametrize("limit", [None, 5, 40])
async def test_after_timestamp_keeps_what_follows_the_last_older_event_among_many(
    store: Store, limit: int | None
) -> None:
    """With the filter in the store's query (SQL backends) the events are those the
    reference's rule keeps of the newest N: what follows the last one stamped before
    the time, even when an appended event carries an older stamp."""
    from baton.sessions.services import BaseSessionService, GetSessionConfig

    service = BaseSessionService(store)
    session = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    stamps = [float(n) for n in range(60)]
    stamps[50] = 5.0  # appended late with an old stamp
    for n, stamp in enumerate(stamps):
        said = Event(author="user", content=types.UserContent(str(n)), timestamp=stamp)
        await service.append_event(session, said)

    for after in (0.0, 30.0, 45.0, 52.0, 100.0):
        config = GetSessionConfig(num_recent_events=limit, after_timestamp=after)
        got = await service.get_session(app_name=APP, user_id=USER, session_id="s1", config=config)
        assert got is not None
        recent = list(range(60))[-limit:] if limit else list(range(60))
        older = [n for n in recent if stamps[n] < after]
        expected = [str(n) for n in recent if not older or n > older[-1]]
        assert texts(got.events) == expected, (after, limit)


async def test_append_event_refuses_a_session_read_before_its_last_change(
    store: Store, clock: FakeClock
) -> None:
    from baton.errors import StaleSessionError
    from baton.sessions.services import BaseSessionService, InMemorySessionService

    service = BaseSessionService(store, clock=clock)
    mine = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    theirs = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert theirs is not None
    clock.advance(1)
    await service.append_event(theirs, Event(author="user", content=types.UserContent("first")))
    clock.advance(1)
    await service.append_event(theirs, Event(author="user", content=types.UserContent("second")))
    before = await service.get_session(app_name=APP, user_id=USER, session_id="s1")

    late = Event(author="user", content=types.UserContent("late"))
    with pytest.raises(StaleSessionError, match=f"session '{APP}/{USER}/s1' changed") as refused:
        await service.append_event(mine, late)
    assert isinstance(refused.value, ValueError)  # as the reference's
    assert await service.get_session(app_name=APP, user_id=USER, session_id="s1") == before
    assert mine.events == []

    # The reference's in-memory service takes a stale Session, and so does baton's.
    memory = InMemorySessionService()
    old = await memory.create_session(app_name=APP, user_id=USER, session_id="s1")
    fresh = await memory.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert fresh is not None
    await memory.append_event(fresh, Event(author="user", content=types.UserContent("one")))
    await memory.append_event(old, late)
    stored = await memory.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert stored is not None
    assert texts(stored.events) == ["one", "late"]


async def test_append_event_keeps_temp_writes_in_the_callers_session_only(
    store: Store, clock: FakeClock
) -> None:
    from baton.errors import StaleSessionError
    from baton.events import EventActions
    from baton.sessions.services import BaseSessionService

    service = BaseSessionService(store, clock=clock)
    session = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    writes: dict[str, JsonValue] = {"n": 1, "temp:scratch": 2, "user:seen": 3}
    said = Event(
        author="user", content=types.UserContent("hi"), actions=EventActions(state_delta=writes)
    )

    returned = await service.append_event(session, said)

    # As the reference's: the caller's Session sees the temp: write, no stored event has it.
    assert returned is said
    assert said.actions.state_delta == {"n": 1, "user:seen": 3}
    assert session.state == {"n": 1, "temp:scratch": 2, "user:seen": 3}
    stored = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert stored is not None
    assert [e.actions.state_delta for e in stored.events] == [{"n": 1, "user:seen": 3}]
    assert stored.state == {"n": 1, "user:seen": 3}

    # A refused append stores nothing, its temp: write included.
    stale = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert stale is not None
    clock.advance(1)
    await service.append_event(session, Event(author="user", content=types.UserContent("more")))
    before = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    late = Event(author="user", actions=EventActions(state_delta={"temp:late": 1, "late": 1}))
    with pytest.raises(StaleSessionError):
        await service.append_event(stale, late)
    assert await service.get_session(app_name=APP, user_id=USER, session_id="s1") == before


async def test_append_event_on_a_session_another_writer_appends_to_right_after_is_stale_next(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from baton.errors import StaleSessionError
    from baton.sessions.services import BaseSessionService

    service = BaseSessionService(store, clock=clock)
    mine = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    read = store.get_session
    landed: list[bool] = []

    async def append_theirs() -> None:
        if landed:  # once, right after my write
            return
        landed.append(True)
        theirs = await read(key("s1"))
        assert theirs is not None
        await service.append_event(
            theirs, Event(author="user", content=types.UserContent("theirs"))
        )

    # Another writer's append lands right after mine: inside my append_event when it
    # reads the session back (as it did), else as soon as it returns.

    async def read_after_theirs(session: SessionKey, **options: Any) -> Session | None:
        await append_theirs()
        return await read(session, **options)

    monkeypatch.setattr(store, "get_session", read_after_theirs)
    clock.advance(1)
    await service.append_event(mine, Event(author="user", content=types.UserContent("mine")))
    monkeypatch.undo()
    await append_theirs()

    late = Event(author="user", content=types.UserContent("late"))
    with pytest.raises(StaleSessionError):
        await service.append_event(mine, late)
    stored = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert stored is not None
    assert texts(stored.events) == ["mine", "theirs"]


async def test_append_event_lands_one_of_many_sessions_read_together_and_appended_at_once(
    store: Store, clock: FakeClock
) -> None:
    from baton.errors import StaleSessionError
    from baton.sessions.services import BaseSessionService

    service = BaseSessionService(store, clock=clock)
    await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    readers = [
        await service.get_session(app_name=APP, user_id=USER, session_id="s1")
        for _ in range(RACERS)
    ]
    clock.advance(1)

    said = [Event(author="user", content=types.UserContent(f"from {n}")) for n in range(RACERS)]
    results = await asyncio.gather(
        *(service.append_event(cast(Session, s), e) for s, e in zip(readers, said, strict=True)),
        return_exceptions=True,
    )

    refused = [r for r in results if isinstance(r, BaseException)]
    landed = [t for t, r in zip(texts(said), results, strict=True) if isinstance(r, Event)]
    assert len(landed) == 1, results
    assert all(isinstance(r, StaleSessionError) for r in refused), refused
    stored = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert stored is not None
    assert texts(stored.events) == landed


async def test_the_service_lists_sessions_least_recently_updated_first(
    store: Store, clock: FakeClock
) -> None:
    """As the reference's stored services list them: by last update, then user and id."""
    service = BaseSessionService(store)
    for user, sid in (("u", "zeta"), ("u", "alpha"), ("u", "mid"), ("v", "other")):
        clock.advance(1)
        await service.create_session(app_name=APP, user_id=user, session_id=sid)
    clock.advance(1)
    zeta = await service.get_session(app_name=APP, user_id="u", session_id="zeta")
    assert zeta is not None
    await service.append_event(
        zeta,
        Event(author="user", content=types.Content(role="user", parts=[types.Part(text="hi")])),
    )

    mine = await service.list_sessions(app_name=APP, user_id="u")
    everyone = await service.list_sessions(app_name=APP)

    assert [s.id for s in mine.sessions] == ["alpha", "mid", "zeta"]
    assert [s.id for s in everyone.sessions] == ["alpha", "mid", "other", "zeta"]
