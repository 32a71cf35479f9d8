"""What reaches PostgreSQL per store call: a call that is one statement goes without
BEGIN and COMMIT (see `sql.store`); a read of several statements keeps its snapshot.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from datetime import timedelta

import pytest

from baton.errors import InvocationBusyError, SessionExistsError, StaleVersionError
from baton.sessions.sql import SqlStore, listener
from baton.types import InterruptId, InvocationId
from tests.store.builders import APP, USER, event, key, question, step, texts
from tests.store.traffic import traffic, watching

TTL = timedelta(seconds=30)


async def _paused(store: SqlStore) -> None:
    """Session s1 with invocation inv-1 at version 2, interrupt 'q' open."""
    await store.create_session(APP, USER, session_id=key().session_id)
    await store.commit_step(step(key(), "inv-1", 0, events=(event("hi"),)))
    await store.commit_step(step(key(), "inv-1", 1, opened=(question(key(), "inv-1", "q"),)))


async def test_reads_of_one_statement_send_no_begin_or_commit(emptied_postgres_url: str) -> None:
    store = SqlStore(emptied_postgres_url)
    await _paused(store)

    with traffic(store) as seen:
        session = await store.get_session(key(), with_events=False)
        invocation = await store.load_invocation(key(), InvocationId("inv-1"))
        found = await store.find_interrupts(key(), InterruptId("q"))
        listed = await store.list_interrupts(APP, USER, session_id=key().session_id)
        invocations = await store.list_invocations(key())
        sessions = await store.list_sessions(APP)
    await store.close()

    assert seen.statements == ["SELECT"] * 6
    assert seen.commits == 0
    # the reads of a resume (session, invocation, interrupt) go to asyncpg directly
    assert seen.direct == 3
    assert session is not None
    assert session.events == []
    assert invocation is not None
    assert invocation.version == 2
    assert [i.interrupt_id for i in found] == [i.interrupt_id for i in listed] == ["q"]
    assert [i.id for i in invocations] == ["inv-1"]
    assert [s.id for s in sessions] == [key().session_id]


async def test_a_session_with_its_events_is_read_in_one_transaction(
    emptied_postgres_url: str,
) -> None:
    store = SqlStore(emptied_postgres_url)
    await _paused(store)

    with traffic(store) as seen:
        session = await store.get_session(key())
        newest = await store.get_session(key(), event_limit=1)
        none = await store.get_session(key(), event_limit=0)
    await store.close()

    # Two statements, one snapshot each time; no events asked for is one statement.
    assert seen.statements == ["SELECT"] * 5
    assert seen.commits == 2
    assert session is not None
    assert newest is not None
    assert none is not None
    assert len(session.events) == 1 == len(newest.events)
    assert none.events == []


async def test_lease_calls_are_one_statement_each(emptied_postgres_url: str) -> None:
    store = SqlStore(emptied_postgres_url)
    await _paused(store)
    inv = InvocationId("inv-1")

    with traffic(store) as seen:
        lease = await store.claim(inv, "alice", TTL)
        lease = await store.renew(lease, TTL)
        again = await store.claim(inv, "alice", TTL)
        await store.release(again)
    # A lease lives on its invocation's row: every lease call is one UPDATE.
    assert seen.statements == ["UPDATE", "UPDATE", "UPDATE", "WITH"]  # release + NOTIFY if running
    assert seen.direct == 4
    assert seen.commits == 0

    held = await store.claim(inv, "alice", TTL)
    with traffic(store) as seen, pytest.raises(InvocationBusyError, match="'alice'"):
        await store.claim(inv, "bob", TTL)
    # the refused claim, then the holder read for the message
    assert seen.statements == ["UPDATE", "SELECT"]
    assert seen.direct == 2
    await store.release(held)
    await store.close()


async def test_a_step_answering_interrupts_is_one_statement(emptied_postgres_url: str) -> None:
    store = SqlStore(emptied_postgres_url)
    await _paused(store)

    with traffic(store) as seen:
        answer = step(key(), "inv-1", 2, events=(event("yes"),), answered={"q": True})
        assert await store.commit_step(answer) == 3
        with pytest.raises(StaleVersionError):
            await store.commit_step(step(key(), "inv-1", 2, answered={"q": False}))
        # a state change still takes a transaction
        assert await store.commit_step(step(key(), "inv-1", 3, state={"k": 1})) == 4
    await store.close()

    # the step; the stale one, then the version read for its message; the transaction
    assert seen.statements[:3] == ["WITH", "WITH", "SELECT"]
    assert seen.statements[3:] == ["UPDATE", "UPDATE", "SELECT", "UPDATE"]
    assert seen.direct == 3
    assert seen.commits == 1


async def test_a_step_opening_or_answering_questions_is_announced_after_its_commit(
    emptied_postgres_url: str,
) -> None:
    """Other processes hear of a step's questions through a NOTIFY of its own, sent once
    the step committed: inside the step, PostgreSQL's lock for notifications would be
    held through the step's WAL flush, and every notifying commit wait for it."""
    other, _ = await watching(emptied_postgres_url)  # a process with a live stream
    store = SqlStore(emptied_postgres_url)
    await _paused(store)
    announcer = store._announcer  # pyright: ignore[reportPrivateUsage] -- q's own, sent first
    assert announcer is not None
    await announcer.flush()

    with traffic(store) as seen:
        answer = step(key(), "inv-1", 2, answered={"q": True})
        assert await store.commit_step(answer) == 3
        assert await store.commit_step(step(key(), "inv-1", 3, events=(event("done"),))) == 4
        await store.close()  # sends what is still to be announced

    assert seen.statements == ["WITH", "WITH"]
    assert seen.announcements == 1  # the answer's; a plain step changes no question
    await other.close()


async def test_an_answer_whose_run_goes_on_is_announced_once_its_next_step_is_sent(
    emptied_postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The NOTIFY of an answer whose run goes on (its lease kept) waits for the run's next
    statement and goes while that one waits for its commit, not between the two."""
    monkeypatch.setattr(listener, "_ANNOUNCE_WITHIN", 3600.0)  # only the next step sends it
    other, _ = await watching(emptied_postgres_url)  # a process with a live stream
    store = SqlStore(emptied_postgres_url)
    await _paused(store)
    announcer = store._announcer  # pyright: ignore[reportPrivateUsage] -- q's own, sent first
    assert announcer is not None
    await announcer.flush()
    lease = await store.claim(InvocationId("inv-1"), "alice", TTL)

    with traffic(store) as seen:
        answer = replace(step(key(), "inv-1", 2, answered={"q": True}), lease=lease)
        assert await store.commit_step(answer) == 3
        await asyncio.sleep(0)  # a turn of the event loop, as the engine's before its next step
        held = seen.announcements
        last = replace(step(key(), "inv-1", 3, events=(event("done"),)), lease=lease, release=True)
        assert await store.commit_step(last) == 4
        await announcer.flush()
    await store.close()

    assert held == 0
    assert seen.statements == ["WITH", "WITH"]
    assert seen.announced_after == [2]  # the answer's, once the run's next step was sent
    await other.close()


async def test_questions_changed_soon_after_an_announcement_go_together_in_the_next(
    emptied_postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under load nearly every step changes a question: a NOTIFY each (a transaction,
    and a delivery to every listening process) was a tenth of the statements of a HITL
    run. The first goes at once; what follows within the pause after it goes as one,
    and closing the store sends it without waiting the pause out."""
    monkeypatch.setattr(listener, "_SPACING", 60.0)  # longer than this test
    store = SqlStore(emptied_postgres_url)
    session = key(app=f"app-{uuid.uuid4().hex[:8]}")  # its NOTIFYs are this test's alone
    await store.create_session(session.app_name, USER, session_id=session.session_id)
    await store.commit_step(step(session, "inv-1", 0, events=(event("hi"),)))
    other, heard = await watching(emptied_postgres_url)

    with traffic(store) as seen:
        opened = (question(session, "inv-1", "q"),)
        assert await store.commit_step(step(session, "inv-1", 1, opened=opened)) == 2
        async with asyncio.timeout(30):  # a bound for a loaded machine: it comes at once
            while await heard.get() != session.app_name:  # q's, sent at once
                pass
        for version, asked in enumerate("rs", start=2):
            opened = (question(session, "inv-1", asked),)
            assert await store.commit_step(step(session, "inv-1", version, opened=opened)) == (
                version + 1
            )
        sent_meanwhile = seen.announcements
        async with asyncio.timeout(10):  # not the pause
            await store.close()
    await other.close()

    assert sent_meanwhile == 1  # r's and s's waited for the pause to end
    assert seen.announcements == 2  # r and s together, sent by the close


async def test_questions_are_not_announced_while_no_process_listens_to_them(
    emptied_postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A NOTIFY nobody listens to is a transaction and a wake-up of every listening
    backend for nothing: while no process of the schema listens to questions (no live
    stream, no webhooks), a store's first NOTIFY finds so, and the question changes
    after it within `_WATCHERS_FRESH` cost no statement; work (a deadline) is still
    announced. Where a process listens, every change is announced to it."""
    monkeypatch.setattr(listener, "_SPACING", 0.0)
    monkeypatch.setattr(listener, "_WATCHERS_FRESH", 60.0)  # longer than this test
    session = key(app=f"app-{uuid.uuid4().hex[:8]}")  # its NOTIFYs are this test's alone
    store = SqlStore(emptied_postgres_url)
    await store.create_session(session.app_name, USER, session_id=session.session_id)
    await store.commit_step(step(session, "inv-1", 0, events=(event("hi"),)))
    with traffic(store) as unwatched:
        for version, asked in enumerate("qrs", start=1):
            opened = (question(session, "inv-1", asked),)
            await store.commit_step(step(session, "inv-1", version, opened=opened))
        timed = question(session, "inv-1", "t").model_copy(update={"timeout": 60.0})
        await store.commit_step(step(session, "inv-1", 4, opened=(timed,)))
        await store.close()  # sends what is left to send

    other, heard = await watching(emptied_postgres_url)
    store = SqlStore(emptied_postgres_url)
    with traffic(store) as watched:
        for version, asked in enumerate("uvw", start=5):
            opened = (question(session, "inv-1", asked),)
            await store.commit_step(step(session, "inv-1", version, opened=opened))
            async with asyncio.timeout(10):
                assert await heard.get() == session.app_name
        await store.close()
    await other.close()

    assert unwatched.announcements == 2  # q's, which found nobody listening, and t's
    assert watched.announcements == 3


async def test_creating_a_session_is_one_statement(emptied_postgres_url: str) -> None:
    store = SqlStore(emptied_postgres_url)
    await store.create_session(APP, "someone else", session_id=key().session_id)

    with traffic(store) as seen:
        created = await store.create_session(
            APP, USER, session_id=key().session_id, state={"plan": "a"}
        )
        with pytest.raises(SessionExistsError, match="already exists"):  # nothing lands
            await store.create_session(APP, USER, session_id=key().session_id, state={"b": 1})
    read = await store.get_session(key())
    await store.close()

    assert seen.statements == ["INSERT", "INSERT"]
    assert seen.direct == 2
    assert seen.commits == 0
    assert read is not None
    assert (read.id, read.state, read.events) == (created.id, {"plan": "a"}, [])
    assert read.last_update_time == created.last_update_time


async def test_creating_an_invocation_is_one_statement(emptied_postgres_url: str) -> None:
    store = SqlStore(emptied_postgres_url)
    await store.create_session(APP, USER, session_id=key().session_id)

    with traffic(store) as seen:
        assert await store.commit_step(step(key(), "inv-1", 0, events=(event("hi"),))) == 1
        with pytest.raises(StaleVersionError):  # the id exists: nothing lands
            await store.commit_step(step(key(), "inv-1", 0, events=(event("again"),)))
    created = await store.load_invocation(key(), InvocationId("inv-1"))
    session = await store.get_session(key())
    await store.close()

    # the step (with its fingerprint kept once); the stale one, then the version read
    assert seen.statements == ["WITH", "WITH", "SELECT"]
    assert seen.direct == 3
    assert seen.commits == 0
    assert created is not None
    assert (created.version, created.fingerprint) == (1, "fp")
    assert session is not None
    assert texts(session.events) == ["hi"]


async def test_a_step_asking_questions_is_one_statement(emptied_postgres_url: str) -> None:
    store = SqlStore(emptied_postgres_url)
    await store.create_session(APP, USER, session_id=key().session_id)
    await store.commit_step(step(key(), "inv-1", 0, events=(event("hi"),)))

    with traffic(store) as seen:
        asked = (question(key(), "inv-1", "q"), question(key(), "inv-1", "r"))
        assert await store.commit_step(step(key(), "inv-1", 1, opened=asked)) == 2
        with pytest.raises(StaleVersionError):  # a stale step asks nothing
            await store.commit_step(
                step(key(), "inv-1", 1, opened=(question(key(), "inv-1", "s"),))
            )
        # answering q and asking q again in one step goes to a transaction (see `sql.step`)
        again = (question(key(), "inv-1", "q"),)
        assert (
            await store.commit_step(step(key(), "inv-1", 2, answered={"q": 1}, opened=again)) == 3
        )
    found = await store.list_interrupts(APP, USER, session_id=key().session_id, status=None)
    await store.close()

    assert seen.statements[:3] == ["WITH", "WITH", "SELECT"]
    assert seen.direct == 3
    assert seen.commits == 1
    # the transaction opens before it answers (see `write_step`), so q ends answered
    assert sorted((i.interrupt_id, i.status.value) for i in found) == [
        ("q", "answered"),
        ("r", "open"),
    ]


async def test_a_process_that_starts_listening_to_questions_misses_no_change(
    emptied_postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that found nobody listening to questions announces none for a while
    (`_WATCHERS_FRESH`); a process that starts listening meanwhile still hears of a
    change made then: it looks again once every store's look has seen it."""
    monkeypatch.setattr(listener, "_WATCHERS_FRESH", 0.5)
    writer = SqlStore(emptied_postgres_url)
    session = key(app=f"app-{uuid.uuid4().hex[:8]}")
    await writer.create_session(session.app_name, USER, session_id=session.session_id)
    await writer.commit_step(step(session, "inv-1", 0, opened=(question(session, "inv-1", "q"),)))
    announcer = writer._announcer  # pyright: ignore[reportPrivateUsage] -- q's: nobody listens
    assert announcer is not None
    await announcer.flush()
    watcher = SqlStore(emptied_postgres_url)
    subscription = watcher.subscribe(questions=True)
    try:
        assert await subscription.wait(10.0)  # its first look, once it listens
        await writer.commit_step(
            step(session, "inv-1", 1, opened=(question(session, "inv-1", "r"),))
        )
        assert await subscription.wait(10.0)  # r's NOTIFY, or the look again
        rows = await watcher.find_interrupts(session, InterruptId("r"))
    finally:
        subscription.close()
        await writer.close()
        await watcher.close()
    assert [row.interrupt_id for row in rows] == ["r"]
