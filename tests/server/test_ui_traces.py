"""`baton api_server --trace-to-ui` keeps each session's spans for the reference web UI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.server.conftest import EXAMPLES
from tests.server.processes import BATON, HTTP_TIMEOUT, KEEP_IDLE, serving


def start_and_answer(client: httpx.Client, user: str) -> tuple[str, str]:
    """A run of the expense example, answered; (session id, invocation id)."""
    base = f"/apps/expense_approval/users/{user}/sessions"
    sid = client.post(base, json={}).json()["id"]
    body: dict[str, Any] = {"appName": "expense_approval", "userId": user, "sessionId": sid}
    message = {"role": "user", "parts": [{"text": "12 lunch"}]}
    started = client.post("/run", json={**body, "newMessage": message}).json()
    answer = {
        "functionResponse": {
            "id": "review_0",
            "name": "adk_request_input",
            "response": {"approved": True},
        }
    }
    client.post("/run", json={**body, "newMessage": {"role": "user", "parts": [answer]}})
    return sid, started[0]["invocationId"]


def read_traces(
    url: str, ann: httpx.Client, bob: httpx.Client
) -> tuple[str, str, str, list[dict[str, Any]]]:
    sid, invocation = start_and_answer(ann, "ann")
    other, _ = start_and_answer(bob, "bob")
    route = f"/dev/apps/expense_approval/debug/trace/session/{sid}"
    spans: list[dict[str, Any]] = ann.get(route).json()
    assert bob.get(route).json() == []  # another user's key sees none of ann's spans
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT, limits=KEEP_IDLE) as anonymous:
        assert anonymous.get(route).status_code == 401
    return sid, invocation, other, spans


def test_spans_are_kept_per_session_in_the_ui_shape(tmp_path: Path) -> None:
    args = [str(BATON), "api_server", str(EXAMPLES), "--port", "0", "--trace-to-ui"]
    args += ["--db", str(tmp_path / "t.db"), "--api-key", "ann:a1", "--api-key", "bob:b1"]
    with serving(args) as url:
        ann = httpx.Client(
            base_url=url, headers={"X-API-Key": "a1"}, timeout=HTTP_TIMEOUT, limits=KEEP_IDLE
        )
        bob = httpx.Client(
            base_url=url, headers={"X-API-Key": "b1"}, timeout=HTTP_TIMEOUT, limits=KEEP_IDLE
        )
        with ann, bob:
            sid, invocation, other, spans = read_traces(url, ann, bob)
    calls = [s for s in spans if s["name"] == "baton.invocation"]
    assert [s["attributes"]["baton.call"] for s in calls] == ["start", "answer"]
    assert {s["attributes"]["gcp.vertex.agent.invocation_id"] for s in calls} == {invocation}
    assert {s["attributes"]["gen_ai.conversation.id"] for s in calls} == {sid}
    assert all(s["attributes"]["baton.session"] != other for s in calls)
    nodes = [s["attributes"]["baton.node"] for s in spans if s["name"] == "baton.node"]
    assert {"submit", "review", "pay"} <= set(nodes)
    by_id = {s["span_id"]: s for s in spans}
    for span in spans:
        assert span["end_time"] >= span["start_time"] > 0
        assert span["logs"] == []
        if span["name"] == "baton.node":  # nested under its invocation's span, same trace
            parent = by_id[span["parent_span_id"]]
            assert parent["trace_id"] == span["trace_id"]
