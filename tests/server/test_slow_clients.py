"""Slow, idle, greedy and huge clients on a live server: each bounded in time, the server well.

Raw sockets on 127.0.0.1 play the clients a library would not: headers or a body
sent a byte at a time, connections opened and left idle, a 30 MB upload without a
key. Limits are set small (half a second) so every case ends in about a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import AsyncIterator
from functools import partial
from urllib.parse import urlsplit

import pytest
from pydantic import JsonValue

from baton.server.connections import PARSER
from baton.server.settings import Limits
from tests.server.conftest import Live, StartLive
from tests.server.test_hostile import everything

FAST = Limits(read_timeout=0.5, keep_alive=1)


@pytest.fixture(params=["h11", *(["httptools"] if PARSER == "httptools" else [])])
def start_live(start_live: StartLive, request: pytest.FixtureRequest) -> StartLive:
    """Every case on each request parser the server may use (httptools where installed)."""
    return partial(start_live, parser=request.param)


def address(live: Live) -> tuple[str, int]:
    parts = urlsplit(live.url)
    assert parts.hostname is not None
    assert parts.port is not None
    return parts.hostname, parts.port


@contextlib.asynccontextmanager
async def connection(
    live: Live,
) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    reader, writer = await asyncio.open_connection(*address(live))
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def trickle(writer: asyncio.StreamWriter, data: bytes, every: float = 0.05) -> None:
    """Send `data` one byte at a time, as a slowloris client does, until the server hangs up."""
    with contextlib.suppress(OSError):
        for byte in data:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(every)


async def read_until_closed(reader: asyncio.StreamReader) -> tuple[int, dict[str, JsonValue]]:
    """The status and JSON body of the one response sent before the server closed."""
    raw = b""
    async with asyncio.timeout(20):  # the server's bound is half a second; this is the test's
        # A client still sending when the server closes may see a reset after the reply.
        with contextlib.suppress(ConnectionResetError):
            while part := await reader.read(65536):
                raw += part
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    assert b"content-type: application/json" in head.lower(), head
    parsed: dict[str, JsonValue] = json.loads(body)
    return status, parsed


async def test_headers_sent_a_byte_at_a_time_get_408_and_the_connection_closes(
    start_live: StartLive,
) -> None:
    live: Live = await start_live(limits=FAST)
    async with connection(live) as (reader, writer):
        endless = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 10_000
        sending = asyncio.create_task(trickle(writer, endless))
        status, body = await read_until_closed(reader)
        sending.cancel()
    assert (status, body) == (
        408,
        {
            "detail": "the request headers did not arrive within 0.5 s; send the whole "
            "request promptly.",
            "error": "RequestTimeout",
        },
    )
    assert (await live.client.get("/health")).json() == {"status": "ok"}


async def test_a_connection_that_sends_nothing_is_closed(start_live: StartLive) -> None:
    live: Live = await start_live(limits=FAST)
    async with connection(live) as (reader, _), asyncio.timeout(20):
        assert await reader.read() == b""  # closed without a word: nothing was asked


async def test_a_body_sent_a_byte_at_a_time_gets_408_and_changes_nothing(
    emptied_store_url: str, start_live: StartLive
) -> None:
    live: Live = await start_live(limits=FAST, db_url=emptied_store_url)
    sid = await live.create("approval", "u")
    before = await everything(live.service.store)
    body = json.dumps({"appName": "approval", "userId": "u", "sessionId": sid}).encode()
    head = (
        f"POST /run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    async with connection(live) as (reader, writer):
        writer.write(head + body[:10])
        sending = asyncio.create_task(trickle(writer, body[10:], every=0.5))
        status, refusal = await read_until_closed(reader)
        sending.cancel()
    assert status == 408
    assert refusal["error"] == "RequestTimeout"
    assert str(refusal["detail"]).startswith("the request body did not arrive within 0.5 s (")
    assert await everything(live.service.store) == before


async def test_an_idle_keep_alive_connection_is_closed(start_live: StartLive) -> None:
    live: Live = await start_live(limits=FAST)
    async with connection(live) as (reader, writer):
        writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        async with asyncio.timeout(20):
            raw = await reader.read()  # the response, then end of stream after keep_alive
    assert raw.startswith(b"HTTP/1.1 200")
    assert raw.endswith(b'{"status":"ok"}')


async def test_connections_over_the_limit_get_503_until_some_close(
    start_live: StartLive,
) -> None:
    live: Live = await start_live(limits=Limits(max_connections=3))
    async with contextlib.AsyncExitStack() as held:
        for _ in range(3):
            await held.enter_async_context(connection(live))
        async with asyncio.timeout(20):  # the server (this loop) accepts all three
            while live.connections() < 3:  # noqa: ASYNC110 - uvicorn keeps a set, not an event
                await asyncio.sleep(0.01)
        crowded = await live.client.get("/health")
        assert (crowded.status_code, crowded.json()) == (
            503,
            {
                "detail": "the server is serving its limit of 3 connections "
                "(--max-connections); try again shortly.",
                "error": "ServiceUnavailable",
            },
        )
    assert (await live.client.get("/health")).status_code == 200


def upload(host: str, port: int, size: int) -> bytes:
    """POST `size` bytes without a key from a plain blocking socket; the whole reply."""
    with socket.create_connection((host, port), timeout=20) as sock:
        head = (
            f"POST /run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {size}\r\n\r\n"
        )
        sock.sendall(head.encode())
        chunk = b" " * (1024 * 1024)
        for _ in range(size // len(chunk)):
            sock.sendall(chunk)
        sock.shutdown(socket.SHUT_WR)
        received = b""
        while part := sock.recv(65536):
            received += part
        return received


@pytest.mark.parametrize("keys", [["op-key"], []])
async def test_a_30_mb_upload_is_refused_while_health_stays_answered(
    start_live: StartLive, keys: list[str]
) -> None:
    live: Live = await start_live(keys=keys)
    host, port = address(live)
    reply: list[bytes] = []
    # A thread plays the uploader, so the test's event loop is the server's alone.
    thread = threading.Thread(target=lambda: reply.append(upload(host, port, 30 * 1024 * 1024)))
    thread.start()
    try:
        for _ in range(5):
            async with asyncio.timeout(20):  # generous: a loaded 2-core machine answers in ms
                assert (await live.client.get("/health")).json() == {"status": "ok"}
    finally:
        await asyncio.to_thread(thread.join, 30)
    head, _, body = reply[0].partition(b"\r\n\r\n")
    status = 401 if keys else 413
    assert head.startswith(f"HTTP/1.1 {status}".encode())
    error = json.loads(body)["error"]
    assert error == ("Unauthorized" if keys else "ContentTooLarge")


@pytest.mark.parametrize(
    "request_head",
    [b"NOT HTTP AT ALL\r\n\r\n", b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n"],
)
async def test_malformed_or_oversized_headers_get_a_400_json(
    start_live: StartLive, request_head: bytes
) -> None:
    live: Live = await start_live(limits=FAST)
    async with connection(live) as (reader, writer):
        writer.write(request_head)
        status, body = await read_until_closed(reader)
    assert (status, body["error"]) == (400, "BadRequest")
    assert "malformed or larger than 65536 bytes" in str(body["detail"])
