"""Requests the reference's web UI makes, as it makes them: refusals it can read on
/run_sse, and answers that name the call event they answer (functionCallEventId)."""

from __future__ import annotations

from typing import Any

from tests.server.conftest import Live
from tests.server.test_refusals import snapshot
from tests.server.test_routes import answer, read_sse

STREAM = {"Accept": "text/event-stream"}


async def open_approval(live: Live, sid: str) -> list[dict[str, Any]]:
    return await live.start("approval", "u", sid)


async def test_a_refusal_on_run_sse_is_an_error_frame_for_stream_readers(live: Live) -> None:
    sid = await live.create("approval", "u")
    await open_approval(live, sid)
    before = await snapshot(live.service.store, "approval", "u", sid)
    body = {
        "appName": "approval",
        "userId": "u",
        "sessionId": sid,
        "newMessage": answer("approve", {"approved": "yes"}),
    }
    async with live.client.stream("POST", "/run_sse", json=body, headers=STREAM) as response:
        assert response.status_code == 422
        assert response.headers["content-type"].startswith("text/event-stream")
        frames = await read_sse(response)
    [refusal] = frames
    assert refusal["error"].startswith("InvalidResponseError: answer to interrupt 'approve'")
    assert refusal["error_details"]["status"] == 422
    assert refusal["error_details"]["error_type"] == "InvalidResponseError"
    assert "approved: 'yes' is not of type 'boolean'" in refusal["detail"]
    assert await snapshot(live.service.store, "approval", "u", sid) == before
    # A client that does not read streams still gets the JSON refusal.
    plain = await live.client.post("/run_sse", json=body)
    assert (plain.status_code, plain.json()["error"]) == (422, "InvalidResponseError")


async def test_a_malformed_run_sse_request_is_an_error_frame_too(live: Live) -> None:
    r = await live.client.post("/run_sse", json={"appName": "approval"}, headers=STREAM)
    assert r.status_code == 422
    frames = [line for line in r.text.splitlines() if line]
    assert len(frames) == 1
    assert frames[0].startswith('data: {"error":"RequestValidationError: body.userId: Field')


async def test_function_call_event_id_picks_the_invocation(live: Live) -> None:
    sid = await live.create("approval", "u")
    first = await open_approval(live, sid)
    second = await open_approval(live, sid)  # the same interrupt id, open in two invocations
    assert first[-1]["invocationId"] != second[-1]["invocationId"]
    body = {
        "appName": "approval",
        "userId": "u",
        "sessionId": sid,
        "newMessage": answer("approve", {"approved": True}),
    }
    ambiguous = await live.client.post("/run", json=body)
    assert ambiguous.status_code in (409, 422), ambiguous.text
    call_event = second[-1]["id"]
    done = await live.run("approval", "u", sid, **body, functionCallEventId=call_event)
    assert done[-1]["output"] == 'done:{"approved": true}'
    assert {e["invocationId"] for e in done} == {second[-1]["invocationId"]}
    pending = (await live.client.get("/apps/approval/users/u/pending")).json()
    assert [p["invocationId"] for p in pending] == [first[-1]["invocationId"]]


async def test_an_unknown_or_contradicted_function_call_event_id_is_refused(live: Live) -> None:
    sid = await live.create("approval", "u")
    paused = await open_approval(live, sid)
    before = await snapshot(live.service.store, "approval", "u", sid)
    body: dict[str, Any] = {
        "appName": "approval",
        "userId": "u",
        "sessionId": sid,
        "newMessage": answer("approve", {"approved": True}),
        "functionCallEventId": "no-such-event",
    }
    r = await live.client.post("/run", json=body)
    assert (r.status_code, r.json()["error"]) == (422, "InvalidMessageError")
    assert "'no-such-event'" in r.json()["detail"]
    body["functionCallEventId"] = paused[-1]["id"]
    body["invocationId"] = "another"
    r = await live.client.post("/run", json=body)
    assert (r.status_code, r.json()["error"]) == (422, "InvalidMessageError")
    assert paused[-1]["invocationId"] in r.json()["detail"]
    assert await snapshot(live.service.store, "approval", "u", sid) == before
