"""A session's checkpoints: the points of its history a run can be taken back to.

Four kinds, in the order they happened (rewound history left out):

- `start`: before a run. `Runner.rewind_async` goes back there in the same session;
  a fork there is the session as it was before that run.
- `step`: after a step of a workflow run whose node run ended with a result (output or
  route). A fork there re-runs the run from that step: its checkpoint is derived from
  the run's events up to there (see `baton.workflow.fork_state`), not stored per step.
- `question`: a run asked a person. A fork there holds that run waiting at that
  question again, from the checkpoint stored when it was asked: answer it differently.
- `end`: after a run completed or failed.

A checkpoint is a position in the session's live events; `ForkPlan` says what each run
looked like at that position, or why a fork there is impossible.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from pydantic import Field, JsonValue

from baton.errors import CheckpointNotFoundError, CheckpointUnavailableError
from baton.events import REQUEST_INPUT_FUNCTION, Event
from baton.sessions.rewind import live_events
from baton.sessions.store import Interrupt, InterruptStatus, Invocation, InvocationStatus
from baton.types import WireModel

__all__ = ["Checkpoint", "ForkPlan", "RunAtPoint", "list_checkpoints", "plan_fork"]

_ENDED: Final = (InvocationStatus.COMPLETED, InvocationStatus.FAILED)


class Checkpoint(WireModel):
    """A point of the session's history a run can be taken back to (see the module)."""

    id: str
    kind: str
    invocation_id: str
    position: int  # how many live events come before it
    time: float
    label: str
    interrupt_ids: list[str] = Field(default_factory=list[str])
    answers: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    answered_by: dict[str, str] = Field(default_factory=dict[str, str])


@dataclass(frozen=True)
class SessionHistory:
    """What the checkpoints are read from: events, runs, questions and their checkpoints."""

    events: Sequence[Event]  # all, rewound ones included
    invocations: Sequence[Invocation]
    interrupts: Sequence[Interrupt]
    asked_at: dict[tuple[str, str], JsonValue]  # (invocation, interrupt) -> checkpoint

    @property
    def live(self) -> list[Event]:
        return live_events(self.events)


@dataclass
class RunAtPoint:
    """A run as a fork at some point copies it: its status, checkpoint and questions."""

    invocation: Invocation
    status: InvocationStatus
    checkpoint: JsonValue
    error: str | None
    questions: list[Interrupt] = field(default_factory=list[Interrupt])
    # interrupt id -> the checkpoint it was asked at (kept so a fork of the fork works)
    asked_at: dict[str, JsonValue] = field(default_factory=dict[str, JsonValue])


@dataclass(frozen=True)
class ForkPlan:
    """What a fork at `checkpoint` copies: the live events before it and each run's state."""

    checkpoint: Checkpoint
    events: list[Event]
    runs: dict[str, RunAtPoint]
    following: Event | None  # the first live event after the point, if any


def list_checkpoints(history: SessionHistory) -> list[Checkpoint]:
    """Every checkpoint of the session, oldest first."""
    live = history.live
    runs = {i.id: i for i in history.invocations}
    found: list[Checkpoint] = []
    for invocation_id, indexes in _runs_in(live):
        run = runs.get(invocation_id)
        if run is None or run.status is InvocationStatus.REWOUND:
            continue  # a state change outside runs, or imported history
        found.append(_start(live, run, indexes[0]))
        if _is_workflow_run(run):
            found += [_step(live, run, index) for index in indexes if _ends_step(live, index)]
        found += [
            point
            for index in indexes
            if (point := _question(history, live, run, index)) is not None
        ]
        if run.status in _ENDED:
            last = live[indexes[-1]]
            label = f"after run {_short(run.id)} ({run.status.value})"
            found.append(
                Checkpoint(
                    id=f"end:{run.id}",
                    kind="end",
                    invocation_id=run.id,
                    position=indexes[-1] + 1,
                    time=last.timestamp,
                    label=label,
                )
            )
    return sorted(found, key=lambda c: c.position)


def _runs_in(live: Sequence[Event]) -> Iterator[tuple[str, list[int]]]:
    """Each invocation of the live events with the positions of its events, by first."""
    positions: dict[str, list[int]] = {}
    for index, event in enumerate(live):
        positions.setdefault(event.invocation_id, []).append(index)
    yield from positions.items()


def _short(invocation_id: str) -> str:
    return invocation_id[:10]


def _start(live: Sequence[Event], run: Invocation, index: int) -> Checkpoint:
    first = live[index]
    said = first.content.text if first.author == "user" and first.content else None
    label = f"before run {_short(run.id)}" + (f": “{said[:60]}”" if said else "")
    return Checkpoint(
        id=f"start:{run.id}",
        kind="start",
        invocation_id=run.id,
        position=index,
        time=first.timestamp,
        label=label,
    )


def _is_workflow_run(run: Invocation) -> bool:
    """Whether the run's root is a workflow (its checkpoint holds the workflow's state)."""
    checkpoint = run.checkpoint
    return isinstance(checkpoint, dict) and isinstance(checkpoint.get("child"), dict)


def _ends_step(live: Sequence[Event], index: int) -> bool:
    """Whether `live[index]` is a node run's result inside a workflow, its step's last."""
    event = live[index]
    path = event.node_info.path if event.node_info else ""
    if "/" not in path or not event.carries_result():
        return False
    if index + 1 == len(live):
        return True
    after = live[index + 1]
    return after.invocation_id != event.invocation_id or (
        after.node_info is None or after.node_info.path != path
    )


def _step(live: Sequence[Event], run: Invocation, index: int) -> Checkpoint:
    event = live[index]
    path = event.node_info.path if event.node_info else ""
    node = path.partition("/")[2]
    output = event.output
    if output is None and index > 0 and event.actions.route is not None:
        # A route set on ctx comes on an event of its own, after the output's.
        before = live[index - 1]
        if before.node_info and before.node_info.path == path:
            output = before.output
    shown = json.dumps(output) if output is not None else "its reply"
    if event.actions.route is not None:
        shown += f" (route {json.dumps(event.actions.route)})"
    return Checkpoint(
        id=f"step:{event.id}",
        kind="step",
        invocation_id=run.id,
        position=index + 1,
        time=event.timestamp,
        label=f"run {_short(run.id)} after {node}: {_clip(shown)}",
    )


def _clip(text: str) -> str:
    return text if len(text) <= 60 else f"{text[:59]}…"


def _question(
    history: SessionHistory, live: Sequence[Event], run: Invocation, index: int
) -> Checkpoint | None:
    """The checkpoint at the question(s) `live[index]` asks, when their checkpoint is kept."""
    event = live[index]
    asked = sorted(event.long_running_tool_ids or ())
    if not asked or _snapshot(history, event, asked[0]) is None:
        return None
    rows = {r.interrupt_id: r for r in history.interrupts if r.invocation_id == run.id}
    answered = [rows[i] for i in asked if i in rows and rows[i].status is InterruptStatus.ANSWERED]
    messages = [_asking(rows[i]) for i in asked if i in rows]
    return Checkpoint(
        id=f"question:{event.id}",
        kind="question",
        invocation_id=run.id,
        position=index + 1,
        time=event.timestamp,
        label=f"run {_short(run.id)} asks: {'; '.join(messages)}",
        interrupt_ids=asked,
        answers={r.interrupt_id: r.answer for r in answered},
        answered_by={r.interrupt_id: r.answered_by for r in answered if r.answered_by},
    )


def _asking(row: Interrupt) -> str:
    """What a question asks, in a few words: its message, else the tool that waits."""
    if row.message:
        return row.message
    return row.interrupt_id if row.function_name == REQUEST_INPUT_FUNCTION else row.function_name


def _snapshot(history: SessionHistory, event: Event, interrupt_id: str) -> JsonValue:
    """The checkpoint kept for that asking, if it is this asking's (not a later one's)."""
    path = event.node_info.path if event.node_info else None
    row = next(
        (
            r
            for r in history.interrupts
            if r.invocation_id == event.invocation_id and r.interrupt_id == interrupt_id
        ),
        None,
    )
    if row is None or row.node_path != path:
        return None
    return history.asked_at.get((event.invocation_id, interrupt_id))


def plan_fork(history: SessionHistory, checkpoint_id: str) -> ForkPlan:
    """What a fork at the checkpoint copies.

    Raises:
        CheckpointNotFoundError: no checkpoint of the session has that id.
        CheckpointUnavailableError: a run was executing at that point (or is now).
    """
    points = list_checkpoints(history)
    chosen = next((c for c in points if c.id == checkpoint_id), None)
    if chosen is None:
        listed = ", ".join(f"'{c.id}'" for c in points[-6:]) or "none"
        raise CheckpointNotFoundError(
            f"the session has no checkpoint '{checkpoint_id}' (its latest: {listed}); list "
            "them first (Runner.checkpoints, GET .../checkpoints, baton sessions checkpoints)."
        )
    live = history.live
    copied = live[: chosen.position]
    runs = {i.id: i for i in history.invocations}
    states: dict[str, RunAtPoint] = {}
    for invocation_id, indexes in _runs_in(copied):
        run = runs.get(invocation_id)
        if run is None:
            continue
        if chosen.kind == "step" and invocation_id == chosen.invocation_id:
            # Its checkpoint there is derived from its events (`ForkPlan.derive`).
            states[invocation_id] = RunAtPoint(run, InvocationStatus.RUNNING, None, None)
            continue
        later = any(e.invocation_id == invocation_id for e in live[chosen.position :])
        last = copied[indexes[-1]]
        states[invocation_id] = _run_at(history, run, last, chosen, later=later)
    following = live[chosen.position] if chosen.position < len(live) else None
    return ForkPlan(chosen, copied, states, following)


def _run_at(
    history: SessionHistory, run: Invocation, last: Event, chosen: Checkpoint, *, later: bool
) -> RunAtPoint:
    """The run as it stood after `last`, its last event before the fork point (`later`:
    it has events after that point too)."""
    asked_before = {
        i
        for e in history.live[: chosen.position]
        if e.invocation_id == run.id
        for i in e.long_running_tool_ids or ()
    }
    rows = [
        r
        for r in history.interrupts
        if r.invocation_id == run.id and r.interrupt_id in asked_before
    ]
    if not later:
        if run.status is InvocationStatus.RUNNING:
            raise CheckpointUnavailableError(
                f"run '{run.id}' is running now; fork at '{chosen.id}' once it paused or ended."
            )
        return RunAtPoint(run, run.status, run.checkpoint, run.error, rows, _kept(history, rows))
    asked = sorted(last.long_running_tool_ids or ())
    snapshot = _snapshot(history, last, asked[0]) if asked else None
    if snapshot is None:
        raise CheckpointUnavailableError(
            f"run '{run.id}' was executing at checkpoint '{chosen.id}' (it had not paused "
            "there), so its state at that point is not kept; fork at one of its questions."
        )
    waiting = set(_open_ids(snapshot))
    questions = [
        _reopened(r) if r.interrupt_id in waiting else r
        for r in rows
        if r.interrupt_id in waiting or r.status is InterruptStatus.ANSWERED
    ]
    kept = _kept(history, questions)
    return RunAtPoint(run, InvocationStatus.PAUSED, snapshot, None, questions, kept)


def _kept(history: SessionHistory, rows: Sequence[Interrupt]) -> dict[str, JsonValue]:
    found = (
        (r.interrupt_id, history.asked_at.get((r.invocation_id, r.interrupt_id))) for r in rows
    )
    return {iid: checkpoint for iid, checkpoint in found if checkpoint is not None}


def _reopened(row: Interrupt) -> Interrupt:
    return row.model_copy(
        update={
            "status": InterruptStatus.OPEN,
            "answer": None,
            "answered_by": None,
            "answered_at": None,
        }
    )


def _open_ids(checkpoint: JsonValue) -> Iterator[str]:
    """Interrupt ids a checkpoint's runs wait on, anywhere in its tree."""
    if isinstance(checkpoint, dict):
        waiting = checkpoint.get("interrupts")
        if isinstance(waiting, list):
            yield from (str(i) for i in waiting)
        for value in checkpoint.values():
            if isinstance(value, dict | list):
                yield from _open_ids(value)
    elif isinstance(checkpoint, list):
        for item in checkpoint:
            yield from _open_ids(item)
