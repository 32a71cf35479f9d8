"""Beyond the reference: pending inputs, answering by id, live updates, the timeline."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any, Final

import httpx
import pytest

from baton import App, RequestInput, ResumabilityConfig, Workflow
from tests.server.conftest import Live
from tests.server.processes import HTTP_TIMEOUT


async def next_frame(lines: Any) -> dict[str, Any]:
    """The next `data:` frame of an SSE line iterator (keep-alive comments skipped)."""
    async with asyncio.timeout(20):
        async for line in lines:
            if line.startswith("data: "):
                frame: dict[str, Any] = json.loads(line.removeprefix("data: "))
                return frame
    raise AssertionError("the stream ended")


_KEY_FIELDS = ("appName", "sessionId", "invocationId", "interruptId", "occurrence")


def key_of(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(row[name] for name in _KEY_FIELDS)


class View:
    """A client's copy of a live view: the first frame, with every later change applied."""

    def __init__(self) -> None:
        self.pending: dict[tuple[str, ...], dict[str, Any]] = {}
        self.parts: dict[str, Any] = {}

    def apply(self, frame: dict[str, Any]) -> None:
        if "pending" in frame:
            self.pending = {key_of(row): row for row in frame["pending"]}
        for row in frame.get("removed", []):
            del self.pending[key_of(row)]
        for row in frame.get("changed", []):
            self.pending[key_of(row)] = row
        for part, value in frame.items():
            if part not in ("pending", "changed", "removed"):
                self.parts[part] = value

    @property
    def interrupts(self) -> list[str]:
        return sorted(row["interruptId"] for row in self.pending.values())


async def test_pending_lists_open_interrupts_with_schema_and_time(live: Live) -> None:
    s1 = await live.create("form", "u")
    s2 = await live.create("approval", "u")
    events = await live.start("form", "u", s1)
    await live.start("approval", "u", s2)
    pending = (await live.client.get("/apps/form/users/u/pending")).json()
    # Both were asked in one step: same time, so no order between them is promised.
    assert sorted((p["interruptId"], p["message"]) for p in pending) == [
        ("age", "Age?"),
        ("name", "Name?"),
    ]
    first = next(p for p in pending if p["interruptId"] == "name")
    assert first["sessionId"] == s1
    assert first["invocationId"] == events[0]["invocationId"]
    assert first["responseSchema"] == {"type": "string"}
    assert first["status"] == "open"
    assert first["createdAt"] > 0
    only_s2 = (await live.client.get("/apps/approval/users/u/pending")).json()
    assert [p["sessionId"] for p in only_s2] == [s2]


async def test_respond_answers_by_id_and_records_who(live: Live) -> None:
    sid = await live.create("form", "u")
    await live.start("form", "u", sid)
    base = f"/apps/form/users/u/sessions/{sid}/interrupts"
    r = await live.client.post(f"{base}/name/respond", json={"response": "Ada"})
    assert r.status_code == 200, r.text
    assert r.json() == []  # the node waits for its other question
    still_open = (await live.client.get("/apps/form/users/u/pending")).json()
    assert [p["interruptId"] for p in still_open] == ["age"]
    r = await live.client.post(f"{base}/age/respond", json={"response": 36})
    assert r.json()[-1]["output"] == {"name": "Ada", "age": 36}
    assert (await live.client.get("/apps/form/users/u/pending")).json() == []
    timeline = (await live.client.get(f"/apps/form/users/u/sessions/{sid}/timeline")).json()
    answered = [e for e in timeline["entries"] if e["kind"] == "answered"]
    assert [(e["detail"], e["by"]) for e in answered] == [
        ({"interruptId": "name", "answer": "Ada"}, "u"),
        ({"interruptId": "age", "answer": 36}, "u"),
    ]
    assert [i["status"] for i in timeline["invocations"]] == ["completed"]
    assert [(n["node"], n["status"]) for n in timeline["nodes"]] == [("ask_twice", "completed")]


async def test_pending_stream_sends_the_list_then_only_its_changes(live: Live) -> None:
    sid = await live.create("approval", "u")
    async with live.client.stream("GET", "/apps/approval/users/u/pending/stream") as response:
        lines = response.aiter_lines()
        assert await next_frame(lines) == {"pending": []}
        await live.start("approval", "u", sid)
        opened = await next_frame(lines)
        assert list(opened) == ["changed"]  # the new question alone, not the list
        (row,) = opened["changed"]
        assert (row["sessionId"], row["interruptId"]) == (sid, "approve")
        base = f"/apps/approval/users/u/sessions/{sid}/interrupts/approve/respond"
        await live.client.post(base, json={"response": {"approved": True}})
        assert await next_frame(lines) == {"removed": [{name: row[name] for name in _KEY_FIELDS}]}


async def test_pending_stream_sees_changes_made_by_another_process(live: Live) -> None:
    sid = await live.create("approval", "u")
    async with live.client.stream("GET", "/apps/approval/users/u/pending/stream") as response:
        lines = response.aiter_lines()
        assert await next_frame(lines) == {"pending": []}
        # Another server (or the CLI) on the same database: only polling can see it.
        async with httpx.AsyncClient(base_url=live.url, timeout=HTTP_TIMEOUT) as other:
            await other.post(
                "/run",
                json={
                    "appName": "approval",
                    "userId": "u",
                    "sessionId": sid,
                    "newMessage": {"role": "user", "parts": [{"text": "go"}]},
                },
            )
        opened = await next_frame(lines)
        assert [p["interruptId"] for p in opened["changed"]] == ["approve"]


async def frame_with(lines: Any, view: View, interrupts: list[str]) -> dict[str, Any]:
    """The frame after which `view` holds the open questions `interrupts` (a run's steps
    send several)."""
    while True:
        found = await next_frame(lines)
        view.apply(found)
        if view.interrupts == interrupts:
            return found


async def test_one_inbox_stream_carries_every_apps_questions_and_sessions(live: Live) -> None:
    s_form = await live.create("form", "u")
    s_appr = await live.create("approval", "u")
    await live.create("approval", "someone-else")
    async with live.client.stream("GET", "/users/u/inbox/stream") as response:
        lines = response.aiter_lines()
        view = View()
        first = await next_frame(lines)
        view.apply(first)
        assert first["pending"] == []
        assert {(s["appName"], s["id"]) for s in first["sessions"]} == {
            ("form", s_form),
            ("approval", s_appr),
        }
        await live.start("approval", "u", s_appr)
        await frame_with(lines, view, ["approve"])
        assert [p["appName"] for p in view.pending.values()] == ["approval"]
        while view.parts["sessions"][0]["status"] != "paused":  # a run's steps send several
            view.apply(await next_frame(lines))
        assert view.parts["sessions"][0]["id"] == s_appr  # the most recently updated first
        await live.start("form", "u", s_form)
        await frame_with(lines, view, ["age", "approve", "name"])
        base = f"/apps/approval/users/u/sessions/{s_appr}/interrupts/approve/respond"
        await live.client.post(base, json={"response": {"approved": True}})
        answered = await frame_with(lines, view, ["age", "name"])
        assert "pending" not in answered  # changes only: the answered question's key
        assert [(r["sessionId"], r["interruptId"]) for r in answered["removed"]] == [
            (s_appr, "approve")
        ]


async def test_inbox_snapshot_filters_by_app_and_refuses_unknown_apps(live: Live) -> None:
    s_form = await live.create("form", "u")
    await live.start("form", "u", s_form)
    s_appr = await live.create("approval", "u")
    await live.start("approval", "u", s_appr)
    only = (await live.client.get("/users/u/inbox", params={"app": "approval"})).json()
    assert [p["interruptId"] for p in only["pending"]] == ["approve"]
    assert [s["id"] for s in only["sessions"]] == [s_appr]
    every = (await live.client.get("/users/u/inbox")).json()
    assert len(every["pending"]) == 3
    for path in ("/users/u/inbox", "/users/u/inbox/stream"):
        r = await live.client.get(path, params={"app": ["approval", "nope"]})
        assert r.status_code == 404, r.text
        assert "app 'nope' is not served" in r.json()["detail"]


async def test_inbox_stream_needs_the_users_key(start_live: Any) -> None:
    live: Live = await start_live(keys=["ann:k-ann", "bob:k-bob"])
    r = await live.client.get("/users/ann/inbox")
    assert r.status_code == 401
    r = await live.client.get("/users/ann/inbox/stream", headers={"X-API-Key": "k-bob"})
    assert r.status_code == 403
    r = await live.client.get("/users/ann/inbox", headers={"X-API-Key": "k-ann"})
    assert r.status_code == 200
    assert r.json() == {"pending": [], "sessions": []}


async def test_streams_end_when_the_server_drains(start_live: Any) -> None:
    live: Live = await start_live()
    async with (
        live.client.stream("GET", "/users/u/inbox/stream") as inbox,
        live.client.stream("GET", "/apps/form/users/u/pending/stream") as pending,
    ):
        inbox_lines = inbox.aiter_lines()
        pending_lines = pending.aiter_lines()
        await next_frame(inbox_lines)
        await next_frame(pending_lines)
        assert live.app is not None
        live.app.state.drain()
        async with asyncio.timeout(20):
            assert [line async for line in inbox_lines if line.startswith("data:")] == []
            assert [line async for line in pending_lines if line.startswith("data:")] == []


async def test_pending_is_paged_with_a_cursor_and_filtered_by_status(live: Live) -> None:
    sessions = [await live.create("approval", "u") for _ in range(3)]
    for sid in sessions:
        await live.start("approval", "u", sid)
    base = "/apps/approval/users/u/pending"
    first = await live.client.get(base, params={"limit": 2})
    assert [p["sessionId"] for p in first.json()] == sessions[:2]
    cursor = first.headers["x-next-cursor"]
    # The first question is answered meanwhile: the next page still starts after page one.
    respond = f"/apps/approval/users/u/sessions/{sessions[0]}/interrupts/approve/respond"
    assert (await live.client.post(respond, json={"response": {"approved": True}})).is_success
    second = await live.client.get(base, params={"limit": 2, "cursor": cursor})
    assert [p["sessionId"] for p in second.json()] == sessions[2:]
    assert "x-next-cursor" not in second.headers
    answered = (await live.client.get(base, params={"status": "answered"})).json()
    assert [(p["sessionId"], p["answeredBy"]) for p in answered] == [(sessions[0], "u")]
    every = (await live.client.get(base, params={"status": "all"})).json()
    assert len(every) == 3
    for params, status in (
        ({"cursor": "not-a-cursor"}, 400),
        ({"limit": 0}, 422),
        ({"status": "closed"}, 422),
    ):
        r = await live.client.get(base, params=params)
        assert r.status_code == status, (params, r.text)
    bad = await live.client.get(base, params={"cursor": "not-a-cursor"})
    assert bad.json()["error"] == "InvalidCursorError"
    assert "cursor 'not-a-cursor' is not one this pending listing gave" in bad.json()["detail"]


MANY: Final = 230  # more than two pages of the stream's first frames (100 questions each)


async def ask_many(node_input: Any) -> AsyncIterator[RequestInput]:
    for n in range(MANY):
        yield RequestInput(interrupt_id=f"q{n:03}", message=f"Question {n}?", response_schema=int)


def many_app() -> App:
    return App(
        name="many",
        root_agent=Workflow(name="many_wf", edges=[("START", ask_many)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


@pytest.mark.parametrize("path", ["/users/u/inbox/stream", "/apps/many/users/u/pending/stream"])
async def test_streams_carry_every_open_question_a_page_a_frame_then_changes_past_the_first_page(
    start_live: Any, path: str
) -> None:
    live: Live = await start_live([many_app()])
    sid = await live.create("many", "u")
    await live.start("many", "u", sid)
    every = [f"q{n:03}" for n in range(MANY)]
    async with live.client.stream("GET", path) as response:
        lines = response.aiter_lines()
        view = View()
        frames = [await next_frame(lines) for _ in range(3)]
        for found in frames:
            view.apply(found)
        assert [len(f.get("pending", f.get("changed", []))) for f in frames] == [100, 100, 30]
        assert view.interrupts == every
        assert "nextCursor" not in frames[0]
        # The last question, on no first page, is answered: the stream says so.
        base = f"/apps/many/users/u/sessions/{sid}/interrupts/q{MANY - 1}/respond"
        r = await live.client.post(base, json={"response": 7})
        assert r.status_code == 200, r.text
        answered = await frame_with(lines, view, every[:-1])
        assert [r["interruptId"] for r in answered["removed"]] == [f"q{MANY - 1}"]


async def test_a_pending_stream_hears_another_servers_changes_on_postgres(
    emptied_postgres_url: str, start_live: Any
) -> None:
    """A server asks its store for changes to questions only while a stream is live (on
    PostgreSQL: it listens to them only then); a stream it opens still hears at once of
    the question another server's run opens and of its answer, not at its keep-alive."""
    first: Live = await start_live(db_url=emptied_postgres_url)
    second: Live = await start_live(db_url=emptied_postgres_url, keepalive=600.0)
    sid = await first.create("approval", "u")
    async with second.client.stream("GET", "/apps/approval/users/u/pending/stream") as response:
        lines = response.aiter_lines()
        assert await next_frame(lines) == {"pending": []}
        await first.start("approval", "u", sid)
        opened = await next_frame(lines)
        assert [p["interruptId"] for p in opened["changed"]] == ["approve"]
        base = f"/apps/approval/users/u/sessions/{sid}/interrupts/approve/respond"
        await first.client.post(base, json={"response": {"approved": True}})
        removed = await next_frame(lines)
        assert [p["interruptId"] for p in removed["removed"]] == ["approve"]
