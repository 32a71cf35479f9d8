"""Asking another person over HTTP: Ann's run asks Bob, Bob answers with his own key.

On SQLite and PostgreSQL with API keys: Bob's pending listing and inbox show Ann's
question; Bob's key may answer that question and nothing else of her session; Ann's
and Carol's keys are refused with 403 JSON and the store is unchanged; on an open
server (no keys) `answeredBy` names who answers.
"""

from __future__ import annotations

from typing import Any

from baton import App, RequestInput, ResumabilityConfig, Workflow
from tests.server.conftest import Decision, Live, StartLive, finish
from tests.server.test_refusals import snapshot

ANN = {"X-API-Key": "ann-key"}
BOB = {"X-API-Key": "bob-key"}
CAROL = {"X-API-Key": "carol-key"}
OPERATOR = {"X-API-Key": "op-key"}
KEYS = ["op-key", "ann:ann-key", "bob:bob-key", "carol:carol-key"]


def ask_manager(node_input: Any) -> RequestInput:
    return RequestInput(
        interrupt_id="approve", message="Refund?", response_schema=Decision, assignee="bob"
    )


def manager_app() -> App:
    return App(
        name="refunds",
        root_agent=Workflow(name="refunds_wf", edges=[("START", ask_manager, finish)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


async def paused_for_bob(live: Live, headers: dict[str, str]) -> str:
    """A session of Ann's whose run waits on Bob's answer."""
    r = await live.client.post("/apps/refunds/users/ann/sessions", headers=headers)
    sid = str(r.json()["id"])
    run = {"appName": "refunds", "userId": "ann", "sessionId": sid}
    message = {"role": "user", "parts": [{"text": "refund 40"}]}
    r = await live.client.post("/run", json={**run, "newMessage": message}, headers=headers)
    assert r.status_code == 200, r.text
    return sid


def _respond(sid: str, interrupt: str = "approve") -> str:
    return f"/apps/refunds/users/ann/sessions/{sid}/interrupts/{interrupt}/respond"


async def test_the_assignee_answers_with_their_key(
    emptied_store_url: str, start_live: StartLive
) -> None:
    live: Live = await start_live([manager_app()], keys=KEYS, db_url=emptied_store_url)
    client = live.client
    sid = await paused_for_bob(live, ANN)

    # Ann sees whom her run waits on; Bob sees the question in his listing and inbox.
    [own] = (await client.get("/apps/refunds/users/ann/pending", headers=ANN)).json()
    assert (own["assignee"], own["userId"]) == ("bob", "ann")
    bobs = (await client.get("/apps/refunds/users/bob/pending", headers=BOB)).json()
    assert [(r["userId"], r["sessionId"], r["interruptId"]) for r in bobs] == [
        ("ann", sid, "approve")
    ]
    filtered = await client.get(
        "/apps/refunds/users/bob/pending", params={"assignee": "bob"}, headers=BOB
    )
    assert [r["interruptId"] for r in filtered.json()] == ["approve"]
    none = await client.get(
        "/apps/refunds/users/ann/pending", params={"assignee": "carol"}, headers=ANN
    )
    assert none.json() == []
    inbox = (await client.get("/users/bob/inbox", headers=BOB)).json()
    assert [r["interruptId"] for r in inbox["pending"]] == ["approve"]
    assert (await client.get("/users/carol/inbox", headers=CAROL)).json()["pending"] == []

    before = await snapshot(live.service.store, "refunds", "ann", sid)
    answer = {"response": {"approved": True}}
    # Ann's own key: her session, but the question is Bob's.
    refused = await client.post(_respond(sid), json=answer, headers=ANN)
    assert refused.status_code == 403
    assert refused.json()["error"] == "NotAssigneeError"
    assert "assigned to 'bob'" in refused.json()["detail"]
    # Carol's key: neither her session nor her question.
    refused = await client.post(_respond(sid), json=answer, headers=CAROL)
    assert refused.status_code == 403
    assert "acts for user 'carol' only" in refused.json()["detail"]
    # Bob's key claiming to answer as someone else.
    refused = await client.post(_respond(sid), json={**answer, "answeredBy": "ann"}, headers=BOB)
    assert refused.status_code == 403
    assert "answers as them, not as 'ann'" in refused.json()["detail"]
    # Bob's key reaches nothing else of Ann's session.
    for path in (f"/apps/refunds/users/ann/sessions/{sid}", "/apps/refunds/users/ann/pending"):
        assert (await client.get(path, headers=BOB)).status_code == 403
    assert (await client.post(_respond(sid, "other"), json=answer, headers=BOB)).status_code == 403
    run = {"appName": "refunds", "userId": "ann", "sessionId": sid}
    assert (await client.post("/run", json=run, headers=BOB)).status_code == 403
    # No key at all.
    assert (await client.post(_respond(sid), json=answer)).status_code == 401
    assert await snapshot(live.service.store, "refunds", "ann", sid) == before

    answered = await client.post(_respond(sid), json=answer, headers=BOB)
    assert answered.status_code == 200, answered.text
    assert answered.json()[-1]["output"] == 'done:{"approved": true}'
    rows = await client.get(
        "/apps/refunds/users/ann/pending", params={"status": "answered"}, headers=ANN
    )
    [row] = rows.json()
    assert (row["answeredBy"], row["answer"]) == ("bob", {"approved": True})
    assert (await client.get("/apps/refunds/users/bob/pending", headers=BOB)).json() == []
    # Answered: Bob may not answer again (the Runner's usual refusal, not a new one).
    again = await client.post(_respond(sid), json=answer, headers=BOB)
    assert again.status_code == 409


async def test_open_server_and_operator_name_the_answerer(start_live: StartLive) -> None:
    live: Live = await start_live([manager_app()], keys=["op-key"], headers=OPERATOR)
    client = live.client
    sid = await paused_for_bob(live, OPERATOR)
    answer = {"response": {"approved": False}}
    refused = await client.post(_respond(sid), json=answer)
    assert refused.status_code == 403
    assert refused.json()["error"] == "NotAssigneeError"
    for bad, status, error in (
        ("a:b", 403, "NotAssigneeError"),
        ("carol", 403, "NotAssigneeError"),
        ("x" * 256, 422, "InvalidIdError"),
    ):
        r = await client.post(_respond(sid), json={**answer, "answeredBy": bad})
        assert (r.status_code, r.json()["error"]) == (status, error), bad
    assert (await client.get("/apps/refunds/users/ann/pending")).json()[0]["status"] == "open"
    bad_filter = await client.get("/apps/refunds/users/ann/pending", params={"assignee": "a:b"})
    assert bad_filter.status_code == 422
    ok = await client.post(_respond(sid), json={**answer, "answeredBy": "bob"})
    assert ok.status_code == 200, ok.text
    assert ok.json()[-1]["output"] == 'done:{"approved": false}'
