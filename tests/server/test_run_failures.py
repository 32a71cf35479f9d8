"""A run that fails after its first event: /run, the respond route and /run_sse all say so.

/run and the respond route answer with the error's status and the events committed
before it; /run_sse ends its stream with an error frame.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from baton import App, ResumabilityConfig, Workflow
from tests.server.conftest import Live, StartLive, approval_app, ask_approval
from tests.server.test_routes import read_sse


def vanishing_app(db: Path) -> App:
    """START -> keep (its output commits) -> vanish (drops the events table) -> after."""

    def keep(node_input: Any) -> str:
        return "kept"

    def vanish(node_input: Any) -> str:
        with sqlite3.connect(db) as connection:
            connection.execute("DROP TABLE baton_events")
        return "gone"

    def after(node_input: Any) -> str:
        return "never"

    return App(
        name="vanishing",
        root_agent=Workflow(name="vanishing_wf", edges=[("START", keep, vanish, after)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


def declining(node_input: Any) -> str:
    raise RuntimeError(f"declined: {node_input}")


def approve_then_fail_app() -> App:
    workflow = Workflow(name="fails_wf", edges=[("START", ask_approval, declining)])
    return approval_app().model_copy(update={"name": "fails", "root_agent": workflow})


GO: JsonValue = {"role": "user", "parts": [{"text": "go"}]}


async def test_run_answers_an_error_status_when_the_database_goes_away(
    start_live: StartLive, tmp_path: Path
) -> None:
    live: Live = await start_live(apps=[vanishing_app(tmp_path / "sessions0.db")])
    sid = await live.create("vanishing", "u")
    r = await live.client.post(
        "/run", json={"appName": "vanishing", "userId": "u", "sessionId": sid, "newMessage": GO}
    )
    assert r.status_code >= 500, r.text
    body = r.json()
    assert "baton_events" in body["detail"]
    assert body["error"]
    assert [e.get("output") for e in body["events"]] == ["kept"]


async def test_run_sse_ends_with_an_error_frame_when_the_database_goes_away(
    start_live: StartLive, tmp_path: Path
) -> None:
    live: Live = await start_live(apps=[vanishing_app(tmp_path / "sessions0.db")])
    sid = await live.create("vanishing", "u")
    body = {"appName": "vanishing", "userId": "u", "sessionId": sid, "newMessage": GO}
    async with live.client.stream("POST", "/run_sse", json=body) as response:
        assert response.status_code == 200
        frames = await read_sse(response)
    assert [f.get("output") for f in frames[:-1]] == ["kept"]
    assert "baton_events" in frames[-1]["error"]
    assert "baton_events" in frames[-1]["error_details"]["error_message"]


async def test_respond_answers_an_error_status_when_the_run_fails_after_the_answer(
    start_live: StartLive,
) -> None:
    live: Live = await start_live(apps=[approve_then_fail_app()])
    sid = await live.create("fails", "u")
    await live.start("fails", "u", sid)
    url = f"/apps/fails/users/u/sessions/{sid}/interrupts/approve/respond"
    r = await live.client.post(url, json={"response": {"approved": True}})
    assert r.status_code == 500, r.text
    assert (r.json()["error"], r.json()["detail"]) == (
        "RuntimeError",
        "declined: {'approved': True}",
    )
    events = r.json()["events"]
    assert [e.get("errorCode") for e in events][-1] == "RuntimeError"
    assert events[0]["output"] == {"approved": True}  # the answered node's, committed
    # The answer itself was taken: asking again is refused as already answered.
    again = await live.client.post(url, json={"response": {"approved": True}})
    assert again.status_code == 409, again.text
