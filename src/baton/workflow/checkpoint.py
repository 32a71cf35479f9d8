"""The checkpoint: the live frontier of an invocation's node tree, as JSON.

Only what is still needed to continue is kept: runs that are running, waiting or
failed, triggers not yet dispatched, join arrivals and the output so far. A run
that completed and handed its output to its successors is dropped, so the
checkpoint's size follows the frontier, not the history.
"""

from __future__ import annotations

import enum
import hashlib
import json

from pydantic import BaseModel, Field, JsonValue

from baton.events import RouteValue

__all__ = [
    "Outcome",
    "RunRecord",
    "RunStatus",
    "Trigger",
    "WorkflowState",
    "find_chain",
    "replay_key",
]


class RunStatus(enum.StrEnum):
    RUNNING = "running"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"


class Trigger(BaseModel):
    """A node to dispatch with an input."""

    node: str
    input: JsonValue = None


class RunRecord(BaseModel):
    """One node run: its identity, input, status, answers and (for workflows) its children."""

    node: str
    path: str
    run_id: str
    status: RunStatus = RunStatus.RUNNING
    input: JsonValue = None
    output: JsonValue = None
    routes: list[RouteValue] = Field(default_factory=list[RouteValue])
    interrupts: list[str] = Field(default_factory=list[str])
    answers: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    fresh: list[str] = Field(default_factory=list[str])
    attempt: int = 0
    agent_states: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    ended_agents: list[str] = Field(default_factory=list[str])
    child: WorkflowState | None = None
    error: str | None = None

    @property
    def key(self) -> str:
        return f"{self.node}@{self.run_id}"


class Outcome(BaseModel):
    """A completed run's result, kept by replay-mode workflows to fast-forward it."""

    run_id: str
    output: JsonValue = None
    routes: list[RouteValue] = Field(default_factory=list[RouteValue])


class WorkflowState(BaseModel):
    """A workflow run's scheduler state.

    `recorded` exists only in replay mode (non-resumable apps): completed runs'
    outcomes by node and input, in completion order.
    """

    started: bool = False
    counters: dict[str, int] = Field(default_factory=dict[str, int])
    queue: list[Trigger] = Field(default_factory=list[Trigger])
    runs: dict[str, RunRecord] = Field(default_factory=dict[str, RunRecord])
    joins: dict[str, dict[str, JsonValue]] = Field(default_factory=dict[str, dict[str, JsonValue]])
    output: JsonValue = None
    recorded: dict[str, list[Outcome]] = Field(default_factory=dict[str, list[Outcome]])

    def open_interrupts(self) -> list[str]:
        """Ids still waiting anywhere below this workflow."""
        return [iid for run in self.runs.values() for iid in run.interrupts]


def replay_key(node: str, node_input: JsonValue) -> str:
    """Identifies a trigger by node and input, so replay matches runs by what they got."""
    canonical = json.dumps(node_input, sort_keys=True, separators=(",", ":"))
    return f"{node}:{hashlib.sha256(canonical.encode()).hexdigest()[:16]}"


def find_chain(root: RunRecord, path: str) -> list[RunRecord] | None:
    """The records from the root down to the run at `path` (`a@1/b@2/c@1`), or None."""
    segments = path.split("/")
    if not segments or segments[0] != root.key:
        return None
    chain = [root]
    for segment in segments[1:]:
        state = chain[-1].child
        record = state.runs.get(segment) if state else None
        if record is None:
            return None
        chain.append(record)
    return chain
