"""Hostile input over a real server on SQLite and PostgreSQL: a 4xx JSON, nothing changed.

Each refusal is checked for its status, its JSON body, and that the whole store
(every session of every user, with events, invocations and interrupts) is as it
was. Size, depth and time limits are set small so each case takes milliseconds.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest
from pydantic import JsonValue

from baton.server.settings import Limits
from baton.sessions.store import SessionKey, Store
from baton.types import SessionId
from tests.server.conftest import Live, StartLive
from tests.server.test_refusals import snapshot

KEY = {"X-API-Key": "op-key"}  # an operator's key: may act for any user
JSON = {"Content-Type": "application/json"}
LIMITS = Limits(max_body=64 * 1024, read_timeout=0.5)
NUL_TEXT: JsonValue = {"role": "user", "parts": [{"text": "a\x00b"}]}


async def everything(store: Store) -> list[JsonValue]:
    """All the store holds for the test apps, every user's sessions included."""
    held: list[JsonValue] = []
    for app in ("approval", "form"):
        for session in await store.list_sessions(app, None):
            held.append(await snapshot(store, app, session.user_id, session.id))
    return held


@pytest.fixture
async def guarded(emptied_store_url: str, start_live: StartLive) -> Live:
    """A key-protected server with small limits, holding one paused run of user 'u'."""
    live: Live = await start_live(
        db_url=emptied_store_url, keys=["op-key"], headers=KEY, limits=LIMITS
    )
    sid = await live.create("approval", "u", sessionId="s1")
    await live.start("approval", "u", sid)
    return live


def run_body(**fields: JsonValue) -> dict[str, JsonValue]:
    body: dict[str, JsonValue] = {"appName": "approval", "userId": "u", "sessionId": "s1"}
    body.update(fields)
    return body


def nested(depth: int) -> str:
    """A run request nesting `depth` levels deep in all (its state delta holds the rest)."""
    inner = '{"k":' * (depth - 1) + "1" + "}" * (depth - 1)
    return json.dumps(run_body(stateDelta={})).replace('"stateDelta": {}', f'"stateDelta": {inner}')


async def chunks(total: int) -> AsyncIterator[bytes]:
    """A body streamed without Content-Length (chunked), `total` bytes of it."""
    for _ in range(total // 4096):
        yield b" " * 4096


LONG = "x" * 256

# (method, url, request options, status, error, words the detail must hold)
CASES: list[tuple[str, str, dict[str, Any], int, str, str]] = [
    (
        "POST",
        "/run",
        {"content": b"{" * 200_000, "headers": {**JSON, "X-API-Key": ""}},
        401,
        "Unauthorized",
        "missing or unknown API key",
    ),
    (
        "POST",
        "/run",
        {"content": b" " * (LIMITS.max_body + 1), "headers": JSON},
        413,
        "ContentTooLarge",
        "accepts at most 65536 bytes",
    ),
    (
        "POST",
        "/run",
        {"content": partial(chunks, LIMITS.max_body * 4), "headers": JSON},
        413,
        "ContentTooLarge",
        "more than 65536 bytes",
    ),
    (
        "POST",
        "/run",
        {"content": "[" * 10_000 + "]" * 10_000, "headers": JSON},
        400,
        "BadRequest",
        "nests deeper than 100 levels",
    ),
    ("POST", "/run", {"content": nested(101), "headers": JSON}, 400, "BadRequest", "deeper"),
    (
        "POST",
        "/run",
        {"content": b'{"appName": "\xff\xfe"}', "headers": JSON},
        400,
        "BadRequest",
        "not UTF-8 (byte 13 is 0xff)",
    ),
    (
        "POST",
        "/run",
        {"json": run_body(sessionId="s\x001")},
        422,
        "InvalidIdError",
        "session_id 's\\x001' holds the control character U+0000 at position 1",
    ),
    (
        "POST",
        "/run",
        {"json": run_body(userId=LONG, newMessage={"role": "user", "parts": [{"text": "x"}]})},
        422,
        "InvalidIdError",
        "user_id 'xxxx",
    ),
    (
        "POST",
        "/run",
        {"json": run_body(invocationId=LONG)},
        422,
        "InvalidIdError",
        "invocation_id",
    ),
    (
        "POST",
        "/run",
        {"json": run_body(newMessage=NUL_TEXT)},
        422,
        "InvalidMessageError",
        "new_message.parts[0].text holds a NUL character (U+0000) at position 1",
    ),
    (
        "POST",
        "/apps/approval/users/u/sessions",
        {"json": {"sessionId": LONG}},
        422,
        "InvalidIdError",
        "session_id 'xxx",
    ),
    (
        "POST",
        f"/apps/approval/users/{LONG}/sessions",
        {},
        422,
        "InvalidIdError",
        "is 256 characters long; ids are at most 255 characters",
    ),
    (
        "GET",
        "/apps/approval/users/u/sessions/s%001",
        {},
        422,
        "InvalidIdError",
        "session_id",
    ),
    ("GET", "/apps/approval/users/u/pending?session_id=s%0A1", {}, 422, "InvalidIdError", "U+000A"),
    (
        "POST",
        "/apps/approval/users/u/sessions/s1/interrupts/ap%00prove/respond",
        {"json": {"response": {"approved": True}}},
        422,
        "InvalidIdError",
        "interrupt_id",
    ),
    (
        "DELETE",
        f"/apps/approval/users/u/sessions/{LONG}",
        {},
        422,
        "InvalidIdError",
        "session_id",
    ),
]


async def test_hostile_requests_get_a_4xx_json_and_change_nothing(guarded: Live) -> None:
    # One server per backend for all cases: each case checks the whole store itself.
    for method, url, options, status, error, words in CASES:
        before = await everything(guarded.service.store)
        # A streamed body is made afresh for each backend's run.
        sent: dict[str, Any] = {k: v() if callable(v) else v for k, v in options.items()}
        r = await guarded.client.request(method, url, **sent)
        case = f"{method} {url[:60]} -> {r.status_code} {r.text[:300]}"
        assert (r.status_code, r.headers["content-type"]) == (status, "application/json"), case
        body = r.json()
        assert (sorted(body), body["error"]) == (["detail", "error"], error), case
        assert words in body["detail"], case
        assert await everything(guarded.service.store) == before, case
    # The server is still well: the run it holds can be answered.
    respond = "/apps/approval/users/u/sessions/s1/interrupts/approve/respond"
    done = await guarded.client.post(respond, json={"response": {"approved": True}})
    assert done.json()[-1]["output"] == 'done:{"approved": true}'


async def test_the_limits_admit_what_they_name(guarded: Live) -> None:
    """Not vacuous: a body at the size and depth limits is accepted and stored."""
    at_depth = await guarded.client.post("/run", content=nested(100), headers=JSON)
    assert at_depth.status_code == 200, at_depth.text  # a new run, with the state delta
    session = (await guarded.client.get("/apps/approval/users/u/sessions/s1")).json()
    assert session["state"] == json.loads(nested(100))["stateDelta"]
    state: dict[str, JsonValue] = {"blob": "x" * (LIMITS.max_body - 200)}
    created = await guarded.client.post("/apps/approval/users/u/sessions", json={"state": state})
    assert created.status_code == 200, created.text
    sid = created.json()["id"]
    stored = await guarded.service.store.get_session(SessionKey("approval", "u", SessionId(sid)))
    assert stored is not None
    assert stored.state == state
    long_enough = "y" * 255
    made = await guarded.client.post(
        f"/apps/approval/users/{long_enough}/sessions", json={"sessionId": long_enough}
    )
    assert (made.status_code, made.json()["id"]) == (200, long_enough)
