"""The checkpoint: the live frontier of an invocation's node tree, as JSON.

Only what is still needed to continue is kept: runs that are running, waiting or
failed, triggers not yet dispatched, join arrivals and the output so far. A run
that completed and handed its output to its successors is dropped, so the
checkpoint's size follows the frontier, not the history.

The records are plain dataclasses: the engine mutates them on every step, and a
step dumps the whole frontier, so both must cost next to nothing. `to_json`
shares JSON values (inputs, outputs, answers) with the records; the store
serializes a checkpoint inside `commit_step`, before the engine moves on.
Loading goes through pydantic, which checks the shape and reports what is off.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import JsonValue, SkipValidation, TypeAdapter

from baton.events import RouteValue

__all__ = [
    "DynamicCall",
    "ForkedRun",
    "Outcome",
    "RunRecord",
    "RunStatus",
    "Trigger",
    "WorkflowState",
    "find_chain",
    "replay_key",
    "rerun_failed",
]


# A JSON value inside the records (an input, output, answer). `from_json` checks the
# records' shape but takes these as they come: a checkpoint is loaded from a JSON
# decoder's output (a store's column or text), so they are JSON already. pydantic's
# JsonValue check calls back into Python at every value: it was half of loading a
# paused run's checkpoint (11 -> 5 µs for START -> a -> ask -> b, timeit).
_DecodedJson = Annotated[JsonValue, SkipValidation]


class RunStatus(enum.StrEnum):
    RUNNING = "running"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"


# Read on every node run: a global, not the enum's attribute (a lookup on an Enum class
# passes through its metaclass's __getattr__ hook, ~1k instructions on Python 3.11).
_RUNNING = RunStatus.RUNNING


@dataclass(slots=True)
class Trigger:
    """A node to dispatch with an input."""

    node: str
    input: _DecodedJson = None
    # The input is a user's message (`Content` as JSON): START's successors get it as one.
    message: bool = False
    # The conversation branch of the run it starts (see `RunRecord.branch`): `branch`
    # itself, or with `fan_out` (one of several successors) a lane of its own below it,
    # `<branch>.<node>@<run id>`, as the reference names it.
    branch: str | None = None
    fan_out: bool = False

    def run_branch(self, run_id: str) -> str | None:
        """The branch of the run this trigger starts, once its run id is known."""
        if not self.fan_out:
            return self.branch
        lane = f"{self.node}@{run_id}"
        return f"{self.branch}.{lane}" if self.branch else lane


@dataclass(slots=True)
class RunRecord:
    """One node run: its identity, input, status, answers and (for workflows) its children."""

    node: str
    path: str
    run_id: str
    status: RunStatus = RunStatus.RUNNING
    input: _DecodedJson = None
    # `input` is a user's message (`Content` as JSON), handed to the node as a Content.
    message_input: bool = False
    output: _DecodedJson = None
    # Plain `list`/`dict` factories: calling an alias like `list[str]` costs 10x, every step.
    routes: list[RouteValue] = field(default_factory=list)
    interrupts: list[str] = field(default_factory=list)
    answers: dict[str, _DecodedJson] = field(default_factory=dict)
    fresh: list[str] = field(default_factory=list)
    # Interrupts whose deadline passed with no on_timeout answer: the run fails.
    expired: list[str] = field(default_factory=list)
    attempt: int = 0
    agent_states: dict[str, _DecodedJson] = field(default_factory=dict)
    ended_agents: list[str] = field(default_factory=list)
    child: WorkflowState | None = None
    error: str | None = None
    # A failed run's error: the names of the classes it was an instance of, its own
    # first (what a RetryConfig matches), so that a process continuing the run can hand
    # the failure on as it was (see `baton.workflow.execution.carried_failure`).
    error_classes: tuple[str, ...] = ()
    # The conversation branch its events carry (None: the workflow's root, which every
    # agent sees): a run after a fan-out is on a lane of its own, a dynamic child where
    # `ctx.run_node` put it. Kept with the run, so it resumes on the branch it started on.
    branch: str | None = None
    # Set when the node moved its run onto another branch by yielding an event that
    # names one (see `move_to_branch`): the branch it started on ("" for the root), which
    # an execution of it from the top (a rerun, a retry) starts on again.
    moved_from: str | None = None
    # A dynamic child's runs its output stands for (use_as_output: the caller's, and
    # those the caller's stands for), and the branch its output event goes on then: the
    # outermost of those callers', as in the reference.
    output_for: list[str] = field(default_factory=list)
    output_branch: str | None = None
    # A terminal node's run: the workflow runs its output is the output of (its
    # workflow's, and those that one's stands for), named by its output event's
    # `output_for` as in the reference. Unlike `output_for`, it moves no event's branch.
    terminal_of: list[str] = field(default_factory=list)
    # Set as the run completes, read as the workflow folds it in (so never stored): it
    # stopped at a child still waiting for output (`run_node(..., raise_on_wait=True)`).
    waits_for_output: bool = False
    # A run that waits and executes again on resume (`rerun_on_resume`): what its code
    # yielded so far, in order, as digests of what each event says ("?" where it asked a
    # question of its own: questions are known by their ids). Its next execution, from the
    # top, yields them again: those are replays, which the session holds already (see
    # `baton.workflow.execution`).
    yielded: list[str] = field(default_factory=list)

    @classmethod
    def dispatched(
        cls, node: str, path: str, run_id: str, node_input: JsonValue, message_input: bool
    ) -> RunRecord:
        """A run about to execute, as `RunRecord(node, path, run_id, RunStatus.RUNNING,
        node_input, message_input)` makes it (tests/workflow/test_checkpoint.py checks it).

        Speed: every field set here, empty containers built in place, without the
        generated __init__'s test of each default factory's sentinel and call of the
        factory: a third of the cost, for every node run a workflow dispatches.
        """
        run = _new_record(cls)
        run.node, run.path, run.run_id = node, path, run_id
        run.status = _RUNNING
        run.input, run.message_input = node_input, message_input
        run.output = run.child = run.error = run.branch = run.moved_from = None
        run.output_branch = None
        run.error_classes = ()
        run.routes, run.interrupts, run.fresh, run.expired = [], [], [], []
        run.ended_agents, run.output_for, run.terminal_of, run.yielded = [], [], [], []
        run.answers, run.agent_states = {}, {}
        run.attempt = 0
        run.waits_for_output = False
        return run

    @property
    def key(self) -> str:
        return f"{self.node}@{self.run_id}"

    def move_to_branch(self, branch: str | None) -> None:
        """Put the run's later events, and its successors, on `branch` (None: the root)."""
        if branch == self.branch:
            return
        if self.moved_from is None:
            self.moved_from = self.branch or ""
        self.branch = branch

    def return_to_start_branch(self) -> None:
        """Back on the branch the run started on, for an execution from the top."""
        if self.moved_from is not None:
            self.branch = self.moved_from or None
            self.moved_from = None

    @property
    def stands_for(self) -> list[str]:
        """The runs its output is the output of: its callers' (`output_for`), or as a
        terminal node its workflows' (`terminal_of`)."""
        return self.output_for or self.terminal_of

    @property
    def moved_to(self) -> str | None:
        """The branch the node moved its run onto ("" for the root), None if it did not."""
        return None if self.moved_from is None else self.branch or ""

    def to_json(self) -> dict[str, JsonValue]:
        """The record as a JSON object, fields at their defaults left out.

        Containers are fresh; JSON values (inputs, outputs, answers) are shared.
        """
        data: dict[str, JsonValue] = {
            "node": self.node,
            "path": self.path,
            "run_id": self.run_id,
            # The member's own value attribute: `.value` is a Python-level descriptor.
            "status": self.status._value_,
            "attempt": self.attempt,
        }
        # Field by field, not a loop over (key, value) tuples: this runs on every step.
        if self.input is not None:
            data["input"] = self.input
        if self.message_input:
            data["message_input"] = True
        if self.output is not None:
            data["output"] = self.output
        if self.error is not None:
            self._put_error(data)
        if self.branch is not None:
            data["branch"] = self.branch
        if self.output_branch is not None:
            data["output_branch"] = self.output_branch
        if self.moved_from is not None:
            data["moved_from"] = self.moved_from
        self._put_containers(data)
        if self.yielded:  # not in `_put_containers`, which is at the complexity limit
            data["yielded"] = list(self.yielded)
        if self.child is not None:
            data["child"] = self.child.to_json()
        return data

    def _put_error(self, data: dict[str, JsonValue]) -> None:
        """A failed run's error, and its classes' names when known."""
        data["error"] = self.error
        if self.error_classes:
            data["error_classes"] = list(self.error_classes)

    def _put_containers(self, data: dict[str, JsonValue]) -> None:
        """Copies of the list and mapping fields that are not empty."""
        if self.routes:
            data["routes"] = list(self.routes)
        if self.interrupts:
            data["interrupts"] = list(self.interrupts)
        if self.fresh:
            data["fresh"] = list(self.fresh)
        if self.expired:
            data["expired"] = list(self.expired)
        if self.ended_agents:
            data["ended_agents"] = list(self.ended_agents)
        if self.answers:
            data["answers"] = dict(self.answers)
        if self.agent_states:
            data["agent_states"] = dict(self.agent_states)
        if self.output_for:
            data["output_for"] = list(self.output_for)
        if self.terminal_of:
            data["terminal_of"] = list(self.terminal_of)

    @classmethod
    def from_json(cls, data: Any) -> RunRecord:
        """Load a checkpoint written by `to_json`.

        Raises:
            pydantic.ValidationError: the data is not a checkpoint (names what is off).
        """
        return _RECORD.validate_python(data)


@dataclass(slots=True)
class Outcome:
    """A completed run's result, kept by replay-mode workflows to fast-forward it."""

    run_id: str
    output: _DecodedJson = None
    routes: list[RouteValue] = field(default_factory=list)
    # The branch the node moved the run onto (see `RunRecord.moved_to`), None if it did not.
    moved_to: str | None = None


@dataclass(slots=True)
class DynamicCall:
    """One `ctx.run_node` call of a node run, in the order the node issued it.

    `digest` identifies the called node and its input (see `replay_key`); once the
    child completed, `done` is set and its output and routes kept, so a rerun of the
    caller returns them without running the child again. A `named` call (a
    `NodeRunner`'s) is found by its key, not by its position among the calls.
    """

    key: str
    digest: str
    done: bool = False
    output: _DecodedJson = None
    routes: list[RouteValue] = field(default_factory=list)
    named: bool = False

    def to_json(self) -> dict[str, JsonValue]:
        data: dict[str, JsonValue] = {
            "key": self.key,
            "digest": self.digest,
            "done": self.done,
            "output": self.output,
        }
        if self.routes:
            data["routes"] = list(self.routes)
        if self.named:
            data["named"] = True
        return data


@dataclass(slots=True)
class ForkedRun:
    """A child run as it stood at the step a fork starts from (see
    `baton.workflow.fork_state`): `done` with its output and routes, or unfinished, with
    the state to start its own children from when it is a workflow."""

    run_id: str
    done: bool = False
    output: _DecodedJson = None
    routes: list[RouteValue] = field(default_factory=list)
    child: WorkflowState | None = None
    # The branch its result's event was on ("" for the root): where its successors go,
    # as the node may have moved its run there (see `RunRecord.move_to_branch`).
    moved_to: str | None = None

    def to_json(self) -> dict[str, JsonValue]:
        data: dict[str, JsonValue] = {"run_id": self.run_id, "done": self.done}
        if self.output is not None:
            data["output"] = self.output
        if self.routes:
            data["routes"] = list(self.routes)
        if self.moved_to is not None:
            data["moved_to"] = self.moved_to
        if self.child is not None:
            data["child"] = self.child.to_json()
        return data


@dataclass(slots=True)
class WorkflowState:
    """A workflow run's scheduler state.

    `recorded` exists only in replay mode (non-resumable apps): completed runs'
    outcomes by node and input, in completion order. `calls` holds a node run's
    dynamic calls (`ctx.run_node`), in the order it issued them.
    """

    started: bool = False
    # Plain `list`/`dict` factories: calling an alias like `list[str]` costs 10x, every step.
    counters: dict[str, int] = field(default_factory=dict)
    queue: list[Trigger] = field(default_factory=list)
    runs: dict[str, RunRecord] = field(default_factory=dict)
    joins: dict[str, dict[str, _DecodedJson]] = field(default_factory=dict)
    # The branches of the join arrivals that had one, by join and predecessor: the join
    # runs on the branch they share.
    join_branches: dict[str, dict[str, str]] = field(default_factory=dict)
    output: _DecodedJson = None
    # The last output of each terminal node (no outgoing edges) that produced one.
    terminal_outputs: dict[str, _DecodedJson] = field(default_factory=dict)
    recorded: dict[str, list[Outcome]] = field(default_factory=dict)
    calls: list[DynamicCall] = field(default_factory=list)
    # A fork's starting point: each node's runs by then, in run order. The workflow walks
    # again from START once, taking them instead of running them (see `ForkedRun`).
    forked: dict[str, list[ForkedRun]] = field(default_factory=dict)

    def open_interrupts(self) -> list[str]:
        """Ids still waiting anywhere below this workflow."""
        return [iid for run in self.runs.values() for iid in run.interrupts]

    def answers_below(self) -> dict[str, JsonValue]:
        """The answers its unfinished runs (and theirs, all the way down) were given."""
        found: dict[str, JsonValue] = {}
        for run in self.runs.values():
            if run.child is not None:
                found.update(run.child.answers_below())
            found.update(run.answers)
        return found

    def to_json(self) -> dict[str, JsonValue]:
        data: dict[str, JsonValue] = {"started": self.started}
        if self.counters:
            data["counters"] = dict(self.counters)
        if self.queue:
            data["queue"] = [_trigger_json(t) for t in self.queue]
        if self.runs:
            data["runs"] = {key: run.to_json() for key, run in self.runs.items()}
        self._put_joins(data)
        if self.output is not None:
            data["output"] = self.output
        if self.terminal_outputs:
            data["terminal_outputs"] = dict(self.terminal_outputs)
        if self.recorded:
            data["recorded"] = {
                key: [_outcome_json(o) for o in outcomes] for key, outcomes in self.recorded.items()
            }
        if self.calls:
            data["calls"] = [c.to_json() for c in self.calls]
        if self.forked:
            data["forked"] = {
                node: [run.to_json() for run in runs] for node, runs in self.forked.items()
            }
        return data

    def _put_joins(self, data: dict[str, JsonValue]) -> None:
        """Copies of the join arrivals and their branches, when there are any."""
        if self.joins:
            data["joins"] = {join: dict(arrivals) for join, arrivals in self.joins.items()}
        if self.join_branches:
            data["join_branches"] = {
                join: dict(branches) for join, branches in self.join_branches.items()
            }


def _outcome_json(outcome: Outcome) -> dict[str, JsonValue]:
    data: dict[str, JsonValue] = {
        "run_id": outcome.run_id,
        "output": outcome.output,
        "routes": list(outcome.routes),
    }
    if outcome.moved_to is not None:
        data["moved_to"] = outcome.moved_to
    return data


def _trigger_json(trigger: Trigger) -> dict[str, JsonValue]:
    data: dict[str, JsonValue] = {"node": trigger.node, "input": trigger.input}
    if trigger.message:
        data["message"] = True
    if trigger.branch is not None:
        data["branch"] = trigger.branch
    if trigger.fan_out:
        data["fan_out"] = True
    return data


_new_record = object.__new__  # looked up once: `cls.__new__` is found through the class each time

_RECORD = TypeAdapter[RunRecord](RunRecord)  # pyright: ignore[reportArgumentType] -- pyright 1.1.391 predates the TypeForm parameter pydantic declares


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


def rerun_failed(record: RunRecord) -> None:
    """Mark `record` and every run below it that failed to run again: its failure was
    handed on and something decided to try again (its node's or a workflow's RetryConfig,
    a person continuing the failed invocation).

    A failed run left failed is one whose failure was recorded but not yet handed on: a
    process continuing the invocation hands it on instead of running the node again (see
    `baton.workflow.execution.wants_execution`).

    A waiting run is not tried again but resumes as it stands: a failed run below it (a
    dynamic child whose failure its code caught before it asked) keeps its failure, which
    the resumed caller gets again.
    """
    if record.status is RunStatus.FAILED:
        record.status = _RUNNING
        record.error = None
        record.error_classes = ()
    elif record.status is RunStatus.WAITING:
        return
    if record.child is not None:
        for run in record.child.runs.values():
            rerun_failed(run)
