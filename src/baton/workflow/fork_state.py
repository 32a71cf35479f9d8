"""The state a fork at a step starts a workflow run from, derived from its history.

No snapshot is written per step: a step's checkpoint is worked out when a fork asks for
it, from the run's events up to that step. Each node run whose events there end with
its output (or route) is taken as done with that output, its successors going on that
event's branch (where the node may have moved its run); a nested workflow still going
gets the same treatment for its own children; anything else runs again. The run walks
its graph from START once more (`WorkflowState.forked`), taking the done runs instead
of running them, so it continues from that step with the outputs it had there.

A node run that finished with neither output nor route left no event, so a fork runs it
again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import JsonValue

from baton.errors import CheckpointUnavailableError
from baton.events import Event, RouteValue
from baton.workflow.checkpoint import ForkedRun, RunRecord, WorkflowState
from baton.workflow.nodes import Node
from baton.workflow.scheduler import Workflow

__all__ = ["forked_checkpoint"]


def forked_checkpoint(root: Node, latest: JsonValue, events: Sequence[Event]) -> JsonValue:
    """The checkpoint a run restarts from to continue after `events` (its events up to
    the step), given its latest checkpoint `latest` (for its input).

    Raises:
        CheckpointUnavailableError: the run is not a workflow's, or its checkpoint is gone.
    """
    record = RunRecord.from_json(latest) if latest is not None else None
    if record is None or record.child is None or not isinstance(root, Workflow):
        raise CheckpointUnavailableError(
            f"run of '{root.name}' is not a workflow run with a kept checkpoint, so its steps "
            "cannot be forked from; fork at a question or at the start of a run."
        )
    start = RunRecord(
        node=record.node,
        path=record.path,
        run_id=record.run_id,
        input=record.input,
        message_input=record.message_input,
        child=_state_at(root, record.path, events),
    )
    return start.to_json()


@dataclass
class _Seen:
    """What the events say about one child run."""

    done: bool = False
    output: JsonValue = None
    routes: list[RouteValue] = field(default_factory=list[RouteValue])
    branch: str = ""  # the branch of the event with its result ("": the root)
    nested: bool = False  # its own children have events


def _state_at(workflow: Workflow, path: str, events: Sequence[Event]) -> WorkflowState:
    forked: dict[str, list[ForkedRun]] = {}
    for key, seen in _children(path, events).items():
        node, _, run_id = key.partition("@")
        child = workflow.graph.nodes.get(node)
        if seen.done:
            run = ForkedRun(
                run_id, done=True, output=seen.output, routes=seen.routes, moved_to=seen.branch
            )
        elif seen.nested and isinstance(child, Workflow):
            run = ForkedRun(run_id, child=_state_at(child, f"{path}/{key}", events))
        else:
            run = ForkedRun(run_id)
        forked.setdefault(node, []).append(run)
    for runs in forked.values():
        runs.sort(key=lambda r: int(r.run_id) if r.run_id.isdigit() else 0)
    return WorkflowState(forked=forked)


def _children(path: str, events: Sequence[Event]) -> dict[str, _Seen]:
    """The direct child runs of the run at `path` (`node@run_id`), in order of first event."""
    prefix = f"{path}/"
    found: dict[str, _Seen] = {}
    for event in events:
        at = event.node_info.path if event.node_info else ""
        if not at.startswith(prefix):
            continue
        key, _, below = at.removeprefix(prefix).partition("/")
        seen = found.setdefault(key, _Seen())
        if below:
            seen.nested = True
        elif event.long_running_tool_ids:
            seen.done = False  # it asked after any output: it waits, so it runs again
        elif event.carries_result():
            # The output and a route set on ctx may come on two events (output first).
            seen.done = True
            seen.branch = event.branch or ""
            route = event.actions.route
            if route is None or event.output is not None:
                seen.output = _output(event)
            if route is not None:
                seen.routes = list(route) if isinstance(route, list) else [route]
    return found


def _output(event: Event) -> JsonValue:
    if event.output is not None or event.content is None:
        return event.output
    return "".join(p.text for p in event.content.parts or [] if p.text and not p.thought)
