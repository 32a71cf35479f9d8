"""A picture of one run: the app's workflow graph, laid out, each node with its state.

The graph is the one baton validated when the app loaded (`Workflow.graph`); an agent
root is drawn as its tree of sub-agents. Nodes are placed in layers (START on top, each
node one layer below its deepest predecessor, loops drawn back upwards), so the page
only draws boxes and lines: no layout library, nothing fetched at run time.

A node's state in the run comes from the run's live events (what each node output,
asked or failed with) and its checkpoint (which runs are executing or waiting now):
`failed`, `waiting` (for a person), `running`, `done`, or `idle` (not reached). In an
agent's tree every event has the root's node path, so an event belongs to the drawn
agent that is its author or an ancestor of its author (`agents`), and the root, which
is the whole run, has the run's state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from pydantic import Field, JsonValue

from baton.events import Event
from baton.server.graph_view import END_NAME, START_NAME
from baton.sessions.store import Interrupt, InterruptStatus, Invocation, InvocationStatus
from baton.types import WireModel
from baton.workflow.graph import Graph, GraphEdge

__all__ = ["GraphEdgeView", "GraphNodeView", "RunGraph", "build_run_graph", "top_node"]

NODE_WIDTH: Final = 150
NODE_HEIGHT: Final = 40
GAP_X: Final = 40
GAP_Y: Final = 50

_ORDER: Final = ("failed", "waiting", "running", "done", "idle")


class GraphNodeView(WireModel):
    """A node as drawn: name, kind, box and its state in the run."""

    name: str
    kind: str
    x: float
    y: float
    width: float = NODE_WIDTH
    height: float = NODE_HEIGHT
    state: str = "idle"
    # In an agent's tree: the authors whose events are this node's (itself and the
    # agents under it; the root: every agent). Empty in a workflow: paths say it there.
    agents: list[str] = Field(default_factory=list[str])


class GraphEdgeView(WireModel):
    """An edge as drawn; `back` edges close a loop (drawn beside the nodes)."""

    source: str
    target: str
    label: str = ""
    back: bool = False


class RunGraph(WireModel):
    """The picture of one run (`invocation_id` None: no run yet, every node idle)."""

    app_name: str
    invocation_id: str | None = None
    status: str = "none"
    width: float = 0
    height: float = 0
    nodes: list[GraphNodeView] = Field(default_factory=list[GraphNodeView])
    edges: list[GraphEdgeView] = Field(default_factory=list[GraphEdgeView])


def top_node(path: str) -> str | None:
    """The root workflow's node a node path runs in (`wf@1/ask@2/x@1` -> `ask`)."""
    segments = path.split("/")
    return segments[1].split("@", 1)[0] if len(segments) > 1 else None


def build_run_graph(
    app_name: str,
    root: object,
    invocation: Invocation | None,
    events: Sequence[Event],
    interrupts: Iterable[Interrupt],
) -> RunGraph:
    """The graph of `root` with the states of `invocation`'s nodes (its live `events`)."""
    names, edges = _structure(root)
    agents = _agent_owners(root)
    states: dict[str, str] = {}
    if invocation is not None and agents:
        states = _agent_states(invocation, events, interrupts, agents)
    elif invocation is not None:
        states = _states(invocation, events, interrupts)
    layers = _layers(names, edges)
    nodes = _place(names, layers, kinds=_kinds(root), states=states)
    for node in nodes:
        node.agents = sorted(a for a, drawn in agents.items() if node.name in drawn)
    back = {(e.source, e.target) for e in edges if layers[e.target] <= layers[e.source]}
    width = max((n.x + n.width for n in nodes), default=0) + GAP_X
    height = max((n.y + n.height for n in nodes), default=0) + GAP_Y
    return RunGraph(
        app_name=app_name,
        invocation_id=invocation.id if invocation else None,
        status=invocation.status.value if invocation else "none",
        width=width,
        height=height,
        nodes=nodes,
        edges=[
            GraphEdgeView(
                source=e.source,
                target=e.target,
                label=", ".join(str(r) for r in e.routes or ()),
                back=(e.source, e.target) in back,
            )
            for e in edges
        ],
    )


def _graph_of(node: object) -> Graph | None:
    graph = getattr(node, "graph", None)
    return graph if isinstance(graph, Graph) else None


def _structure(root: object) -> tuple[list[str], list[GraphEdge]]:
    """Node names (START first, END last) and edges, of a workflow or an agent's tree."""
    graph = _graph_of(root)
    if graph is None:
        name = str(getattr(root, "name", ""))
        agents: list[object] = list(getattr(root, "sub_agents", None) or [])
        subs = [str(getattr(s, "name", "")) for s in agents]
        edges = [GraphEdge(START_NAME, name), *(GraphEdge(name, s) for s in subs)]
        return [START_NAME, name, *subs], edges
    edges = list(graph.edges)
    terminals = [n for n in graph.nodes if n in graph.terminals]
    edges += [GraphEdge(n, END_NAME) for n in terminals]
    return [START_NAME, *graph.nodes, END_NAME], edges


def _descendants(agent: object) -> Iterable[str]:
    yield str(getattr(agent, "name", ""))
    for sub in list(getattr(agent, "sub_agents", None) or []):
        yield from _descendants(sub)


def _agent_owners(root: object) -> dict[str, tuple[str, ...]]:
    """In an agent's tree, each agent's name and the drawn nodes its events count for:
    the root, and the root's sub-agent it is or runs under. Empty for a workflow."""
    if _graph_of(root) is not None:
        return {}
    name = str(getattr(root, "name", ""))
    owners: dict[str, tuple[str, ...]] = {name: (name,)}
    for sub in list(getattr(root, "sub_agents", None) or []):
        drawn = (name, str(getattr(sub, "name", "")))
        owners.update(dict.fromkeys(_descendants(sub), drawn))
    return owners


def _kinds(root: object) -> dict[str, str]:
    graph = _graph_of(root)
    found = {START_NAME: "start", END_NAME: "end"}
    children: list[tuple[str, object]] = list(graph.nodes.items()) if graph else []
    for name, node in children:
        kind = type(node).__name__
        found[name] = "workflow" if _graph_of(node) else kind.removesuffix("Node").lower()
    return found


def _layers(names: list[str], edges: list[GraphEdge]) -> dict[str, int]:
    """Each node's layer: one below its deepest predecessor, loops (back edges) ignored."""
    outgoing: dict[str, list[str]] = {n: [] for n in names}
    for edge in edges:
        outgoing.setdefault(edge.source, []).append(edge.target)
    back = _back_edges(names, outgoing)
    layer = dict.fromkeys(names, 0)
    for name in _topological(names, outgoing, back):
        for target in outgoing.get(name, []):
            if (name, target) not in back:
                layer[target] = max(layer[target], layer[name] + 1)
    return layer


def _back_edges(names: list[str], outgoing: dict[str, list[str]]) -> set[tuple[str, str]]:
    """Edges that return to a node still on the depth-first path from START."""
    back: set[tuple[str, str]] = set()
    seen: set[str] = set()
    for start in names:
        if start in seen:
            continue
        on_path: set[str] = {start}
        path: list[str] = [start]  # the depth-first path from `start`
        followed: list[int] = [0]  # per node on it: how many of its targets were followed
        seen.add(start)
        while path:
            node = path[-1]
            targets = outgoing.get(node) or []
            if followed[-1] == len(targets):
                path.pop()
                followed.pop()
                on_path.discard(node)
                continue
            target = targets[followed[-1]]
            followed[-1] += 1
            if target in on_path:
                back.add((node, target))
            elif target not in seen:
                seen.add(target)
                on_path.add(target)
                path.append(target)
                followed.append(0)
    return back


def _topological(
    names: list[str], outgoing: dict[str, list[str]], back: set[tuple[str, str]]
) -> list[str]:
    incoming = dict.fromkeys(names, 0)
    for source, targets in outgoing.items():
        for target in targets:
            if (source, target) not in back:
                incoming[target] = incoming.get(target, 0) + 1
    ready = [n for n in names if incoming[n] == 0]
    order: list[str] = []
    while ready:
        name = ready.pop(0)
        order.append(name)
        for target in outgoing.get(name, []):
            if (name, target) in back:
                continue
            incoming[target] -= 1
            if incoming[target] == 0:
                ready.append(target)
    return order


def _place(
    names: list[str], layers: dict[str, int], *, kinds: dict[str, str], states: dict[str, str]
) -> list[GraphNodeView]:
    rows: dict[int, list[str]] = {}
    for name in names:
        rows.setdefault(layers[name], []).append(name)
    widest = max((len(r) for r in rows.values()), default=1)
    placed: list[GraphNodeView] = []
    for layer, row in sorted(rows.items()):
        offset = (widest - len(row)) * (NODE_WIDTH + GAP_X) / 2
        for index, name in enumerate(row):
            placed.append(
                GraphNodeView(
                    name=name,
                    kind=kinds.get(name, "agent"),
                    x=GAP_X + offset + index * (NODE_WIDTH + GAP_X),
                    y=GAP_Y / 2 + layer * (NODE_HEIGHT + GAP_Y),
                    state=states.get(name, "idle"),
                )
            )
    return placed


def _states(
    invocation: Invocation, events: Sequence[Event], interrupts: Iterable[Interrupt]
) -> dict[str, str]:
    """Each top-level node's state in the run: from its events, then its checkpoint."""
    states: dict[str, str] = {START_NAME: "done"}
    opened = {i.interrupt_id for i in interrupts if i.status is InterruptStatus.OPEN}
    for event in events:
        if event.invocation_id != invocation.id or event.node_info is None:
            continue
        name = top_node(event.node_info.path)
        if name is None:
            continue
        if event.error_code:
            states[name] = "failed"
        elif any(i in opened for i in event.long_running_tool_ids or []):
            states[name] = "waiting"
        elif event.output is not None or event.long_running_tool_ids:
            states[name] = "done"
        else:
            states.setdefault(name, "running")
    if invocation.status is not InvocationStatus.REWOUND:  # a rewound run waits for nothing
        running = invocation.status is InvocationStatus.RUNNING
        _frontier(invocation.checkpoint, states, running=running)
    if invocation.status is InvocationStatus.COMPLETED:
        states[END_NAME] = "done"
    return states


_RUN_STATES: Final = {
    InvocationStatus.RUNNING: "running",
    InvocationStatus.PAUSED: "waiting",
    InvocationStatus.COMPLETED: "done",
    InvocationStatus.FAILED: "failed",
    InvocationStatus.REWOUND: "idle",
}


def _agent_states(
    invocation: Invocation,
    events: Sequence[Event],
    interrupts: Iterable[Interrupt],
    owners: dict[str, tuple[str, ...]],
) -> dict[str, str]:
    """An agent tree's states: the root has the run's; a sub-agent is done once its
    agents spoke, waiting on an open question of theirs, failed with their error, and
    running while the run goes on and they spoke last."""
    root = next(iter(owners))
    states: dict[str, str] = {START_NAME: "done", root: _RUN_STATES[invocation.status]}
    opened = {i.interrupt_id for i in interrupts if i.status is InterruptStatus.OPEN}
    last: str | None = None
    for event in events:
        drawn = owners.get(event.author) if event.invocation_id == invocation.id else None
        if drawn is None or len(drawn) < 2:
            continue
        last = drawn[1]
        if event.error_code:
            states[last] = "failed"
        elif any(i in opened for i in event.long_running_tool_ids or []):
            states[last] = "waiting"
        elif states.get(last) not in ("failed", "waiting"):
            states[last] = "done"
    if last is not None and invocation.status is InvocationStatus.RUNNING:
        states[last] = "running"
    return states


def _frontier(checkpoint: JsonValue, states: dict[str, str], *, running: bool) -> None:
    """What the checkpoint says runs now: running, waiting and failed runs of each node,
    and (while the run goes on) the nodes triggered next."""
    if not isinstance(checkpoint, dict):
        return
    child = checkpoint.get("child")
    if not isinstance(child, dict):
        return
    current: dict[str, str] = {}
    queue = child.get("queue")
    for trigger in queue if running and isinstance(queue, list) else []:
        if isinstance(trigger, dict) and isinstance(trigger.get("node"), str):
            current[str(trigger["node"])] = "running"
    runs = child.get("runs")
    if not isinstance(runs, dict):
        states.update(current)
        return
    for run in runs.values():
        if not isinstance(run, dict):
            continue
        node, status = run.get("node"), run.get("status")
        shown = {"running": "running", "waiting": "waiting", "failed": "failed"}.get(str(status))
        if isinstance(node, str) and shown is not None:
            previous = current.get(node, "idle")
            current[node] = min(shown, previous, key=_ORDER.index)
    states.update(current)
