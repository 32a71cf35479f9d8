"""Refused requests: the right status and message, and the store exactly as it was."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from datetime import timedelta

import pytest
from pydantic import JsonValue

from baton import App, ResumabilityConfig
from baton.sessions.store import SessionKey, StepCommit, Store
from baton.types import InvocationId, SessionId
from baton.workflow.checkpoint import RunRecord
from baton.workflow.graph import fingerprint_of
from tests.server.conftest import Live, StartLive, approval_app
from tests.server.test_routes import answer


async def snapshot(store: Store, app: str, user: str, sid: str) -> list[JsonValue]:
    """Everything the store holds about a session, as plain data."""
    key = SessionKey(app, user, SessionId(sid))
    session = await store.get_session(key)
    invocations = await store.list_invocations(key)
    interrupts = await store.list_interrupts(app, user, session_id=key.session_id, status=None)
    return [
        session.model_dump(mode="json") if session else None,
        [i.model_dump(mode="json") for i in invocations],
        [i.model_dump(mode="json") for i in interrupts],
    ]


async def paused(live: Live, user: str = "u") -> tuple[str, str]:
    sid = await live.create("approval", user)
    events = await live.start("approval", user, sid)
    return sid, events[0]["invocationId"]


def respond_url(sid: str, iid: str = "approve", user: str = "u") -> str:
    return f"/apps/approval/users/{user}/sessions/{sid}/interrupts/{iid}/respond"


async def test_schema_failure_is_422_and_changes_nothing(live: Live) -> None:
    sid, _ = await paused(live)
    before = await snapshot(live.service.store, "approval", "u", sid)
    r = await live.client.post(respond_url(sid), json={"response": {"approved": "maybe"}})
    assert r.status_code == 422
    assert r.json()["error"] == "InvalidResponseError"
    assert "approve" in r.json()["detail"]
    assert await snapshot(live.service.store, "approval", "u", sid) == before
    # Still resumable with a valid answer.
    done = await live.client.post(respond_url(sid), json={"response": {"approved": True}})
    assert done.json()[-1]["nodeInfo"]["path"] == "approval_wf@1/finish@1"


@pytest.mark.parametrize(
    ("case", "status", "error"),
    [
        ("unknown_app", 404, "AppNotFoundError"),
        ("unknown_session", 404, "SessionNotFoundError"),
        ("unknown_invocation", 404, "InvocationNotFoundError"),
        ("unknown_interrupt", 404, "UnknownInterruptError"),
        ("text_with_invocation", 409, "InvocationWaitingError"),
        ("invocation_alone", 409, "InvocationWaitingError"),
    ],
)
async def test_bad_run_requests_are_refused_and_change_nothing(
    live: Live, case: str, status: int, error: str
) -> None:
    sid, invocation = await paused(live)
    body: dict[str, JsonValue] = {"appName": "approval", "userId": "u", "sessionId": sid}
    match case:
        case "unknown_app":
            body["appName"] = "nope"
        case "unknown_session":
            body["sessionId"] = "nope"
        case "unknown_invocation":
            body["invocationId"] = "nope"
        case "unknown_interrupt":
            body["newMessage"] = answer("nope", True)
        case "invocation_alone":
            body["invocationId"] = invocation
        case _:
            body["invocationId"] = invocation
            body["newMessage"] = {"role": "user", "parts": [{"text": "hi"}]}
    before = await snapshot(live.service.store, "approval", "u", sid)
    for route in ("/run", "/run_sse"):
        r = await live.client.post(route, json=body)
        assert (r.status_code, r.json()["error"]) == (status, error)
        named = "'approve'" if "invocation" in case and case != "unknown_invocation" else "nope"
        assert named in r.json()["detail"]
    assert await snapshot(live.service.store, "approval", "u", sid) == before


async def test_answered_finished_and_busy_are_409_and_change_nothing(live: Live) -> None:
    sid, invocation = await paused(live)
    store = live.service.store
    lease = await store.claim(InvocationId(invocation), "someone-else", timedelta(seconds=30))
    before = await snapshot(store, "approval", "u", sid)
    busy = await live.client.post(respond_url(sid), json={"response": {"approved": True}})
    assert (busy.status_code, busy.json()["error"]) == (409, "InvocationBusyError")
    assert await snapshot(store, "approval", "u", sid) == before
    await store.release(lease)

    await live.client.post(respond_url(sid), json={"response": {"approved": True}})
    before = await snapshot(store, "approval", "u", sid)
    again = await live.client.post(respond_url(sid), json={"response": {"approved": False}})
    assert (again.status_code, again.json()["error"]) == (409, "AlreadyAnsweredError")
    body = {"appName": "approval", "userId": "u", "sessionId": sid, "invocationId": invocation}
    finished = await live.client.post("/run", json=body)
    assert (finished.status_code, finished.json()["error"]) == (409, "InvocationFinishedError")
    assert await snapshot(store, "approval", "u", sid) == before


async def test_users_cannot_see_answer_or_resume_each_others_sessions(live: Live) -> None:
    sid, invocation = await paused(live, user="alice")
    before = await snapshot(live.service.store, "approval", "alice", sid)
    bob = "/apps/approval/users/bob"
    assert (await live.client.get(f"{bob}/sessions")).json() == []
    assert (await live.client.get(f"{bob}/pending")).json() == []
    assert (await live.client.get(f"{bob}/sessions/{sid}")).status_code == 404
    assert (await live.client.get(f"{bob}/sessions/{sid}/timeline")).status_code == 404
    r = await live.client.post(respond_url(sid, user="bob"), json={"response": {"approved": True}})
    assert r.status_code == 404
    resume = {"appName": "approval", "userId": "bob", "sessionId": sid}
    r = await live.client.post("/run", json={**resume, "invocationId": invocation})
    assert r.status_code == 404
    r = await live.client.post("/run", json={**resume, "newMessage": answer("approve", True)})
    assert r.status_code == 404
    await live.client.delete(f"{bob}/sessions/{sid}")
    assert await snapshot(live.service.store, "approval", "alice", sid) == before


async def test_api_keys_gate_every_route_and_bind_users(start_live: StartLive) -> None:
    live: Live = await start_live(keys=["operator-key", "alice:alice-key"])
    client = live.client
    assert (await client.get("/health")).status_code == 200
    assert (await client.get("/list-apps")).status_code == 401
    wrong = await client.get("/list-apps", headers={"X-API-Key": "guess"})
    assert wrong.status_code == 401
    assert "X-API-Key" in wrong.json()["detail"]
    bearer = {"Authorization": "Bearer operator-key"}
    assert (await client.get("/list-apps", headers=bearer)).json() == ["approval", "form"]
    alice = {"X-API-Key": "alice-key"}
    r = await client.post("/apps/approval/users/alice/sessions", headers=alice)
    assert r.status_code == 200
    sid = r.json()["id"]
    foreign = await client.get(f"/apps/approval/users/bob/sessions/{sid}", headers=alice)
    assert foreign.status_code == 403
    assert "alice" in foreign.json()["detail"]
    run = {"appName": "approval", "userId": "bob", "sessionId": sid}
    assert (await client.post("/run", json=run, headers=alice)).status_code == 403
    assert (await client.get("/apps/approval/users/bob/pending", headers=alice)).status_code == 403
    own = await client.get(f"/apps/approval/users/alice/sessions/{sid}", headers=alice)
    assert own.status_code == 200
    operator = await client.get(f"/apps/approval/users/alice/sessions/{sid}", headers=bearer)
    assert operator.status_code == 200


async def crashed_right_after_start(store: Store, app: App, sid: str) -> None:
    """Land invocation 'invocation-123' as a server does before it dies mid-run."""
    root = app.root_agent
    record = RunRecord(node=root.name, path=f"{root.name}@1", run_id="1")
    await store.commit_step(
        StepCommit(
            session=SessionKey(app.name, "u_123", SessionId(sid)),
            invocation_id=InvocationId("invocation-123"),
            expected_version=0,
            checkpoint=record.to_json(),
            fingerprint=fingerprint_of(root),
        )
    )


SEED_002_BODY = """{
   "app_name": "my_resumable_agent",
   "user_id": "u_123",
   "session_id": "s_abc",
   "invocation_id": "invocation-123",
 }"""


async def test_seed_002_curl_resume_works_as_written(start_live: StartLive) -> None:
    app = approval_app().model_copy(update={"name": "my_resumable_agent"})
    app.resumability_config = ResumabilityConfig(is_resumable=True)
    # --no-recover: here the client continues the crashed run itself, as the seed's curl
    # does (a recovering server would have continued it already).
    live: Live = await start_live(apps=[app], recover=False)
    await live.create("my_resumable_agent", "u_123", sessionId="s_abc")
    await crashed_right_after_start(live.service.store, app, "s_abc")
    curl = shutil.which("curl")
    if curl is None:
        r = await live.client.post(
            "/run_sse", content=SEED_002_BODY, headers={"Content-Type": "application/json"}
        )
        text = r.text
    else:
        args = [curl, "-sS", "-X", "POST", f"{live.url}/run_sse"]
        args += ["-H", "Content-Type: application/json", "-d", SEED_002_BODY]
        proc = await asyncio.create_subprocess_exec(*args, stdout=subprocess.PIPE)
        out, _ = await proc.communicate()
        text = out.decode()
    frames = [line for line in text.splitlines() if line.startswith("data: ")]
    assert frames, text
    assert '"invocationId":"invocation-123"' in frames[-1]
    assert '"longRunningToolIds":["approve"]' in frames[-1]


async def test_sessions_an_older_baton_stored_under_padded_ids_can_be_read_and_deleted(
    emptied_store_url: str, start_live: StartLive
) -> None:
    """An older baton stored session ids starting or ending with a space (refused since
    69baf3c): GET and DELETE of the session find them under exactly their ids; a padded
    spelling of another session's id is 404 on those routes (MySQL would take 's1 ' for
    's1') and refused elsewhere, as any padded id is, and nothing changes."""
    live: Live = await start_live(db_url=emptied_store_url)
    store = live.service.store
    await live.create("approval", "u", sessionId="s1")
    for old in (" lead", "trail "):
        await store.create_session("approval", "u", session_id=SessionId(old))
    sessions = "/apps/approval/users/u/sessions"

    for old in (" lead", "trail "):
        r = await live.client.get(f"{sessions}/{old}")
        assert (r.status_code, r.json()["id"]) == (200, old)
        r = await live.client.delete(f"{sessions}/{old}")
        assert r.status_code == 200, r.text
    before = await snapshot(store, "approval", "u", "s1")
    r = await live.client.get(f"{sessions}/s1 ")
    assert r.status_code == 404, r.text
    r = await live.client.delete(f"{sessions}/s1 ")
    assert r.status_code == 404, r.text
    r = await live.client.get(f"{sessions}/s1 /timeline")
    assert r.status_code == 422, r.text
    assert "starts or ends with a space" in r.text

    assert [s.id for s in await store.list_sessions("approval", "u")] == ["s1"]
    assert await snapshot(store, "approval", "u", "s1") == before
