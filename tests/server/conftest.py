"""A live baton server on 127.0.0.1 (uvicorn, port 0) over a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel, JsonValue

from baton import App, Context, Event, RequestInput, ResumabilityConfig, Workflow
from baton.server.app import create_app, drain_server
from baton.server.catalog import AppCatalog, load_app
from baton.server.connections import PARSER, Parser, server_config
from baton.server.security import ApiKeys
from baton.server.settings import Limits
from baton.sessions.services import (
    BaseSessionService,
    DatabaseSessionService,
    SqliteSessionService,
)
from tests.conftest import migrated_sqlite
from tests.server.processes import HTTP_TIMEOUT

EXAMPLES = Path(__file__).parents[2] / "examples"


class Decision(BaseModel):
    approved: bool


def ask_approval(node_input: Any) -> RequestInput:
    return RequestInput(
        interrupt_id="approve",
        message="Approve?",
        payload={"input": node_input},
        response_schema=Decision,
    )


def finish(node_input: Any) -> str:
    return f"done:{json.dumps(node_input, sort_keys=True)}"


async def ask_twice(ctx: Context, node_input: Any):
    if len(ctx.resume_inputs) == 2:
        yield Event(output=dict(ctx.resume_inputs))
        return
    yield RequestInput(interrupt_id="name", message="Name?", response_schema={"type": "string"})
    yield RequestInput(interrupt_id="age", message="Age?", response_schema={"type": "integer"})


def approval_app() -> App:
    """START -> ask_approval (pauses on 'approve') -> finish."""
    return App(
        name="approval",
        root_agent=Workflow(name="approval_wf", edges=[("START", ask_approval, finish)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


def form_app() -> App:
    """One node asking two questions at once ('name' and 'age')."""
    return App(
        name="form",
        root_agent=Workflow(name="form_wf", edges=[("START", ask_twice)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


@dataclass
class Live:
    """A running server and a client for it."""

    url: str
    client: httpx.AsyncClient
    service: BaseSessionService
    app: FastAPI | None = None
    server: uvicorn.Server | None = None

    def connections(self) -> int:
        """How many connections the server holds open (accepted, not yet closed)."""
        assert self.server is not None
        return len(self.server.server_state.connections)

    async def create(self, app: str, user: str, **body: JsonValue) -> str:
        r = await self.client.post(f"/apps/{app}/users/{user}/sessions", json=body)
        r.raise_for_status()
        return str(r.json()["id"])

    async def run(
        self, app: str, user: str, session: str, **body: JsonValue
    ) -> list[dict[str, Any]]:
        r = await self.client.post(
            "/run", json={"appName": app, "userId": user, "sessionId": session, **body}
        )
        assert r.status_code == 200, r.text
        events: list[dict[str, Any]] = r.json()
        return events

    async def start(self, app: str, user: str, session: str, text: str = "go") -> list[Any]:
        message: JsonValue = {"role": "user", "parts": [{"text": text}]}
        return await self.run(app, user, session, newMessage=message)


class _Server(uvicorn.Server):
    """uvicorn's server, stopping without idle waits: its main loop also wakes the moment
    `stop` is called, and a shutdown with no connection open skips the 0.1 s uvicorn
    grants open ones to close.

    uvicorn's loop looks at `should_exit` every 0.1 s: every server a test started
    waited 0.05 s on average, idle, at its stop, then 0.1 s more in its shutdown, though
    the test had closed its clients. This one ticks as often (`on_tick` keeps the Date
    header current and says when to exit), and shuts down as uvicorn does whenever a
    connection or task is still open.
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stopping = asyncio.Event()

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            with suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), 0.1)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if sockets or self.server_state.connections or self.server_state.tasks:
            await super().shutdown(sockets)
            return
        for server in self.servers:  # what uvicorn's shutdown then does, but its sleep
            server.close()
        for server in self.servers:
            await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()


@dataclass
class Serving:
    """A uvicorn server running an ASGI app in this event loop."""

    server: _Server
    task: asyncio.Task[None]

    @property
    def url(self) -> str:
        sockets = self.server.servers[0].sockets
        host, port = sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def stop(self) -> None:
        self.server.should_exit = True
        self.server.stopping.set()
        await self.task


async def serve(app: FastAPI, limits: Limits | None = None, parser: Parser = PARSER) -> Serving:
    """Serve `app` on a free loopback port as `baton api_server` would (same limits)."""
    config = server_config(
        app,
        host="127.0.0.1",
        port=0,
        limits=limits or Limits(),
        log_level="warning",
        timeout_graceful_shutdown=2,
        parser=parser,
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve())
    async with asyncio.timeout(HTTP_TIMEOUT):
        while not server.started:  # noqa: ASYNC110 - uvicorn offers a flag, not an event
            await asyncio.sleep(0.01)
    return Serving(server, task)


StartLive = Callable[..., Any]
_GRACE = 30.0  # create_app's default: runs still going at a server's stop may pause
# The clients speak plain HTTP, but httpx builds a TLS context for each (loading the CA
# bundle: 20-60 ms a client); they share this one.
_TLS = httpx.create_ssl_context()


class Servers:
    """Servers started on demand (`start(apps=..., keys=..., web=..., db_url=...)`) and
    stopped together by `close()`.

    Each server gets its own SQLite file in `folder` (already migrated: see
    `migrated_sqlite`) unless `db_url` names a shared database.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.stack: list[tuple[Serving, Live, FastAPI]] = []

    async def start(
        self,
        apps: list[App] | None = None,
        *,
        keys: list[str] | None = None,
        web: bool = False,
        headers: dict[str, str] | None = None,
        db_url: str | None = None,
        keepalive: float = 15.0,
        origins: list[str] | None = None,
        limits: Limits | None = None,
        recover: bool = True,
        parser: Parser = PARSER,
        hot_routes: bool = True,
        default_app_name: str | None = None,
    ) -> Live:
        service: BaseSessionService = (
            DatabaseSessionService(db_url)
            if db_url
            else SqliteSessionService(
                str(await migrated_sqlite(self.folder / f"sessions{len(self.stack)}.db"))
            )
        )
        apps = apps if apps is not None else [approval_app(), form_app()]
        catalog = AppCatalog.of(apps, service)
        app = create_app(
            catalog,
            api_keys=ApiKeys.parse(keys or []),
            web=web,
            allowed_origins=origins or [],
            poll_interval=0.05,  # the worker notices a drain at its next look: stops are prompt
            keepalive=keepalive,
            limits=limits,
            recover=recover,
            hot_routes=hot_routes,
            grace=_GRACE,
            default_app_name=default_app_name,
        )
        serving = await serve(app, limits, parser)
        # The client lets an idle connection go at half the server's keep-alive: with both
        # at 5 s (httpx's and the server's default), a request sent after about 5 s idle (a
        # slow store call between two requests on a loaded machine) could meet the server's
        # close on its way and fail with a ReadError (seen: test_hostile on MariaDB).
        expiry = (limits or Limits()).keep_alive / 2
        client = httpx.AsyncClient(
            base_url=serving.url,
            headers=headers,
            timeout=HTTP_TIMEOUT,
            verify=_TLS,
            limits=httpx.Limits(keepalive_expiry=expiry),
        )
        live = Live(serving.url, client, service, app, serving.server)
        self.stack.append((serving, live, app))
        return live

    async def close(self) -> None:
        for _, live, _ in self.stack:
            await live.client.aclose()
        # As `baton api_server` stops on SIGTERM: the drain starts at once, so the worker
        # and live streams wind down while uvicorn closes connections (a drain that waited
        # for uvicorn's shutdown would add the worker's poll, 0.2 s, to every server's
        # stop); and the servers stop together, each paying uvicorn's fixed 0.1-0.2 s at
        # the same time.
        async with asyncio.TaskGroup() as group:
            for serving, _, app in self.stack:
                drain_server(app, _GRACE)
                group.create_task(serving.stop())
        for _, live, _ in self.stack:
            await live.service.close()


@pytest.fixture
async def start_live(tmp_path: Path) -> AsyncIterator[StartLive]:
    """Start a server: `await start_live(apps=..., keys=..., web=..., db_url=...)`; see
    `Servers`. They stop when the test ends."""
    servers = Servers(tmp_path)
    yield servers.start
    await servers.close()


@pytest.fixture
async def live(start_live: StartLive) -> Live:
    """The default server: apps 'approval' and 'form', no API keys."""
    started: Live = await start_live()
    return started


def example_app() -> App:
    return load_app(EXAMPLES / "expense_approval")
