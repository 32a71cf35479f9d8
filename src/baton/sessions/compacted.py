"""What a model is shown of a session once compactions summarized some of its events.

A compaction deletes nothing: it appends one event whose `actions.compaction` holds a
summary of the events from `start_timestamp` to `end_timestamp`. From then on, what an
agent's model is shown has the summary, as one of the agent's own turns, where those
events were. A summary whose range holds another's takes its place; ranges that only
overlap (a sliding window with overlap) are both shown, in the order they end.
"""

from __future__ import annotations

import json
import math
from bisect import bisect_right
from collections.abc import Sequence
from typing import Final

from baton.events import Event, EventCompaction
from baton.types import Content

__all__ = [
    "compacted",
    "is_compaction",
    "newest_compaction",
    "prompt_tokens",
    "sliding_window",
    "token_window",
]

# The estimate of a prompt's tokens when no model call reported them: a token is about
# four characters.
_CHARS_PER_TOKEN: Final = 4


def is_compaction(event: Event) -> bool:
    """Whether `event` is a compaction's summary."""
    return event.actions.compaction is not None


def compacted(events: Sequence[Event], *, agent: str) -> list[Event]:
    """`events` (oldest first) with each standing summary in place of the events it
    covers, shown as agent `agent`'s turn; unchanged when there is none.

    Args:
        events: the session's live events, oldest first.
        agent: the agent whose model is shown the summaries.

    Returns:
        The events to show, oldest first.
    """
    standing = _standing(events)
    if not standing:
        return list(events)
    covered = _union(standing)
    starts = [start for start, _ in covered]

    def is_covered(timestamp: float) -> bool:
        at = bisect_right(starts, timestamp) - 1
        return at >= 0 and timestamp <= covered[at][1]

    summaries = sorted(
        ((s.end_timestamp, i, _as_turn(events[i], s, agent)) for i, s in standing),
        key=lambda item: (item[0], item[1]),
    )
    shown: list[Event] = []
    for event in events:
        if is_compaction(event) or is_covered(event.timestamp):
            continue
        # Each summary goes before the first event after its range; the events keep
        # their stored order.
        while summaries and summaries[0][0] < event.timestamp:
            shown.append(summaries.pop(0)[2])
        shown.append(event)
    shown.extend(turn for _, _, turn in summaries)
    return shown


def newest_compaction(events: Sequence[Event]) -> EventCompaction | None:
    """The standing summary that ends last, or None."""
    standing = _standing(events)
    return max((s for _, s in standing), key=lambda s: s.end_timestamp, default=None)


def _standing(events: Sequence[Event]) -> list[tuple[int, EventCompaction]]:
    """(position, summary) of the summaries no other one's range holds, oldest first; of
    two with the same range, the newer stands."""
    found = [(i, e.actions.compaction) for i, e in enumerate(events) if e.actions.compaction]
    widest_first = sorted(found, key=lambda f: (f[1].start_timestamp, -f[1].end_timestamp, -f[0]))
    standing: set[int] = set()
    reach: float | None = None
    for index, summary in widest_first:
        if reach is None or summary.end_timestamp > reach:
            standing.add(index)
            reach = summary.end_timestamp
    return [(i, s) for i, s in found if i in standing]


def _union(standing: list[tuple[int, EventCompaction]]) -> list[tuple[float, float]]:
    """The time ranges the summaries cover, merged where they overlap, in order."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted((s.start_timestamp, s.end_timestamp) for _, s in standing):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _as_turn(event: Event, summary: EventCompaction, agent: str) -> Event:
    """The summary as agent `agent`'s turn at the end of the range it covers."""
    return Event(
        id=event.id,
        invocation_id=event.invocation_id,
        author=agent,
        timestamp=summary.end_timestamp,
        content=summary.compacted_content,
        branch=event.branch,
    )


def sliding_window(events: Sequence[Event], *, interval: int, overlap: int) -> list[Event]:
    """The events to summarize once `interval` invocations ended after the last summary's
    range: from `overlap` invocations before the first of them to the end of the last,
    without summaries, cut before any call still waiting for its response ([]: none).

    Args:
        events: the session's live events, oldest first.
        interval: how many new invocations make a summary.
        overlap: how many invocations before them the summary covers again.
    """
    summaries = [e.actions.compaction for e in events if e.actions.compaction]
    summarized_to = summaries[-1].end_timestamp if summaries else -math.inf
    ends: dict[str, float] = {}
    for event in events:
        if event.invocation_id and not is_compaction(event):
            ends[event.invocation_id] = max(
                ends.get(event.invocation_id, -math.inf), event.timestamp
            )
    invocations = list(ends)
    new = [i for i in invocations if ends[i] > summarized_to]
    if len(new) < interval:
        return []
    first = invocations[max(0, invocations.index(new[0]) - overlap)]
    begin = next(i for i, e in enumerate(events) if e.invocation_id == first)
    end = max(i for i, e in enumerate(events) if e.invocation_id == new[-1])
    return _self_contained([e for e in events[begin : end + 1] if not is_compaction(e)])


def token_window(events: Sequence[Event], *, threshold: int, retention: int) -> list[Event]:
    """The events to summarize once the prompt reached `threshold` tokens: those after the
    newest summary's range but the last `retention` (more, so that a kept response keeps
    its call), headed by that summary so the new one replaces it ([]: none).

    Args:
        events: the session's live events, oldest first.
        threshold: the prompt's size, in tokens, that makes a summary.
        retention: how many of the newest events stay as they are.
    """
    tokens = prompt_tokens(events)
    if tokens is None or tokens < threshold:
        return []
    newest = newest_compaction(events)
    summarized_to = newest.end_timestamp if newest else -math.inf
    candidates = [e for e in events if not is_compaction(e) and e.timestamp > summarized_to]
    if len(candidates) <= retention:
        return []
    window = _self_contained(candidates[: _kept_from(candidates, retention)])
    if not window or newest is None:
        return window
    seed = Event(author="model", timestamp=newest.start_timestamp, content=newest.compacted_content)
    return [seed, *window]


def prompt_tokens(events: Sequence[Event]) -> int | None:
    """The prompt's size in tokens: as the newest model call since the last summary
    reported it, else estimated from what a model is shown (None: nothing to show)."""
    for event in reversed(events):
        if is_compaction(event):
            break
        usage = event.usage_metadata
        if usage is not None and usage.prompt_token_count is not None:
            return usage.prompt_token_count
    chars = sum(_size(e.content) for e in compacted(events, agent="model"))
    return chars // _CHARS_PER_TOKEN if chars else None


def _size(content: Content | None) -> int:
    """The characters of a content's texts, calls and responses."""
    total = 0
    for part in (content.parts or []) if content else []:
        total += len(part.text or "")
        if part.function_call:
            call = part.function_call
            total += len(call.name or "") + len(json.dumps(call.args or {}, default=str))
        if part.function_response:
            response = part.function_response
            total += len(response.name or "") + len(json.dumps(response.response, default=str))
    return total


def _kept_from(events: list[Event], retention: int) -> int:
    """Where the kept events begin: `retention` from the end, or earlier, so that no kept
    response is left without its call."""
    limit = len(events) - retention
    unanswered: set[str] = set()
    for index in range(len(events) - 1, -1, -1):
        unanswered |= _response_ids(events[index])
        unanswered -= _call_ids(events[index])
        if index <= limit and not unanswered:
            return index
    return 0


def _self_contained(events: list[Event]) -> list[Event]:
    """The longest start of `events` after which no call or confirmation request waits for
    its response: a summary must not separate a call from its response."""
    waiting: set[str] = set()
    length = 0
    for index, event in enumerate(events):
        waiting -= _response_ids(event)
        waiting |= _call_ids(event) | set(event.actions.requested_tool_confirmations)
        if not waiting:
            length = index + 1
    return events[:length]


def _call_ids(event: Event) -> set[str]:
    return {c.id for c in event.function_calls if c.id}


def _response_ids(event: Event) -> set[str]:
    parts = (event.content.parts or []) if event.content else []
    return {p.function_response.id for p in parts if p.function_response and p.function_response.id}
