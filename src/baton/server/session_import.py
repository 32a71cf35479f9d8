"""Importing an exported session: its history restored for reading, never as run data.

The reference's web UI imports a session by creating one with the exported
`events` (and `state`). Those events carry run data (node info, routes, agent
checkpoints, long-running calls) that a live run would take as its own recorded
work, so an import keeps what a reader sees — ids, authors, times, content,
outputs, errors, state and artifact changes, which calls were long-running — and
leaves the rest out. Each event's invocation id is prefixed with `imported:`, so
no invocation of this server ever owns it.

The runs that were waiting are not imported (their checkpoints are not in an
export): their questions cannot be answered here, and answering one is refused
as an unknown interrupt. A last event says so in the session.
"""

from __future__ import annotations

from typing import Final

from baton.events import Event, EventActions
from baton.types import Content, Part

__all__ = ["IMPORTED_PREFIX", "NOTE_AUTHOR", "carries_run_data", "imported_history"]

IMPORTED_PREFIX: Final = "imported:"
NOTE_AUTHOR: Final = "baton"


def carries_run_data(event: Event) -> bool:
    """Whether an event holds a run's work (outputs, questions, answers, routing)."""
    content = event.content
    return (
        event.node_info is not None
        or event.output is not None
        or bool(event.long_running_tool_ids)
        or event.actions.route is not None
        or event.actions.agent_state is not None
        or any((c.name or "").startswith("adk_") for c in event.function_calls)
        or bool(content and content.function_responses)
    )


def imported_history(events: list[Event]) -> list[Event]:
    """`events` as imported history, then the note on the runs that were waiting (if any)."""
    history = [_as_history(event) for event in events]
    waiting = _unanswered_calls(events)
    return [*history, _note(waiting)] if waiting else history


def _as_history(event: Event) -> Event:
    actions = EventActions(
        state_delta=dict(event.actions.state_delta),
        artifact_delta=dict(event.actions.artifact_delta),
        render_ui_widgets=event.actions.render_ui_widgets,
    )
    return event.model_copy(
        update={
            "invocation_id": f"{IMPORTED_PREFIX}{event.invocation_id}",
            "actions": actions,
            "node_info": None,
        }
    )


def _unanswered_calls(events: list[Event]) -> list[str]:
    """Ids of long-running calls in `events` that no later function response answers."""
    answered = {
        r.id for e in events if e.content for r in e.content.function_responses if r.id is not None
    }
    asked = [
        c.id
        for e in events
        for c in e.function_calls
        if c.id and e.long_running_tool_ids and c.id in e.long_running_tool_ids
    ]
    return [iid for iid in dict.fromkeys(asked) if iid not in answered]


def _note(waiting: list[str]) -> Event:
    names = ", ".join(f"'{iid}'" for iid in waiting)
    text = (
        f"Imported session: its history is shown as exported. The runs that were waiting "
        f"(for {names}) were not imported, so those questions cannot be answered here; "
        "send a new message to start a new run."
    )
    return Event(
        invocation_id=f"{IMPORTED_PREFIX}note",
        author=NOTE_AUTHOR,
        content=Content(role="model", parts=[Part(text=text)]),
    )
