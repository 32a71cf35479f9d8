"""Beyond the reference: pending inputs, answering by id, live updates, the timeline."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from tests.server.conftest import Live


async def next_frame(lines: Any) -> dict[str, Any]:
    """The next `data:` frame of an SSE line iterator (keep-alive comments skipped)."""
    async with asyncio.timeout(5):
        async for line in lines:
            if line.startswith("data: "):
                frame: dict[str, Any] = json.loads(line.removeprefix("data: "))
                return frame
    raise AssertionError("the stream ended")


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


async def test_pending_stream_pushes_each_change(live: Live) -> None:
    sid = await live.create("approval", "u")
    async with live.client.stream("GET", "/apps/approval/users/u/pending/stream") as response:
        lines = response.aiter_lines()
        assert await next_frame(lines) == {"pending": []}
        await live.start("approval", "u", sid)
        opened = await next_frame(lines)
        assert [p["interruptId"] for p in opened["pending"]] == ["approve"]
        base = f"/apps/approval/users/u/sessions/{sid}/interrupts/approve/respond"
        await live.client.post(base, json={"response": {"approved": True}})
        assert await next_frame(lines) == {"pending": []}


async def test_pending_stream_sees_changes_made_by_another_process(live: Live) -> None:
    sid = await live.create("approval", "u")
    async with live.client.stream("GET", "/apps/approval/users/u/pending/stream") as response:
        lines = response.aiter_lines()
        assert await next_frame(lines) == {"pending": []}
        # Another server (or the CLI) on the same database: only polling can see it.
        async with httpx.AsyncClient(base_url=live.url) as other:
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
        assert [p["interruptId"] for p in opened["pending"]] == ["approve"]
