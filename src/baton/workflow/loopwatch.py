"""Noticing an `async def` node that blocks the event loop, while it blocks.

baton runs plain (sync) nodes and tools in worker threads, but an `async def`
node runs on the event loop: a blocking call in it (`time.sleep`, `requests`,
a CPU-bound loop) stops everything else in the process — lease renewal, other
runs, the HTTP server. That is a bug in the node; this module makes it visible.

The first node run on an event loop starts a watch for that loop: the loop
stamps a heartbeat every quarter threshold, and a daemon thread checks it. When
the loop has not beaten for longer than the threshold, the thread logs one
warning (logger "baton") per stall, naming the node run whose code holds the
loop: the innermost node run on the loop thread's stack (`watch_node_runs` names
the engine's function that executes one). The threshold is
`BATON_LOOP_BLOCK_WARNING` seconds (default 1; 0 turns the watch off), read when a
loop's watch starts. The thread ends once its loop is closed or gone, so it never
keeps a process alive.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
import weakref
from types import CodeType, FrameType
from typing import Final

__all__ = ["THRESHOLD_ENV", "threshold", "watch_loop", "watch_node_runs"]

logger = logging.getLogger("baton")

THRESHOLD_ENV: Final = "BATON_LOOP_BLOCK_WARNING"
DEFAULT_THRESHOLD: Final = 1.0

_node_runs: dict[CodeType, str] = {}
"""The code of the function executing a node run, and its argument holding the run's
record (whose `path` names it): see `watch_node_runs`."""

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


def watch_node_runs(code: CodeType, record: str) -> None:
    """Name a node run that holds the loop by the innermost frame of `code` on the loop
    thread's stack: its argument `record` is the run's record.

    Speed: the watch finds the node run on the stack only when the loop stalls, instead
    of every node run noting itself in a table as it starts, ends and hands the caller
    its events (~6k instructions a node run, 3% of a chain's step)."""
    _node_runs[code] = record


def watch_loop() -> None:
    """Start the running loop's watch, unless it has one (a node run is about to execute)."""
    loop = asyncio.get_running_loop()
    if _last_loop[0] is not loop:
        _watch(loop)


def _watch(loop: asyncio.AbstractEventLoop) -> None:
    _last_loop[0] = loop
    if loop in _watched:
        return
    _watched.add(loop)
    seconds = threshold()
    if seconds > 0:
        _Watch(loop, seconds).start()


def _running_node(thread_id: int) -> str | None:
    """The path of the innermost node run on the stack of the thread `thread_id`, if any
    (read from the watch's thread while that one is stalled)."""
    frame: FrameType | None = sys._current_frames().get(thread_id)  # pyright: ignore[reportPrivateUsage] -- the documented way to see another thread's stack
    while frame is not None:
        record = _node_runs.get(frame.f_code)
        if record is not None:
            return getattr(frame.f_locals.get(record), "path", None)
        frame = frame.f_back
    return None


class _Watch:
    """A loop's heartbeat and the daemon thread that checks it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self._loop = weakref.ref(loop)
        self._thread_id = threading.get_ident()  # made on the loop's thread, which runs it
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
            self._warn(loop, beat_at, held)
        return True

    def _warn(self, loop: asyncio.AbstractEventLoop, beat_at: float, held: float) -> None:
        path = _running_node(self._thread_id)
        if path is None:
            return  # not a node's code: the watch is about nodes
        if not loop.is_running() or self._beat_at != beat_at:
            # The stall ended as the stack was read: that stack may be of other code (of
            # another loop the thread runs since), not of the code that stalled this one.
            return
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
