"""From edge specs to a validated graph with a structural fingerprint (no I/O).

An edge item is a chain tuple `("START", a, b)`, whose elements may be a node
(object, function or name), a tuple of nodes (fan-out / fan-in), or a routing map
`{route_value: node_or_tuple}`; or an `Edge(from_node=, to_node=, route=)`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, final

from pydantic import JsonValue

from baton.events import RouteValue
from baton.workflow.fingerprint import (
    AGENT_KEY,
    AUTH_FLAG,
    CONFIRM_FLAG,
    ITEM_OF,
    WORKFLOW_KEY,
    digest_of,
)
from baton.workflow.nodes import START, FunctionNode, JoinNode, Node, StartNode

__all__ = [
    "DEFAULT_ROUTE",
    "Edge",
    "Graph",
    "GraphEdge",
    "fingerprint_of",
    "parse_graph",
]

DEFAULT_ROUTE: Final = "__DEFAULT__"
"""A route that fires when none of the node's other routes matched."""

_START_NAME: Final = START.name


@final
@dataclass(frozen=True, kw_only=True)
class Edge:
    """One edge spelled out: `Edge(from_node=a, to_node=b, route="ok")`."""

    from_node: object
    to_node: object
    route: RouteValue | Sequence[RouteValue] | None = None


@dataclass(frozen=True)
class GraphEdge:
    """A resolved edge; `routes` is None for an unconditional edge."""

    source: str
    target: str
    routes: tuple[RouteValue, ...] | None = None

    def describe(self) -> str:
        shown = "START" if self.source == _START_NAME else self.source
        label = "" if self.routes is None else f" [{', '.join(map(repr, self.routes))}]"
        return f"{shown} -> {self.target}{label}"


@dataclass
class Graph:
    """A validated workflow graph."""

    name: str
    nodes: dict[str, Node]
    edges: list[GraphEdge]
    outgoing: dict[str, list[GraphEdge]] = field(default_factory=dict[str, list[GraphEdge]])
    predecessors: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    runs_once: frozenset[str] = frozenset()
    """Nodes that run at most once per run of the workflow (see `_runs_once`)."""
    joins: frozenset[str] = frozenset()
    """The JoinNodes, which wait for every predecessor."""
    terminals: frozenset[str] = frozenset()
    """The nodes without outgoing edges: the one that produced output is the workflow's."""
    unrouted: dict[str, tuple[str, ...]] = field(default_factory=dict[str, tuple[str, ...]])
    """The successors of each node whose outgoing edges are all unconditional (most)."""

    def __post_init__(self) -> None:
        for edge in self.edges:
            self.outgoing.setdefault(edge.source, []).append(edge)
            preds = self.predecessors.setdefault(edge.target, [])
            if edge.source not in preds:
                preds.append(edge.source)
        self.runs_once = _runs_once(self.edges)
        self.joins = frozenset(n for n, node in self.nodes.items() if isinstance(node, JoinNode))
        self.terminals = frozenset(n for n in self.nodes if n not in self.outgoing)
        self.unrouted = {
            name: tuple(e.target for e in edges)
            for name, edges in self.outgoing.items()
            if all(e.routes is None for e in edges)
        }

    def successors(self, name: str, routes: Sequence[RouteValue]) -> Sequence[str]:
        """The nodes triggered when `name` finishes having emitted `routes`."""
        unrouted = self.unrouted.get(name)
        if unrouted is not None:
            return unrouted  # a lookup, not a walk over the edges: this runs on every step
        chosen: list[str] = []
        defaults: list[str] = []
        matched = False
        for edge in self.outgoing.get(name, ()):
            if edge.routes is None:
                chosen.append(edge.target)
            elif DEFAULT_ROUTE in edge.routes:
                defaults.append(edge.target)
            elif any(_route_in(r, edge.routes) for r in routes):
                chosen.append(edge.target)
                matched = True
        return chosen + ([] if matched else defaults)

    def structure(self) -> dict[str, JsonValue]:
        """The canonical structure the fingerprint is computed from."""
        edges: list[JsonValue] = [e.describe() for e in sorted(self.edges, key=GraphEdge.describe)]
        return {
            "workflow": self.name,
            "nodes": {name: _kind(n) for name, n in sorted(self.nodes.items())},
            "edges": edges,
        }

    def fingerprint(self) -> str:
        """The structure as canonical JSON: equal iff nodes (with kinds) and edges are equal."""
        return _canonical(self.structure())

    def digest(self) -> str:
        """A short hash of the fingerprint, for display."""
        return digest_of(self.fingerprint())


def _runs_once(edges: Sequence[GraphEdge]) -> frozenset[str]:
    """The nodes with a single incoming edge whose source is START or itself runs once.

    Such a node is triggered at most once, so its run id is always 1 and the
    scheduler need not count its runs. A node on a cycle never qualifies: the
    cycle's entry has two incoming edges (from outside and around the loop).
    """
    incoming: dict[str, list[str]] = {}
    for edge in edges:
        incoming.setdefault(edge.target, []).append(edge.source)
    once: set[str] = set()
    grew = True
    while grew:
        grew = False
        for target, sources in incoming.items():
            if target in once or len(sources) != 1:
                continue
            if sources[0] == _START_NAME or sources[0] in once:
                once.add(target)
                grew = True
    return frozenset(once)


def _route_in(route: RouteValue, routes: tuple[RouteValue, ...]) -> bool:
    # `True == 1` in Python; routes compare by type too, so `1` does not match `True`.
    return any(route == r and type(route) is type(r) for r in routes)


def _kind(node: Node) -> JsonValue:
    nested = getattr(node, "graph", None)
    if isinstance(nested, Graph):
        return {WORKFLOW_KEY: nested.structure()}
    flags = ["rerun"] if node.rerun_on_resume else []
    if _asks_confirmation(node):
        flags.append(CONFIRM_FLAG)
    if _asks_credential(node):
        flags.append(AUTH_FLAG)
    kind = _versioned(type(node).__name__ + (f"({', '.join(flags)})" if flags else ""), node)
    item = getattr(node, "item_node", None)
    if item is not None:
        kind = _with_item(kind, item)
    return _with_sub_agents(kind, node)


def _with_item(kind: str, item: Node) -> str:
    """A parallel worker's `kind` with the node each item runs through, whose options
    (rerun, confirmation, version) decide how a paused item resumes as any node's do.

    Read by attribute (`item_node`): only workers have one. Every worker names its item,
    a plain FunctionNode too, so a fingerprint with no item in it was recorded before
    items were, and `fingerprint.resumes_into` lets such runs resume.
    """
    inner = _kind(item)
    return f"{kind}{ITEM_OF}{inner if isinstance(inner, str) else _canonical(inner)}"


def _asks_confirmation(node: object) -> bool:
    """Whether the node asks a person to confirm its runs (`require_confirmation`): like
    `rerun_on_resume`, it decides what a paused run waits for and how it resumes, so a
    run that paused to ask must not resume into code that no longer asks (it would run
    the body although the person rejected it).

    Read by attribute: most nodes have no such option.
    """
    return getattr(node, "require_confirmation", False) is not False


def _asks_credential(node: object) -> bool:
    """Whether the node asks the user for a credential before it runs (`auth_config`):
    as `require_confirmation`, it decides what a paused run waits for, so a run that
    paused to ask must not resume into code that no longer asks (its body would run
    without the credential the answer gave).

    Read by attribute: most nodes have no such option.
    """
    return getattr(node, "auth_config", None) is not None


def _versioned(kind: str, node: object) -> str:
    """`kind` with the node's `version` when its author set one (else as before versions).

    Read by attribute: the version is the author's mark for the fingerprint, not
    something the engine needs of every node.
    """
    version = getattr(node, "version", None)
    return kind if version is None else f"{kind} version {version}"


def _with_sub_agents(kind: str, agent: object) -> JsonValue:
    """`kind`, with the agent's sub-agent tree (names, kinds, order) when it has sub-agents.

    A node without sub-agents stays a bare kind, as in fingerprints recorded before
    agent trees were, so such runs still resume after an upgrade.
    """
    subs = _sub_agents(agent)
    if not subs:
        return kind
    tree: list[JsonValue] = [
        {"name": _name_of(sub), "kind": _with_sub_agents(_versioned(type(sub).__name__, sub), sub)}
        for sub in subs
    ]
    return {AGENT_KEY: {"kind": kind, "sub_agents": tree}}


def _sub_agents(agent: object) -> list[object]:
    # Read by attribute: agents import this package, so it cannot import BaseAgent.
    return list(getattr(agent, "sub_agents", None) or [])


def _name_of(agent: object) -> str:
    return str(getattr(agent, "name", ""))


def _canonical(structure: JsonValue) -> str:
    return json.dumps(structure, sort_keys=True, separators=(",", ":"))


class _Parser:
    def __init__(self, workflow: str) -> None:
        self.workflow = workflow
        self.problems: list[str] = []
        self.nodes: dict[str, Node] = {}
        self.by_callable: dict[int, Node] = {}
        self.refs: list[tuple[str, str]] = []  # (name, where) referenced by string
        self.edges: list[GraphEdge] = []

    def resolve(self, item: object, where: str) -> str | None:
        """The node name for an edge element, registering the node; None on a problem."""
        if isinstance(item, StartNode) or item == "START":
            return _START_NAME
        if isinstance(item, str):
            self.refs.append((item, where))
            return item
        if isinstance(item, Node):
            return self._register(item, where)
        if callable(item):
            return self._register_callable(item, where)
        self.problems.append(
            f"{where}: {item!r} is not a node; use a node, a function, a node name or 'START'."
        )
        return None

    def _register_callable(self, func: Callable[..., Any], where: str) -> str | None:
        known = self.by_callable.get(id(func))
        if known is not None:
            return known.name
        try:
            wrapped = FunctionNode(func)
        except (TypeError, ValueError) as exc:
            self.problems.append(f"{where}: {exc}")
            return None
        self.by_callable[id(func)] = wrapped
        return self._register(wrapped, where)

    def _register(self, node: Node, where: str) -> str:
        existing = self.nodes.get(node.name)
        if existing is not None and existing is not node:
            self.problems.append(
                f"{where}: two different nodes are named '{node.name}'; give each a unique name."
            )
        elif node.name == _START_NAME and not isinstance(node, StartNode):
            self.problems.append(f"{where}: the name '{_START_NAME}' is reserved for START.")
        else:
            self.nodes[node.name] = node
        return node.name

    def add_edge(
        self, source: str, target: str, routes: tuple[RouteValue, ...] | None, where: str
    ) -> None:
        if target == _START_NAME:
            self.problems.append(f"{where}: START cannot be the target of an edge.")
            return
        if source == _START_NAME and routes is not None:
            self.problems.append(f"{where}: edges out of START cannot carry a route.")
            return
        edge = GraphEdge(source, target, routes)
        if edge in self.edges:
            self.problems.append(f"{where}: duplicate edge {edge.describe()}.")
            return
        self.edges.append(edge)


def _routes_of(route: object, where: str, parser: _Parser) -> tuple[RouteValue, ...] | None:
    if route is None:
        return None
    values: Iterable[object] = route if isinstance(route, list | tuple) else (route,)  # pyright: ignore[reportUnknownVariableType] -- checked below
    checked: list[RouteValue] = []
    for value in values:  # pyright: ignore[reportUnknownVariableType] -- checked here
        if not isinstance(value, str | int | bool):
            parser.problems.append(f"{where}: route {value!r} must be a str, int or bool.")
            return None
        checked.append(value)
    if len(checked) > 1 and DEFAULT_ROUTE in checked:
        parser.problems.append(f"{where}: DEFAULT_ROUTE cannot be mixed into a route list.")
        return None
    if not checked:
        parser.problems.append(f"{where}: an empty route list never fires.")
        return None
    return tuple(checked)


def _targets(
    element: object, where: str, parser: _Parser
) -> list[tuple[str, tuple[RouteValue, ...] | None]]:
    """(target, routes) pairs an element stands for; routes only for routing maps."""
    if isinstance(element, Mapping):
        if not element:
            parser.problems.append(f"{where}: an empty routing map routes nowhere.")
        pairs: list[tuple[str, tuple[RouteValue, ...] | None]] = []
        mapping: Mapping[object, object] = element  # pyright: ignore[reportUnknownVariableType] -- keys and values are checked below
        for route, target in mapping.items():
            routes = _routes_of(route, f"{where} route {route!r}", parser)
            for name, _ in _targets(target, f"{where} route {route!r}", parser):
                pairs.append((name, routes))
        return pairs
    if isinstance(element, tuple):
        if not element:
            parser.problems.append(f"{where}: an empty tuple names no node.")
        members: tuple[object, ...] = element  # pyright: ignore[reportUnknownVariableType] -- checked by resolve
        names = [parser.resolve(e, where) for e in members]
        return [(n, None) for n in names if n is not None]
    name = parser.resolve(element, where)
    return [] if name is None else [(name, None)]


def _parse_chain(chain: tuple[object, ...], where: str, parser: _Parser) -> None:
    if len(chain) < 2:
        parser.problems.append(f"{where}: a chain needs at least two elements, got {chain!r}.")
        return
    if isinstance(chain[0], Mapping):
        parser.problems.append(f"{where}: a chain cannot begin with a routing map.")
        return
    sources = [name for name, _ in _targets(chain[0], f"{where} element 0", parser)]
    previous_was_map = False
    for index, element in enumerate(chain[1:], start=1):
        is_map = isinstance(element, Mapping)
        if is_map and previous_was_map:
            parser.problems.append(f"{where} element {index}: two routing maps in a row.")
        label = f"{where} element {index}"
        targets = _targets(element, label, parser)
        if any(name == _START_NAME for name, _ in targets):
            parser.problems.append(f"{label}: START may only begin a chain.")
            targets = [(n, r) for n, r in targets if n != _START_NAME]
        for source in sources:
            for target, routes in targets:
                parser.add_edge(source, target, routes, label)
        sources = [name for name, _ in targets]
        previous_was_map = is_map


def parse_graph(name: str, edges: Sequence[object]) -> tuple[Graph | None, list[str]]:
    """Parse and validate edge items; returns the graph, or None and every problem found."""
    parser = _Parser(name)
    for index, item in enumerate(edges):
        where = f"edge item {index}"
        if isinstance(item, Edge):
            source = parser.resolve(item.from_node, f"{where} from_node")
            target = parser.resolve(item.to_node, f"{where} to_node")
            routes = _routes_of(item.route, where, parser)
            if source is not None and target is not None:
                parser.add_edge(source, target, routes, where)
        elif isinstance(item, tuple):
            _parse_chain(item, where, parser)  # pyright: ignore[reportUnknownArgumentType] -- elements checked by resolve
        else:
            parser.problems.append(
                f"{where}: {item!r} is not an edge; use a chain tuple like "
                "('START', a, b) or Edge(...)."
            )
    _check_names(parser)
    if not parser.problems:
        _check_shape(parser)
        _check_only_after_start(parser)
    if parser.problems:
        return None, parser.problems
    return Graph(name, parser.nodes, parser.edges), []


def _check_names(parser: _Parser) -> None:
    for ref, where in parser.refs:
        if ref not in parser.nodes:
            known = ", ".join(sorted(parser.nodes)) or "none"
            parser.problems.append(f"{where}: no node is named '{ref}' (known: {known}).")


def _check_shape(parser: _Parser) -> None:
    outgoing: dict[str, list[GraphEdge]] = {}
    for edge in parser.edges:
        outgoing.setdefault(edge.source, []).append(edge)
    if _START_NAME not in outgoing:
        parser.problems.append("no edge starts at START; begin a chain with 'START'.")
        return
    reached = _reachable(outgoing, lambda e: True)
    for name in parser.nodes:
        if name not in reached:
            parser.problems.append(f"node '{name}' is unreachable from START.")
    cycle = _unconditional_cycle(outgoing)
    if cycle:
        parser.problems.append(
            f"the cycle {' -> '.join(cycle)} has no routed edge, so it would never end; "
            "put a route on one of its edges."
        )


def _check_only_after_start(parser: _Parser) -> None:
    """A node that reads the conversation, not its input (a chat-mode LlmAgent), follows
    only START. Read by attribute: agents import this package, so it cannot import them."""
    for edge in parser.edges:
        node = parser.nodes[edge.target]
        if edge.source != _START_NAME and getattr(node, "only_after_start", False):
            parser.problems.append(
                f"node '{edge.target}' follows '{edge.source}', but it is an LlmAgent with "
                "mode='chat': it answers the conversation, not a node's output, so only START "
                "may precede it. Leave its mode unset (or 'single_turn') to give it "
                f"'{edge.source}''s output."
            )


def _reachable(
    outgoing: dict[str, list[GraphEdge]], follow: Callable[[GraphEdge], bool]
) -> set[str]:
    seen = {_START_NAME}
    stack = [_START_NAME]
    while stack:
        for edge in outgoing.get(stack.pop(), ()):
            if follow(edge) and edge.target not in seen:
                seen.add(edge.target)
                stack.append(edge.target)
    return seen


def _unconditional_cycle(outgoing: dict[str, list[GraphEdge]]) -> list[str]:
    plain = {s: [e.target for e in es if e.routes is None] for s, es in outgoing.items()}
    state: dict[str, int] = {}  # 1 visiting, 2 done
    path: list[str] = []

    def visit(name: str) -> list[str]:
        state[name] = 1
        path.append(name)
        for target in plain.get(name, ()):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[name] = 2
        return []

    for start in plain:
        if start not in state and (found := visit(start)):
            return found
    return []


def fingerprint_of(root: object) -> str:
    """The fingerprint of a root node: its graph's for a workflow, else its agent tree.

    Args:
        root: an App's root node (a Workflow, an agent or another node).

    Returns:
        Canonical JSON, equal for equal structures in any process.
    """
    graph = getattr(root, "graph", None)
    if isinstance(graph, Graph):
        return graph.fingerprint()
    name = _name_of(root)
    structure: dict[str, JsonValue] = {
        "workflow": name,
        "nodes": {name: _with_sub_agents(_versioned(type(root).__name__, root), root)},
        "edges": [],
        # The direct sub-agents' names, as recorded before agent trees were: kept so an
        # unchanged agent without sub-agents still matches runs started back then.
        "sub_agents": [_name_of(sub) for sub in _sub_agents(root)],
    }
    return _canonical(structure)
