"""A compaction event over HTTP: a session exported from the reference, its summary in
`actions.compaction`, is created whole and read back in the reference's camelCase."""

from __future__ import annotations

from tests.server.conftest import StartLive


async def test_a_session_with_a_compaction_event_round_trips_over_http(
    start_live: StartLive,
) -> None:
    live = await start_live()
    compaction = {
        "startTimestamp": 1795638049.91,
        "endTimestamp": 1795638049.95,
        "compactedContent": {"parts": [{"text": "SUMMARY3"}], "role": "model"},
    }
    message = {"author": "user", "content": {"role": "user", "parts": [{"text": "hi"}]}}
    summary = {"author": "user", "invocationId": "0ff0e6f9", "actions": {"compaction": compaction}}
    body = {"sessionId": "s1", "events": [message, summary]}
    r = await live.client.post("/apps/approval/users/u/sessions", json=body)
    assert r.status_code == 200, r.text
    stored = await live.client.get("/apps/approval/users/u/sessions/s1")
    assert [e["actions"].get("compaction") for e in stored.json()["events"]] == [None, compaction]
