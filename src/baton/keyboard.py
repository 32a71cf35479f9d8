"""Reading a line typed at a terminal, so that Ctrl-C ends the read whenever it lands.

`input()` cannot promise that. Python's C-level SIGINT handler only sets a flag; the
KeyboardInterrupt is raised when the main thread next runs Python code, or when a system
call it is blocked in fails with EINTR. A Ctrl-C that lands after `input()`'s last look at
that flag and before its read(2) starts (the prompt is already on the screen: the moment a
quick user, or a test, presses it), or that the kernel hands to another thread (aiosqlite's,
the loop watchdog's), interrupts no system call of the main thread: the read then waits for
Enter. Here the wait also watches a pipe that every caught signal writes to
(`signal.set_wakeup_fd`), so the signal ends the wait wherever and whenever it landed.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
from typing import TextIO

__all__ = ["read_typed_line"]

_MAX_LINE: int = 4096
"""A terminal in canonical mode hands over at most one line, of at most 4,095 bytes, a read."""


def read_typed_line(stdin: TextIO) -> str | None:
    """The next line typed at the terminal `stdin`, without its newline; None at end of input
    (Ctrl-D). Must run in the main thread; a signal's Python handler runs at once (Ctrl-C
    raises KeyboardInterrupt, with `signal.default_int_handler` installed)."""
    fd = stdin.fileno()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    previous = signal.set_wakeup_fd(wake_write)
    try:
        typed = b""
        while not typed.endswith(b"\n"):
            ready, _, _ = select.select([fd, wake_read], [], [])  # the handler runs on return
            if wake_read in ready:
                _pass_on(os.read(wake_read, 512), previous)
            if fd in ready:
                chunk = os.read(fd, _MAX_LINE)
                if not chunk:  # Ctrl-D: end of input, or of a line typed without Enter
                    break
                typed += chunk
    finally:
        signal.set_wakeup_fd(previous)
        os.close(wake_read)
        os.close(wake_write)
    if not typed:
        return None
    return typed.decode(stdin.encoding, stdin.errors or "strict").removesuffix("\n")


def _pass_on(signals: bytes, wakeup_fd: int) -> None:
    """Hand the signal numbers read to the wakeup fd installed before (an event loop's, whose
    `add_signal_handler` callbacks run from it), as it would have had them."""
    if wakeup_fd != -1:
        with contextlib.suppress(BlockingIOError):  # its pipe is full: it has work already
            os.write(wakeup_fd, signals)
