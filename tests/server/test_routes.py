"""The reference server's routes, over the wire: sessions, /run, /run_sse, health, version."""

from __future__ import annotations

import json
from typing import Any

import httpx

from baton import App, LlmAgent, Workflow
from baton.events import REQUEST_INPUT_FUNCTION
from baton.models import ScriptedModel
from tests.server.conftest import Live, StartLive, finish


def answer(iid: str, value: Any, *, name: str = REQUEST_INPUT_FUNCTION) -> dict[str, Any]:
    part = {"functionResponse": {"id": iid, "name": name, "response": {"result": value}}}
    return {"role": "user", "parts": [part]}


def asked(events: list[dict[str, Any]]) -> list[str]:
    return [iid for e in events for iid in e.get("longRunningToolIds", [])]


async def read_sse(response: httpx.Response) -> list[dict[str, Any]]:
    """Every `data:` frame of a stream, decoded; asserts the framing is data-only."""
    frames: list[dict[str, Any]] = []
    async for line in response.aiter_lines():
        if line.startswith("data: "):
            frames.append(json.loads(line.removeprefix("data: ")))
        else:
            assert line == "", f"unexpected SSE line {line!r}"
    return frames


async def test_health_version_and_list_apps(live: Live) -> None:
    assert (await live.client.get("/health")).json() == {"status": "ok"}
    version = (await live.client.get("/version")).json()
    assert version["language"] == "python"
    # The reference's keys, snake_case: its web UI shows `language_version`.
    assert set(version) == {"version", "language", "language_version"}
    assert (await live.client.get("/list-apps")).json() == ["approval", "form"]
    detailed = (await live.client.get("/list-apps", params={"detailed": "true"})).json()
    assert detailed["apps"][0] == {
        "name": "approval",
        "rootAgentName": "approval_wf",
        "description": "",
        "language": "python",
        "isComputerUse": False,
        "agents": None,
    }
    assert [a["rootAgentName"] for a in detailed["apps"]] == ["approval_wf", "form_wf"]


async def test_list_apps_detailed_describes_each_app_by_its_root_as_the_reference_does(
    start_live: StartLive,
) -> None:
    """An App without a description of its own is described by its root agent's, as the
    reference's list is; `agents` is null there (app-info has them), as it is here."""
    described = App(
        name="helpdesk",
        root_agent=LlmAgent(name="desk", model=ScriptedModel([]), description="answers tickets"),
    )
    own = App(
        name="own",
        description="the app's own",
        root_agent=Workflow(name="own_wf", description="the root's", edges=[("START", finish)]),
    )
    live = await start_live(apps=[described, own])

    detailed = (await live.client.get("/list-apps", params={"detailed": "true"})).json()

    assert [(a["name"], a["description"], a["agents"]) for a in detailed["apps"]] == [
        ("helpdesk", "answers tickets", None),
        ("own", "the app's own", None),
    ]


async def test_session_crud_accepts_camel_and_snake_case(live: Live) -> None:
    base = "/apps/approval/users/u/sessions"
    r = await live.client.post(base, json={"sessionId": "s1", "state": {"k": 1}})
    assert r.status_code == 200
    created = r.json()
    assert created["id"] == "s1"
    assert created["appName"] == "approval"
    assert created["userId"] == "u"
    assert created["state"] == {"k": 1}
    assert (await live.client.post(base, json={"session_id": "s2"})).json()["id"] == "s2"
    fresh = (await live.client.post(base)).json()["id"]
    duplicate = await live.client.post(base, json={"session_id": "s1"})
    assert duplicate.status_code == 409
    assert "s1" in duplicate.json()["detail"]
    listed = (await live.client.get(base)).json()
    assert sorted(s["id"] for s in listed) == sorted(["s1", "s2", fresh])
    await live.start("approval", "u", "s1")
    got = (await live.client.get(f"{base}/s1")).json()
    assert [e["author"] for e in got["events"]] == ["user", "approval_wf"]  # as the reference
    assert (await live.client.delete(f"{base}/s1")).json() is None
    missing = await live.client.get(f"{base}/s1")
    assert missing.status_code == 404
    assert "s1" in missing.json()["detail"]


async def test_run_pauses_then_function_response_completes(live: Live) -> None:
    sid = await live.create("approval", "u")
    paused = await live.start("approval", "u", sid, "hello")
    assert asked(paused) == ["approve"]
    call = paused[-1]["content"]["parts"][0]["functionCall"]
    assert call["name"] == REQUEST_INPUT_FUNCTION
    assert call["args"]["message"] == "Approve?"
    assert call["args"]["response_schema"]["properties"] == {
        "approved": {"title": "Approved", "type": "boolean"}
    }
    done = await live.run("approval", "u", sid, new_message=answer("approve", {"approved": True}))
    assert {e["invocationId"] for e in done} == {paused[0]["invocationId"]}
    assert done[-1]["author"] == "approval_wf"  # signed by the workflow, as the reference
    assert done[-1]["nodeInfo"]["path"] == "approval_wf@1/finish@1"
    assert done[-1]["output"] == 'done:{"approved": true}'


async def test_run_sse_streams_one_data_frame_per_event_and_resumes(live: Live) -> None:
    sid = await live.create("approval", "u")
    body = {
        "app_name": "approval",
        "user_id": "u",
        "session_id": sid,
        "new_message": {"role": "user", "parts": [{"text": "x"}]},
    }
    async with live.client.stream("POST", "/run_sse", json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        first = await read_sse(response)
    assert asked(first) == ["approve"]
    invocation = first[0]["invocationId"]
    resume = {
        "appName": "approval",
        "userId": "u",
        "sessionId": sid,
        "invocationId": invocation,
        "newMessage": answer("approve", {"approved": False}),
    }
    async with live.client.stream("POST", "/run_sse", json=resume) as response:
        second = await read_sse(response)
    assert [e["nodeInfo"]["path"] for e in second] == [
        "approval_wf@1/ask_approval@1",
        "approval_wf@1/finish@1",
    ]
    assert {e["invocationId"] for e in second} == {invocation}


async def test_run_sse_refuses_before_streaming_with_a_status(live: Live) -> None:
    body = {"appName": "approval", "userId": "u", "sessionId": "nope"}
    r = await live.client.post("/run_sse", json=body)
    assert r.status_code == 404
    assert r.json()["error"] == "SessionNotFoundError"
    assert "nope" in r.json()["detail"]


async def test_initial_events_seed_a_session_but_cannot_pose_as_run_work(live: Live) -> None:
    base = "/apps/approval/users/u/sessions"
    seeded = await live.client.post(
        base,
        json={
            "sessionId": "seeded",
            "events": [
                {"author": "user", "content": {"role": "user", "parts": [{"text": "hi"}]}},
                {"author": "user", "actions": {"stateDelta": {"plan": "basic"}}},
            ],
        },
    )
    assert seeded.status_code == 200, seeded.text
    got = (await live.client.get(f"{base}/seeded")).json()
    assert got["state"] == {"plan": "basic"}
    assert len(got["events"]) == 2
    forged = {"author": "finish", "output": "done", "nodeInfo": {"path": "approval_wf@1/finish@1"}}
    r = await live.client.post(base, json={"sessionId": "forged", "events": [forged]})
    assert r.status_code == 200, r.text  # an import: kept as history, never as run data
    [kept] = (await live.client.get(f"{base}/forged")).json()["events"]
    assert (kept["author"], kept["output"], kept["invocationId"]) == ("finish", "done", "imported:")
    assert "nodeInfo" not in kept


async def test_session_json_shows_the_keys_the_app_and_the_user_share(live: Live) -> None:
    mine = "/apps/approval/users/u/sessions"
    theirs = "/apps/approval/users/v/sessions"
    created = await live.client.post(mine, json={"sessionId": "a", "state": {"app:tier": "gold"}})
    assert created.json()["state"] == {"app:tier": "gold"}
    await live.client.post(mine, json={"sessionId": "b"})
    await live.client.post(theirs, json={"sessionId": "c"})

    patched = await live.client.patch(f"{mine}/a", json={"state_delta": {"user:lang": "fr"}})

    assert patched.json()["state"] == {"app:tier": "gold", "user:lang": "fr"}
    assert (await live.client.get(f"{mine}/b")).json()["state"] == {
        "app:tier": "gold",
        "user:lang": "fr",
    }
    assert (await live.client.get(f"{theirs}/c")).json()["state"] == {"app:tier": "gold"}
    listed = (await live.client.get(theirs)).json()
    assert [s["state"] for s in listed] == [{"app:tier": "gold"}]


async def test_reference_session_extras_create_with_id_and_patch_state(live: Live) -> None:
    base = "/apps/approval/users/u/sessions"
    created = await live.client.post(f"{base}/by-id", json={"tier": "gold"})
    assert created.json()["id"] == "by-id"
    assert created.json()["state"] == {"tier": "gold"}
    patched = await live.client.patch(f"{base}/by-id", json={"state_delta": {"tier": "silver"}})
    assert patched.json()["state"] == {"tier": "silver"}
    events = (await live.client.get(f"{base}/by-id")).json()["events"]
    assert [(e["author"], e["invocationId"][:2]) for e in events] == [("user", "p-")]
    missing = await live.client.patch(f"{base}/nope", json={"stateDelta": {}})
    assert missing.status_code == 404
