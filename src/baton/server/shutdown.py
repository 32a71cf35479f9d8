"""A uvicorn server that starts baton's drain the moment a shutdown signal arrives.

uvicorn waits for open connections before it runs the app's shutdown, and an inbox's
live stream never closes by itself; so the drain (refuse new runs, end streams, let the
worker's runs pause) must begin at the signal, not at the app's shutdown. A drained
shutdown is a success: the process exits 0 (uvicorn would re-raise the signal after
its shutdown, and the process would die of it).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from types import FrameType

import uvicorn

__all__ = ["draining_server"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    @contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield  # signals reach only the main thread
            return
        previous = {signum: signal.signal(signum, self.handle_exit) for signum in _SIGNALS}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._on_exit()


def draining_server(config: uvicorn.Config, on_exit: Callable[[], None]) -> uvicorn.Server:
    """A uvicorn server that calls `on_exit` on SIGTERM/SIGINT, as it begins to stop, and
    lets the process exit normally once it has stopped."""
    return _DrainingServer(config, on_exit)
