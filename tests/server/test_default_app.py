"""`/run` and `/run_sse` without `appName`: the server's default app runs, as the
reference's server runs its `ADK_DEFAULT_APP_NAME`; without one, a 400 says what to send."""

from __future__ import annotations

import pytest

from baton.errors import AppNotFoundError
from baton.server.app import create_app
from baton.server.catalog import AppCatalog
from baton.sessions.services import InMemorySessionService
from tests.server.conftest import StartLive, approval_app, form_app

_GO = {"role": "user", "parts": [{"text": "go"}]}


@pytest.mark.parametrize("hot_routes", [True, False], ids=["hot", "fastapi"])
@pytest.mark.parametrize("route", ["/run", "/run_sse"])
async def test_a_run_without_app_name_runs_the_default_app(
    start_live: StartLive, route: str, hot_routes: bool
) -> None:
    live = await start_live(default_app_name="approval", hot_routes=hot_routes)
    session = await live.create("approval", "u")
    r = await live.client.post(route, json={"userId": "u", "sessionId": session, "newMessage": _GO})
    assert r.status_code == 200, r.text
    assert '"approve"' in r.text  # the approval app's question


@pytest.mark.parametrize("hot_routes", [True, False], ids=["hot", "fastapi"])
@pytest.mark.parametrize("route", ["/run", "/run_sse"])
async def test_a_run_without_app_name_and_no_default_app_is_a_400(
    start_live: StartLive, route: str, hot_routes: bool
) -> None:
    live = await start_live(hot_routes=hot_routes)
    session = await live.create("approval", "u")
    r = await live.client.post(route, json={"userId": "u", "sessionId": session, "newMessage": _GO})
    assert r.status_code == 400
    assert r.json()["error"] == "AppNameRequiredError"
    assert "send appName, one of: approval, form" in r.json()["detail"]
    session_events = await live.client.get(f"/apps/approval/users/u/sessions/{session}")
    assert session_events.json()["events"] == []  # nothing ran


def test_a_default_app_that_is_not_served_is_refused_at_start() -> None:
    catalog = AppCatalog.of([approval_app(), form_app()], InMemorySessionService())
    with pytest.raises(AppNotFoundError, match="app 'nope' is not served"):
        create_app(catalog, default_app_name="nope")
