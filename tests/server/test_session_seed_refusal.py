"""Creating a session with initial events over HTTP is all or nothing: an event the
store refuses refuses the whole call, and no session is left, seeded or imported
(SQLite, PostgreSQL, MariaDB)."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from tests.server.conftest import StartLive

BASE = "/apps/approval/users/u/sessions"
GOOD: dict[str, JsonValue] = {
    "author": "user",
    "content": {"role": "user", "parts": [{"text": "hi"}]},
}


@pytest.mark.parametrize("imported", [False, True], ids=["seeded", "imported"])
async def test_a_session_whose_initial_events_are_refused_is_not_created(
    emptied_store_url: str, start_live: StartLive, imported: bool
) -> None:
    """The second event's author holds a newline (an id may not): 422, naming it, and the
    session does not exist, neither with the first event nor empty. An exported session
    (an event carrying run data, here an output) is imported the same way."""
    live = await start_live(db_url=emptied_store_url)
    bad: dict[str, JsonValue] = {"author": "bad\nauthor", "actions": {"stateDelta": {"x": 1}}}
    if imported:
        bad["output"] = "done"
    body: dict[str, JsonValue] = {"sessionId": "s", "state": {"k": "v"}, "events": [GOOD, bad]}

    refused = await live.client.post(BASE, json=body)

    assert refused.status_code == 422, refused.text
    assert refused.json()["error"] == "InvalidIdError"
    assert "author" in refused.json()["detail"]
    assert (await live.client.get(f"{BASE}/s")).status_code == 404
    assert (await live.client.get(BASE)).json() == []
    # The same call with the event fixed creates the session with both events.
    bad["author"] = "agent"
    created = await live.client.post(BASE, json=body)
    assert created.status_code == 200, created.text
    assert len((await live.client.get(f"{BASE}/s")).json()["events"]) == 2
