"""A webhook receiver on 127.0.0.1 for notification tests: a real HTTP server (uvicorn)
that records every POST and answers with the statuses a test scripts."""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.types import Receive, Scope, Send

from tests.server.processes import HTTP_TIMEOUT


@dataclass
class Delivery:
    """One POST as received."""

    headers: dict[str, str]
    body: bytes
    status: int

    @property
    def json(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.body)
        return document


@dataclass
class Receiver:
    """Records POSTs; answers `failures` of them with 500 first, then 204."""

    failures: int = 0
    deliveries: list[Delivery] = field(default_factory=list[Delivery])
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    server: uvicorn.Server | None = None
    task: asyncio.Task[None] | None = None

    @property
    def accepted(self) -> list[Delivery]:
        return [d for d in self.deliveries if d.status < 300]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        status = 500 if self.failures > 0 else 204
        self.failures -= 1
        self.deliveries.append(Delivery(headers, body, status))
        self.arrived.set()
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def start(self, held: socket.socket | None = None) -> str:
        """Listen on a new port, or on `held` (see `held_port`); return the hook's URL."""
        config = uvicorn.Config(self, host="127.0.0.1", port=0, log_level="warning")
        self.server = uvicorn.Server(config)
        sockets = None if held is None else [held]
        self.task = asyncio.create_task(self.server.serve(sockets))
        async with asyncio.timeout(HTTP_TIMEOUT):
            while not self.server.started:  # noqa: ASYNC110 - uvicorn offers a flag, not an event
                await asyncio.sleep(0.01)
        host, bound = self.server.servers[0].sockets[0].getsockname()[:2]
        return f"http://{host}:{bound}/hook"

    async def stop(self) -> None:
        if self.server is not None and self.task is not None:
            self.server.should_exit = True
            await self.task

    async def wait_for(self, count: int, within: float = 20.0) -> list[Delivery]:
        """The accepted deliveries, once there are `count` of them."""
        async with asyncio.timeout(within):
            while len(self.accepted) < count:
                self.arrived.clear()
                await self.arrived.wait()
        return self.accepted


def held_port(port: int = 0) -> socket.socket:
    """A socket bound to a loopback port (a new one, or `port`) and not listening, for a
    `Receiver` to start on later (`start(held)`).

    Meanwhile a connection to the port is refused, as by a receiver that is down, and no
    other process can take the port, as it could in the moment between closing a socket
    and binding the port again (outgoing connections take ports of the same range).
    SO_REUSEPORT lets it be bound where another socket of this process still listens,
    if that one set it too.
    """
    held = socket.socket()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    held.bind(("127.0.0.1", port))
    return held
