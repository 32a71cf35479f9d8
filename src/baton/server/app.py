"""The HTTP API: the reference server's routes, plus the inbox of pending inputs.

Routes check the caller, then call the Runner or the store, nothing else. Every
baton error becomes a JSON body `{"detail": ..., "error": ...}` with the status
of `refusals.STATUS`, and — because the Runner checks before it changes anything — a
refused request leaves the store as it was.
"""

from __future__ import annotations

import asyncio
import platform
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeVar, final

from fastapi import (
    APIRouter,
    Depends,
    FastAPI,
    Header,
    HTTPException,
    Query,
    Request,
    Response,
    params,
)
from fastapi.responses import FileResponse, StreamingResponse
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, JsonValue
from starlette.background import BackgroundTask

from baton.aborting import AbortSignal
from baton.errors import (
    AppNameRequiredError,
    InvalidIdError,
    InvalidMessageError,
    SessionNotFoundError,
    SessionOptionsError,
)
from baton.events import Event, EventActions
from baton.notifier import Notifier, NotifySettings
from baton.run_config import RunConfig, StreamingMode
from baton.server.app_info import app_info_routes
from baton.server.artifact_routes import artifact_routes
from baton.server.bodies import (
    AppsDetail,
    AppSummary,
    CreateSessionRequest,
    RespondRequest,
    RunAgentRequest,
    StateUpdate,
    VersionInfo,
)
from baton.server.catalog import AppCatalog, ShuttingDownError
from baton.server.dev_routes import dev_routes
from baton.server.guard import BodyGuard, RequestGuard
from baton.server.headers import SecurityHeaders
from baton.server.history_routes import history_routes
from baton.server.hot_routes import HotRoute, HotRoutes
from baton.server.idempotency import IdempotentReplies
from baton.server.inbox import InboxSnapshot, chosen_apps, read_inbox, watch, watched_inbox
from baton.server.lenient_json import LenientJsonMiddleware
from baton.server.live import install_live_refusals, live_routes
from baton.server.memory_routes import memory_routes
from baton.server.origins import allow_origins
from baton.server.paging import Cursor, Limit, OptionalLimit, shown
from baton.server.refusals import ERROR_RESPONSES, install_refusals
from baton.server.run_replies import invocation_of_call, model_reply, run_reply
from baton.server.run_replies import shown as is_shown
from baton.server.security import ANY_USER, ApiKeys, other_user
from baton.server.session_import import carries_run_data, imported_history
from baton.server.settings import Limits
from baton.server.sse import ChangeSignal, RunFeed, error_frame, frame, keepalive_frame
from baton.server.stream_refusals import StreamRefusalsMiddleware
from baton.server.timeline import Timeline, build_timeline
from baton.sessions.ids import check_event, check_id, check_stored_id
from baton.sessions.paging import DEFAULT_PAGE, MAX_PAGE, Page, read_every_page
from baton.sessions.store import (
    Interrupt,
    InterruptStatus,
    Invocation,
    Session,
    SessionKey,
    Subscription,
)
from baton.types import SessionId
from baton.worker import Worker

if TYPE_CHECKING:  # pragma: no cover - the OpenTelemetry SDK is needed only with traces on
    from baton.server.ui_traces import SessionTraces

__all__ = ["STATIC_DIR", "create_app", "drain_server"]

_T = TypeVar("_T")

STATIC_DIR: Final = Path(__file__).parent / "static"


@final
@dataclass
class _Server:
    catalog: AppCatalog
    keys: ApiKeys
    poll_interval: float
    keepalive: float
    default_app_name: str | None
    changes: ChangeSignal = field(default_factory=ChangeSignal)
    group: asyncio.TaskGroup | None = None
    runs: set[asyncio.Task[None]] = field(default_factory=set[asyncio.Task[None]])
    feeds: set[RunFeed] = field(default_factory=set[RunFeed])
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    drain_ends: float = 0.0  # loop time when runs still going are cut off
    worker: Worker | None = None
    replies: IdempotentReplies[Response] = field(default_factory=IdempotentReplies[Response])
    watchers: int = 0  # live streams (pending, inbox)
    # The store's wake-ups about questions, and the task forwarding them to the streams,
    # while any is live.
    questions: Subscription | None = None
    forwarding: asyncio.Task[None] | None = None

    @property
    def draining(self) -> bool:
        return self.stopping.is_set()

    def drain(self, grace: float = 0.0) -> None:
        """Start shutting down: refuse new runs (503), end every live stream (pending and
        inbox) now, and let runs reach a pause within `grace` seconds."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        loop = asyncio.get_running_loop()
        self.drain_ends = loop.time() + grace
        # Runs still going at the end of the grace are handed over while their requests
        # can still be answered (uvicorn waits a little longer than the grace).
        loop.call_later(grace, self.hand_over_runs)
        if self.worker is not None:
            self.worker.drain(grace)
        self.changes.notify()

    def hand_over_runs(self) -> None:
        """Cut off every run still going: its client is told (503, or an error frame), and
        its lease is released so another process continues it at once."""
        for feed in list(self.feeds):
            feed.hand_over(
                ShuttingDownError(
                    "this server shut down before the run paused; it was handed over and "
                    "another baton process continues it from its last commit (follow it "
                    "through the session, or the pending listing)."
                )
            )

    async def finish_runs(self) -> None:
        """Give runs still going the rest of the grace period, then cut them off: each
        releases its lease, so another process continues it at once."""
        pending = set(self.runs)
        left = self.drain_ends - asyncio.get_running_loop().time()
        if pending and left > 0:
            await asyncio.wait(pending, timeout=left)
        for task in list(self.runs):
            task.cancel()

    async def read(self, work: Coroutine[object, object, _T]) -> _T:
        """Await `work` run in the server's task group, so a stream cancelled by its client
        never tears a database connection down in the middle of a query."""
        return await asyncio.shield(self.spawn(work))

    def watch(
        self, read: Callable[[], Coroutine[object, object, dict[str, JsonValue]]]
    ) -> AsyncIterator[bytes]:
        """The SSE frames of a stream showing the view `read()` returns, then its changes,
        until the server drains.

        Where the store tells of other processes' changes (PostgreSQL), the stream waits
        for that instead of polling.
        """
        pushes = self.catalog.session_service.store.wakes_other_processes
        frames = watch(
            lambda: self.read(read()),
            changes=self.changes,
            interval=self.keepalive if pushes else min(self.poll_interval, self.keepalive),
            stopping=self.stopping,
        )
        return self._forwarding_while(frames)

    async def _forwarding_while(self, frames: AsyncGenerator[bytes, None]) -> AsyncIterator[bytes]:
        """`frames`, with the store's wake-ups about questions forwarded to the live
        streams while any is live. Only then does this process ask for every change to
        questions: on PostgreSQL, a server with no stream open is not woken by the other
        processes' answers (see `baton.sessions.sql.listener`)."""
        if self.questions is None:
            # Subscribed before the stream's first read: no change after it goes unheard.
            self.questions = self.catalog.session_service.store.subscribe(questions=True)
            self.forwarding = self.spawn(_forward_wakeups(self, self.questions))
        self.watchers += 1
        try:
            async with aclosing(frames):
                async for frame in frames:
                    yield frame
        finally:
            self.watchers -= 1
            if self.watchers == 0:
                self.stop_forwarding()

    def stop_forwarding(self) -> None:
        if self.questions is not None:
            self.questions.close()
            self.questions = None
        if self.forwarding is not None:
            self.forwarding.cancel()
            self.forwarding = None

    def spawn(self, work: Coroutine[object, object, _T]) -> asyncio.Task[_T]:
        """Run `work` in the server's task group."""
        return self._started().create_task(work)

    def feed(self, events: AsyncGenerator[Event, None]) -> RunFeed:
        """Drive a run in the server's task group; tracked so shutdown can cut it off."""
        feed = RunFeed(self._started(), events, on_change=self.changes.notify)
        self.runs.add(feed.task)
        self.feeds.add(feed)
        feed.task.add_done_callback(self.runs.discard)
        feed.task.add_done_callback(lambda _: self.feeds.discard(feed))
        return feed

    def _started(self) -> asyncio.TaskGroup:
        if self.group is None:
            raise RuntimeError("the server is not started; run it under uvicorn (lifespan on).")
        return self.group


def _build_models() -> None:
    """Build baton's pydantic models that are not built yet (`defer_build`: see WireModel),
    before the routes are made.

    FastAPI makes a route's body and response validators as the route is made, with the
    warnings pydantic gives for its own field metadata silenced; pydantic defers the
    validator of a model whose config says `defer_build`, built or not, leaving a
    stand-in that builds on the first request, outside that silence (a warning per
    process, an error where warnings are errors: every `/run` answered 500 under the
    test suite). A server builds them all once at its start, which `import baton` does
    not pay, and marks them no longer deferred.
    """
    pending: list[type[BaseModel]] = [BaseModel]
    while pending:
        for model in pending.pop().__subclasses__():
            pending.append(model)
            if not model.__module__.startswith("baton."):
                continue
            if not model.__pydantic_complete__:
                model.model_rebuild(raise_errors=False)
            if model.__pydantic_complete__ and model.model_config.get("defer_build"):
                model.model_config["defer_build"] = False


def create_app(
    catalog: AppCatalog,
    *,
    api_keys: ApiKeys | None = None,
    web: bool = False,
    allowed_origins: Sequence[str] = (),
    poll_interval: float = 1.0,
    keepalive: float = 15.0,
    limits: Limits | None = None,
    traces: SessionTraces | None = None,
    recover: bool = True,
    grace: float = 30.0,
    notify: NotifySettings | None = None,
    hot_routes: bool = True,
    default_app_name: str | None = None,
) -> FastAPI:
    """The ASGI app serving `catalog`'s apps.

    Args:
        catalog: the apps and their shared session service.
        api_keys: keys callers must present (none: open server).
        web: also serve the inbox page at `/`.
        allowed_origins: web origins whose pages may call the API (CORS), as
            `parse_origins` returns them; `*` for any.
        poll_interval: how often live streams look for changes made by other processes.
        keepalive: seconds of silence after which a stream sends an SSE comment, so
            proxies keep it open while a slow node works.
        limits: request body size and read time (the defaults of `Limits` when None).
        traces: where spans are kept per session for the reference web UI's Traces
            tab (`--trace-to-ui`); None: its trace route says how to turn it on.
        recover: run a `Worker` for the served apps: continue runs whose process died
            and enforce question deadlines.
        grace: at shutdown (`drain_server`), how long runs may go on before they are cut
            off and handed over.
        notify: webhook receivers of question and run notifications (see
            `baton.notifier`); None: notifications wait in the store for a process that
            delivers them.
        hot_routes: serve a run's requests (create a session, `/run`, `/run_sse`,
            answer) without FastAPI where the request is one it accepts, for a fraction
            of the CPU and the same replies (see `hot_routes`); False: FastAPI serves
            every request.
        default_app_name: the app `/run` and `/run_sse` run when the body names none
            (the reference's `ADK_DEFAULT_APP_NAME`, which `baton api_server` reads);
            None: such a request is refused (400).

    Raises:
        AppNotFoundError: `default_app_name` is not one of the catalog's apps.
    """
    if default_app_name is not None:
        catalog.runner(default_app_name)  # a default that is not served fails here, not per run
    _build_models()
    server = _Server(catalog, api_keys or ApiKeys(), poll_interval, keepalive, default_app_name)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with asyncio.TaskGroup() as group:
            server.group = group
            if recover and catalog.runners:
                server.worker = Worker(catalog.runners.values(), poll=poll_interval)
                group.create_task(server.worker.run())
            store = catalog.session_service.store
            notifying = group.create_task(Notifier(store, notify).run()) if notify else None
            try:
                yield
            finally:
                server.drain(grace)
                server.stop_forwarding()
                await server.finish_runs()
                if notifying is not None:
                    notifying.cancel()  # what is left waits in the outbox for any sender
                server.group = None

    app = FastAPI(
        title="baton",
        version=version("baton"),
        description="Durable, resumable agent workflows with human-in-the-loop.",
        lifespan=lifespan,
    )
    # The hook a graceful shutdown calls first: live streams end, so connections can close.
    app.state.drain = server.drain
    limits = limits or Limits()
    app.add_middleware(LenientJsonMiddleware)
    # Before anything reads a body: the key, the size, the pace and the JSON depth.
    app.add_middleware(RequestGuard, keys=server.keys, limits=limits)
    app.add_middleware(SecurityHeaders)
    install_refusals(app)
    install_live_refusals(app)
    app.add_middleware(StreamRefusalsMiddleware)
    if hot_routes:  # outside the four above: it does their work for what it serves
        guard = BodyGuard(server.keys, limits)
        app.add_middleware(HotRoutes, routes=_hot_routes(server), guard=guard)
    allow_origins(app, list(allowed_origins))  # outermost: preflights need no API key
    # Routes are matched in order, and a run's requests are most of the traffic: theirs
    # come first (no route before them matches their paths, so nothing else changes).
    app.include_router(_run_routes(server))
    app.include_router(_answer_routes(server))
    app.include_router(_session_routes(server))
    app.include_router(_public_routes(server))
    app.include_router(live_routes(catalog, server.keys, default_app_name, list(allowed_origins)))
    app.include_router(app_info_routes(server.catalog, server.keys))
    app.include_router(_listing_routes(server))
    app.include_router(_inbox_routes(server))
    app.include_router(dev_routes(catalog, server.keys, traces))
    app.include_router(artifact_routes(catalog, _user_checks(server)))
    app.include_router(memory_routes(catalog, _user_checks(server)))
    app.include_router(_user_inbox_routes(server))
    app.include_router(history_routes(catalog, _user_checks(server), server.changes.notify))
    if web:
        app.include_router(_page_routes())
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return app


def drain_server(app: FastAPI, grace: float) -> None:
    """Begin a graceful shutdown of an app made by `create_app`: new runs are refused with
    503 and `Retry-After`, pending streams end, and the worker's runs get `grace` seconds
    to pause (runs still going when the server stops release their leases)."""
    drain: Callable[[float], None] = app.state.drain
    drain(grace)


async def _forward_wakeups(server: _Server, subscription: Subscription) -> None:
    """Wake the live streams when the store says something changed (in any process,
    where the store can tell)."""
    while True:
        if await subscription.wait(_IDLE):
            server.changes.notify()


_IDLE: Final = 3600.0

# Paths the hot routes share with their FastAPI routes.
_USER: Final = "/apps/{app_name}/users/{user_id}"
_SESSIONS: Final = f"{_USER}/sessions"
_SESSION_PATH: Final = f"{_SESSIONS}/{{session_id}}"
# `:path`: an interrupt id may hold a `/` (a workflow node's credential request,
# `wf_auth:<node path>`), which a client sends as %2F and the server receives decoded.
_RESPOND: Final = "/sessions/{session_id}/interrupts/{interrupt_id:path}/respond"


def _accepting(server: _Server) -> params.Depends:
    async def guard() -> None:  # async: a plain def would cost a thread hop per request
        _refuse_if_draining(server)

    return Depends(guard)


def _refuse_if_draining(server: _Server) -> None:
    if server.draining:
        raise ShuttingDownError(
            "this server is shutting down and starts no new runs; send the request "
            "again in a moment (another baton process, or this one after its restart, "
            "takes it)."
        )


PendingStatus = Literal["open", "answered", "all"]
_STATUSES: Final[dict[str, InterruptStatus | None]] = {
    "open": InterruptStatus.OPEN,
    "answered": InterruptStatus.ANSWERED,
    "all": None,
}

AssigneeFilter = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=255,
        pattern=r"^[^\x00-\x1f\x7f-\x9f:]+$",
        description="Only questions assigned to this user.",
    ),
]

AppFilter = Annotated[
    list[str], Query(default_factory=list[str], description="Only these apps (default: all).")
]

_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <API key>")
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="X-API-Key: <API key>")
_SECURITY: Final = [Depends(_bearer), Depends(_api_key)]


def _check_ids(request: Request) -> None:
    """Ids in the path or query obey the id rules before a route reads the store with them.

    Raises:
        InvalidIdError: 422, naming the id and the rule.
    """
    for name in ("user_id", "session_id", "interrupt_id"):
        value = request.path_params.get(name) or request.query_params.get(name)
        if value is None:
            continue
        try:
            check_id(name, value)
        except InvalidIdError:
            # Speed: asked only of a refused id, so other requests pay nothing for it.
            if not _reads_a_stored_session(request, name):
                raise
            check_stored_id(name, value)


def _reads_a_stored_session(request: Request, name: str) -> bool:
    """Whether `name` is the session id of a GET or DELETE of the session itself: an
    older baton stored ids starting or ending with a space, and those sessions stay
    readable and deletable under exactly their ids (`_session` finds no other)."""
    if name != "session_id" or request.method not in ("GET", "DELETE"):
        return False
    route = request.scope.get("route")
    return isinstance(route, APIRoute) and route.path == _SESSION_PATH


# The checks of a route are one dependency, not one each: FastAPI's cost per dependency
# is a large part of a request's. The key is checked before the ids, so a caller
# without a key learns nothing about them.


def _user_checks(server: _Server) -> list[params.Depends]:
    """The route is the path's user's: their key (or an operator's), then the ids."""

    async def guard(request: Request, user_id: str) -> None:  # async: no thread hop
        _check_user(server, request, user_id)

    return [*_SECURITY, Depends(guard)]


def _check_user(server: _Server, request: Request, user_id: str) -> None:
    server.keys.authorize(request, user_id)
    _check_ids(request)


def _public_routes(server: _Server) -> APIRouter:
    router = APIRouter()

    @router.get("/health")
    async def health() -> dict[str, str]:  # pyright: ignore[reportUnusedFunction] -- a route
        return {"status": "ok"}

    @router.get("/version", response_model=VersionInfo)
    async def version_info() -> VersionInfo:  # pyright: ignore[reportUnusedFunction] -- a route
        return VersionInfo(version=version("baton"), language_version=platform.python_version())

    @router.get("/list-apps", dependencies=_SECURITY, response_model=list[str] | AppsDetail)
    async def list_apps(request: Request, detailed: bool = False) -> list[str] | AppsDetail:  # pyright: ignore[reportUnusedFunction] -- a route
        server.keys.authorize(request, None)
        if not detailed:
            return server.catalog.names
        runners = [server.catalog.runner(name) for name in server.catalog.names]
        return AppsDetail(
            apps=[
                AppSummary(
                    name=r.app_name,
                    root_agent_name=r.root.name,
                    # The reference shows its root agent's; an App's own comes first here.
                    description=r.app.description or _description(r.root),
                )
                for r in runners
            ]
        )

    return router


def _session_routes(server: _Server) -> APIRouter:
    router = APIRouter(
        prefix=_SESSIONS,
        dependencies=_user_checks(server),
        responses=ERROR_RESPONSES,
    )
    service = server.catalog.session_service

    @router.post("", response_model=Session, response_model_exclude_none=True)
    async def create_session(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str, user_id: str, body: CreateSessionRequest | None = None
    ) -> Response:
        return await _create_session(server, app_name, user_id, body or CreateSessionRequest())

    @router.get("/{session_id}", response_model=Session, response_model_exclude_none=True)
    async def get_session(app_name: str, user_id: str, session_id: str) -> Response:  # pyright: ignore[reportUnusedFunction] -- a route
        key = SessionKey(app_name, user_id, SessionId(session_id))
        return model_reply(await _session(server, key))

    @router.post("/{session_id}", response_model=Session, response_model_exclude_none=True)
    async def create_session_with_id(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str,
        user_id: str,
        session_id: str,
        state: dict[str, JsonValue] | None = None,
    ) -> Session:
        """Deprecated in the reference system: create a session with this id; body = state."""
        server.catalog.runner(app_name)
        return await service.create_session(
            app_name=app_name, user_id=user_id, state=state, session_id=session_id
        )

    @router.patch("/{session_id}", response_model=Session, response_model_exclude_none=True)
    async def update_state(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str, user_id: str, session_id: str, body: StateUpdate
    ) -> Session:
        """Change session state outside any run (recorded as a user event)."""
        session = await _session(server, SessionKey(app_name, user_id, SessionId(session_id)))
        event = Event(
            invocation_id=f"p-{uuid.uuid4()}",
            author="user",
            actions=EventActions(state_delta=body.state_delta),
        )
        await service.append_event(session, event)
        return session

    @router.delete("/{session_id}")
    async def delete_session(app_name: str, user_id: str, session_id: str) -> None:  # pyright: ignore[reportUnusedFunction] -- a route
        # A 404 for a session that is not there (or is another user's), so a caller never
        # takes "nothing was deleted" for success.
        await _session(server, SessionKey(app_name, user_id, SessionId(session_id)))
        await service.delete_session(app_name=app_name, user_id=user_id, session_id=session_id)

    @router.get("/{session_id}/timeline", response_model=Timeline)
    async def timeline(app_name: str, user_id: str, session_id: str) -> Timeline:  # pyright: ignore[reportUnusedFunction] -- a route
        key = SessionKey(app_name, user_id, SessionId(session_id))
        session = await _session(server, key)
        runner = server.catalog.runner(app_name)
        asked = await runner.pending(user_id=user_id, session_id=session_id, status=None)
        runs = await runner.invocations(user_id=user_id, session_id=session_id)
        return build_timeline(session, runs, asked)

    return router


def _listing_routes(server: _Server) -> APIRouter:
    """A user's sessions, and a session's runs, a page at a time."""
    router = APIRouter(
        prefix=_SESSIONS,
        dependencies=_user_checks(server),
        responses=ERROR_RESPONSES,
    )
    service = server.catalog.session_service

    @router.get("", response_model=list[Session], response_model_exclude_none=True)
    async def list_sessions(  # pyright: ignore[reportUnusedFunction] -- a route
        response: Response,
        app_name: str,
        user_id: str,
        limit: OptionalLimit = None,
        cursor: Cursor = None,
    ) -> list[Session]:
        """The user's sessions, without events: all of them, the least recently updated
        first (as the reference server answers), or with `limit` a page by id, the next at
        `cursor=<X-Next-Cursor>` (an id stays put when its session changes between pages)."""
        runner = server.catalog.runner(app_name)
        if limit is None and cursor is None:
            return (await service.list_sessions(app_name=app_name, user_id=user_id)).sessions
        page = await runner.sessions_page(
            user_id=user_id, limit=limit or DEFAULT_PAGE, cursor=cursor
        )
        return shown(response, page)

    @router.get(
        "/{session_id}/invocations",
        response_model=list[Invocation],
        response_model_exclude_none=True,
        response_model_exclude={"__all__": {"checkpoint", "fingerprint"}},
    )
    async def invocations(  # pyright: ignore[reportUnusedFunction] -- a route
        response: Response,
        app_name: str,
        user_id: str,
        session_id: str,
        limit: Limit = DEFAULT_PAGE,
        cursor: Cursor = None,
    ) -> list[Invocation]:
        """The session's runs, oldest first, with their status (not their checkpoints):
        a page; the next is at `cursor=<X-Next-Cursor header>`."""
        await _session_exists(server, SessionKey(app_name, user_id, SessionId(session_id)))
        runner = server.catalog.runner(app_name)
        page = await runner.invocations_page(
            user_id=user_id, session_id=session_id, limit=limit, cursor=cursor
        )
        return shown(response, page)

    return router


async def _create_session(
    server: _Server, app_name: str, user_id: str, body: CreateSessionRequest
) -> Response:
    server.catalog.runner(app_name)
    _check_options(body.options or {})
    service = server.catalog.session_service
    events = body.events or []
    if any(carries_run_data(event) for event in events):
        # An exported session (the reference's web UI imports one this way).
        events = imported_history(events)
    # Every event is checked before the session is created: a refused one leaves none.
    for event in events:
        check_event(event)
    session = await service.create_session(
        app_name=app_name, user_id=user_id, state=body.state, session_id=body.session_id
    )
    for event in events:
        await service.append_event(session, event)
    return model_reply(session)


def _check_options(options: dict[str, JsonValue]) -> None:
    """Refuses a new session's options, as the reference refuses them for its own session
    services (none takes options); a key the route already binds is named first."""
    if not options:
        return
    bound = sorted(options.keys() & {"app_name", "user_id", "state", "session_id"})
    if bound:
        raise SessionOptionsError(
            f"session options cannot contain keys the route already binds: {', '.join(bound)}; "
            "send them as the body's own fields (sessionId, state) or in the path."
        )
    raise SessionOptionsError(
        f"session options {', '.join(sorted(options))} are not supported: baton's session "
        "services take no options at creation; leave 'options' out (or send {})."
    )


async def _session(server: _Server, key: SessionKey, *, with_events: bool = True) -> Session:
    server.catalog.runner(key.app_name)
    store = server.catalog.session_service.store
    session = await store.get_session(key, with_events=with_events)
    # MySQL before 8.0.17 ignores trailing spaces (migration 23): 's1 ' finds 's1'.
    if session is None or session.id != key.session_id or session.user_id != key.user_id:
        raise SessionNotFoundError(
            f"session '{key.session_id}' of user '{key.user_id}' does not exist in app "
            f"'{key.app_name}'; list that user's sessions with GET "
            f"/apps/{key.app_name}/users/{key.user_id}/sessions."
        )
    return session


async def _session_exists(server: _Server, key: SessionKey) -> None:
    """Raises SessionNotFoundError (404) unless the session exists; reads no events."""
    await _session(server, key, with_events=False)


def _run_routes(server: _Server) -> APIRouter:
    router = APIRouter(dependencies=[*_SECURITY, _accepting(server)], responses=ERROR_RESPONSES)

    @router.post("/run", response_model=list[Event], response_model_exclude_none=True)
    async def run(request: Request, body: RunAgentRequest) -> Response:  # pyright: ignore[reportUnusedFunction] -- a route
        return await _run(server, request, body)

    @router.post(
        "/run_sse",
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    async def run_sse(request: Request, body: RunAgentRequest) -> StreamingResponse:  # pyright: ignore[reportUnusedFunction] -- a route
        return await _run_sse(server, request, body)

    return router


async def _run(server: _Server, request: Request, body: RunAgentRequest) -> Response:
    server.keys.authorize(request, body.user_id)
    app_name = _app_name(server, body)
    aborted = AbortSignal()
    run_config = _run_config(body, streaming=False)
    feed = await _start(server, app_name, body, run_config, abort_signal=aborted)
    async with asyncio.TaskGroup() as group:
        # A client that leaves before the reply stops the run, as one leaving /run_sse
        # does: nobody would read the events of a run going on.
        watcher = group.create_task(_abort_when_gone(server, request, feed, aborted))
        reply = await run_reply(feed)
        watcher.cancel()
    return reply


async def _abort_when_gone(
    server: _Server, request: Request, feed: RunFeed, aborted: asyncio.Event
) -> None:
    """Wait for the client to disconnect (its body was read: what comes now is that),
    then stop the run unless it ended."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    _abort_unless_ended(server, feed, aborted)


async def _run_sse(server: _Server, request: Request, body: RunAgentRequest) -> StreamingResponse:
    server.keys.authorize(request, body.user_id)
    app_name = _app_name(server, body)
    aborted = AbortSignal()
    run_config = _run_config(body, streaming=body.streaming)
    feed = await _start(server, app_name, body, run_config, abort_signal=aborted)
    return StreamingResponse(
        _frames(feed, server.keepalive, split_artifacts=body.function_call_event_id is None),
        media_type="text/event-stream",
        # Runs once the stream ends, also when the client went away mid-run: the run then
        # stops where it is, sealed and resumable by id, as the reference's server stops
        # its run by cancelling it (see aborting.py).
        background=BackgroundTask(_abort_unless_ended, server, feed, aborted),
    )


def _abort_unless_ended(server: _Server, feed: RunFeed, aborted: asyncio.Event) -> None:
    # A draining server hands its runs over instead (RunFeed.hand_over): another process
    # continues them, which a sealed run would not let it do.
    if not feed.task.done() and not server.draining:
        aborted.set()


def _app_name(server: _Server, body: RunAgentRequest) -> str:
    """The app the body runs: the one it names, or the server's default one.

    Raises:
        AppNameRequiredError: it names none and the server has no default app.
    """
    if body.app_name is not None:
        return body.app_name
    if server.default_app_name is None:
        served = ", ".join(server.catalog.names) or "none"
        raise AppNameRequiredError(
            f"the request names no appName and this server has no default app "
            f"(ADK_DEFAULT_APP_NAME is not set); send appName, one of: {served}."
        )
    return server.default_app_name


def _run_config(body: RunAgentRequest, *, streaming: bool) -> RunConfig | None:
    """The request's RunConfig, as the reference's server builds it: `/run_sse` with
    `"streaming": true` streams model replies in partial events (`/run` never does), and
    the body's `customMetadata` goes on every event of the call.

    None when that is `RunConfig()`: the Runner's copy of the default costs half the
    instructions of validating a new one (19k fewer on each /run, callgrind)."""
    if not streaming and body.custom_metadata is None:
        return None
    return RunConfig(
        streaming_mode=StreamingMode.SSE if streaming else StreamingMode.NONE,
        custom_metadata=body.custom_metadata,
    )


async def _start(
    server: _Server,
    app_name: str,
    body: RunAgentRequest,
    run_config: RunConfig | None,
    *,
    abort_signal: asyncio.Event | None = None,
) -> RunFeed:
    runner = server.catalog.runner(app_name)
    message = body.new_message
    answers = message.function_responses if message else []
    events = runner.run_async(
        user_id=body.user_id,
        session_id=body.session_id,
        invocation_id=await _invocation_meant(server, app_name, body),
        new_message=message,
        state_delta=body.state_delta,
        answered_by=body.user_id if answers else None,
        # The request's own message commits first, so its echo arrives as soon as the
        # request is accepted and a stream can start before a slow first node ends.
        yield_user_message=True,
        run_config=run_config,
        abort_signal=abort_signal,
    )
    return await _opened(server, events)


async def _opened(server: _Server, events: AsyncGenerator[Event, None]) -> RunFeed:
    """A run driven in the server's task group, once its first event (or refusal) is in."""
    feed = server.feed(events)
    await feed.opening()
    return feed


async def _invocation_meant(server: _Server, app_name: str, body: RunAgentRequest) -> str | None:
    """The request's invocation id, or that of the call event it answers.

    `functionCallEventId` (sent by the reference's web UI with an answer) picks the
    invocation when the same interrupt id is open in more than one.
    """
    event_id = body.function_call_event_id
    if event_id is None:
        return body.invocation_id
    key = SessionKey(app_name, body.user_id, SessionId(body.session_id))
    server.catalog.runner(app_name)
    found = await invocation_of_call(server.catalog.session_service.store, key, event_id)
    if found is None:
        return body.invocation_id
    if body.invocation_id not in (None, found):
        raise InvalidMessageError(
            f"functionCallEventId '{event_id}' belongs to invocation '{found}', but "
            f"invocationId is '{body.invocation_id}'; send one of them, or both matching."
        )
    return found


async def _frames(
    feed: RunFeed, keepalive: float, *, split_artifacts: bool
) -> AsyncIterator[bytes]:
    async for item in feed.items(idle_after=keepalive):
        if not is_shown(item):
            continue
        if item is None:
            yield keepalive_frame()
        elif isinstance(item, Exception):
            yield error_frame(item)
        elif (
            split_artifacts and item.actions.artifact_delta and item.content and item.content.parts
        ):
            for data in _artifact_split(item.to_wire()):
                yield frame(data)
        else:
            yield frame(item.to_wire())


def _artifact_split(wire: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An event with content that saved artifacts, as two frames, as the reference's
    server streams it (not when the call answers a question): the event with an empty
    `artifactDelta`, then a copy without content carrying it. The reference's web UI
    reads a delta both where it shows an event's parts and where it shows its actions,
    so a single frame would show the artifact twice."""
    no_delta: dict[str, Any] = {}
    with_content = {**wire, "actions": {**wire["actions"], "artifactDelta": no_delta}}
    with_artifacts = {key: value for key, value in wire.items() if key != "content"}
    return with_content, with_artifacts


def _inbox_routes(server: _Server) -> APIRouter:
    prefix = "/apps/{app_name}/users/{user_id}"
    router = APIRouter(
        prefix=prefix,
        dependencies=_user_checks(server),
        responses=ERROR_RESPONSES,
    )

    @router.get("/pending", response_model=list[Interrupt], response_model_exclude_none=True)
    async def pending(  # pyright: ignore[reportUnusedFunction] -- a route
        response: Response,
        app_name: str,
        user_id: str,
        session_id: str | None = None,
        status: PendingStatus = "open",
        limit: Limit = DEFAULT_PAGE,
        cursor: Cursor = None,
        assignee: AssigneeFilter = None,
    ) -> list[Interrupt]:
        """Questions of the user's runs and those assigned to the user, oldest first: the
        open ones, or `status=answered` / `all`; `assignee` keeps those assigned to that
        user. A page of `limit` (100 by default): the next one is at
        `cursor=<X-Next-Cursor header>`, absent on the last page."""
        if session_id is not None:  # a filter on a session that is not there is a mistake
            await _session_exists(server, SessionKey(app_name, user_id, SessionId(session_id)))
        page = await server.catalog.runner(app_name).pending_page(
            user_id=user_id,
            session_id=session_id,
            status=_STATUSES[status],
            assignee=assignee,
            include_assigned=session_id is None,
            limit=limit,
            cursor=cursor,
        )
        return shown(response, page)

    @router.get(
        "/pending/stream",
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    async def pending_stream(app_name: str, user_id: str) -> StreamingResponse:  # pyright: ignore[reportUnusedFunction] -- a route
        """Every open question (the first frame holds the first 100, each next frame
        100 more, as `changed`), then only what changed: `changed` (new or changed
        questions) and `removed` (the keys of those answered or gone)."""
        server.catalog.runner(app_name)
        return StreamingResponse(
            _pending_frames(server, app_name, user_id), media_type="text/event-stream"
        )

    return router


async def _pending_frames(server: _Server, app_name: str, user_id: str) -> AsyncIterator[bytes]:
    """All the user's open questions, then their changes (see `watch`)."""
    runner = server.catalog.runner(app_name)

    async def page(cursor: str | None) -> Page[Interrupt]:
        return await runner.pending_page(
            user_id=user_id, include_assigned=True, limit=MAX_PAGE, cursor=cursor
        )

    async def read() -> dict[str, JsonValue]:
        return {"pending": [row.to_wire() for row in await read_every_page(page)]}

    async for chunk in server.watch(read):
        yield chunk


def _answer_routes(server: _Server) -> APIRouter:
    """Answering a question: by the session's user, or by the person it is assigned to."""
    router = APIRouter(
        prefix=_USER,
        dependencies=_answer_checks(server),
        responses=ERROR_RESPONSES,
    )

    @router.post(
        _RESPOND,
        response_model=list[Event],
        response_model_exclude_none=True,
    )
    async def respond(  # pyright: ignore[reportUnusedFunction] -- a route
        request: Request,
        app_name: str,
        user_id: str,
        session_id: str,
        interrupt_id: str,
        body: RespondRequest,
        idempotency_key: Annotated[str | None, Header()] = None,
    ) -> Response:
        """Answer the question and resume its run. The session's user answers, or, for a
        question assigned to someone (`assignee`), only that person: with their own API
        key, or (no keys, an operator's key) naming them in `answered_by`."""
        asked = _Asked(app_name, user_id, session_id, interrupt_id)
        return await _respond(server, request, asked, body, idempotency_key)

    return router


async def _respond(
    server: _Server,
    request: Request,
    asked: _Asked,
    body: RespondRequest,
    idempotency_key: str | None,
) -> Response:
    answerer = await _answerer(server, request, asked, body.answered_by)
    interrupt_id = asked.interrupt_id

    async def act() -> Response:
        events = server.catalog.runner(asked.app_name).answer(
            user_id=asked.user_id,
            session_id=asked.session_id,
            answers={interrupt_id: body.response},
            invocation_id=body.invocation_id,
            answered_by=answerer,
            state_delta=body.state_delta,
            occurrences={interrupt_id: body.occurrence} if body.occurrence else None,
            progress=(interrupt_id,) if body.will_continue else (),
            yield_user_message=True,  # as in _start: the answer's echo opens the feed
        )
        return await run_reply(await _opened(server, events))

    if idempotency_key is None:
        return await act()
    scope = (
        asked.app_name,
        asked.user_id,
        asked.session_id,
        interrupt_id,
        answerer,
        idempotency_key,
    )
    return await server.replies.once(scope, act)


def _answer_checks(server: _Server) -> list[params.Depends]:
    """401 before anything else when keys are on and the request has no known one (whose
    user may answer is decided by `_answerer`), then the ids, then 503 when draining."""

    async def guard(request: Request) -> None:  # async: no thread hop
        _check_answerer(server, request)

    return [*_SECURITY, Depends(guard)]


def _check_answerer(server: _Server, request: Request) -> None:
    server.keys.caller(request)
    _check_ids(request)
    _refuse_if_draining(server)


def _hot_routes(server: _Server) -> list[HotRoute[Any]]:
    """The routes `HotRoutes` serves without FastAPI: each runs its FastAPI route's
    dependencies' checks, in their order, then the endpoint's code."""

    async def create(
        request: Request, path: dict[str, str], body: CreateSessionRequest
    ) -> Response:
        _check_user(server, request, path["user_id"])
        return await _create_session(server, path["app_name"], path["user_id"], body)

    async def run(request: Request, _: dict[str, str], body: RunAgentRequest) -> Response:
        _refuse_if_draining(server)
        return await _run(server, request, body)

    async def run_sse(request: Request, _: dict[str, str], body: RunAgentRequest) -> Response:
        _refuse_if_draining(server)
        return await _run_sse(server, request, body)

    async def respond(request: Request, path: dict[str, str], body: RespondRequest) -> Response:
        _check_answerer(server, request)
        asked = _Asked(path["app_name"], path["user_id"], path["session_id"], path["interrupt_id"])
        return await _respond(server, request, asked, body, request.headers.get("idempotency-key"))

    return [
        HotRoute(_SESSIONS, CreateSessionRequest, create, when_empty=CreateSessionRequest),
        HotRoute("/run", RunAgentRequest, run),
        HotRoute("/run_sse", RunAgentRequest, run_sse),
        HotRoute(_USER + _RESPOND, RespondRequest, respond),
    ]


@dataclass(frozen=True)
class _Asked:
    """The question a respond request names."""

    app_name: str
    user_id: str
    session_id: str
    interrupt_id: str


async def _answerer(server: _Server, request: Request, asked: _Asked, claimed: str | None) -> str:
    """Who answers: the key's user, else `answered_by`, else the session's user.

    A user's key may answer in another user's session only a question assigned to it
    (the Runner then checks the open question's assignee, so nothing else passes).

    Raises:
        HTTPException: 403 when the key is another user's, or `answered_by` names
            someone other than the key's user.
        InvalidIdError: `answered_by` breaks the id rules.
    """
    if claimed is not None:
        check_id("answered_by", claimed)
    caller = server.keys.caller(request)
    if caller is None or caller == ANY_USER:
        return claimed or asked.user_id
    if claimed not in (None, caller):
        raise HTTPException(
            403,
            f"this API key acts for user '{caller}' and answers as them, not as "
            f"'{claimed}'; leave answered_by out or use a key of '{claimed}'.",
        )
    if caller != asked.user_id and not await _is_assigned(server, asked, caller):
        raise other_user(caller, asked.user_id)
    return caller


async def _is_assigned(server: _Server, asked: _Asked, assignee: str) -> bool:
    """Whether `asked` names a question (open or answered) assigned to `assignee`."""
    rows = await server.catalog.runner(asked.app_name).pending(
        user_id=asked.user_id, session_id=asked.session_id, status=None, assignee=assignee
    )
    return any(row.interrupt_id == asked.interrupt_id for row in rows)


def _user_inbox_routes(server: _Server) -> APIRouter:
    """One user's inbox across apps: a snapshot, and the one stream a page needs."""
    router = APIRouter(
        prefix="/users/{user_id}/inbox",
        dependencies=_user_checks(server),
        responses=ERROR_RESPONSES,
    )

    @router.get("", response_model=InboxSnapshot, response_model_exclude_none=True)
    async def inbox(  # pyright: ignore[reportUnusedFunction] -- a route
        user_id: str, app: AppFilter, limit: Limit = DEFAULT_PAGE, cursor: Cursor = None
    ) -> InboxSnapshot:
        """A page of the user's open questions across apps (the next at
        `cursor=<nextCursor>`) and their recently updated sessions."""
        names = chosen_apps(server.catalog, app)
        return await read_inbox(server.catalog, user_id, names, limit=limit, cursor=cursor)

    @router.get(
        "/stream",
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    async def inbox_stream(user_id: str, app: AppFilter) -> StreamingResponse:  # pyright: ignore[reportUnusedFunction] -- a route
        names = chosen_apps(server.catalog, app)

        async def read() -> dict[str, JsonValue]:
            return await watched_inbox(server.catalog, user_id, names)

        return StreamingResponse(server.watch(read), media_type="text/event-stream")

    return router


def _page_routes() -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/")
    async def index() -> Response:  # pyright: ignore[reportUnusedFunction] -- a route
        return FileResponse(STATIC_DIR / "index.html")

    return router


def _description(root: object) -> str:
    """A root agent's or workflow's description ("" for a node without one)."""
    described = getattr(root, "description", "")
    return described if isinstance(described, str) else ""
