"""Listings a page at a time on every backend: questions, sessions and runs walk in order
with no gaps or repeats, filters hold on every page, and bad cursors change nothing."""

from __future__ import annotations

import pytest

from baton.errors import InvalidCursorError, InvalidLimitError
from baton.listings import (
    invocations_page,
    pending_across,
    pending_page,
    sessions_across,
    sessions_page,
)
from baton.sessions.paging import encode_cursor
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InterruptStatus, InvocationStatus, Store
from baton.types import SessionId
from tests.conftest import FakeClock
from tests.store.builders import APP, USER, event, key, question, snapshot, step


async def _ask(store: Store, session: str, count: int, *, user: str = USER, app: str = APP) -> None:
    """`count` runs in a new session, each asking one question."""
    where = key(session, app=app, user=user)
    await store.create_session(app, user, session_id=SessionId(session))
    for n in range(count):
        run = f"{session}-run-{n}"
        await store.commit_step(
            step(where, run, 0, opened=(question(where, run, "approve"),), status=None)
        )


async def test_pending_pages_walk_every_question_once_in_order(store: Store) -> None:
    await _ask(store, "s1", 4)
    await _ask(store, "s2", 3)
    await _ask(store, "other", 2, user="someone-else")
    everyone = await store.list_interrupts(APP)
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = await pending_page(store, APP, user_id=USER, limit=3, cursor=cursor)
        pages.append([row.invocation_id for row in page.items])
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    mine = [row.invocation_id for row in everyone if row.user_id == USER]
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [i for p in pages for i in p] == mine  # oldest first, no gap, no repeat
    assert len(mine) == 7


async def test_a_page_starts_after_its_cursor_when_earlier_questions_were_answered(
    store: Store,
) -> None:
    await _ask(store, "s1", 5)
    first = await pending_page(store, APP, user_id=USER, limit=2)
    assert first.next_cursor is not None
    # The two shown are answered meanwhile: the next page still starts after them.
    for row in first.items:
        where = key(row.session_id)
        await store.commit_step(step(where, row.invocation_id, 1, answered={"approve": True}))
    second = await pending_page(store, APP, user_id=USER, limit=2, cursor=first.next_cursor)
    assert [r.invocation_id for r in second.items] == ["s1-run-2", "s1-run-3"]
    answered = await pending_page(store, APP, status=InterruptStatus.ANSWERED, limit=10)
    assert [r.invocation_id for r in answered.items] == ["s1-run-0", "s1-run-1"]
    assert answered.next_cursor is None


async def test_pending_pages_keep_their_filters(store: Store) -> None:
    await _ask(store, "s1", 3)
    await _ask(store, "s2", 3)
    page = await pending_page(store, APP, session_id="s2", limit=2)
    assert [r.invocation_id for r in page.items] == ["s2-run-0", "s2-run-1"]
    rest = await pending_page(store, APP, session_id="s2", limit=2, cursor=page.next_cursor)
    assert [r.invocation_id for r in rest.items] == ["s2-run-2"]
    one = await pending_page(store, APP, user_id=USER, invocation_id="s1-run-1")
    assert [r.invocation_id for r in one.items] == ["s1-run-1"]
    assert (await pending_page(store, APP, user_id="nobody")).items == []


async def test_pending_across_apps_merges_oldest_first(store: Store, clock: FakeClock) -> None:
    await _ask(store, "a1", 2, app="alpha")
    clock.advance(1)
    await _ask(store, "b1", 2, app="beta")
    clock.advance(1)
    await _ask(store, "a2", 1, app="alpha")
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = await pending_across(store, ["beta", "alpha"], user_id=USER, limit=2, cursor=cursor)
        seen += [r.invocation_id for r in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == ["a1-run-0", "a1-run-1", "b1-run-0", "b1-run-1", "a2-run-0"]


async def test_sessions_pages_run_by_user_then_id(store: Store) -> None:
    for user, session in [("u", "c"), ("u", "a"), ("v", "b"), ("u", "b")]:
        await store.create_session(APP, user, session_id=SessionId(session))
    walked = await _all_sessions(store, None, limit=3)
    assert walked == [("u", "a"), ("u", "b"), ("u", "c"), ("v", "b")]
    assert await _all_sessions(store, "u", limit=1) == [("u", "a"), ("u", "b"), ("u", "c")]
    found = await store.list_sessions(APP, session_id=SessionId("b"))
    assert sorted(s.user_id for s in found) == ["u", "v"]


async def test_sessions_updated_between_pages_are_walked_once_each(
    store: Store, clock: FakeClock
) -> None:
    """A page of sessions runs by id, so sessions updated between pages (which the whole
    listing moves to its end) are neither skipped nor shown twice."""
    service = BaseSessionService(store)
    for session in ["e", "d", "c", "b", "a"]:
        await service.create_session(app_name=APP, user_id=USER, session_id=session)
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = await sessions_page(store, APP, user_id=USER, limit=2, cursor=cursor)
        seen += [s.id for s in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        clock.advance(1)
        for touched in (seen[0], "e"):  # one already shown, one still to come
            session = await service.get_session(app_name=APP, user_id=USER, session_id=touched)
            assert session is not None
            await service.append_event(session, event(f"touch {touched}"))
    assert seen == ["a", "b", "c", "d", "e"]
    whole = await service.list_sessions(app_name=APP, user_id=USER)
    assert [s.id for s in whole.sessions] == ["d", "c", "b", "a", "e"]


async def _all_sessions(store: Store, user: str | None, *, limit: int) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    cursor: str | None = None
    while True:
        page = await sessions_page(store, APP, user_id=user, limit=limit, cursor=cursor)
        seen += [(s.user_id, s.id) for s in page.items]
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


async def test_sessions_across_apps_run_app_by_app(store: Store) -> None:
    for app, session in [("beta", "x"), ("alpha", "y"), ("alpha", "x"), ("beta", "a")]:
        await store.create_session(app, USER, session_id=SessionId(session))
    seen: list[tuple[str, str]] = []
    cursor: str | None = None
    while True:
        page = await sessions_across(store, ["alpha", "beta"], limit=3, cursor=cursor)
        seen += [(s.app_name, s.id) for s in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [("alpha", "x"), ("alpha", "y"), ("beta", "a"), ("beta", "x")]


async def test_invocations_pages_run_oldest_first(store: Store) -> None:
    await _ask(store, "s1", 5)
    first = await invocations_page(store, key("s1"), limit=3)
    rest = await invocations_page(store, key("s1"), limit=3, cursor=first.next_cursor)
    assert [i.id for i in first.items + rest.items] == [f"s1-run-{n}" for n in range(5)]
    assert rest.next_cursor is None
    assert all(i.status is InvocationStatus.RUNNING for i in rest.items)


async def test_recent_sessions_are_the_last_updated_with_their_latest_run(
    store: Store, clock: FakeClock
) -> None:
    for name in ("old", "mid", "new"):
        await store.create_session(APP, USER, session_id=SessionId(name))
        clock.advance(1)
    await store.create_session(APP, "someone-else", session_id=SessionId("theirs"))
    clock.advance(1)
    where = key("old")
    await store.commit_step(step(where, "r1", 0, status=InvocationStatus.COMPLETED))
    recent = await store.recent_sessions(APP, USER, limit=2)
    assert [(r.session.id, r.latest_run) for r in recent] == [
        ("old", InvocationStatus.COMPLETED),  # its step made it the latest
        ("new", None),
    ]
    assert recent[0].session.events == []


@pytest.mark.parametrize(
    "cursor",
    [
        "not-a-cursor",
        "",
        encode_cursor("sessions", ("u", "s1")),  # another listing's
        encode_cursor("pending", (1.0, "inv")),  # too short
        encode_cursor("pending", ("x", "inv", "i")),  # a text where a time belongs
    ],
)
async def test_a_bad_cursor_is_refused_naming_it_and_changes_nothing(
    store: Store, cursor: str
) -> None:
    await _ask(store, "s1", 2)
    before = await snapshot(store, key("s1"))
    with pytest.raises(InvalidCursorError) as refused:
        await pending_page(store, APP, cursor=cursor)
    assert f"cursor '{cursor}'" in str(refused.value)
    assert "pending listing" in str(refused.value)
    assert await snapshot(store, key("s1")) == before


@pytest.mark.parametrize("limit", [0, -1, 1001, True])
async def test_a_bad_page_size_is_refused_naming_it(store: Store, limit: int) -> None:
    with pytest.raises(InvalidLimitError) as refused:
        await sessions_page(store, APP, limit=limit)
    assert f"limit {limit!r}" in str(refused.value)
    assert "from 1 to 1000" in str(refused.value)


async def test_a_persons_pages_merge_their_own_and_assigned_questions(store: Store) -> None:
    mine, theirs = key("mine"), key("theirs", user="ann")
    await store.create_session(APP, USER, session_id=SessionId("mine"))
    await store.create_session(APP, "ann", session_id=SessionId("theirs"))
    for n in range(3):
        for where in (mine, theirs):
            run = f"{where.session_id}-{n}"
            asked = question(where, run, "approve")
            if where is theirs:
                asked = asked.model_copy(update={"assignee": USER})
            await store.commit_step(step(where, run, 0, opened=(asked,)))
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = await pending_page(
            store, APP, user_id=USER, include_assigned=True, limit=2, cursor=cursor
        )
        seen += [row.invocation_id for row in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == ["mine-0", "theirs-0", "mine-1", "theirs-1", "mine-2", "theirs-2"]
    assigned = await pending_page(store, APP, assignee=USER, limit=10)
    assert [r.invocation_id for r in assigned.items] == ["theirs-0", "theirs-1", "theirs-2"]
