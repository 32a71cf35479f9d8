"""A session's story for people: what each node did, asked, was told and produced.

Built from the session's events, each described by `baton.history` (the one shape
the page and the terminal both render), and the interrupt index (who answered what);
the web page's session view and `baton inspect` both show it.
"""

from __future__ import annotations

from pydantic import Field, JsonValue

from baton.events import Event
from baton.history import TimelineEntry, acting_node, describe_event
from baton.sessions.rewind import live_events
from baton.sessions.store import Interrupt, InterruptStatus, Invocation, Session
from baton.types import WireModel

__all__ = ["InvocationSummary", "NodeSummary", "Timeline", "TimelineEntry", "build_timeline"]


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
    live = live_events(session.events)  # what a rewind undid is not part of the story
    entries = [entry for event in live for entry in describe_event(event, by_id)]
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
        nodes=_nodes(live, by_id),
        entries=entries,
    )


_Index = dict[tuple[str, str], Interrupt]


def _nodes(events: list[Event], index: _Index) -> list[NodeSummary]:
    nodes: dict[str, NodeSummary] = {}
    for event in events:
        if event.node_info is None or not event.node_info.path:
            continue
        path = event.node_info.path
        summary = nodes.setdefault(
            path, NodeSummary(path=path, node=acting_node(event), status="running")
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
        elif event.node_info.message_as_output and event.content:
            summary.status = "completed"  # an agent's reply is its output
            summary.output = event.content.text
    return list(nodes.values())
