"""A session's story for people: what each node did, asked, was told and produced.

Built from the session's events and the interrupt index (who answered what); the
web page's session view and `baton inspect` both show it.
"""

from __future__ import annotations

from pydantic import Field, JsonValue

from baton.events import Event
from baton.sessions.store import Interrupt, InterruptStatus, Invocation, Session
from baton.types import WireModel

__all__ = ["InvocationSummary", "NodeSummary", "Timeline", "TimelineEntry", "build_timeline"]


class TimelineEntry(WireModel):
    """One thing that happened: a message, an output, a question, an answer, an error."""

    time: float
    invocation_id: str
    node: str
    path: str = ""
    kind: str
    detail: JsonValue = None
    by: str | None = None


class NodeSummary(WireModel):
    """A node run's latest status: completed, waiting, answered or failed."""

    path: str
    node: str
    status: str
    output: JsonValue = None


class InvocationSummary(WireModel):
    """A run of the session and where it stands."""

    id: str
    status: str
    created_at: float
    updated_at: float
    error: str | None = None


class Timeline(WireModel):
    """A session for people: its state, runs, node statuses and steps in order."""

    session_id: str
    app_name: str
    user_id: str
    state: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    invocations: list[InvocationSummary] = Field(default_factory=list[InvocationSummary])
    nodes: list[NodeSummary] = Field(default_factory=list[NodeSummary])
    entries: list[TimelineEntry] = Field(default_factory=list[TimelineEntry])


def build_timeline(
    session: Session, invocations: list[Invocation], interrupts: list[Interrupt]
) -> Timeline:
    """The timeline of `session` (loaded with its events)."""
    by_id = {(i.invocation_id, i.interrupt_id): i for i in interrupts}
    entries = [entry for event in session.events if (entry := _entry(event, by_id))]
    return Timeline(
        session_id=session.id,
        app_name=session.app_name,
        user_id=session.user_id,
        state=session.state,
        invocations=[
            InvocationSummary(
                id=i.id,
                status=i.status.value,
                created_at=i.created_at,
                updated_at=i.updated_at,
                error=i.error,
            )
            for i in invocations
        ],
        nodes=_nodes(session.events, by_id),
        entries=entries,
    )


_Index = dict[tuple[str, str], Interrupt]


def _entry(event: Event, index: _Index) -> TimelineEntry | None:
    kind, detail, by = _describe(event, index)
    if kind is None:
        return None
    return TimelineEntry(
        time=event.timestamp,
        invocation_id=event.invocation_id,
        node=event.author,
        path=event.node_info.path if event.node_info else "",
        kind=kind,
        detail=detail,
        by=by,
    )


def _describe(event: Event, index: _Index) -> tuple[str | None, JsonValue, str | None]:
    if event.error_code:
        return "error", event.error_message, None
    asked = [c for c in event.function_calls if c.id in (event.long_running_tool_ids or ())]
    if asked:
        args = asked[0].args or {}
        question = {"interruptId": asked[0].id, "message": args.get("message")}
        return "asked", {**question, "payload": args.get("payload")}, None
    responses = event.content.function_responses if event.content else []
    if responses:
        row = index.get((event.invocation_id, responses[0].id or ""))
        answer = {"interruptId": responses[0].id, "answer": row.answer if row else None}
        return "answered", answer, row.answered_by if row else None
    if event.output is not None:
        return "output", event.output, None
    if event.content and event.content.text:
        return "message", event.content.text, None
    if event.actions.state_delta:
        return "state", event.actions.state_delta, None
    return None, None, None


def _nodes(events: list[Event], index: _Index) -> list[NodeSummary]:
    nodes: dict[str, NodeSummary] = {}
    for event in events:
        if event.node_info is None or not event.node_info.path:
            continue
        path = event.node_info.path
        summary = nodes.setdefault(
            path, NodeSummary(path=path, node=event.author, status="running")
        )
        if event.error_code:
            summary.status = "failed"
        elif event.long_running_tool_ids:
            answered = all(
                (r := index.get((event.invocation_id, iid)))
                and r.status == InterruptStatus.ANSWERED
                for iid in event.long_running_tool_ids
            )
            summary.status = "answered" if answered else "waiting"
        elif event.output is not None:
            summary.status = "completed"
            summary.output = event.output
    return list(nodes.values())
