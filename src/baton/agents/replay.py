"""Replays: sub-agent runs that a re-executed step of a custom agent already finished.

An agent that resumes re-executes its code from its last checkpoint (or from its
start, when it has none). The sub-agents it ran after that point and that ended
were committed: running them again would redo finished work. So when a node run
resumes, each ended sub-agent gets a replay count: how many of its runs ended
after the last checkpoint of the agents above it. That many of its next calls are
skipped (their events and state are already recorded); later calls run it anew.

This relies on what the reference's resume guide asks of custom agents anyway:
between two checkpoints, code re-executed after a resume calls its sub-agents in
the same order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Protocol

from baton.events import Event

__all__ = ["AgentTree", "count_replays"]


class AgentTree(Protocol):
    """What replay counting needs of an agent: its name and its sub-agents."""

    @property
    def name(self) -> str:
        """The agent's name, unique in its tree."""
        ...

    @property
    def sub_agents(self) -> Sequence[AgentTree]:
        """The agents it runs."""
        ...


def count_replays(root: AgentTree, ended: Iterable[str], events: Sequence[Event]) -> Counter[str]:
    """For each ended agent, how many of its runs ended after its ancestors' last checkpoint.

    Args:
        root: the agent tree the node runs.
        ended: names of the agents whose last run ended.
        events: the node run's committed events, oldest first.

    Returns:
        The replay count by agent name (agents without replays are left out).
    """
    ancestors = _ancestors(root, ())
    counts: Counter[str] = Counter()
    for name in ended:
        above = ancestors.get(name)
        if above is None:  # no longer in the tree; resuming reports the change elsewhere
            continue
        start = _after_last_checkpoint(events, above)
        counts[name] = sum(1 for e in events[start:] if e.author == name and e.actions.end_of_agent)
    return +counts


def _ancestors(agent: AgentTree, above: tuple[str, ...]) -> dict[str, set[str]]:
    """Each agent's ancestors' names, by agent name."""
    found = {agent.name: set(above)}
    for sub in agent.sub_agents:
        found.update(_ancestors(sub, (*above, agent.name)))
    return found


def _after_last_checkpoint(events: Sequence[Event], authors: set[str]) -> int:
    """The index after the last checkpoint written by one of `authors` (0 when none was)."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.author in authors and event.actions.agent_state is not None:
            return index + 1
    return 0
