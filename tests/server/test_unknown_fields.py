"""Unknown fields in what clients send, as the reference's server treats them: an event's
own unknown field is ignored (its Event ignores extras), one inside a message (a part, a
function call) or an event's actions is refused with a 422 naming where, and nothing runs
or is stored."""

from __future__ import annotations

import pytest

from tests.server.conftest import StartLive

_BAD_PART = {"role": "user", "parts": [{"text": "go", "bogus": 1}]}


@pytest.mark.parametrize("hot_routes", [True, False], ids=["hot", "fastapi"])
@pytest.mark.parametrize("route", ["/run", "/run_sse"])
async def test_a_message_with_an_unknown_part_field_is_a_422(
    start_live: StartLive, route: str, hot_routes: bool
) -> None:
    live = await start_live(hot_routes=hot_routes)
    session = await live.create("approval", "u")
    body = {"appName": "approval", "userId": "u", "sessionId": session, "newMessage": _BAD_PART}
    r = await live.client.post(route, json=body)
    assert r.status_code == 422, r.text
    assert "bogus" in r.text
    stored = await live.client.get(f"/apps/approval/users/u/sessions/{session}")
    assert stored.json()["events"] == []


async def test_a_session_s_events_ignore_an_unknown_event_field(start_live: StartLive) -> None:
    live = await start_live()
    event = {"author": "user", "bogus": 1, "content": {"role": "user", "parts": [{"text": "hi"}]}}
    r = await live.client.post("/apps/approval/users/u/sessions", json={"events": [event]})
    assert r.status_code == 200, r.text
    [stored] = r.json()["events"]
    assert "bogus" not in stored
    assert stored["content"] == {"role": "user", "parts": [{"text": "hi"}]}


@pytest.mark.parametrize(
    "event",
    [
        {"author": "user", "content": _BAD_PART},
        {"author": "user", "actions": {"bogus": 1}},
        {"author": "user", "actions": {"compaction": {"startTimestamp": 1}}},
    ],
    ids=["part", "actions", "compaction"],
)
async def test_a_session_s_events_refuse_unknown_fields_inside(
    start_live: StartLive, event: dict[str, object]
) -> None:
    live = await start_live()
    body = {"sessionId": "s1", "events": [event]}
    r = await live.client.post("/apps/approval/users/u/sessions", json=body)
    assert r.status_code == 422, r.text
    assert "bogus" in r.text or "compaction" in r.text
    missing = await live.client.get("/apps/approval/users/u/sessions/s1")
    assert missing.status_code == 404


async def test_a_reference_export_s_empty_actions_fields_are_accepted(
    start_live: StartLive,
) -> None:
    live = await start_live()
    empty: dict[str, object] = {}
    actions = {"stateDelta": empty, "artifactDelta": empty, "requestedAuthConfigs": empty}
    event = {"author": "user", "actions": {**actions, "requestedToolConfirmations": empty}}
    r = await live.client.post("/apps/approval/users/u/sessions", json={"events": [event]})
    assert r.status_code == 200, r.text
    assert "requestedAuthConfigs" not in r.json()["events"][0]["actions"]


async def test_a_session_recorded_with_gemini_imports_with_its_signatures(
    start_live: StartLive,
) -> None:
    # The reference's Part fields that only Gemini fills are known, not unknown: a
    # session exported from the reference imports whole and reads back the same.
    live = await start_live()
    call = {"id": "c1", "name": "lookup", "args": {"q": "x"}}
    turn = {"role": "model", "parts": [{"functionCall": call, "thoughtSignature": "q80="}]}
    body = {"events": [{"author": "helper", "content": turn}]}
    r = await live.client.post("/apps/approval/users/u/sessions", json=body)
    assert r.status_code == 200, r.text
    read = await live.client.get(f"/apps/approval/users/u/sessions/{r.json()['id']}")
    [stored] = read.json()["events"]
    assert stored["content"] == turn
