"""What both of the server's connection protocols (h11's and httptools') bound the same
way: the time a client takes to send a request's head, the rest of a refused body, and
the connections open at once; with the JSON refusals they write themselves, as bytes (a
parser cannot answer a request it has not parsed).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar, Final

__all__ = ["MAX_DISCARD_BYTES", "MAX_HEADER_BYTES", "ClientBounds", "bad_request"]

MAX_HEADER_BYTES: Final = 64 * 1024
"""The most a request line and headers may take; larger gets 400 and a closed connection."""
MAX_DISCARD_BYTES: Final = 256 * 1024 * 1024
"""The most of a refused body read (and dropped) so its client can still read the refusal."""


class ClientBounds(asyncio.Protocol):
    """Mixed into a uvicorn protocol: a deadline whenever the server waits on the client.

    It waits on the client while a request's head is incomplete, and after it refused
    a request early (401, 413) while the rest of that body still arrives: the rest is
    discarded as it comes (never stored), so the client gets to read the refusal, but
    only until the deadline or `MAX_DISCARD_BYTES`. Waiting for a body the app reads is
    bounded by `guard.RequestGuard`; idle keep-alive by uvicorn. The protocol says
    which phase its request is in (`_waits_for_head`, `_is_discarding`, `_head_begun`).
    """

    header_timeout: ClassVar[float] = 30.0
    max_connections: ClassVar[int] = 1000
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    connections: set[Any]  # uvicorn's: every open connection of the server
    _deadline: asyncio.TimerHandle | None = None
    _discarded: int = 0

    def _waits_for_head(self) -> bool:
        """No request is in progress: the next one's head is awaited (or arriving)."""
        raise NotImplementedError

    def _is_discarding(self) -> bool:
        """The response is sent, but the request's body is still arriving."""
        raise NotImplementedError

    def _head_begun(self) -> bool:
        """Part of a request's head has arrived."""
        raise NotImplementedError

    def connection_made(self, transport: asyncio.Transport) -> None:  # pyright: ignore[reportIncompatibleMethodOverride] -- uvicorn narrows BaseTransport the same way
        """Refuse (503) a connection past the limit, else start waiting on its client."""
        super().connection_made(transport)
        if not refuse_if_crowded(transport, len(self.connections), self.max_connections):
            self._update_deadline()

    def _drop(self, data: bytes) -> bool:
        """Count `data` if it is the rest of a refused body; True (and the connection is
        closed) once more than `MAX_DISCARD_BYTES` of it came."""
        if not self._is_discarding():
            return False
        self._discarded += len(data)
        if self._discarded <= MAX_DISCARD_BYTES:
            return False
        self.transport.close()
        return True

    def _update_deadline(self) -> None:
        waiting = self._waits_for_head() or self._is_discarding()
        if not waiting or self.transport.is_closing():
            self._cancel_deadline()
            self._discarded = 0
        elif self._deadline is None:
            self._deadline = self.loop.call_later(self.header_timeout, self._too_late)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """A request the parser refused (or a head over `MAX_HEADER_BYTES`): 400 in JSON."""
        self.transport.write(bad_request(msg))
        self.transport.close()

    def _too_late(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        # Part of a request came: say why it is cut off. Nothing came: just close.
        if self._head_begun():
            self.transport.write(request_timeout(self.header_timeout))
        self.transport.close()


def refuse_if_crowded(transport: asyncio.Transport, connections: int, limit: int) -> bool:
    """Answer 503 and close a connection that makes more than `limit` open; True if so."""
    if connections <= limit:
        return False
    detail = (
        f"the server is serving its limit of {limit} connections "
        "(--max-connections); try again shortly."
    )
    transport.write(_raw_response(503, "Service Unavailable", "ServiceUnavailable", detail))
    transport.close()
    return True


def bad_request(msg: str) -> bytes:
    """The 400 of a request whose line or headers the parser refused (`msg` is its reason)."""
    detail = (
        f"{msg.rstrip('.')}: the request line or headers are malformed or larger than "
        f"{MAX_HEADER_BYTES} bytes; send a well-formed HTTP/1.1 request."
    )
    return _raw_response(400, "Bad Request", "BadRequest", detail)


def request_timeout(seconds: float) -> bytes:
    """The 408 of a request whose headers did not all arrive within `seconds`."""
    detail = (
        f"the request headers did not arrive within {seconds:g} s; "
        "send the whole request promptly."
    )
    return _raw_response(408, "Request Timeout", "RequestTimeout", detail)


def _raw_response(status: int, reason: str, error: str, detail: str) -> bytes:
    """A whole HTTP/1.1 response with the server's JSON error body, closing the connection."""
    body = json.dumps({"detail": detail, "error": error}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body
