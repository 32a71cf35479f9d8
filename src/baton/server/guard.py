"""The first look at a request body: the key, the size, the pace and the JSON's shape.

Runs before any other middleware reads a body, so a request the server will refuse
costs it almost nothing:

- with API keys on, a body sent without a known key is refused (401) unread;
- a `Content-Length` over the limit is refused (413) unread, and a streamed
  (chunked) body is refused as soon as it grows past the limit;
- a body not complete within the read timeout is refused (408);
- a JSON body that is not UTF-8, or nests deeper than `MAX_JSON_DEPTH`, is
  refused (400) before anything parses it recursively.

Every refusal is the server's one JSON shape; the rest of a refused body is never
stored or parsed (the connection drops it as it arrives, within bounds).
"""

from __future__ import annotations

import asyncio
from typing import Final, final

import pydantic_core
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from baton.server.bodies import ErrorBody
from baton.server.security import MISSING_KEY, ApiKeys
from baton.server.settings import Limits
from baton.sessions.ids import MAX_JSON_DEPTH

__all__ = ["BodyGuard", "ClientGone", "Refusal", "RequestGuard", "has_body"]


# pydantic-core's parser stops at this depth; wrapping the body in enough arrays to
# leave MAX_JSON_DEPTH of it makes that limit ours, checked in Rust at parsing speed.
_PARSER_DEPTH: Final = 200
_PADDING: Final = _PARSER_DEPTH - MAX_JSON_DEPTH


@final
class Refusal(Exception):
    """A request refused before its body reached the app."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail

    def response(self) -> JSONResponse:
        body = ErrorBody(detail=self.detail, error=self.error)
        # A slow client's connection is closed; otherwise the rest of the body is dropped
        # as it arrives (see `connections`), so the client reads this.
        headers = {"Connection": "close"} if self.status == 408 else None
        return JSONResponse(body.to_wire(), self.status, headers=headers)


class ClientGone(Exception):
    """The client disconnected while sending its body: there is no one to answer."""


@final
class RequestGuard:
    """ASGI middleware: refuse unauthenticated, oversized, slow or too-deep bodies early.

    Args:
        app: the app behind it.
        keys: the server's API keys (a body is read only with a known key).
        limits: the body size and read-time limits.
    """

    def __init__(self, app: ASGIApp, *, keys: ApiKeys, limits: Limits) -> None:
        self.app = app
        self.guard = BodyGuard(keys, limits)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not has_body(headers):
            await self.app(scope, receive, send)
            return
        try:
            body = await self.guard.body(headers, receive)
        except Refusal as refusal:
            await refusal.response()(scope, receive, send)
            return
        except ClientGone:
            return
        await self.app(scope, _replay(body, receive), send)


@final
class BodyGuard:
    """The checks `RequestGuard` makes of a request that has a body, for it and for a
    middleware that takes such a request whole before it (`hot_routes`)."""

    def __init__(self, keys: ApiKeys, limits: Limits) -> None:
        self.keys = keys
        self.limits = limits

    async def body(self, headers: Headers, receive: Receive) -> bytes:
        """The request's whole body, read once its headers pass.

        Raises:
            Refusal: no known key (401), too large (413), too slow (408), or JSON that is
                not UTF-8 or nests too deep (400).
            ClientGone: the client left while sending it.
        """
        self._check_headers(headers)
        body = await self._read(receive)
        if "json" in headers.get("content-type", ""):
            check_json(body)
        return body

    def _check_headers(self, headers: Headers) -> None:
        if not self.keys.admits(headers):
            raise Refusal(401, "Unauthorized", MISSING_KEY)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.limits.max_body:
            raise self._too_large(f"{int(declared)} bytes")

    async def _read(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        deadline = _Deadline(self.limits.read_timeout)
        try:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientGone
                chunk: bytes = message.get("body", b"")
                size += len(chunk)
                if size > self.limits.max_body:
                    raise self._too_large(f"more than {self.limits.max_body} bytes")
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        except asyncio.CancelledError:
            if not deadline.expired():
                raise
            raise Refusal(
                408,
                "RequestTimeout",
                f"the request body did not arrive within {self.limits.read_timeout:g} s "
                f"({size} bytes came); send the whole body promptly.",
            ) from None
        finally:
            deadline.cancel()

    def _too_large(self, size: str) -> Refusal:
        return Refusal(
            413,
            "ContentTooLarge",
            f"the request body is {size}; this server accepts at most "
            f"{self.limits.max_body} bytes (--max-body / BATON_MAX_BODY). Send less, e.g. "
            "large files as artifacts or by reference.",
        )


@final
class _Deadline:
    """Cancels the current task once `seconds` pass, unless cancelled first: what
    `asyncio.timeout` does around a body's reading, for a quarter of its instructions
    (one timer, no state to keep; 22k fewer on every request with a body, callgrind)."""

    def __init__(self, seconds: float) -> None:
        self._task = asyncio.current_task()
        self._expired = False
        self._timer = asyncio.get_running_loop().call_later(seconds, self._expire)

    def _expire(self) -> None:
        self._expired = True
        if self._task is not None:
            self._task.cancel()

    def cancel(self) -> None:
        self._timer.cancel()

    def expired(self) -> bool:
        """Whether the cancellation being handled is this deadline's alone (it is then
        taken back): False when it did not pass, or someone else cancelled the task too."""
        return self._expired and self._task is not None and self._task.uncancel() == 0


def check_json(body: bytes) -> None:
    """Refuse a JSON body that is not UTF-8 or nests too deep; leave other faults to routing.

    A body that is merely invalid JSON passes: the lenient-JSON middleware may repair
    it, and the route's validation names the fault.

    Raises:
        Refusal: 400, saying what is wrong and where.
    """
    try:
        body.decode()
    except UnicodeDecodeError as error:
        raise Refusal(
            400,
            "BadRequest",
            f"the body is not UTF-8 (byte {error.start} is 0x{body[error.start]:02x}); send "
            "JSON encoded as UTF-8.",
        ) from None
    if body.count(b"[") + body.count(b"{") <= MAX_JSON_DEPTH:
        return  # cannot nest deeper than it has openers: no need to parse it here
    try:
        pydantic_core.from_json(b"[" * _PADDING + body + b"]" * _PADDING)
    except ValueError as error:
        if "recursion limit" in str(error):
            raise Refusal(
                400,
                "BadRequest",
                f"the body's JSON nests deeper than {MAX_JSON_DEPTH} levels (arrays and "
                "objects inside each other); send a flatter document.",
            ) from None


def has_body(headers: Headers) -> bool:
    """Whether the request sends a body (`RequestGuard` checks only those)."""
    return headers.get("content-length", "0") != "0" or "transfer-encoding" in headers


def _replay(body: bytes, then: Receive) -> Receive:
    """A `receive` that gives the body once, then the client's own messages (disconnects)."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> Message:
        return pending.pop() if pending else await then()

    return receive
