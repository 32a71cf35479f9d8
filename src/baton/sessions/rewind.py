"""Which of a session's events still count after rewinds, and the state a rewind restores.

A rewind deletes nothing: it appends one event whose `rewind_before_invocation_id`
names an invocation, and from then on every event from that invocation's first one
up to the rewind event is history that no longer counts. Everything that reads events
to decide what happens next (an agent's conversation, the page's timeline, forks)
reads `live_events`, so rewound answers and outputs never come back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pydantic import JsonValue

from baton.events import Event

__all__ = ["SHARED_STATE_PREFIXES", "first_index", "live_events", "rewind_state_delta"]

SHARED_STATE_PREFIXES: Final = ("app:", "user:", "temp:")
"""State keys a rewind leaves alone: shared by the app or the user, or never stored."""


def live_events(events: Sequence[Event]) -> list[Event]:
    """`events` (oldest first) without the ones rewinds annulled, and without the rewind
    events themselves.

    Walks backwards: a rewind event skips back to the first event of the invocation it
    names, so a later rewind also annuls an earlier one it passes over.
    """
    first_of: dict[str, int] | None = None
    kept: list[Event] = []
    index = len(events) - 1
    while index >= 0:
        event = events[index]
        target = event.actions.rewind_before_invocation_id
        if target is None:
            kept.append(event)
        else:
            if first_of is None:
                first_of = _first_indexes(events)
            start = first_of.get(target)
            if start is not None and start < index:
                index = start
        index -= 1
    kept.reverse()
    return kept


def _first_indexes(events: Sequence[Event]) -> dict[str, int]:
    found: dict[str, int] = {}
    for index, event in enumerate(events):
        found.setdefault(event.invocation_id, index)
    return found


def first_index(events: Sequence[Event], invocation_id: str) -> int | None:
    """The position of the invocation's first event in `events`, or None."""
    return next((i for i, e in enumerate(events) if e.invocation_id == invocation_id), None)


def rewind_state_delta(
    events: Sequence[Event], before: int, current: dict[str, JsonValue]
) -> dict[str, JsonValue]:
    """The state delta that takes `current` back to the state as it was before
    `events[before]`: keys written since get their earlier value back, keys first written
    since are removed (None). `app:`, `user:` and `temp:` keys are left alone.

    The state before is what the events' deltas built up to that point, as the reference
    computes it. One difference: a key no event ever wrote (given when the session was
    created) is kept, where the reference would remove it.
    """
    earlier: dict[str, JsonValue] = {}
    for event in events[:before]:
        _apply(earlier, event.actions.state_delta)
    written_since = {k for e in events[before:] for k in e.actions.state_delta}
    delta: dict[str, JsonValue] = {
        k: v for k, v in earlier.items() if k not in current or current[k] != v
    }
    for key in current:
        if key.startswith(SHARED_STATE_PREFIXES) or key in earlier:
            continue
        if key in written_since:
            delta[key] = None
    return delta


def _apply(state: dict[str, JsonValue], delta: dict[str, JsonValue]) -> None:
    for key, value in delta.items():
        if key.startswith(SHARED_STATE_PREFIXES):
            continue
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
