"""How uvicorn serves baton: bounded connections, so slow or idle clients cannot pile up.

uvicorn bounds the idle time between requests (`timeout_keep_alive`), the size of
a request's headers (h11's incomplete-event limit) and the connections served at
once (`limit_concurrency`), but not the time a client may take to send its
headers: a client sending one byte a second holds a connection forever. The
protocol here closes a connection whose request headers are not complete within
the read timeout (the body's time is bounded by `guard.RequestGuard`), bounds
the rest of a refused body, and answers malformed requests in the server's JSON
shape instead of plain text.
"""

from __future__ import annotations

import asyncio
import json
from typing import ClassVar, Final

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from baton.server.settings import Limits

__all__ = ["MAX_DISCARD_BYTES", "MAX_HEADER_BYTES", "BoundedH11Protocol", "server_config"]

MAX_HEADER_BYTES: Final = 64 * 1024
"""The most a request line and headers may take; larger gets 400 and a closed connection."""
MAX_DISCARD_BYTES: Final = 256 * 1024 * 1024
"""The most of a refused body read (and dropped) so its client can still read the refusal."""


def server_config(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    limits: Limits,
    log_level: str | None = None,
    timeout_graceful_shutdown: int | None = None,
    access_log: bool = False,
) -> uvicorn.Config:
    """A uvicorn configuration serving `app` within `limits` (HTTP/1.1 via h11, no websockets),
    with a line logged per request when `access_log`."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        ws="none",
        http=_bounded_protocol(limits),
        timeout_keep_alive=max(1, round(limits.keep_alive)),
        # Connections past the limit are refused (503 JSON) as they open, by the protocol;
        # uvicorn's own check (one more, for requests in flight) stays as a backstop.
        limit_concurrency=limits.max_connections + 1,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        log_level=log_level,
        timeout_graceful_shutdown=timeout_graceful_shutdown,
        access_log=access_log,
    )


def _bounded_protocol(limits: Limits) -> type[H11Protocol]:
    settings = {"header_timeout": limits.read_timeout, "max_connections": limits.max_connections}
    return type("BoundedH11Protocol", (BoundedH11Protocol,), settings)


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline whenever the server waits on the client.

    It waits on the client while a request's headers are incomplete, and after it
    refused a request early (401, 413) while the rest of that body still arrives: the
    rest is discarded as it comes (never stored), so the client gets to read the
    refusal, but only until the deadline or `MAX_DISCARD_BYTES`. Waiting for a body
    the app reads is bounded by `guard.RequestGuard`; idle keep-alive by uvicorn.
    """

    header_timeout: ClassVar[float] = 30.0
    max_connections: ClassVar[int] = 1000
    _deadline: asyncio.TimerHandle | None = None
    _discarded: int = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # pyright: ignore[reportIncompatibleMethodOverride] -- uvicorn narrows BaseTransport the same way
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            detail = (
                f"the server is serving its limit of {self.max_connections} connections "
                "(--max-connections); try again shortly."
            )
            error = _raw_response(503, "Service Unavailable", "ServiceUnavailable", detail)
            transport.write(error)
            transport.close()
            return
        self._update_deadline()

    def data_received(self, data: bytes) -> None:
        if self._is_discarding():
            self._discarded += len(data)
            if self._discarded > MAX_DISCARD_BYTES:
                self.transport.close()
                return
        super().data_received(data)
        self._update_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._update_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse (or headers over `MAX_HEADER_BYTES`): 400 in JSON."""
        detail = (
            f"{msg.rstrip('.')}: the request line or headers are malformed or larger than "
            f"{MAX_HEADER_BYTES} bytes; send a well-formed HTTP/1.1 request."
        )
        self.transport.write(_raw_response(400, "Bad Request", "BadRequest", detail))
        self.transport.close()

    def _is_discarding(self) -> bool:
        """The response is sent, but the request's body is still arriving."""
        return self.conn.our_state is h11.DONE and self.conn.their_state is h11.SEND_BODY

    def _update_deadline(self) -> None:
        waiting = self.conn.their_state is h11.IDLE or self._is_discarding()
        if not waiting or self.transport.is_closing():
            self._cancel_deadline()
            self._discarded = 0
        elif self._deadline is None:
            self._deadline = self.loop.call_later(self.header_timeout, self._too_late)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_late(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        # Part of a request came: say why it is cut off. Nothing came: just close.
        if self.conn.their_state is h11.IDLE and self.conn.trailing_data[0]:
            detail = (
                f"the request headers did not arrive within {self.header_timeout:g} s; "
                "send the whole request promptly."
            )
            self.transport.write(_raw_response(408, "Request Timeout", "RequestTimeout", detail))
        self.transport.close()


def _raw_response(status: int, reason: str, error: str, detail: str) -> bytes:
    """A whole HTTP/1.1 response with the server's JSON error body, closing the connection.

    Written directly: h11 cannot answer a request it has not parsed.
    """
    body = json.dumps({"detail": detail, "error": error}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body
