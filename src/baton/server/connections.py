"""How uvicorn serves baton: bounded connections, so slow or idle clients cannot pile up.

uvicorn bounds the idle time between requests (`timeout_keep_alive`) and the
connections served at once (`limit_concurrency`), but not the time a client may take
to send its headers: a client sending one byte a second holds a connection forever.
The protocols here close a connection whose request headers are not complete within
the read timeout (the body's time is bounded by `guard.RequestGuard`), bound the size
of a request's head and the rest of a refused body, and answer malformed requests in
the server's JSON shape instead of plain text (see `client_bounds`).

The request parser is httptools (llhttp, in C) when it is installed, as the `server`
extra does: h11, in pure Python, took a tenth of the server's CPU per request. h11
serves otherwise, with the same bounds.

WebSocket handshakes are taken (by uvicorn's sans-I/O protocol over `websockets`, which
the `server` extra brings) only so `/run_live` can close with a reason a client reads
(see `live`); no route reads a WebSocket message, so none may be larger than
`MAX_WS_MESSAGE_BYTES`. Without `websockets` an upgrade request is served as plain HTTP.
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Final, Literal

import uvicorn
from starlette.types import ASGIApp

from baton.server.client_bounds import MAX_HEADER_BYTES
from baton.server.h11_protocol import BoundedH11Protocol
from baton.server.settings import Limits

__all__ = ["MAX_WS_MESSAGE_BYTES", "PARSER", "Parser", "server_config"]

Parser = Literal["httptools", "h11"]

PARSER: Final[Parser] = "httptools" if importlib.util.find_spec("httptools") else "h11"
"""The parser `server_config` uses unless told: httptools where it is installed."""

_WS: Final = "websockets-sansio" if importlib.util.find_spec("websockets") else "none"
MAX_WS_MESSAGE_BYTES: Final = 64 * 1024
"""The largest WebSocket message taken (larger closes the connection, 1009)."""


def server_config(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    limits: Limits,
    log_level: str | None = None,
    timeout_graceful_shutdown: int | None = None,
    access_log: bool = False,
    parser: Parser = PARSER,
) -> uvicorn.Config:
    """A uvicorn configuration serving `app` within `limits` (HTTP/1.1 parsed by `parser`,
    WebSocket handshakes where `websockets` is installed), with a line logged per request
    when `access_log`."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        ws=_WS,
        ws_max_size=MAX_WS_MESSAGE_BYTES,
        http=_bounded_protocol(limits, parser),
        timeout_keep_alive=max(1, round(limits.keep_alive)),
        # Connections past the limit are refused (503 JSON) as they open, by the protocol;
        # uvicorn's own check (one more, for requests in flight) stays as a backstop.
        limit_concurrency=limits.max_connections + 1,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        log_level=log_level,
        timeout_graceful_shutdown=timeout_graceful_shutdown,
        access_log=access_log,
    )


def _bounded_protocol(limits: Limits, parser: Parser) -> type[asyncio.Protocol]:
    settings = {"header_timeout": limits.read_timeout, "max_connections": limits.max_connections}
    if parser == "httptools":
        # Imported only then: it imports httptools, which an environment may lack.
        from baton.server.httptools_protocol import (
            BoundedHttpToolsProtocol,
            remember_valid_headers,
        )

        remember_valid_headers()
        return type("BoundedHttpToolsProtocol", (BoundedHttpToolsProtocol,), settings)
    return type("BoundedH11Protocol", (BoundedH11Protocol,), settings)
