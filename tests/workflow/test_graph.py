"""Edge specs -> validated graph -> fingerprint."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from baton import (
    DEFAULT_ROUTE,
    START,
    BaseAgent,
    Edge,
    FunctionNode,
    JoinNode,
    LoopAgent,
    ParallelAgent,
    SequentialAgent,
    Workflow,
)
from baton.errors import GraphValidationError, WorkflowConfigurationError
from baton.workflow.fingerprint import describe_difference
from baton.workflow.graph import fingerprint_of, parse_graph


def a() -> None: ...
def b() -> None: ...
def c() -> None: ...
def d() -> None: ...


def edges_of(wf: Workflow) -> list[str]:
    return sorted(e.describe() for e in wf.graph.edges)


def test_chain_fan_out_and_fan_in() -> None:
    wf = Workflow(name="wf", edges=[("START", a, (b, c), d)])
    assert edges_of(wf) == ["START -> a", "a -> b", "a -> c", "b -> d", "c -> d"]


def test_routing_map_then_chain_continues_from_every_target() -> None:
    wf = Workflow(name="wf", edges=[(START, a, {"x": b, "y": (c,)}, d)])
    assert edges_of(wf) == ["START -> a", "a -> b ['x']", "a -> c ['y']", "b -> d", "c -> d"]
    assert wf.graph.successors("a", ["y"]) == ["c"]
    assert wf.graph.successors("a", ["z"]) == []


def test_default_route_fires_only_when_nothing_else_matched() -> None:
    wf = Workflow(name="wf", edges=[("START", a, {"x": b, DEFAULT_ROUTE: c})])
    assert wf.graph.successors("a", ["x"]) == ["b"]
    assert wf.graph.successors("a", ["nope"]) == ["c"]
    assert wf.graph.successors("a", []) == ["c"]


def test_routes_compare_by_type_so_one_is_not_true() -> None:
    wf = Workflow(
        name="wf",
        edges=[
            ("START", a),
            Edge(from_node=a, to_node=b, route=True),
            Edge(from_node=a, to_node=c, route=1),
        ],
    )
    assert wf.graph.successors("a", [True]) == ["b"]
    assert wf.graph.successors("a", [1]) == ["c"]


def test_explicit_edges_names_and_nodes_mix() -> None:
    nb = FunctionNode(b)
    wf = Workflow(
        name="wf",
        edges=[
            ("START", a),
            Edge(from_node=a, to_node=nb, route=["ok", "fine"]),
            Edge(from_node="b", to_node=a, route="again"),
        ],
    )
    assert edges_of(wf) == ["START -> a", "a -> b ['ok', 'fine']", "b -> a ['again']"]


def test_same_function_is_one_node_everywhere() -> None:
    wf = Workflow(name="wf", edges=[("START", a, b), (b, {"loop": a})])
    assert sorted(wf.nodes) == ["a", "b"]


def test_runs_once_marks_nodes_that_cannot_be_triggered_twice() -> None:
    chain = Workflow(name="wf", edges=[("START", a, (b, c), d)])
    # d has two incoming edges: it runs once per arriving predecessor.
    assert chain.graph.runs_once == {"a", "b", "c"}
    routed = Workflow(name="wf", edges=[("START", a, {"x": b, "y": b})])
    assert routed.graph.runs_once == {"a"}  # two routed edges into b
    loop = Workflow(name="wf", edges=[("START", a, b, {"again": a, "done": c}), (c, d)])
    # a is re-entered from b; everything downstream of a inherits that.
    assert loop.graph.runs_once == frozenset()


def test_every_problem_is_reported_in_one_error() -> None:
    orphan = FunctionNode(c)
    with pytest.raises(GraphValidationError) as caught:
        Workflow(
            name="bad",
            edges=[
                ("START", a, "missing"),
                (b, orphan),
                42,
                ("START",),
                (a, FunctionNode(a, name="b")),
                Edge(from_node=a, to_node=START),
            ],
        )
    problems = caught.value.problems
    assert problems == [
        "edge item 2: 42 is not an edge; use a chain tuple like ('START', a, b) or Edge(...).",
        "edge item 3: a chain needs at least two elements, got ('START',).",
        "edge item 4 element 1: two different nodes are named 'b'; give each a unique name.",
        "edge item 5: START cannot be the target of an edge.",
        "edge item 0 element 2: no node is named 'missing' (known: a, b, c).",
    ]
    assert "workflow 'bad' is invalid (5 problems)" in str(caught.value)


def test_unreachable_nodes_and_unconditional_cycles_are_rejected() -> None:
    with pytest.raises(GraphValidationError) as caught:
        Workflow(name="wf", edges=[("START", a, b, a), (c, d)])
    assert caught.value.problems == [
        "node 'c' is unreachable from START.",
        "node 'd' is unreachable from START.",
        "the cycle a -> b -> a has no routed edge, so it would never end; put a route on one of "
        "its edges.",
    ]


def test_bad_routes_are_rejected() -> None:
    with pytest.raises(GraphValidationError) as caught:
        Workflow(
            name="wf",
            edges=[
                ("START", a, {1.5: b}),
                Edge(from_node=a, to_node=c, route=["x", DEFAULT_ROUTE]),
                Edge(from_node="START", to_node=d, route="r"),
                (a, dict[str, object]()),
            ],
        )
    assert caught.value.problems == [
        "edge item 0 element 2 route 1.5: route 1.5 must be a str, int or bool.",
        "edge item 1: DEFAULT_ROUTE cannot be mixed into a route list.",
        "edge item 2: edges out of START cannot carry a route.",
        "edge item 3 element 1: an empty routing map routes nowhere.",
    ]


def test_no_start_edge_is_reported() -> None:
    with pytest.raises(GraphValidationError, match="no edge starts at START"):
        Workflow(name="wf", edges=[(a, b)])


def test_join_node_and_nested_workflow_are_part_of_the_fingerprint() -> None:
    inner = Workflow(name="inner", edges=[("START", c)])
    join = JoinNode(name="join")
    wf = Workflow(name="wf", edges=[("START", (a, b), join, inner)])
    structure = json.loads(wf.graph.fingerprint())
    assert structure["nodes"]["join"] == "JoinNode"
    assert structure["nodes"]["inner"] == {
        "Workflow": {"workflow": "inner", "nodes": {"c": "FunctionNode"}, "edges": ["START -> c"]}
    }


def test_describe_difference_names_added_and_removed_parts() -> None:
    old = Workflow(name="wf", edges=[("START", a, b)]).graph.fingerprint()
    new = Workflow(name="wf", edges=[("START", a, c)]).graph.fingerprint()
    assert describe_difference(old, new) == (
        "node 'c' was added; node 'b' was removed; edge a -> c was added; edge a -> b was removed"
    )
    assert describe_difference(old, old) == ""


_NAMES = ["n0", "n1", "n2", "n3", "n4"]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(_NAMES), st.sampled_from(_NAMES), st.sampled_from(["r", "s", None])
        ),
        max_size=8,
    ),
    st.randoms(use_true_random=False),
)
def test_fingerprint_is_independent_of_edge_order(
    extra: list[tuple[str, str, str | None]], rng: object
) -> None:
    nodes = {n: FunctionNode(a, name=n) for n in _NAMES}
    items: list[object] = [("START", *nodes.values())]
    seen: set[tuple[str, str, str | None]] = set()
    for source, target, route in extra:
        if (source, target, route) in seen or route is None:
            continue
        seen.add((source, target, route))
        items.append(Edge(from_node=nodes[source], to_node=nodes[target], route=route))
    graph, problems = parse_graph("wf", items)
    shuffled = list(items)
    rng.shuffle(shuffled)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType] -- hypothesis Random
    again, problems_again = parse_graph("wf", shuffled)
    assert problems == problems_again
    if graph is not None and again is not None:
        assert graph.fingerprint() == again.fingerprint()


def agent(name: str, kind: type[BaseAgent] = SequentialAgent, *subs: BaseAgent) -> BaseAgent:
    return kind(name=name, sub_agents=list(subs))


def pipeline(*, critic: type[BaseAgent] = LoopAgent, checks: tuple[str, ...] = ("x",)) -> BaseAgent:
    """pipeline[a, refine[draft, critic[x]]], or a variant of it."""
    critic_agent = agent("critic", critic, *(agent(n) for n in checks))
    return agent(
        "pipeline",
        SequentialAgent,
        agent("a"),
        agent("refine", SequentialAgent, agent("draft"), critic_agent),
    )


def test_an_agent_root_is_fingerprinted_with_its_whole_tree_in_order() -> None:
    assert fingerprint_of(pipeline()) == (
        '{"edges":[],"nodes":{"pipeline":{"Agent":{"kind":"SequentialAgent","sub_agents":['
        '{"kind":"SequentialAgent","name":"a"},'
        '{"kind":{"Agent":{"kind":"SequentialAgent","sub_agents":['
        '{"kind":"SequentialAgent","name":"draft"},'
        '{"kind":{"Agent":{"kind":"LoopAgent","sub_agents":[{"kind":"SequentialAgent","name":"x"}]}},'
        '"name":"critic"}]}},"name":"refine"}]}}},"sub_agents":["a","refine"],"workflow":"pipeline"}'
    )


def test_fingerprints_without_agent_trees_keep_the_format_earlier_runs_recorded() -> None:
    inner = Workflow(name="inner", edges=[("START", c)])
    wf = Workflow(name="wf", edges=[("START", a, (inner, agent("leaf")))])
    assert fingerprint_of(wf) == (
        '{"edges":["START -> a","a -> inner","a -> leaf"],"nodes":{"a":"FunctionNode",'
        '"inner":{"Workflow":{"edges":["START -> c"],"nodes":{"c":"FunctionNode"},'
        '"workflow":"inner"}},"leaf":"SequentialAgent(rerun)"},"workflow":"wf"}'
    )
    assert fingerprint_of(agent("solo", LoopAgent)) == (
        '{"edges":[],"nodes":{"solo":"LoopAgent"},"sub_agents":[],"workflow":"solo"}'
    )


def in_workflows(root: BaseAgent) -> str:
    """The fingerprint of wf: START -> d -> inner, where inner is START -> root."""
    inner = Workflow(name="inner", edges=[("START", root)])
    return fingerprint_of(Workflow(name="wf", edges=[("START", d, inner)]))


@pytest.mark.parametrize(
    ("old", "new", "difference"),
    [
        (
            fingerprint_of(pipeline()),
            fingerprint_of(pipeline(critic=ParallelAgent)),
            "sub-agent 'critic' of 'pipeline/refine' changed (LoopAgent -> ParallelAgent)",
        ),
        (
            fingerprint_of(pipeline(checks=("x", "y"))),
            fingerprint_of(pipeline(checks=("y",))),
            "sub-agent 'x' of 'pipeline/refine/critic' was removed",
        ),
        (
            fingerprint_of(pipeline(checks=("x", "y"))),
            fingerprint_of(pipeline(checks=("y", "x"))),
            "the sub-agents of 'pipeline/refine/critic' were reordered (x, y -> y, x)",
        ),
        (
            fingerprint_of(pipeline(checks=())),
            fingerprint_of(pipeline(checks=("x",))),
            "sub-agent 'x' of 'pipeline/refine/critic' was added",
        ),
        (
            in_workflows(pipeline()),
            in_workflows(pipeline(critic=SequentialAgent, checks=("z",))),
            "sub-agent 'critic' of 'inner/pipeline/refine' changed (LoopAgent -> SequentialAgent); "
            "sub-agent 'z' of 'inner/pipeline/refine/critic' was added; "
            "sub-agent 'x' of 'inner/pipeline/refine/critic' was removed",
        ),
        (
            Workflow(
                name="wf", edges=[("START", Workflow(name="inner", edges=[("START", a)]))]
            ).graph.fingerprint(),
            Workflow(
                name="wf", edges=[("START", Workflow(name="inner", edges=[("START", a, b)]))]
            ).graph.fingerprint(),
            "node 'b' in 'inner' was added; edge a -> b in 'inner' was added",
        ),
        (
            Workflow(name="wf", edges=[("START", a)]).graph.fingerprint(),
            fingerprint_of(agent("wf")),
            "node 'wf' was added; node 'a' was removed; edge START -> a was removed",
        ),
        (
            # As recorded before agent trees were: the root's direct sub-agents by name.
            '{"edges":[],"nodes":{"pipeline":"SequentialAgent"},"sub_agents":["a","refine"],'
            '"workflow":"pipeline"}',
            fingerprint_of(pipeline()),
            "the run was started by an earlier baton version, which recorded only the direct "
            "sub-agents of 'pipeline' (a, refine), not the whole agent tree",
        ),
        (
            "fp",
            fingerprint_of(pipeline()),
            "the workflow's structure changed (the recorded " "fingerprint is not readable)",
        ),
        (
            '{"workflow":"wf"}',
            '{"workflow": "wf"}',
            "the workflow's structure changed (fingerprint 876b914a5e23 -> a8512b106185)",
        ),
    ],
    ids=[
        "kind-at-depth-2",
        "removed-at-depth-3",
        "reordered",
        "leaf-gains-sub-agents",
        "agent-in-nested-workflow",
        "nested-workflow-node",
        "workflow-became-agent",
        "earlier-format",
        "unreadable",
        "unnamed-difference",
    ],
)
def test_describe_difference_names_each_change_with_its_path(
    old: str, new: str, difference: str
) -> None:
    assert describe_difference(old, new) == difference


_KINDS: dict[str, type[BaseAgent]] = {
    "seq": SequentialAgent,
    "loop": LoopAgent,
    "par": ParallelAgent,
}

TreeSpec = tuple[str, str, tuple["TreeSpec", ...]]

_trees: st.SearchStrategy[TreeSpec] = st.recursive(
    st.tuples(st.sampled_from(_NAMES), st.sampled_from(list(_KINDS)), st.just(())),
    lambda children: st.tuples(
        st.sampled_from(_NAMES),
        st.sampled_from(list(_KINDS)),
        st.lists(children, max_size=3).map(tuple),
    ),
    max_leaves=6,
)


def names_in(spec: TreeSpec) -> list[str]:
    return [spec[0], *(n for child in spec[2] for n in names_in(child))]


def build(spec: TreeSpec) -> BaseAgent:
    name, kind, children = spec
    return agent(name, _KINDS[kind], *(build(child) for child in children))


@given(_trees, _trees)
def test_equal_agent_trees_fingerprint_alike_and_every_difference_is_named(
    first: TreeSpec, second: TreeSpec
) -> None:
    for spec in (first, second):
        assume(len(set(names_in(spec))) == len(names_in(spec)))
    root_a = ("root", "seq", (first,))
    root_b = ("root", "seq", (second,))
    ways: tuple[Callable[[BaseAgent], str], ...] = (fingerprint_of, in_workflows)
    for fingerprint in ways:
        old, new = fingerprint(build(root_a)), fingerprint(build(root_b))
        assert old == fingerprint(build(root_a))
        assert (old == new) == (first == second)
        assert (describe_difference(old, new) == "") == (first == second)


def test_a_workflow_keeps_its_edges_as_given_and_its_fingerprint_as_before() -> None:
    def draft(node_input: str) -> str:
        return node_input

    def review(node_input: str) -> bool:
        return True

    items: list[object] = [("START", draft, review), (review, {False: draft})]
    wf = Workflow(name="wf", edges=items)
    assert wf.edges == items
    assert wf.edges is not items  # a later change to the caller's list changes nothing
    # The fingerprint runs paused under earlier versions recorded: the edges add nothing.
    assert fingerprint_of(wf) == (
        '{"edges":["START -> draft","draft -> review","review -> draft [False]"],'
        '"nodes":{"draft":"FunctionNode","review":"FunctionNode"},"workflow":"wf"}'
    )
    assert "edges" not in wf.model_dump()


def test_edges_assigned_after_construction_are_refused_and_change_nothing() -> None:
    wf = Workflow(name="wf", edges=[("START", a, b)])
    before = (edges_of(wf), fingerprint_of(wf.graph))

    with pytest.raises(WorkflowConfigurationError, match="workflow 'wf': edges cannot be") as e:
        wf.edges = [("START", c, d)]

    assert "build a new Workflow" in str(e.value)
    assert (edges_of(wf), fingerprint_of(wf.graph)) == before
    assert wf.edges == [("START", a, b)]
    wf.description = "other fields stay assignable"
    assert wf.description == "other fields stay assignable"
