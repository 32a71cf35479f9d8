"""The run graph's layout: layers follow the edges, loops are drawn back, states follow
the run; and the route's refusals."""

from __future__ import annotations

from typing import Any

from baton import Context, Workflow
from baton.server.catalog import load_app
from baton.server.run_graph import build_run_graph
from tests.server.conftest import EXAMPLES, Live, StartLive


def draft(node_input: Any) -> str:
    return "draft"


def review(ctx: Context, node_input: Any) -> None:
    ctx.route = "again" if node_input == "draft" else "ok"


def publish(node_input: Any) -> str:
    return "published"


def test_layers_follow_edges_and_a_loop_is_a_back_edge() -> None:
    root = Workflow(
        name="wf",
        edges=[("START", draft, review), (review, {"again": draft, "ok": publish})],
    )
    graph = build_run_graph("app", root, None, [], [])
    rows = {n.name: n.y for n in graph.nodes}
    assert rows["__START__"] < rows["draft"] < rows["review"] < rows["publish"] < rows["__END__"]
    edges = {(e.source, e.target): e for e in graph.edges}
    assert edges[("review", "draft")].back
    assert edges[("review", "draft")].label == "again"
    assert not edges[("draft", "review")].back
    assert {n.state for n in graph.nodes} == {"idle"}
    assert graph.status == "none"


async def test_graph_route_refuses_an_unknown_run_or_session(live: Live) -> None:
    sid = await live.create("approval", "u")
    base = f"/apps/approval/users/u/sessions/{sid}/graph"
    empty = (await live.client.get(base)).json()
    assert empty["invocationId"] is None
    assert {n["state"] for n in empty["nodes"]} == {"idle"}
    await live.start("approval", "u", sid)
    drawn = (await live.client.get(base)).json()
    states = {n["name"]: n["state"] for n in drawn["nodes"]}
    assert states == {
        "__START__": "done",
        "ask_approval": "waiting",
        "finish": "idle",
        "__END__": "idle",
    }
    unknown = await live.client.get(base, params={"invocation": "e-nope"})
    assert unknown.status_code == 404
    assert "no run 'e-nope'" in unknown.json()["detail"]
    missing = await live.client.get("/apps/approval/users/u/sessions/nope/graph")
    assert missing.status_code == 404


async def test_an_agents_tree_is_coloured_by_its_authors(start_live: StartLive) -> None:
    # Every event of an agent's tree has the root's node path: the drawn agents are
    # found by their events' authors, and the root (the whole run) has the run's state.
    refunds = load_app(EXAMPLES / "approval_agent")
    stories = load_app(EXAMPLES / "story_agent")
    live = await start_live(apps=[refunds, stories])
    sid = await live.create("approval_agent", "ann")
    await live.start("approval_agent", "ann", sid, "Please refund order 42, it arrived broken.")
    base = f"/apps/approval_agent/users/ann/sessions/{sid}"
    waiting = (await live.client.get(f"{base}/graph")).json()
    assert {n["name"]: n["state"] for n in waiting["nodes"]} == {
        "__START__": "done",
        "refund_agent": "waiting",
    }
    [question] = (await live.client.get("/apps/approval_agent/users/ann/pending")).json()
    respond = f"{base}/interrupts/{question['interruptId']}/respond"
    answered = await live.client.post(respond, json={"response": {"approved": True}})
    assert answered.status_code == 200, answered.text
    done = (await live.client.get(f"{base}/graph")).json()
    assert {n["name"]: n["state"] for n in done["nodes"]} == {
        "__START__": "done",
        "refund_agent": "done",
    }
    assert {n["name"]: n["agents"] for n in done["nodes"]}["refund_agent"] == ["refund_agent"]

    story = await live.create("story_agent", "ann")
    await live.start("story_agent", "ann", story, "a cat")
    drawn = (await live.client.get(f"/apps/story_agent/users/ann/sessions/{story}/graph")).json()
    nodes = {n["name"]: n for n in drawn["nodes"]}
    assert {name: n["state"] for name, n in nodes.items()} == {
        "__START__": "done",
        "StoryFlowAgent": "done",
        "StoryGenerator": "done",
        "CriticReviserLoop": "done",
        "PostProcessing": "done",
    }
    assert nodes["CriticReviserLoop"]["agents"] == ["Critic", "CriticReviserLoop", "Reviser"]
