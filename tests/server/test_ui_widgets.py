"""Widgets (`ctx.render_ui_widget`) over HTTP, as the reference's api_server serves them:
`actions.renderUiWidgets`, each widget's id, provider and payload as given, on the run's
events and on the session's, after a server restart too; a client's malformed widget is
refused before anything is stored (SQLite, PostgreSQL, MariaDB)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from baton import App, Context, RequestInput, ResumabilityConfig, UiWidget, Workflow, node
from tests.server.conftest import StartLive
from tests.server.test_routes import read_sse

BASE = "/apps/shop/users/u/sessions"


@node(rerun_on_resume=True)
def pick(ctx: Context, node_input: Any) -> RequestInput | str:
    step = len(ctx.resume_inputs)
    ctx.render_ui_widget(
        UiWidget(id=f"cart-{step}", provider="mcp", payload={"resource_uri": f"ui://cart/{step}"})
    )
    if not ctx.resume_inputs:
        return RequestInput(interrupt_id="size", message="Which size?")
    return f"size {ctx.resume_inputs['size']}"


def shop_app() -> App:
    return App(
        name="shop",
        root_agent=Workflow(name="shop_wf", edges=[("START", pick)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


def cart(step: int) -> dict[str, JsonValue]:
    return {
        "id": f"cart-{step}",
        "provider": "mcp",
        "payload": {"resource_uri": f"ui://cart/{step}"},
    }


def widgets(events: list[dict[str, Any]]) -> list[Any]:
    return [e["actions"]["renderUiWidgets"] for e in events if "renderUiWidgets" in e["actions"]]


async def test_widgets_reach_http_clients_and_survive_a_server_restart(
    emptied_store_url: str, start_live: StartLive
) -> None:
    live = await start_live(apps=[shop_app()], db_url=emptied_store_url)
    session = await live.create("shop", "u")

    first = await live.start("shop", "u", session)
    assert widgets(first) == [[cart(0)]]

    restarted = await start_live(apps=[shop_app()], db_url=emptied_store_url)
    answer = {
        "functionResponse": {"id": "size", "name": "adk_request_input", "response": {"result": "M"}}
    }
    second = await restarted.run(
        "shop", "u", session, newMessage={"role": "user", "parts": [answer]}
    )
    assert [e.get("output") for e in second] == ["size M"]
    assert widgets(second) == [[cart(1)]]

    read = (await restarted.client.get(f"{BASE}/{session}")).json()
    assert widgets(read["events"]) == [[cart(0)], [cart(1)]]

    # /run_sse (the reference's web UI streams runs there) sends the same JSON.
    other = await restarted.create("shop", "u")
    body: dict[str, JsonValue] = {"appName": "shop", "userId": "u", "sessionId": other}
    body["newMessage"] = {"role": "user", "parts": [{"text": "go"}]}
    async with restarted.client.stream("POST", "/run_sse", json=body) as streamed:
        frames = await read_sse(streamed)
    assert widgets(frames) == [[cart(0)]]


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ({"id": "", "provider": "mcp"}, ["renderUiWidgets", "id is empty"]),
        ({"id": "w"}, ["renderUiWidgets", "provider"]),
        ({"id": "w", "provider": "mcp", "payload": "ui://x"}, ["renderUiWidgets", "payload"]),
        ("ui://x", ["renderUiWidgets"]),
    ],
    ids=["empty-id", "no-provider", "text-payload", "not-an-object"],
)
@pytest.mark.parametrize("imported", [False, True], ids=["seeded", "imported"])
async def test_a_session_with_a_malformed_widget_is_refused_and_not_created(
    emptied_store_url: str,
    start_live: StartLive,
    bad: JsonValue,
    words: list[str],
    imported: bool,
) -> None:
    """Seeded or imported (an exported session: its events carry run data, here an
    output), the session's widgets are checked before it is created, and kept."""
    live = await start_live(apps=[shop_app()], db_url=emptied_store_url)
    event: dict[str, JsonValue] = {
        "author": "shop_wf",
        "content": {"role": "model", "parts": [{"text": "here"}]},
        "actions": {"renderUiWidgets": [bad]},
    }
    if imported:
        event["output"] = "done"

    refused = await live.client.post(BASE, json={"sessionId": "s", "events": [event]})

    assert refused.status_code == 422, refused.text
    assert all(w in refused.text for w in words), refused.text
    assert (await live.client.get(f"{BASE}/s")).status_code == 404
    assert (await live.client.get(BASE)).json() == []
    # Fixed, the same call stores the widget and serves it back.
    event["actions"] = {"renderUiWidgets": [cart(0)]}
    created = await live.client.post(BASE, json={"sessionId": "s", "events": [event]})
    assert created.status_code == 200, created.text
    assert widgets((await live.client.get(f"{BASE}/s")).json()["events"]) == [[cart(0)]]
