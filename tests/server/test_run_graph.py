"""The run graph's layout: layers follow the edges, loops are drawn back, states follow
the run; and the route's refusals."""

from __future__ import annotations

from typing import Any

from baton import Context, Workflow
from baton.server.run_graph import build_run_graph
from tests.server.conftest import Live


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
