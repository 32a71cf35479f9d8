"""Noticing an `async def` node that blocks the event loop, while it blocks.

baton runs plain (sync) nodes and tools in worker threads, but an `async def`
node runs on the event loop: a blocking call in it (`time.sleep`, `requests`,
a CPU-bound loop) stops everything else in the process — lease renewal, other
runs, the HTTP server. That is a bug in the node; this module makes it visible.

The first node run on an event loop starts a watch for that loop: the loop
stamps a heartbeat every quarter threshold, and a daemon thread checks it. When
the loop has not beaten for longer than the threshold, the thread logs one
warning (logger "baton") per stall, naming the node run whose task holds the
loop. The threshold is `BATON_LOOP_BLOCK_WARNING` seconds (default 1; 0 turns
the watch off), read when a loop's watch starts. The thread ends once its loop
is closed or gone, so it never keeps a process alive.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import weakref
from typing import Any, Final, TypeAlias

__all__ = [
    "THRESHOLD_ENV",
    "NodeMark",
    "enter_node",
    "hand_node_to",
    "leave_node",
    "take_node_from",
    "threshold",
]

logger = logging.getLogger("baton")

THRESHOLD_ENV: Final = "BATON_LOOP_BLOCK_WARNING"
DEFAULT_THRESHOLD: Final = 1.0

_nodes: dict[asyncio.Task[Any], str] = {}
"""The node run (its path) executing in each task, while it executes."""

_watched: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
_last_loop: list[asyncio.AbstractEventLoop | None] = [None]  # the loop checked last: one `is`


def threshold() -> float:
    """The configured threshold in seconds (0: no watch).

    Raises:
        ValueError: `BATON_LOOP_BLOCK_WARNING` is not a non-negative number.
    """
    raw = os.environ.get(THRESHOLD_ENV, "").strip()
    if not raw:
        return DEFAULT_THRESHOLD
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(
            f"{THRESHOLD_ENV}={raw!r} must be a number of seconds (0 turns the warning off)."
        )
    return value


NodeMark: TypeAlias = tuple[asyncio.Task[object], str | None] | None
"""What `enter_node` noted: the task, and the node run it executed before (if any)."""


def enter_node(path: str) -> NodeMark:
    """Note that node run `path` executes in the current task; give the mark to `leave_node`."""
    task = asyncio.current_task()
    if task is None:
        return None
    loop = task.get_loop()
    if _last_loop[0] is not loop:
        _watch(loop)
    previous = _nodes.get(task)
    _nodes[task] = path
    return task, previous


def leave_node(mark: NodeMark) -> None:
    """Undo `enter_node`: the task executes the node it executed before, if any.

    The task is the current one, which is not the one `enter_node` saw when the engine
    has moved to a task of its own meanwhile (see `baton.workflow.handover`)."""
    if mark is None:
        return
    task = asyncio.current_task() or mark[0]
    previous = mark[1]
    if previous is None:
        _nodes.pop(task, None)
    else:
        _nodes[task] = previous


def take_node_from(task: asyncio.Task[Any]) -> str | None:
    """The node run `task` executes, no longer noted for it: the engine stepped in a
    caller's task hands control back to the caller, whose own code is not a node's."""
    return _nodes.pop(task, None)


def hand_node_to(task: asyncio.Task[Any], path: str | None) -> None:
    """Note that `task` executes node run `path` (what `take_node_from` took), if any."""
    if path is not None:
        _nodes[task] = path


def _watch(loop: asyncio.AbstractEventLoop) -> None:
    _last_loop[0] = loop
    if loop in _watched:
        return
    _watched.add(loop)
    seconds = threshold()
    if seconds > 0:
        _Watch(loop, seconds).start()


class _Watch:
    """A loop's heartbeat and the daemon thread that checks it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self._loop = weakref.ref(loop)
        self._threshold = seconds
        self._period = seconds / 4
        self._beat_at = time.monotonic()
        self._warned_for: float | None = None

    def start(self) -> None:
        loop = self._loop()
        assert loop is not None  # called by the loop's own code
        loop.call_soon(self._beat)
        threading.Thread(target=self._check, name="baton-loopwatch", daemon=True).start()

    def _beat(self) -> None:
        self._beat_at = time.monotonic()
        loop = self._loop()
        if loop is not None and not loop.is_closed():
            loop.call_later(self._period, self._beat)

    def _check(self) -> None:
        while self._look():
            time.sleep(self._period)

    def _look(self) -> bool:
        """Warn if the loop is stalled past the threshold; False once the loop is gone."""
        loop = self._loop()  # a strong reference only while looking: the loop may be collected
        if loop is None or loop.is_closed():
            return False
        beat_at = self._beat_at
        if not loop.is_running():
            self._warned_for = beat_at  # a stopped loop does not beat: not a stall
            return True
        held = time.monotonic() - beat_at - self._period
        if held > self._threshold and beat_at != self._warned_for:
            self._warned_for = beat_at  # once per stall
            self._warn(loop, held)
        return True

    def _warn(self, loop: asyncio.AbstractEventLoop, held: float) -> None:
        task = asyncio.current_task(loop)
        path = _nodes.get(task) if task is not None else None
        if path is None:
            return  # not a node's code: the watch is about nodes
        logger.warning(
            "node '%s' has held the event loop for %.1f s: its async code is blocking "
            "(a blocking call inside an `async def` node), and nothing else in this process "
            "runs meanwhile (lease renewal, other runs, the HTTP server). Make it a plain "
            "`def` node, which baton runs in a worker thread, or wrap the blocking call in "
            "`await asyncio.to_thread(...)`. (This warning: %s=<seconds>, 0 turns it off.)",
            path,
            held,
            THRESHOLD_ENV,
        )
