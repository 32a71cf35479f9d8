"""uvicorn's h11 protocol, bounded: the server's parser where httptools is not installed.

See `connections` and `client_bounds` for what the bounds are and why.
"""

from __future__ import annotations

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from baton.server.client_bounds import ClientBounds

__all__ = ["BoundedH11Protocol"]


class BoundedH11Protocol(ClientBounds, H11Protocol):
    """uvicorn's h11 protocol within `ClientBounds` (h11 bounds the head's size itself)."""

    def data_received(self, data: bytes) -> None:
        if self._drop(data):
            return
        super().data_received(data)
        self._update_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._update_deadline()

    def _waits_for_head(self) -> bool:
        return self.conn.their_state is h11.IDLE

    def _is_discarding(self) -> bool:
        return self.conn.our_state is h11.DONE and self.conn.their_state is h11.SEND_BODY

    def _head_begun(self) -> bool:
        return self.conn.their_state is h11.IDLE and bool(self.conn.trailing_data[0])
