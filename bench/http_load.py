"""The HTTP benchmark's load generator: N clients doing HITL runs, in a process of its own.

    python bench/http_load.py URL [URL ...] --clients 16 --runs 1000 --seconds 60 [--affinity]

Started by `http_bench.py` where `http_load.c`, the same load generator in C at less
than half the CPU per request, cannot be built (no C compiler); standard library only
(plus uvloop when importable). Each client repeats a whole run (create a session, `POST
/run`, which pauses, then answer it) on keep-alive HTTP/1.1 connections of its own, one
per server, sending each request to the servers in turn (with `--affinity`, every
request of client i to server i mod N, as a load balancer keeping sessions to one
process would). Every response is checked: its
status, the new session's id, that `/run` ended at the question and that the answer
ended the run with "approved" (a run that did otherwise counts as a failure, with what
came back).

A client as cheap as this one is what keeps the server's CPU the thing measured: an
httpx client spent about as much CPU per request as the server did, on the same cores.
Requests are prebuilt bytes (only the session id changes), responses are read with
`content-length`, and the client reports its own CPU per request next to the servers'.

Protocol on stdout: after the warm-up runs, a line `measuring`; after the measured
runs, one JSON line with what they did (see `Load.summary`). The load is bounded by
`--runs` and `--seconds`; it goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import urlsplit

APP = "approve"
USER = "u"
_HEAD_END = b"\r\n\r\n"
_LENGTH = b"\r\ncontent-length:"


class ResponseError(Exception):
    """A response the benchmark did not expect: the run did not do what it should."""


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection carrying one request at a time."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        head_end = self._buffer.find(_HEAD_END)
        if head_end < 0 or self._waiter is None:
            return
        head = bytes(self._buffer[:head_end]).lower()
        at = head.find(_LENGTH)
        if at < 0:
            self._fail(ResponseError(f"no content-length in {head[:300]!r}"))
            return
        line_end = head.find(b"\r\n", at + 2)
        length = int(head[at + len(_LENGTH) : line_end if line_end >= 0 else None])
        end = head_end + 4 + length
        if len(self._buffer) < end:
            return
        status = int(self._buffer[9:12])
        body = bytes(self._buffer[head_end + 4 : end])
        del self._buffer[:end]
        waiter, self._waiter = self._waiter, None
        if not waiter.done():
            waiter.set_result((status, body))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(ConnectionError(f"the server closed the connection ({exc})"))

    def _fail(self, error: Exception) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def send(self, request: bytes) -> asyncio.Future[tuple[int, bytes]]:
        assert self._transport is not None
        assert self._waiter is None  # one request at a time
        self._waiter = asyncio.get_running_loop().create_future()
        self._transport.write(request)
        return self._waiter

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


def _post(path: str, host: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


@dataclass(frozen=True)
class _Requests:
    """A server's requests, prebuilt: only the session id is put in per run."""

    create: bytes
    run: Callable[[str], bytes]
    answer: Callable[[str], bytes]

    @classmethod
    def for_host(cls, host: str) -> _Requests:
        create = _post(f"/apps/{APP}/users/{USER}/sessions", host, b"{}")

        def run(session: str) -> bytes:
            body = (
                f'{{"appName":"{APP}","userId":"{USER}","sessionId":"{session}",'
                '"newMessage":{"role":"user","parts":[{"text":"taxi"}]}}'
            )
            return _post("/run", host, body.encode())

        def answer(session: str) -> bytes:
            path = f"/apps/{APP}/users/{USER}/sessions/{session}/interrupts/ok/respond"
            return _post(path, host, b'{"response":true}')

        return cls(create, run, answer)


@dataclass
class Load:
    """What the clients did: runs completed, answer latencies (s), requests sent."""

    runs: int = 0
    requests: int = 0
    answers: list[float] = field(default_factory=list[float])
    failures: list[str] = field(default_factory=list[str])

    def summary(self, elapsed: float, cpu: float) -> dict[str, object]:
        return {
            "runs": self.runs,
            "requests": self.requests,
            "answers": self.answers,
            "failures": self.failures,
            "elapsed": elapsed,
            "client_cpu": cpu,
        }


class _Client:
    """One client: a connection per server, requests to the servers in turn (`step` 1)
    or always to one (`step` 0)."""

    def __init__(self, addresses: list[tuple[str, int]], turn: list[int], step: int) -> None:
        self._addresses = addresses
        self._requests = [_Requests.for_host(f"{h}:{p}") for h, p in addresses]
        self._connections: list[_Connection | None] = [None] * len(addresses)
        self._turn = turn  # the next server to send to: shared by every client, or its own
        self._step = step

    async def _send(self, build: Callable[[_Requests], bytes]) -> tuple[int, bytes, int]:
        index = self._turn[0]
        self._turn[0] = (index + self._step) % len(self._addresses)
        connection = self._connections[index]
        if connection is None or connection.closed:
            host, port = self._addresses[index]
            _, connection = await asyncio.get_running_loop().create_connection(
                _Connection, host, port
            )
            self._connections[index] = connection
        status, body = await connection.send(build(self._requests[index]))
        return status, body, index

    async def one_run(self, load: Load) -> None:
        status, body, _ = await self._send(lambda r: r.create)
        _expect(status == 200, "create", status, body)
        session = json.loads(body)["id"]
        status, body, _ = await self._send(lambda r: r.run(session))
        events = json.loads(body) if status == 200 else None
        asked = events and events[-1]["content"]["parts"][0]["functionCall"]["name"]
        _expect(asked == "adk_request_input", "run", status, body)
        before = time.perf_counter()
        status, body, _ = await self._send(lambda r: r.answer(session))
        load.answers.append(time.perf_counter() - before)
        events = json.loads(body) if status == 200 else None
        _expect(bool(events) and events[-1].get("output") == "approved", "answer", status, body)
        load.requests += 3
        load.runs += 1

    async def loop(self, load: Load, runs: int, deadline: float) -> None:
        """Runs back to back until `runs` were done (by all clients) or the deadline."""
        while load.runs + len(load.failures) < runs and time.perf_counter() < deadline:
            try:
                await self.one_run(load)
            except (ResponseError, ConnectionError, OSError, LookupError, ValueError) as error:
                load.failures.append(f"{type(error).__name__}: {error}"[:300])

    def close(self) -> None:
        for connection in self._connections:
            if connection is not None:
                connection.close()


def _expect(ok: bool, call: str, status: int, body: bytes) -> None:
    if not ok:
        raise ResponseError(f"{call} answered {status}: {body[-300:]!r}")


async def drive(
    urls: list[str], clients: int, runs: int, seconds: float, warm: int, *, affinity: bool
) -> None:
    addresses = [_address(url) for url in urls]
    turn = [0]
    if affinity:  # client i keeps to server i mod N
        every = [_Client(addresses, [i % len(addresses)], 0) for i in range(clients)]
    else:
        every = [_Client(addresses, turn, 1) for _ in range(clients)]
    try:
        warmed = Load()
        until = time.perf_counter() + 30
        await asyncio.gather(*(c.loop(warmed, warm, until) for c in every))
        if warmed.failures:
            print(json.dumps(warmed.summary(0.0, 0.0)), flush=True)
            return
        print("measuring", flush=True)
        load = Load()
        cpu = time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(c.loop(load, runs, started + seconds) for c in every))
        elapsed = time.perf_counter() - started
        print(json.dumps(load.summary(elapsed, time.process_time() - cpu)), flush=True)
    finally:
        for client in every:
            client.close()


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.hostname != "127.0.0.1" or parts.port is None:
        raise SystemExit(f"the load goes to 127.0.0.1 only, with a port: got {url!r}")
    return parts.hostname, parts.port


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warm", type=int, default=32, help="runs before measuring")
    parser.add_argument("--affinity", action="store_true", help="client i keeps to server i mod N")
    args = parser.parse_args()
    coroutine = drive(
        args.urls, args.clients, args.runs, args.seconds, args.warm, affinity=args.affinity
    )
    try:
        uvloop = importlib.import_module("uvloop")  # a cheaper loop, where installed
    except ImportError:
        asyncio.run(coroutine)
    else:
        uvloop.run(coroutine)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
