"""uvicorn's httptools protocol checks every response header for forbidden bytes; baton
has it remember the names and values that passed (`HeaderCheck`), with the same answers."""

from __future__ import annotations

import re

import httpx
import pytest
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http import httptools_impl

from baton.server.httptools_protocol import HeaderCheck
from tests.server.conftest import serve
from tests.server.processes import HTTP_TIMEOUT

pytest.importorskip("httptools")


def test_a_check_remembers_what_passed_and_still_refuses_what_does_not() -> None:
    searched: list[bytes] = []

    class Counting:
        def search(self, value: bytes) -> re.Match[bytes] | None:
            searched.append(value)
            return re.compile(b"[\x00-\x08\x0a-\x1f\x7f]").search(value)

    check = HeaderCheck(Counting())  # pyright: ignore[reportArgumentType]
    assert check.search(b"nosniff") is None
    assert check.search(b"nosniff") is None
    assert check.search(b"bad\nvalue") is not None
    assert check.search(b"bad\nvalue") is not None
    assert searched == [b"nosniff", b"bad\nvalue", b"bad\nvalue"]


def test_a_check_remembers_a_bounded_number_of_values() -> None:
    check = HeaderCheck(re.compile(b"[\x00-\x1f]"))
    for n in range(HeaderCheck.REMEMBERED + 10):
        assert check.search(str(n).encode()) is None
    assert len(check._passed) == HeaderCheck.REMEMBERED  # pyright: ignore[reportPrivateUsage]


async def test_a_served_response_with_a_bad_header_value_is_still_refused() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        value = b"bad\nvalue" if scope["path"] == "/bad" else b"good"
        headers = [(b"content-type", b"text/plain"), (b"x-custom", value)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"ok"})

    serving = await serve(app, parser="httptools")  # pyright: ignore[reportArgumentType]
    try:
        assert isinstance(httptools_impl.HEADER_RE, HeaderCheck)
        assert isinstance(httptools_impl.HEADER_VALUE_RE, HeaderCheck)
        async with httpx.AsyncClient(base_url=serving.url, timeout=HTTP_TIMEOUT) as client:
            for _ in range(2):
                good = await client.get("/good")
                assert (good.status_code, good.headers["x-custom"]) == (200, "good")
            with pytest.raises(httpx.RemoteProtocolError):
                await client.get("/bad")
            assert (await client.get("/good")).status_code == 200
    finally:
        await serving.stop()
