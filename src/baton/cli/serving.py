"""`baton api_server` and `baton web`: serve the apps of a folder."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import os
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, final

import typer

from baton.cli.base import (
    DbOption,
    HostOption,
    KeyOption,
    PortOption,
    cli,
    console,
    execute,
    open_catalog,
)
from baton.errors import ExtraNotInstalledError
from baton.notifier import Notifier, NotifySettings
from baton.runner import check_worker_id
from baton.server.settings import (
    Limits,
    keys_from_env,
    origins_from_env,
    parse_origins,
    parse_size,
)
from baton.worker import Worker

if TYPE_CHECKING:  # pragma: no cover - the OpenTelemetry SDK is needed only with traces on
    from baton.server.ui_traces import SessionTraces

__all__ = ["Operation", "api_server", "settle_heap", "web", "worker"]

OriginOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-origin",
        metavar="ORIGIN",
        help="Let web pages from this origin call the API (CORS; repeatable), e.g. "
        "http://localhost:3000, or * for any. Also read from $BATON_ALLOW_ORIGINS "
        "(comma-separated).",
        show_default=False,
    ),
]

MaxBodyOption = Annotated[
    str,
    typer.Option(
        "--max-body",
        envvar="BATON_MAX_BODY",
        metavar="SIZE",
        help="Largest request body (bytes, or e.g. 512KB, 8MB); larger is refused with 413 "
        "unread.",
    ),
]
ReadTimeoutOption = Annotated[
    float,
    typer.Option(
        "--read-timeout",
        envvar="BATON_READ_TIMEOUT",
        metavar="SECONDS",
        help="Time a client has to send a request's headers, and again its body (else 408).",
    ),
]
MaxConnectionsOption = Annotated[
    int,
    typer.Option(
        "--max-connections",
        envvar="BATON_MAX_CONNECTIONS",
        metavar="N",
        help="Connections served at once; more are answered 503 until some finish.",
    ),
]
_DEFAULTS = Limits()
TraceOption = Annotated[
    bool,
    typer.Option(
        "--trace-to-ui",
        help="Keep each session's OpenTelemetry spans in memory and serve them to the "
        "reference web UI's Traces tab (needs `pip install 'baton[otel]'`).",
    ),
]
AccessLogOption = Annotated[
    bool,
    typer.Option(
        "--access-log",
        help="Log a line per request (off by default: formatting and writing it costs a "
        "twentieth of the server's CPU per request; a proxy in front usually logs them).",
    ),
]


LeaseTtlOption = Annotated[
    float,
    typer.Option(
        "--lease-ttl",
        metavar="SECONDS",
        min=1.0,
        max=3600.0,
        help="How long a run's lease lasts without renewal: after a process dies, its "
        "runs are continued by another process this long after its last renewal.",
    ),
]
NoRecoverOption = Annotated[
    bool,
    typer.Option(
        "--no-recover",
        help="Do not continue runs whose process died, nor enforce question deadlines, "
        "in this process (leave it to others, e.g. `baton worker`).",
    ),
]
GraceOption = Annotated[
    float,
    typer.Option(
        "--grace",
        metavar="SECONDS",
        min=0.0,
        max=86400.0,
        help="On SIGTERM/SIGINT: how long runs in flight may go on before they are handed "
        "over to other processes.",
    ),
]
WorkerIdOption = Annotated[
    str | None,
    typer.Option(
        "--worker-id",
        metavar="ID",
        help="This process's identity in run leases. A process restarted with the same "
        "id takes its runs back at once; two live processes must not share one "
        "(default: HOST:PORT for servers, HOST:pid for workers).",
        show_default=False,
    ),
]


NotifyUrlOption = Annotated[
    list[str] | None,
    typer.Option(
        "--notify-url",
        metavar="URL",
        help="POST a signed JSON notification here when a question opens, is answered or "
        "expires, and when a run completes or fails (repeat for several receivers; needs "
        "--notify-secret). Delivered in order, at least once, with retries.",
        show_default=False,
    ),
]
NotifySecretOption = Annotated[
    str | None,
    typer.Option(
        "--notify-secret",
        metavar="SECRET",
        envvar="BATON_NOTIFY_SECRET",
        help="The HMAC-SHA256 key notifications are signed with (Baton-Signature header).",
        show_default=False,
    ),
]


NotifyTimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--notify-timeout",
        metavar="SECONDS",
        help="Seconds a receiver has to answer one notification's POST (default 10). A "
        "process that dies while sending holds that receiver back for this plus 5 s, "
        "then another process sends.",
        show_default=False,
    ),
]


def _notify(
    urls: list[str] | None, secret: str | None, timeout: float | None
) -> NotifySettings | None:
    """The webhook settings the options give (None without --notify-url); bad ones are
    refused naming the option."""
    if not urls:
        for given, option in ((secret, "--notify-secret"), (timeout, "--notify-timeout")):
            if given is not None and given != "":
                raise typer.BadParameter(
                    f"{option} is given but no --notify-url; add the receiver's URL.",
                    param_hint="--notify-url",
                )
        return None
    try:
        return NotifySettings(
            tuple(urls),
            secret or "",
            timeout=NotifySettings.timeout if timeout is None else timeout,
        )
    except ValueError as error:
        problem = str(error)
        hint = "--notify-url"
        if "secret" in problem:
            hint = "--notify-secret"
        elif "timeout" in problem:
            hint = "--notify-timeout"
        raise typer.BadParameter(problem, param_hint=hint) from None


@cli.command("api_server")
def api_server(
    agents_dir: Annotated[
        Path, typer.Argument(help="The folder of app folders to serve.", metavar="AGENTS_DIR")
    ],
    db: DbOption = None,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    api_key: KeyOption = None,
    allow_origin: OriginOption = None,
    max_body: MaxBodyOption = "8MB",
    read_timeout: ReadTimeoutOption = _DEFAULTS.read_timeout,
    max_connections: MaxConnectionsOption = _DEFAULTS.max_connections,
    trace_to_ui: TraceOption = False,
    access_log: AccessLogOption = False,
    lease_ttl: LeaseTtlOption = 30.0,
    no_recover: NoRecoverOption = False,
    grace: GraceOption = 30.0,
    worker_id: WorkerIdOption = None,
    notify_url: NotifyUrlOption = None,
    notify_secret: NotifySecretOption = None,
    notify_timeout: NotifyTimeoutOption = None,
) -> None:
    """Serve the apps of AGENTS_DIR over HTTP: the reference API plus pending inputs.

    Routes: /list-apps, /apps/{app}/users/{user}/sessions (and /{id}), /run, /run_sse,
    /apps/{app}/users/{user}/pending, .../interrupts/{id}/respond; OpenAPI at /docs.

    Examples:

    \b
      baton api_server examples/
      baton api_server examples/ --db postgresql+asyncpg://localhost/baton --port 9000
      BATON_API_KEY=alice:s3cret baton api_server examples/
      baton api_server examples/ --allow-origin http://127.0.0.1:8001 --trace-to-ui
    """
    limits = _limits(max_body, read_timeout, max_connections)
    settings = _settings(agents_dir, db, host, port, api_key, allow_origin, limits, web=False)
    settings = replace(
        settings,
        trace_to_ui=trace_to_ui,
        notify=_notify(notify_url, notify_secret, notify_timeout),
        access_log=access_log,
    )
    named = _checked_worker_id(worker_id)
    with _listen(host, port) as listener:
        operation = Operation(lease_ttl, not no_recover, grace, _identity(named, listener))
        execute(_serve(settings, operation, listener), loop_factory=_server_loop())


@cli.command()
def web(
    agents_dir: Annotated[
        Path, typer.Argument(help="The folder of app folders to serve.", metavar="AGENTS_DIR")
    ],
    db: DbOption = None,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    api_key: KeyOption = None,
    allow_origin: OriginOption = None,
    max_body: MaxBodyOption = "8MB",
    read_timeout: ReadTimeoutOption = _DEFAULTS.read_timeout,
    max_connections: MaxConnectionsOption = _DEFAULTS.max_connections,
    trace_to_ui: TraceOption = False,
    access_log: AccessLogOption = False,
    lease_ttl: LeaseTtlOption = 30.0,
    no_recover: NoRecoverOption = False,
    grace: GraceOption = 30.0,
    worker_id: WorkerIdOption = None,
    notify_url: NotifyUrlOption = None,
    notify_secret: NotifySecretOption = None,
    notify_timeout: NotifyTimeoutOption = None,
) -> None:
    """Serve the apps and the web inbox: answer pending inputs in a browser.

    The page lists every question waiting across sessions, with a form built from its
    response schema, updates live, starts runs, and shows each session's timeline.

    Example:

    \b
      baton web examples/        then open the URL it prints
    """
    limits = _limits(max_body, read_timeout, max_connections)
    settings = _settings(agents_dir, db, host, port, api_key, allow_origin, limits, web=True)
    settings = replace(
        settings,
        trace_to_ui=trace_to_ui,
        notify=_notify(notify_url, notify_secret, notify_timeout),
        access_log=access_log,
    )
    named = _checked_worker_id(worker_id)
    with _listen(host, port) as listener:
        operation = Operation(lease_ttl, not no_recover, grace, _identity(named, listener))
        execute(_serve(settings, operation, listener), loop_factory=_server_loop())


@cli.command()
def worker(
    agents_dir: Annotated[
        Path, typer.Argument(help="The folder of app folders to serve.", metavar="AGENTS_DIR")
    ],
    db: DbOption = None,
    lease_ttl: LeaseTtlOption = 30.0,
    grace: GraceOption = 30.0,
    worker_id: WorkerIdOption = None,
    notify_url: NotifyUrlOption = None,
    notify_secret: NotifySecretOption = None,
    notify_timeout: NotifyTimeoutOption = None,
) -> None:
    """Continue runs of AGENTS_DIR's apps whose process died, and enforce question
    deadlines, without serving HTTP. Run as many as you like against one database.

    Stops on SIGTERM or SIGINT: runs in hand get --grace seconds to pause, then are
    handed over to other processes.

    Example:

    \b
      baton worker examples/ --db postgresql+asyncpg://localhost/baton
    """
    identity = _checked_worker_id(worker_id) or f"{_host()}:{os.getpid()}"
    operation = Operation(lease_ttl, True, grace, identity)
    execute(_work(agents_dir, db, operation, _notify(notify_url, notify_secret, notify_timeout)))


@final
@dataclass(frozen=True)
class _Settings:
    agents_dir: Path
    db: str | None
    host: str
    port: int
    keys: list[str]
    origins: list[str]
    limits: Limits
    web: bool
    trace_to_ui: bool = False
    notify: NotifySettings | None = None
    access_log: bool = False


def _settings(
    agents_dir: Path,
    db: str | None,
    host: str,
    port: int,
    keys: list[str] | None,
    origins: list[str] | None,
    limits: Limits,
    *,
    web: bool,
) -> _Settings:
    """The command's settings, the environment's keys and origins added; bad origins refused."""
    every_origin = [*(origins or []), *origins_from_env(os.environ.get("BATON_ALLOW_ORIGINS"))]
    try:
        checked = parse_origins(every_origin)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--allow-origin") from None
    every_key = [*(keys or []), *keys_from_env(os.environ.get("BATON_API_KEY"))]
    return _Settings(agents_dir, db, host, port, every_key, checked, limits, web)


def _limits(max_body: str, read_timeout: float, max_connections: int) -> Limits:
    """The request limits the options give; a bad value is refused naming its option."""
    try:
        size = parse_size(max_body)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--max-body") from None
    try:
        return Limits(max_body=size, read_timeout=read_timeout, max_connections=max_connections)
    except ValueError as error:
        raise typer.BadParameter(
            str(error), param_hint="--read-timeout / --max-connections"
        ) from None


_REPLY_SECONDS = 3


@final
@dataclass(frozen=True)
class Operation:
    """How a process operates runs: lease time to live, recovery, shutdown grace, identity."""

    lease_ttl: float
    recover: bool
    grace: float
    worker_id: str

    @property
    def ttl(self) -> timedelta:
        return timedelta(seconds=self.lease_ttl)


def _host() -> str:
    return socket.gethostname()


def _checked_worker_id(worker_id: str | None) -> str | None:
    if worker_id is None:
        return None
    try:
        return check_worker_id(worker_id)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--worker-id") from None


def _identity(worker_id: str | None, listener: socket.socket) -> str:
    """The given worker id, else HOST:PORT with the port actually bound (with --port 0,
    two processes on one machine must not share HOST:0)."""
    return worker_id or f"{_host()}:{listener.getsockname()[1]}"


def _listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound before anything else starts: a process that
    cannot serve must not begin to recover runs (under a worker id a live one holds)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as error:
        raise typer.BadParameter(
            f"cannot listen on {host}:{port}: {error.strerror or error}. Stop the process "
            "that uses it, or choose another --port / --host.",
            param_hint="--port",
        ) from None


async def _work(
    agents_dir: Path, db: str | None, operation: Operation, notify: NotifySettings | None
) -> None:
    async with open_catalog(
        agents_dir, db, lease_ttl=operation.ttl, worker_id=operation.worker_id
    ) as catalog:
        worker = Worker(catalog.runners.values(), worker_id=operation.worker_id)
        task = asyncio.create_task(worker.run())
        store = catalog.session_service.store
        notifying = asyncio.create_task(Notifier(store, notify).run()) if notify else None
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, worker.drain, operation.grace)
        settle_heap()
        console.print(
            f"baton worker {operation.worker_id} continuing runs of "
            f"{', '.join(catalog.names)} (lease {operation.lease_ttl:g} s)",
            highlight=False,
            soft_wrap=True,
        )
        try:
            await task
        finally:
            if notifying is not None:
                notifying.cancel()  # what is left waits in the outbox for any sender
                with contextlib.suppress(asyncio.CancelledError):
                    await notifying


async def _serve(settings: _Settings, operation: Operation, listener: socket.socket) -> None:
    # FastAPI and uvicorn are the `server` extra; `baton run` must work without them.
    try:
        # Imported first, so a missing server extra is named by uvicorn.
        import uvicorn  # noqa: F401  # pyright: ignore[reportUnusedImport]

        from baton.server.app import create_app, drain_server
        from baton.server.connections import server_config
        from baton.server.security import ApiKeys
        from baton.server.shutdown import draining_server
    except ImportError as error:
        command = "baton web" if settings.web else "baton api_server"
        raise ExtraNotInstalledError("server", error.name or "fastapi", command) from error

    traces = _session_traces() if settings.trace_to_ui else None
    async with open_catalog(
        settings.agents_dir, settings.db, lease_ttl=operation.ttl, worker_id=operation.worker_id
    ) as catalog:
        app = create_app(
            catalog,
            api_keys=ApiKeys.parse(settings.keys),
            web=settings.web,
            allowed_origins=settings.origins,
            limits=settings.limits,
            traces=traces,
            recover=operation.recover,
            grace=operation.grace,
            notify=settings.notify,
            # The reference's server reads it too: the app a /run without appName runs.
            default_app_name=os.environ.get("ADK_DEFAULT_APP_NAME") or None,
        )
        config = server_config(
            app,
            host=settings.host,
            port=settings.port,
            limits=settings.limits,
            # A little longer than the grace, so runs handed over at its end still get
            # their replies out before uvicorn cuts connections.
            timeout_graceful_shutdown=round(operation.grace) + _REPLY_SECONDS,
            access_log=settings.access_log,
        )
        server = draining_server(config, lambda: drain_server(app, operation.grace))
        async with asyncio.TaskGroup() as group:
            serving = group.create_task(server.serve(sockets=[listener]))
            while not server.started and not serving.done():  # noqa: ASYNC110 - uvicorn offers a flag, not an event
                await asyncio.sleep(0.05)
            if server.started:
                settle_heap()
                bound = server.servers[0].sockets[0].getsockname()
                what = "web inbox" if settings.web else "API"
                apps = ", ".join(catalog.names) or "none"
                console.print(
                    f"baton {what} at [bold]http://{bound[0]}:{bound[1]}/[/] (apps: {apps}; "
                    f"keys {'required' if settings.keys else 'off'})",
                    highlight=False,
                    soft_wrap=True,  # one line, so the URL is never broken
                )


def settle_heap() -> None:
    """Keep what a long-running process loaded at its start out of the garbage
    collector's way: call once everything is imported and built.

    Modules, apps, FastAPI's routes and pydantic's schemas are some 140,000 objects that
    live as long as the process. Every full collection walked them all again: serving
    16 clients, one came every ~200 runs and held the event loop 80-100 ms of CPU (the
    answers' p99 latency), and collections took ~0.2 ms of CPU per request. Frozen
    (after one last collection, so no garbage is kept), they are never scanned again.
    The youngest generation is collected every `_YOUNGEST` new objects instead of
    Python's 700, a fraction of one request's: fewer objects of requests still in
    flight are promoted to older generations, to be found dead there by costlier
    collections. Together: the collector's CPU per run down to about 40%, and no full
    collection longer than the live requests' objects take to scan.
    """
    gc.collect()
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(_YOUNGEST, middle, oldest)


_YOUNGEST = 5000


def _server_loop() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (the `server` extra brings it where it
    builds): it spends less CPU per request than asyncio's own, which serves otherwise."""
    try:
        # By name: an environment installed before uvloop joined the extra lacks it.
        uvloop = importlib.import_module("uvloop")
    except ImportError:  # pragma: no cover - the server extra installs it on Linux and macOS
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def _session_traces() -> SessionTraces:
    """Spans kept per session for the web UI (`--trace-to-ui`); needs the OpenTelemetry SDK."""
    try:
        from baton.server.ui_traces import install_session_traces
    except ImportError as error:
        raise ExtraNotInstalledError(
            "otel", error.name or "opentelemetry", "--trace-to-ui"
        ) from error
    return install_session_traces()
