"""A HITL run's requests served without FastAPI's per-request machinery, same replies.

Creating a session, `/run` and answering a question are almost every request of a
run, and FastAPI's routing, dependency solving and body handling cost more CPU per
request than such a route's own code. `HotRoutes` serves a request of one of them
itself when it can take the request whole: a POST with no query string whose body is
empty where the route allows that, or JSON (`Content-Type: application/json`) that
validates into the route's body model as FastAPI would validate it (`json.loads`,
then the model). It then runs the route's own checks and code, so the reply is the
one the FastAPI route sends, refusals included (`refusals.refusal`).

It sits outside the server's other middleware (only CORS is outside it), and does for
the requests it takes what they would do, in one pass over the body instead of one
each: `RequestGuard`'s checks and refusals (`guard.BodyGuard`), the trailing-comma
repair of `LenientJsonMiddleware`, the `SecurityHeaders` of every response, and on a
stream-reading `/run_sse` the refusal frames of `StreamRefusalsMiddleware`.

Every other request goes on to that middleware and FastAPI with its body as sent:
malformed JSON, a body that fails validation, another content type, a query string,
or any request while FastAPI's own OpenTelemetry instrumentation records it. So every
validation refusal still comes from FastAPI itself, and a request served here is one
FastAPI would have accepted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar, final

from pydantic import BaseModel
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from baton.server.guard import BodyGuard, ClientGone, Refusal, has_body
from baton.server.headers import secured
from baton.server.lenient_json import is_json, repair_trailing_commas
from baton.server.refusals import refusal
from baton.server.stream_refusals import refusing_in_frames, wants_stream

__all__ = ["HotRoute", "HotRoutes"]

_Body = TypeVar("_Body", bound=BaseModel)

# The content types whose body FastAPI parses as JSON, among those clients send; any
# other (FastAPI parses `*/*+json` too) goes to FastAPI, which decides the same way.
_JSON_TYPES: Final = frozenset({"application/json", "application/json; charset=utf-8"})
_PARAMETER: Final = re.compile(r"\{(\w+(?::path)?)\}")


@final
@dataclass(frozen=True)
class HotRoute(Generic[_Body]):
    """A POST route `HotRoutes` serves, declared as its FastAPI route is.

    Args:
        path: the route's path, each `{name}` one path segment (FastAPI's `str` parameter),
            each `{name:path}` one or more (an interrupt id may hold a `/`).
        body: the model of the route's JSON body.
        serve: the route's dependencies' checks, then its endpoint's code, given the
            request, the path's parameters and the body.
        when_empty: the body an empty request body means, where the route's body is
            optional (None: an empty body is FastAPI's to refuse).
    """

    path: str
    body: type[_Body]
    serve: Callable[[Request, dict[str, str], _Body], Awaitable[Response]]
    when_empty: Callable[[], _Body] | None = None
    pattern: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        parts = _PARAMETER.split(self.path)  # literal, name, literal, name, ..., literal
        regex = "".join(
            _parameter_pattern(part) if odd else re.escape(part) for odd, part in _alternate(parts)
        )
        object.__setattr__(self, "pattern", re.compile(regex))

    def parse(self, headers: Headers, body: bytes) -> _Body | None:
        """The body as the route's model, or None when FastAPI must handle the request."""
        if not body:
            return self.when_empty() if self.when_empty is not None else None
        if headers.get("content-type") not in _JSON_TYPES:
            return None
        try:
            return self.body.model_validate(json.loads(body))
        except Exception:  # not JSON, not this model, or worse: FastAPI's to answer
            return None


def _parameter_pattern(parameter: str) -> str:
    name, _, convertor = parameter.partition(":")
    return f"(?P<{name}>.+)" if convertor == "path" else f"(?P<{name}>[^/]+)"


def _alternate(parts: list[str]) -> list[tuple[bool, str]]:
    return [(index % 2 == 1, part) for index, part in enumerate(parts)]


@final
class HotRoutes:
    """ASGI middleware serving `routes` itself where it can take the request whole (see
    the module's docstring), checking bodies with `guard`; everything else goes on to
    `app` as sent."""

    def __init__(self, app: ASGIApp, *, routes: Sequence[HotRoute[Any]], guard: BodyGuard) -> None:
        self.app = app
        self.routes = tuple(routes)
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = self._match(scope)
        if found is None:
            await self.app(scope, receive, send)
            return
        route, params = found
        # What the middleware it stands in for do to each response: outermost first.
        reply = secured(refusing_in_frames(send) if wants_stream(scope) else send)
        headers = Headers(scope=scope)
        if has_body(headers):
            try:
                body = await self.guard.body(headers, receive)
            except Refusal as refused:
                await refused.response()(scope, receive, reply)
                return
            except ClientGone:
                return
            messages: list[Message] = [{"type": "http.request", "body": body}]
        else:
            messages, body = await _read(receive)
        parsed = None
        if body is not None:
            parsed = route.parse(headers, repair_trailing_commas(body) if is_json(scope) else body)
        if parsed is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        scope["path_params"] = params  # as the router sets them, for the route's checks
        request = Request(scope, receive)
        try:
            response = await route.serve(request, params, parsed)
        except Exception as error:
            response = await refusal(request, error)
            if response is None:
                raise  # no handler: as from the FastAPI route, a 500
        await response(scope, receive, reply)

    def _match(self, scope: Scope) -> tuple[HotRoute[Any], dict[str, str]] | None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope.get("query_string")
            or scope.get("root_path")
            # FastAPI's OpenTelemetry spans (a tracer provider is set) name the route
            # and time its dependencies and endpoint: it serves what it observes.
            or scope.get("fastapi.telemetry") is not None
        ):
            return None
        path: str = scope["path"]
        for route in self.routes:
            matched = route.pattern.fullmatch(path)
            if matched is not None:
                return route, matched.groupdict()
        return None


async def _read(receive: Receive) -> tuple[list[Message], bytes | None]:
    """The request's messages as received, and its body (None: the client left first)."""
    messages: list[Message] = []
    chunks: list[bytes] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return messages, b"".join(chunks)


def _replay(messages: list[Message], then: Receive) -> Receive:
    """A `receive` giving `messages` again, then the client's own."""
    pending = list(reversed(messages))

    async def receive() -> Message:
        return pending.pop() if pending else await then()

    return receive
