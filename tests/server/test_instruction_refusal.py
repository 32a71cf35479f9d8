"""Over HTTP, a run whose first instruction cannot be filled is refused with nothing
stored (see tests/agents/test_instruction_templates.py for the library)."""

from __future__ import annotations

from pydantic import JsonValue

from baton import App
from baton.agents import LlmAgent
from baton.models import ScriptedModel
from baton.sessions.store import SessionKey
from baton.types import SessionId
from tests.server.conftest import StartLive


async def test_over_http_an_instruction_that_cannot_be_filled_is_422_and_changes_nothing(
    start_live: StartLive,
) -> None:
    agent = LlmAgent(name="poet", model=ScriptedModel(responses=["x"]), instruction="{topic}")
    live = await start_live([App(name="poet", root_agent=agent)])
    sid = await live.create("poet", "u")
    key = SessionKey("poet", "u", SessionId(sid))
    before = await live.service.store.get_session(key)
    body: dict[str, JsonValue] = {
        "appName": "poet",
        "userId": "u",
        "sessionId": sid,
        "newMessage": {"role": "user", "parts": [{"text": "hi"}]},
    }
    for route in ("/run", "/run_sse"):
        r = await live.client.post(route, json=body)
        assert r.status_code == 422, r.text
        assert r.json()["error"] == "MissingStateKeyError"
        assert "{topic}" in r.json()["detail"]
    assert await live.service.store.get_session(key) == before
    assert await live.service.store.list_invocations(key) == []
