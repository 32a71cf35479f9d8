"""Rich tables for people: sessions, pending inputs, and a session's timeline."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from rich.table import Table
from rich.text import Text

from baton.server.timeline import Timeline

__all__ = ["folding_table", "short", "timeline_tables", "until", "when"]


def timeline_tables(timeline: Timeline) -> list[Table]:
    """Three tables: the session's runs, its node runs' statuses, and every step in order."""
    runs = folding_table("run", "status", "started", "updated", "error", title="Runs")
    for inv in timeline.invocations:
        runs.add_row(
            inv.id, inv.status, when(inv.created_at), when(inv.updated_at), inv.error or ""
        )
    nodes = folding_table("node", "status", "output", title="Nodes")
    for node in timeline.nodes:
        nodes.add_row(node.path, node.status, short(node.output))
    steps = folding_table("time", "node", "what", "by", title="Timeline")
    for entry in timeline.entries:
        # Text, not str: a summary such as "asks [c2]: ..." is not Rich markup.
        steps.add_row(when(entry.time), entry.node, Text(entry.summary), entry.by or "")
    return [runs, nodes, steps]


def folding_table(*names: str, title: str | None = None) -> Table:
    """A table whose cells fold rather than truncate, so ids stay whole and copyable."""
    table = Table(title=title, title_justify="left")
    for name in names:
        table.add_column(name, overflow="fold")
    return table


def short(value: object, limit: int = 80) -> str:
    """`value` as compact JSON, cut to `limit` characters with an ellipsis."""
    text = "" if value is None else json.dumps(value, default=str)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def when(seconds: float) -> str:
    """A time for people: seconds or minutes ago when recent, else the UTC date and time."""
    if seconds <= 0:
        return "-"
    age = time.time() - seconds
    if age < 120:
        return f"{max(int(age), 0)}s ago"
    if age < 7200:
        return f"{int(age // 60)}m ago"
    return f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%d %H:%M}Z"


def until(seconds: float) -> str:
    """A time to come for people: in seconds or minutes when near, else the UTC date and
    time; one already past reads as `when` does."""
    left = seconds - time.time()
    if left <= 0:
        return when(seconds)
    if left < 120:
        return f"in {int(left) + 1}s"
    if left < 7200:
        return f"in {int(left // 60)}m"
    return f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%d %H:%M}Z"
