"""Accept JSON bodies with trailing commas, as hand-written curl examples often have.

The reference documentation's resume example (`{"invocation_id": "...", }`) is not
strict JSON; it must still work, so a body that fails to parse only because of a
comma before `}` or `]` is repaired before routing. Anything else is left as sent.
"""

from __future__ import annotations

import json
import re
from typing import final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["LenientJsonMiddleware", "is_json", "repair_trailing_commas"]

# A JSON string literal (kept as is), or a comma that only whitespace separates from a closer.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|,(\s*[}\]])')


# A comma before a closer, anywhere (inside a string too): without one there is nothing to
# repair, and the body is left to the route's parser without being parsed here first.
_TRAILING_COMMA = re.compile(rb",\s*[}\]]")


def repair_trailing_commas(body: bytes) -> bytes:
    """`body` with trailing commas removed when that makes it valid JSON; else `body`."""
    if _TRAILING_COMMA.search(body) is None:
        return body
    try:
        json.loads(body)
        return body
    except ValueError:
        pass
    try:
        text = body.decode()
    except UnicodeDecodeError:
        return body
    repaired = _TOKEN.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(0), text)
    try:
        json.loads(repaired)
    except ValueError:
        return body
    return repaired.encode()


@final
class LenientJsonMiddleware:
    """ASGI middleware that repairs trailing commas in JSON request bodies."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_json(scope):
            await self.app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message]), send)
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
        repaired = repair_trailing_commas(body) if body else body
        await self.app(scope, _replay([{"type": "http.request", "body": repaired}], receive), send)


def is_json(scope: Scope) -> bool:
    """Whether the request's content type names JSON (its body is repaired if need be)."""
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    # Filtered inside the generator: it yields once, not once per header.
    return any(b"json" in value for name, value in headers if name == b"content-type")


def _replay(messages: list[Message], then: Receive | None = None) -> Receive:
    async def receive() -> Message:
        if messages:
            return messages.pop(0)
        if then is None:
            return {"type": "http.disconnect"}
        return await then()

    return receive
