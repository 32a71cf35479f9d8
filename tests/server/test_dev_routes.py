"""The routes the reference's web UI calls for an app's graph, traces and telemetry, and
its session import."""

from __future__ import annotations

from typing import Any

from baton.server.graph_view import dot_sources
from tests.server.conftest import Live, StartLive, example_app
from tests.server.test_refusals import snapshot
from tests.server.test_routes import answer

EXPENSE = "/dev/apps/expense_approval"


async def expense_live(start_live: StartLive, **options: Any) -> Live:
    live: Live = await start_live(apps=[example_app()], **options)
    return live


async def test_build_graph_is_the_validated_graph(start_live: StartLive) -> None:
    live = await expense_live(start_live)
    r = await live.client.get(f"{EXPENSE}/build_graph")
    assert r.status_code == 200, r.text
    root = r.json()["root_agent"]
    assert (r.json()["name"], root["name"], root["type"]) == (
        "expense_approval",
        "expense_workflow",
        "workflow",
    )
    nodes = [(n["name"], n["type"]) for n in root["graph"]["nodes"]]
    assert nodes == [
        ("__START__", "start"),
        ("submit", "function"),
        ("review", "function"),
        ("pay", "function"),
        ("revise", "function"),
    ]
    edges = [
        (e["from_node"]["name"], e["to_node"]["name"], e.get("route"))
        for e in root["graph"]["edges"]
    ]
    assert edges == [
        ("__START__", "submit", None),
        ("submit", "review", None),
        ("review", "pay", "approved"),
        ("review", "revise", "rejected"),
        ("revise", "review", None),
    ]


async def test_build_graph_image_is_dot_per_level_in_either_theme(start_live: StartLive) -> None:
    live = await expense_live(start_live)
    light = (await live.client.get(f"{EXPENSE}/build_graph_image")).json()
    dark = (await live.client.get(f"{EXPENSE}/build_graph_image?dark_mode=true")).json()
    assert list(light) == list(dark) == [""]
    source = light[""]["dotSrc"]
    assert source.startswith("digraph {")
    for line in (
        '"review" -> "pay" [label="approved"]',
        '"review" -> "revise" [label="rejected"]',
        '"revise" -> "review" [label=""]',
        '"pay" -> "__END__"',
    ):
        assert line in source
    assert 'bgcolor="#0F172A"' in dark[""]["dotSrc"]  # the dark theme's background
    assert 'bgcolor="#FFFFFF"' in source


def test_an_agent_tree_is_drawn_level_by_level() -> None:
    from baton.server.catalog import load_app
    from tests.server.conftest import EXAMPLES

    story = load_app(EXAMPLES / "story_agent")
    levels = dot_sources(story.root_agent, dark=False)
    assert list(levels) == ["", "CriticReviserLoop", "PostProcessing"]
    assert '"CriticReviserLoop" -> "Critic"' in levels[""]["dotSrc"]
    assert '"PostProcessing" -> "ToneCheck"' in levels["PostProcessing"]["dotSrc"]


async def test_unknown_apps_and_levels_are_refused_with_json(start_live: StartLive) -> None:
    live = await expense_live(start_live)
    r = await live.client.get(f"{EXPENSE}/build_graph_image?node=nope")
    assert r.status_code == 404
    assert "no nested workflow or agent 'nope'" in r.json()["detail"]
    for route in ("build_graph", "build_graph_image", "debug/trace/session/s"):
        r = await live.client.get(f"/dev/apps/nope/{route}")
        assert (r.status_code, r.json()["error"]) == (404, "AppNotFoundError")


async def test_traces_say_how_to_turn_them_on(start_live: StartLive) -> None:
    live = await expense_live(start_live)
    r = await live.client.get(f"{EXPENSE}/debug/trace/session/s1")
    assert r.status_code == 404
    assert "--trace-to-ui" in r.json()["detail"]


async def test_telemetry_is_always_off(start_live: StartLive) -> None:
    live = await expense_live(start_live)
    assert (await live.client.get("/config/telemetry")).json() == {"telemetry": False}
    refused = await live.client.post("/config/telemetry", json={"telemetry": True})
    assert refused.status_code == 405


async def test_graph_routes_need_a_key_when_keys_are_on(start_live: StartLive) -> None:
    live = await expense_live(start_live, keys=["ann:s1"])
    assert (await live.client.get(f"{EXPENSE}/build_graph")).status_code == 401
    keyed = await live.client.get(f"{EXPENSE}/build_graph", headers={"X-API-Key": "s1"})
    assert keyed.status_code == 200


async def test_an_exported_session_imports_as_history_that_says_what_cannot_go_on(
    emptied_store_url: str, start_live: StartLive
) -> None:
    live = await expense_live(start_live, db_url=emptied_store_url)
    sid = await live.create("expense_approval", "ann")
    await live.start("expense_approval", "ann", sid, "120.50 taxi to the airport")
    exported = (await live.client.get(f"/apps/expense_approval/users/ann/sessions/{sid}")).json()
    base = "/apps/expense_approval/users/ann/sessions"
    r = await live.client.post(base, json={"events": exported["events"], "state": {"k": 1}})
    assert r.status_code == 200, r.text
    imported = (await live.client.get(f"{base}/{r.json()['id']}")).json()
    events: list[dict[str, Any]] = imported["events"]
    assert [e["author"] for e in events] == [e["author"] for e in exported["events"]] + ["baton"]
    assert [e.get("output") for e in events[:-1]] == [e.get("output") for e in exported["events"]]
    assert all(e["invocationId"].startswith("imported:") for e in events)
    assert not any("nodeInfo" in e for e in events)
    assert imported["state"]["k"] == 1
    note = events[-1]["content"]["parts"][0]["text"]
    assert "'review_0'" in note
    assert "cannot be answered here" in note
    # Nothing of it is open: the question it shows is refused as unknown, and nothing changes.
    new_sid = r.json()["id"]
    pending = (await live.client.get("/apps/expense_approval/users/ann/pending")).json()
    assert [p["sessionId"] for p in pending] == [sid]  # only the exported session's question
    before = await snapshot(live.service.store, "expense_approval", "ann", new_sid)
    body = {
        "appName": "expense_approval",
        "userId": "ann",
        "sessionId": new_sid,
        "newMessage": answer("review_0", {"approved": True}),
    }
    refused = await live.client.post("/run", json=body)
    assert (refused.status_code, refused.json()["error"]) == (404, "UnknownInterruptError")
    # As the web UI answers it: naming the call event, which is imported history.
    call = next(e for e in events if e.get("longRunningToolIds"))
    named = await live.client.post("/run", json={**body, "functionCallEventId": call["id"]})
    assert (named.status_code, named.json()["error"]) == (404, "UnknownInterruptError")
    assert "the run that asked it was not imported" in named.json()["detail"]
    assert await snapshot(live.service.store, "expense_approval", "ann", new_sid) == before
