"""Refusals on `/run_sse` that a stream reader sees: one SSE error frame, status kept.

Clients that read `/run_sse` as a stream often look only at its `data:` lines (the
reference's web UI does), so a JSON refusal body shows them nothing. When the
request accepts `text/event-stream`, a refusal (any status from 400 on, JSON
body) is re-sent as one frame in the shape of a failed run's last frame:

    data: {"error": "<Type>: <message>", "detail": ..., "error_details":
           {"error_type": ..., "error_message": ..., "status": 422}}

with the same status and headers. Other clients get the JSON body as every route
sends it.
"""

from __future__ import annotations

import json
from typing import Final, final

from pydantic import JsonValue
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from baton.server.sse import frame

__all__ = ["StreamRefusalsMiddleware", "refusal_frame", "refusing_in_frames", "wants_stream"]

_ROUTE: Final = "/run_sse"
_STREAM: Final = b"text/event-stream"


def refusal_frame(body: bytes, status: int) -> bytes:
    """A JSON refusal body (`{"detail", "error", ...}`) as one SSE error frame."""
    try:
        parsed: JsonValue = json.loads(body)
    except ValueError:
        parsed = body.decode(errors="replace")
    fields = parsed if isinstance(parsed, dict) else {"detail": parsed}
    kind = str(fields.get("error") or "HTTPError")
    detail = fields.get("detail")
    # A validation refusal keeps FastAPI's problem list in `detail` and its sentence in `message`.
    message = str(fields.get("message") or (detail if isinstance(detail, str) else parsed))
    return frame(
        {
            "error": f"{kind}: {message}",
            "detail": detail,
            "error_details": {"error_type": kind, "error_message": message, "status": status},
        }
    )


def wants_stream(scope: Scope) -> bool:
    """Whether the request is a `/run_sse` call that accepts an event stream."""
    if scope["type"] != "http" or scope["path"] != _ROUTE:
        return False
    accept = b",".join(v for k, v in scope["headers"] if k == b"accept")
    return _STREAM in accept


@final
class StreamRefusalsMiddleware:
    """Re-send `/run_sse` refusals as an SSE error frame to clients that accept a stream."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap `app`."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass everything through, except a refusal of a stream-reading `/run_sse` call."""
        if not wants_stream(scope):
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, refusing_in_frames(send))


def refusing_in_frames(send: Send) -> Send:
    """`send`, sending a refusal (status 400 or more) as one SSE error frame."""
    held: Message | None = None
    body = bytearray()

    async def rewrite(message: Message) -> None:
        nonlocal held
        if message["type"] == "http.response.start" and message["status"] >= 400:
            held = message
            return
        if held is None or message["type"] != "http.response.body":
            await send(message)
            return
        body.extend(message.get("body", b""))
        if not message.get("more_body", False):
            await _send_frame(send, held, refusal_frame(bytes(body), held["status"]))

    return rewrite


async def _send_frame(send: Send, start: Message, data: bytes) -> None:
    kept = [
        (k, v) for k, v in start.get("headers", []) if k not in (b"content-type", b"content-length")
    ]
    headers = [
        *kept,
        (b"content-type", b"text/event-stream; charset=utf-8"),
        (b"content-length", str(len(data)).encode()),
    ]
    await send({"type": "http.response.start", "status": start["status"], "headers": headers})
    await send({"type": "http.response.body", "body": data})
