"""Headers every response carries, so browsers treat the server's pages and JSON safely.

- `X-Content-Type-Options: nosniff`: a browser uses the declared content type and
  never guesses (a JSON body holding user text is never run as HTML or script);
- `X-Frame-Options: DENY` and CSP `frame-ancestors 'none'`: no other site can
  frame the inbox page and trick a user into clicking its buttons;
- `Referrer-Policy: no-referrer`: session ids in URLs do not leak to other sites.
"""

from __future__ import annotations

from typing import Final, final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SECURITY_HEADERS", "SecurityHeaders", "secured"]

SECURITY_HEADERS: Final[tuple[tuple[bytes, bytes], ...]] = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"referrer-policy", b"no-referrer"),
)


@final
class SecurityHeaders:
    """ASGI middleware adding `SECURITY_HEADERS` to every HTTP response that lacks them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        await self.app(scope, receive, secured(send))


def secured(send: Send) -> Send:
    """`send`, adding `SECURITY_HEADERS` to the response's start where it lacks them."""

    async def send_with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers: list[tuple[bytes, bytes]] = list(message.get("headers", []))
            present = {name.lower() for name, _ in headers}
            headers += [(k, v) for k, v in SECURITY_HEADERS if k not in present]
            message = {**message, "headers": headers}
        await send(message)

    return send_with_headers
