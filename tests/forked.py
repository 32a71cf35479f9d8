"""Test children forked from the fork server (multiprocessing's "forkserver"), which
imported baton once: a fresh process per run without paying an interpreter start and
baton's imports (most of a short child's time). A module whose children need more
imported first names its module in `FORKS.set_forkserver_preload`."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable

FORKS = multiprocessing.get_context("forkserver")
# Children start one at a time (they may then run side by side): the fork server, asked
# by several threads at once, once read a start request garbled.
_STARTS = threading.Lock()


def run_forked(target: Callable[..., object], *args: object, within: float = 60) -> int:
    """Run `target(*args)` in a new forked process to its end; its exit code (negative:
    the signal that ended it)."""
    process = FORKS.Process(target=target, args=args, daemon=True)
    with _STARTS:
        process.start()
    process.join(within)
    code = process.exitcode
    if code is None:  # hung: end it here rather than leave it running past the test
        process.kill()
        process.join()
    assert code is not None, f"the child did not finish in {within} s"
    process.close()  # its status pipe, now rather than at garbage collection
    return code
