"""`POST .../sessions` with the reference's `options` (keyword arguments for its session
service's create_session): empty, they are accepted; otherwise refused with a 400 naming
them, as the reference refuses them for its own services, and no session is made."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from tests.server.conftest import StartLive

_SESSIONS = "/apps/approval/users/u/sessions"


@pytest.mark.parametrize("options", [None, {}])
async def test_empty_options_are_accepted(
    start_live: StartLive, emptied_store_url: str, options: JsonValue
) -> None:
    live = await start_live(db_url=emptied_store_url)
    r = await live.client.post(_SESSIONS, json={"sessionId": "s1", "options": options})
    assert r.status_code == 200, r.text
    assert r.json()["id"] == "s1"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"ttl": 60, "region": "eu"}, "session options region, ttl are not supported"),
        ({"state": {"a": 1}, "app_name": "x"}, "already binds: app_name, state"),
    ],
    ids=["unsupported", "bound-by-the-route"],
)
async def test_options_are_refused_by_name_and_make_no_session(
    start_live: StartLive, emptied_store_url: str, options: JsonValue, named: str
) -> None:
    live = await start_live(db_url=emptied_store_url)
    body = {"sessionId": "s1", "state": {"a": 1}, "options": options}
    r = await live.client.post(_SESSIONS, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "SessionOptionsError"
    assert named in r.json()["detail"]
    assert (await live.client.get(f"{_SESSIONS}/s1")).status_code == 404
    assert (await live.client.get(_SESSIONS)).json() == []
