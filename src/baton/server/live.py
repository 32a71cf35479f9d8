"""`/run_live`: the reference's WebSocket route of live (bidirectional audio/video) runs,
which baton does not have (`Runner.run_live` raises `RunConfigError`).

A client written for the reference connects with the same query parameters and is told,
in a close frame it can read, why nothing runs: the session it names does not exist
(1002 "Session not found...", as the reference closes), the request is refused (1008:
an unknown app, no app named, a bad parameter, a key or origin not allowed), or the
request is fine but baton has no live mode (1008, naming `POST /run_sse`). The
connection is accepted first, so the reason reaches the client (a close before the
handshake completes is an HTTP 403 without one). Nothing is started and nothing stored.
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple, final
from urllib.parse import urlsplit

from fastapi import APIRouter, FastAPI, HTTPException, Query, WebSocket
from fastapi.exceptions import WebSocketRequestValidationError
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from baton.errors import AppNotFoundError, BatonError
from baton.server.catalog import AppCatalog
from baton.server.security import ApiKeys
from baton.server.settings import ANY_ORIGIN
from baton.sessions.ids import check_id
from baton.sessions.store import SessionKey
from baton.types import SessionId

__all__ = [
    "NO_LIVE_MODE",
    "REFUSED",
    "SESSION_NOT_FOUND",
    "UNEXPECTED",
    "install_live_refusals",
    "live_routes",
]

SESSION_NOT_FOUND: Final = 1002
"""The close code of a session that does not exist: the reference's (a protocol error)."""
REFUSED: Final = 1008
"""The close code of a request refused (policy violation): what to change is in the reason."""
NO_LIVE_MODE: Final = 1008
"""The close code of a valid request for what baton does not do: a live run."""
UNEXPECTED: Final = 1011
"""The close code of a failure on the server's side (the store unreachable, say)."""

_ROUTE: Final = "/run_live"
_REASON_BYTES: Final = 123  # the most a close frame's reason may hold, in UTF-8
_LIVE_REASON: Final = (
    "baton has no live (bidirectional audio/video) mode; stream a run's events with POST /run_sse"
)


def live_routes(
    catalog: AppCatalog,
    keys: ApiKeys,
    default_app_name: str | None,
    allowed_origins: list[str],
) -> APIRouter:
    """The `/run_live` route, closing every connection with the reason it cannot run."""
    router = APIRouter()

    # The reference's parameters, so a request it takes is taken here, and one it refuses
    # is refused (`install_live_refusals` says why).
    @router.websocket(_ROUTE)
    async def run_live(  # pyright: ignore[reportUnusedFunction] -- a route
        websocket: WebSocket,
        user_id: str,
        session_id: str,
        app_name: str | None = Query(default=None),
        modalities: list[Literal["TEXT", "AUDIO", "VIDEO"]] = Query(default=["AUDIO"]),  # noqa: B008 -- FastAPI's idiom for a list parameter
        proactive_audio: bool | None = Query(default=None),
        enable_affective_dialog: bool | None = Query(default=None),
        enable_session_resumption: bool | None = Query(default=None),
        save_live_blob: bool = Query(default=False),
        explicit_vad_signal: bool | None = Query(default=None),
    ) -> None:
        await websocket.accept()
        asked = _Asked(app_name or default_app_name, user_id, session_id)
        code, reason = await _refusal(websocket, catalog, keys, allowed_origins, asked)
        await websocket.close(code=code, reason=_fitted(reason))

    return router


def install_live_refusals(app: FastAPI) -> None:
    """A `/run_live` request whose query parameters FastAPI refuses is accepted and closed
    with 1008 and the first problem (FastAPI's own handler closes before the handshake,
    which a client sees as an HTTP 403 without the reason); a WebSocket to any other path
    is refused (403) before it reaches a route."""
    app.add_middleware(_OnlyLiveSockets)

    async def invalid(websocket: WebSocket, error: WebSocketRequestValidationError) -> None:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem.get("loc", ()) if part != "query")
        message = str(problem.get("msg", "invalid"))
        if problem.get("type") == "missing":
            message = "query parameter required"
        await websocket.accept()
        await websocket.close(code=REFUSED, reason=_fitted(f"{where}: {message}"))

    app.add_exception_handler(WebSocketRequestValidationError, invalid)  # pyright: ignore[reportArgumentType] -- Starlette types handlers by Request, calls them with the WebSocket


@final
class _OnlyLiveSockets:
    """Refuses (403) a WebSocket handshake to any path but `/run_live`: a mount serving
    HTTP only (the pages' static files) would fail on one with 500 and a logged traceback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and _route_path(scope) != _ROUTE:
            await send({"type": "websocket.close", "code": REFUSED})
            return
        await self.app(scope, receive, send)


def _route_path(scope: Scope) -> str:
    """The request's path below where the server is mounted (`root_path`, when another
    app mounts it): what its routes match."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path.removeprefix(root) if root else path


async def _refusal(
    connection: HTTPConnection,
    catalog: AppCatalog,
    keys: ApiKeys,
    allowed_origins: list[str],
    asked: _Asked,
) -> tuple[int, str]:
    """The close code and reason of a `/run_live` request, checked as an HTTP route checks
    its request (the origin, the key, the ids, the app, the session), in that order."""
    origin = connection.headers.get("origin")
    if origin is not None and not _origin_allowed(origin, connection, allowed_origins):
        return REFUSED, f"Origin not allowed: {origin} (allow it with --allow-origin)"
    try:
        keys.authorize(connection, asked.user_id)
    except HTTPException as refused:
        return REFUSED, str(refused.detail)
    app_name, user_id, session_id = asked
    if app_name is None:
        return REFUSED, "app_name query parameter required (the server has no default app)"
    try:
        check_id("user_id", user_id)
        check_id("session_id", session_id)
        runner = catalog.runner(app_name)
        key = SessionKey(runner.app_name, user_id, SessionId(session_id))
        session = await catalog.session_service.store.get_session(key, with_events=False)
    except AppNotFoundError:
        return REFUSED, f"App not found: '{app_name}'; GET /list-apps lists this server's apps"
    except BatonError as error:
        return (REFUSED if isinstance(error, ValueError) else UNEXPECTED), str(error)
    if session is None:
        return SESSION_NOT_FOUND, f"Session not found: '{session_id}' of user '{user_id}'"
    return NO_LIVE_MODE, _LIVE_REASON


class _Asked(NamedTuple):
    app_name: str | None
    user_id: str
    session_id: str


def _origin_allowed(origin: str, connection: HTTPConnection, allowed: list[str]) -> bool:
    """A page may open the socket from an origin the server allows (`--allow-origin`), or
    from the server's own (its host as the request names it)."""
    if ANY_ORIGIN in allowed or origin in allowed:
        return True
    return urlsplit(origin).netloc.lower() == connection.headers.get("host", "").lower()


def _fitted(reason: str) -> str:
    """`reason` cut to what a close frame holds, on a character boundary."""
    encoded = reason.encode()
    if len(encoded) <= _REASON_BYTES:
        return reason
    return encoded[: _REASON_BYTES - 3].decode(errors="ignore") + "..."
