"""Reading two workflow fingerprints side by side: what changed, in words.

A fingerprint (see `graph.fingerprint_of`) is canonical JSON: the workflow's name,
its nodes by name with their kinds, and its edges. A kind is a class name (with the
node's resume options: `FunctionNode(rerun, confirm, auth)`), a nested
workflow (`{"Workflow": structure}`) or an agent with sub-agents
(`{"Agent": {"kind": ..., "sub_agents": [{"name": ..., "kind": ...}, ...]}}`).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Final, cast

__all__ = [
    "AGENT_KEY",
    "AUTH_FLAG",
    "CONFIRM_FLAG",
    "ITEM_OF",
    "WORKFLOW_KEY",
    "describe_difference",
    "digest_of",
    "resumes_into",
]

WORKFLOW_KEY: Final = "Workflow"
"""The key of a nested workflow's structure in a node's kind."""
AGENT_KEY: Final = "Agent"
"""The key of an agent's sub-agent tree in a node's kind."""
CONFIRM_FLAG: Final = "confirm"
"""A node kind's flag for a node that asks a person to confirm its runs (`FunctionNode(rerun,
confirm)`); such a node always reruns on resume."""
AUTH_FLAG: Final = "auth"
"""A node kind's flag for a node that asks the user for a credential before it runs
(`FunctionNode(rerun, auth)`, `auth_config`); such a node always reruns on resume."""
ITEM_OF: Final = " of "
"""In a parallel worker's kind, what comes before the kind of the node each item runs
through (`ParallelWorker(rerun) of FunctionNode version 2`)."""
_WORKER_WITH_ITEM: Final = re.compile(rf"(\w+(?:\([^)]*\))?){ITEM_OF}.*", re.DOTALL)


def resumes_into(recorded: str, current: str) -> bool:
    """Whether a run that started with the fingerprint `recorded` may resume under code
    fingerprinted `current`: the same structure, or one where only nodes that did not ask
    for a confirmation (or a credential) now do.

    The second case is a run started before baton fingerprinted confirmations or
    credentials (its nodes that asked were recorded without the flag, and still ask), or
    a node that started asking since: it asks before its body runs, so nothing runs
    unconfirmed or without its credential. A node that stopped asking is a change: it
    would run a body the person rejected, or one that no longer reads the credential
    the run waits for.
    """
    if recorded == current:
        return True
    if _without_new_asks(recorded, current) == recorded:
        return True
    return _recorded_before_items(recorded, current)


def _without_new_asks(recorded: str, current: str) -> str:
    """`current` without the asking flags that `recorded` has on none of its nodes (the
    credential flag comes last in a kind, so it goes first)."""
    for flag in (AUTH_FLAG, CONFIRM_FLAG):
        if f", {flag}" not in recorded:
            current = current.replace(f", {flag}", "")
    return current


def _recorded_before_items(recorded: str, current: str) -> bool:
    """Whether `recorded` is `current` as fingerprinted before parallel workers named
    their item node: none of its workers names one, and `current` without its items is
    it. (Every worker names its item since, so a run recorded since never matches this.)
    """
    try:
        before = json.loads(recorded)
        without = _without_items(json.loads(current))
    except ValueError:
        return False
    return _without_items(before) == before and without == before


def _without_items(structure: object) -> object:
    """A fingerprint's structure with each parallel worker's item left out of its kind."""
    if isinstance(structure, list):
        return [_without_items(v) for v in cast(list[object], structure)]
    if not isinstance(structure, dict):
        return structure
    found: dict[str, object] = {}
    for key, value in cast(dict[str, object], structure).items():
        if key == "nodes" and isinstance(value, dict):
            value = {
                name: _worker_alone(kind) for name, kind in cast(dict[str, object], value).items()
            }
        found[key] = _without_items(value)
    return found


def _worker_alone(kind: object) -> object:
    """A node's kind without the item a parallel worker names (other kinds as they are)."""
    if not isinstance(kind, str):
        return kind
    worker = _WORKER_WITH_ITEM.fullmatch(kind)
    return worker[1] if worker else kind


def describe_difference(old: str, new: str) -> str:
    """What changed between two fingerprints, in words, each change named with its path.

    Paths are slash-joined node and agent names below the root, e.g. "sub-agent
    'critic' of 'pipeline/refine' changed (LoopAgent -> SequentialAgent)" or
    "node 'c' in 'inner' was added".

    Args:
        old: the fingerprint a run started with.
        new: the fingerprint of the code resuming it.

    Returns:
        The changes joined by '; ', a general sentence when they cannot be named,
        and '' only when the fingerprints are equal.
    """
    if old == new:
        return ""
    try:
        before, after = _mapping(json.loads(old)), _mapping(json.loads(new))
    except ValueError:
        return "the workflow's structure changed (the recorded fingerprint is not readable)"
    changes = _before_agent_trees(before) or _graph_changes((), before, after)
    if before.get("workflow") != after.get("workflow"):
        changes.append(f"workflow renamed '{before.get('workflow')}' -> '{after.get('workflow')}'")
    return "; ".join(changes) or (
        f"the workflow's structure changed (fingerprint {digest_of(old)} -> {digest_of(new)})"
    )


def _before_agent_trees(before: dict[str, object]) -> list[str]:
    """Explains an agent root's fingerprint recorded before agent trees were (or nothing).

    That format kept only the names of the root's direct sub-agents, beside a bare
    kind; this format never pairs a bare kind with sub-agents.
    """
    name = str(before.get("workflow"))
    direct = _strings(before.get("sub_agents"))
    if not direct or not isinstance(_mapping(before.get("nodes")).get(name), str):
        return []
    return [
        "the run was started by an earlier baton version, which recorded only the direct "
        f"sub-agents of '{name}' ({', '.join(direct)}), not the whole agent tree"
    ]


def _graph_changes(
    path: tuple[str, ...], before: dict[str, object], after: dict[str, object]
) -> list[str]:
    """Nodes and edges added, removed or changed in one (possibly nested) workflow."""
    where = f" in '{'/'.join(path)}'" if path else ""
    old_nodes, new_nodes = _mapping(before.get("nodes")), _mapping(after.get("nodes"))
    changes = [f"node '{n}'{where} was added" for n in sorted(new_nodes) if n not in old_nodes]
    changes += [f"node '{n}'{where} was removed" for n in sorted(old_nodes) if n not in new_nodes]
    for name in sorted(old_nodes.keys() & new_nodes.keys()):
        label = f"node '{name}'{where}"
        changes += _kind_changes((*path, name), label, old_nodes[name], new_nodes[name])
    old_edges, new_edges = _strings(before.get("edges")), _strings(after.get("edges"))
    changes += [f"edge {e}{where} was added" for e in sorted(set(new_edges) - set(old_edges))]
    changes += [f"edge {e}{where} was removed" for e in sorted(set(old_edges) - set(new_edges))]
    return changes


def _kind_changes(path: tuple[str, ...], label: str, old: object, new: object) -> list[str]:
    """How the node or sub-agent at `path` changed: its kind, nested graph or sub-agents."""
    if old == new:
        return []
    old_graph, new_graph = _nested_graph(old), _nested_graph(new)
    if old_graph is not None and new_graph is not None:
        return _graph_changes(path, old_graph, new_graph)
    changes: list[str] = []
    if _base_kind(old) != _base_kind(new):
        changes.append(f"{label} changed ({_base_kind(old)} -> {_base_kind(new)})")
    if old_graph is None and new_graph is None:
        changes += _sub_agent_changes(path, _sub_agent_kinds(old), _sub_agent_kinds(new))
    return changes


def _sub_agent_changes(
    path: tuple[str, ...], old: dict[str, object], new: dict[str, object]
) -> list[str]:
    """Sub-agents of the agent at `path` added, removed, changed or reordered."""
    of = f" of '{'/'.join(path)}'"
    changes = [f"sub-agent '{n}'{of} was added" for n in new if n not in old]
    changes += [f"sub-agent '{n}'{of} was removed" for n in old if n not in new]
    for name in (n for n in old if n in new):
        changes += _kind_changes((*path, name), f"sub-agent '{name}'{of}", old[name], new[name])
    kept_before, kept_after = [n for n in old if n in new], [n for n in new if n in old]
    if kept_before != kept_after:
        changes.append(
            f"the sub-agents{of} were reordered "
            f"({', '.join(kept_before)} -> {', '.join(kept_after)})"
        )
    return changes


def _nested_graph(kind: object) -> dict[str, object] | None:
    if isinstance(kind, dict) and WORKFLOW_KEY in kind:
        return _mapping(cast(dict[str, object], kind)[WORKFLOW_KEY])
    return None


def _agent_tree(kind: object) -> dict[str, object]:
    return _mapping(_mapping(kind).get(AGENT_KEY))


def _base_kind(kind: object) -> str:
    """The kind's class name (with '(rerun)' for a node that reruns on resume, '(rerun,
    confirm)' for one that also asks a person to confirm each run)."""
    if isinstance(kind, str):
        return kind
    if _nested_graph(kind) is not None:
        return WORKFLOW_KEY
    return str(_agent_tree(kind).get("kind", "an unknown kind"))


def _sub_agent_kinds(kind: object) -> dict[str, object]:
    """Sub-agent name -> kind, in order; empty for a bare kind."""
    entries = _agent_tree(kind).get("sub_agents")
    listed: list[object] = cast(list[object], entries) if isinstance(entries, list) else []
    return {str(_mapping(e).get("name")): _mapping(e).get("kind") for e in listed}


def _mapping(value: object) -> dict[str, object]:
    return cast(dict[str, object], value) if isinstance(value, dict) else {}


def _strings(value: object) -> list[str]:
    listed: list[object] = cast(list[object], value) if isinstance(value, list) else []
    return [str(item) for item in listed]


def digest_of(fingerprint: str) -> str:
    """A short hash of a fingerprint, for messages."""
    return hashlib.sha256(fingerprint.encode()).hexdigest()[:12]
