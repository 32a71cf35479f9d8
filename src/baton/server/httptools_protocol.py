"""uvicorn's httptools protocol, bounded as the h11 one is: the server's parser when
httptools is installed (the `server` extra brings it), since its C parser costs a fraction
of h11's CPU per request.

See `connections` and `client_bounds` for what the bounds are and why. httptools
reports a request in callbacks (`on_message_begin`, `on_headers_complete`,
`on_message_complete`), so the protocol keeps the request's phase itself: its head
arriving, its body arriving, or none (between requests).
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from baton.server.client_bounds import MAX_HEADER_BYTES, ClientBounds

__all__ = ["BoundedHttpToolsProtocol"]


class _HeadTooLarge(Exception):
    """Raised in a parser callback: httptools then refuses the request as malformed (400)."""


class BoundedHttpToolsProtocol(ClientBounds, HttpToolsProtocol):
    """uvicorn's httptools protocol within `ClientBounds`, and a request's head within
    `MAX_HEADER_BYTES`."""

    _in_head = False  # a request's line and headers are arriving
    _head_bytes = 0  # of them parsed so far
    _head_received = 0  # bytes received while the head stayed incomplete
    _body_done = True  # the last request's body has all arrived (or there was none yet)
    _open = 0  # requests whose head arrived and whose response is not complete

    def data_received(self, data: bytes) -> None:
        if self._drop(data):
            return
        was_in_head = self._in_head
        super().data_received(data)  # a head parsed past the bound fails in a callback: 400
        if was_in_head and self._in_head and not self.transport.is_closing():
            # The head was incomplete before and after: all of `data` is part of it.
            self._head_received += len(data)
            if self._head_received > MAX_HEADER_BYTES:
                self.send_400_response("Request line and headers too large.")
                return
        self._update_deadline()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = self._head_received = 0

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._body_done = False
        self._open += 1
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._body_done = True
        super().on_message_complete()

    def on_response_complete(self) -> None:
        self._open -= 1
        super().on_response_complete()
        self._update_deadline()

    def _count_head(self, size: int) -> None:
        """Add to the parsed head's size; past the bound, stop parsing (a 400 follows)."""
        self._head_bytes += size
        if self._head_bytes > MAX_HEADER_BYTES:
            raise _HeadTooLarge

    def _waits_for_head(self) -> bool:
        return not self._open and self._body_done

    def _is_discarding(self) -> bool:
        return not self._open and not self._body_done

    def _head_begun(self) -> bool:
        return self._in_head
