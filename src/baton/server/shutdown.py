"""A uvicorn server that starts baton's drain the moment a shutdown signal arrives.

uvicorn waits for open connections before it runs the app's shutdown, and an inbox's
live stream never closes by itself; so the drain (refuse new runs, end streams, let the
worker's runs pause) must begin at the signal, not at the app's shutdown.
"""

from __future__ import annotations

from collections.abc import Callable
from types import FrameType

import uvicorn

__all__ = ["draining_server"]


class _DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._on_exit()


def draining_server(config: uvicorn.Config, on_exit: Callable[[], None]) -> uvicorn.Server:
    """A uvicorn server that calls `on_exit` on SIGTERM/SIGINT, as it begins to stop."""
    return _DrainingServer(config, on_exit)
