"""An app's structure for the reference's web UI: as data, and as Graphviz DOT to draw.

Both come from what baton validated when the app loaded: a workflow's parsed graph
(its nodes, and its edges with their routes), nested workflows by their names, and
an agent's tree of sub-agents. START is drawn as `__START__`; every node with no
outgoing edge leads to `__END__`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, final

from pydantic import JsonValue

from baton.workflow.graph import Graph, GraphEdge
from baton.workflow.nodes import START

__all__ = ["Palette", "app_structure", "dot_sources", "workflow_paths"]

START_NAME: Final = START.name
END_NAME: Final = "__END__"

_KINDS: Final = {"FunctionNode": "function", "JoinNode": "join", "StartNode": "start"}


def _graph_of(node: object) -> Graph | None:
    graph = getattr(node, "graph", None)
    return graph if isinstance(graph, Graph) else None


def _sub_agents(node: object) -> list[object]:
    return list(getattr(node, "sub_agents", None) or [])


def _kind(node: object) -> str:
    if _graph_of(node) is not None:
        return "workflow"
    name = type(node).__name__
    return _KINDS.get(name, "agent" if name.endswith("Agent") else name.lower())


def _describe(node: object) -> dict[str, JsonValue]:
    """A node as the UI reads it: name, type, description, and what it contains."""
    found: dict[str, JsonValue] = {
        "name": str(getattr(node, "name", "")),
        "type": _kind(node),
        "description": str(getattr(node, "description", "") or ""),
    }
    graph = _graph_of(node)
    if graph is not None:
        found["graph"] = _graph_data(graph)
    subs = _sub_agents(node)
    if subs:
        found["sub_agents"] = [_describe(sub) for sub in subs]
    return found


def _graph_data(graph: Graph) -> dict[str, JsonValue]:
    start: dict[str, JsonValue] = {"name": START_NAME, "type": "start"}
    nodes: dict[str, dict[str, JsonValue]] = {START_NAME: start}
    nodes.update({name: _describe(node) for name, node in graph.nodes.items()})
    edges: list[JsonValue] = []
    for edge in graph.edges:
        item: dict[str, JsonValue] = {
            "from_node": nodes[edge.source],
            "to_node": nodes[edge.target],
        }
        routes: list[JsonValue] = list(edge.routes or ())
        if routes:
            item["route"] = routes if len(routes) > 1 else routes[0]
        edges.append(item)
    return {"nodes": list[JsonValue](nodes.values()), "edges": edges}


def app_structure(name: str, root: object, readme: str | None = None) -> dict[str, JsonValue]:
    """`GET /dev/apps/{app}/build_graph`: the app's name and its root's structure."""
    found: dict[str, JsonValue] = {"name": name, "root_agent": _describe(root)}
    if readme:
        found["readme"] = readme
    return found


def workflow_paths(root: object, prefix: str = "") -> Iterator[tuple[str, object]]:
    """Every drawable level: `""` for the root, then nested workflows and agents by path."""
    yield prefix, root
    graph = _graph_of(root)
    children = list(graph.nodes.values()) if graph is not None else _sub_agents(root)
    for child in children:
        if _graph_of(child) is not None or _sub_agents(child):
            name = str(getattr(child, "name", ""))
            yield from workflow_paths(child, f"{prefix}/{name}" if prefix else name)


@final
@dataclass(frozen=True)
class Palette:
    """The colours of one theme."""

    background: str
    node: str
    border: str
    text: str
    edge: str
    start: str
    end: str

    @classmethod
    def of(cls, dark: bool) -> Palette:
        if dark:
            return cls("#0F172A", "#1E293B", "#475569", "#F8FAFC", "#94A3B8", "#059669", "#DC2626")
        return cls("#FFFFFF", "#F1F5F9", "#94A3B8", "#0F172A", "#475569", "#10B981", "#EF4444")


def _quote(text: str) -> str:
    return json.dumps(text)  # a DOT string literal: double quotes, backslash escapes


def dot_sources(root: object, *, dark: bool) -> dict[str, dict[str, str]]:
    """`GET /dev/apps/{app}/build_graph_image`: `{path: {"dotSrc": <DOT>}}` per level."""
    palette = Palette.of(dark)
    return {path: {"dotSrc": _dot(level, palette)} for path, level in workflow_paths(root)}


def _dot(level: object, palette: Palette) -> str:
    graph = _graph_of(level)
    edges = list(graph.edges) if graph is not None else _tree_edges(level)
    names = list(dict.fromkeys([n for e in edges for n in (e.source, e.target)]))
    if graph is not None:
        names += [n for n in graph.nodes if n not in names]
    elif not names:
        names = [str(getattr(level, "name", ""))]
    ends = _terminal_nodes(graph, names) if graph is not None else []
    lines = [
        "digraph {",
        f"  graph [bgcolor={_quote(palette.background)} fontname=Helvetica rankdir=TB]",
        f'  node [shape=rect style="rounded,filled" fillcolor={_quote(palette.node)} '
        f"color={_quote(palette.border)} fontcolor={_quote(palette.text)} fontname=Helvetica]",
        f"  edge [color={_quote(palette.edge)} fontcolor={_quote(palette.text)} "
        "fontname=Helvetica fontsize=10]",
    ]
    for name in names:
        lines.append(f"  {_quote(name)} [{_node_style(name, graph, palette)}]")
    for edge in edges:
        label = ", ".join(str(r) for r in edge.routes) if edge.routes else ""
        lines.append(f"  {_quote(edge.source)} -> {_quote(edge.target)} [label={_quote(label)}]")
    if ends:
        lines.append(f"  {_quote(END_NAME)} [{_terminal_style('END', palette.end)}]")
        lines += [f"  {_quote(name)} -> {_quote(END_NAME)}" for name in ends]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _tree_edges(agent: object) -> list[GraphEdge]:
    """An agent's tree drawn as edges from each agent to its sub-agents."""
    name = str(getattr(agent, "name", ""))
    found: list[GraphEdge] = []
    for sub in _sub_agents(agent):
        found.append(GraphEdge(name, str(getattr(sub, "name", ""))))
        found.extend(_tree_edges(sub))
    return found


def _terminal_nodes(graph: Graph, names: list[str]) -> list[str]:
    sources = {e.source for e in graph.edges}
    return [n for n in names if n in graph.nodes and n not in sources]


def _node_style(name: str, graph: Graph | None, palette: Palette) -> str:
    if name == START_NAME:
        return _terminal_style("START", palette.start)
    node = graph.nodes.get(name) if graph is not None else None
    kind = _kind(node) if node is not None else "agent"
    return f"label={_quote(name)} tooltip={_quote(kind)}"


def _terminal_style(label: str, colour: str) -> str:
    filled = f'shape=oval style=filled fillcolor={_quote(colour)} fontcolor="#FFFFFF"'
    return f"label={_quote(label)} {filled}"
