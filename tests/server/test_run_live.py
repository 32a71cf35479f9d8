"""`/run_live`, the reference's WebSocket route of live runs, which baton does not have: a
real `baton api_server` process and a real WebSocket client. Every connection is accepted
and closed with a code and a reason the client reads (a missing session as the reference
closes it, 1002); a request baton would take gets 1008 naming `/run_sse`; nothing is
stored."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests.server.conftest import Live, StartLive, serve
from tests.server.processes import BATON, HTTP_TIMEOUT, KEEP_IDLE, serving

_AGENT = """
from baton import App, Workflow

def echo(ctx, node_input):
    return node_input

app = App(name="hello", root_agent=Workflow(name="hello_wf", edges=[("START", echo)]))
"""

_KEY = "live-secret"
_HEADERS = {"X-API-Key": _KEY}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, httpx.Client]]:
    """A real server of the `hello` app (with an API key) and a client of it, with one
    session `s1` of user `u`."""
    root = tmp_path_factory.mktemp("live")
    folder = root / "agents" / "hello"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(_AGENT)
    args = [str(BATON), "api_server", str(root / "agents"), "--port", "0", "--api-key", _KEY]
    with (
        serving([*args, "--db", str(Path(root) / "s.db")]) as url,
        httpx.Client(
            base_url=url, headers=_HEADERS, timeout=HTTP_TIMEOUT, limits=KEEP_IDLE
        ) as client,
    ):
        client.post("/apps/hello/users/u/sessions/s1", json={}).raise_for_status()
        yield url, client


def _closed(url: str, query: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """Connect to `/run_live?query`, send a message as a live client would, and return the
    code and reason of the server's close."""
    ws_url = url.replace("http://", "ws://") + "/run_live?" + query
    with connect(ws_url, additional_headers=headers or _HEADERS, open_timeout=20) as socket:
        with contextlib.suppress(ConnectionClosed):  # the server may have closed already
            socket.send('{"content": {"role": "user", "parts": [{"text": "hi"}]}}')
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=20)  # a message instead of a close fails the test
    received = closed.value.rcvd
    assert received is not None, "the server dropped the connection without a close"
    return received.code, received.reason


def test_a_live_run_is_closed_with_1008_naming_run_sse_and_stores_nothing(
    server: tuple[str, httpx.Client],
) -> None:
    url, client = server
    code, reason = _closed(url, "app_name=hello&user_id=u&session_id=s1&modalities=TEXT")
    assert code == 1008
    assert "no live" in reason
    assert "/run_sse" in reason
    assert client.get("/apps/hello/users/u/sessions/s1").json()["events"] == []


def test_a_missing_session_is_closed_as_the_reference_closes_it(
    server: tuple[str, httpx.Client],
) -> None:
    url, client = server
    code, reason = _closed(url, "app_name=hello&user_id=u&session_id=nope")
    assert (code, reason.split(":")[0]) == (1002, "Session not found")
    assert "'nope'" in reason
    assert client.get("/apps/hello/users/u/sessions/nope").status_code == 404  # not made


def test_an_unknown_app_is_refused_by_name(server: tuple[str, httpx.Client]) -> None:
    code, reason = _closed(server[0], "app_name=other&user_id=u&session_id=s1")
    assert code == 1008
    assert "'other'" in reason
    assert "/list-apps" in reason


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("user_id=u&session_id=s1", "app_name"),  # no app, and the server has no default one
        ("app_name=hello&session_id=s1", "user_id"),
        ("app_name=hello&user_id=u&session_id=s1&modalities=SMELL", "modalities"),
        ("app_name=hello&user_id=u&session_id=s1&save_live_blob=maybe", "save_live_blob"),
    ],
)
def test_a_request_the_reference_refuses_is_closed_with_1008_naming_the_parameter(
    server: tuple[str, httpx.Client], query: str, named: str
) -> None:
    code, reason = _closed(server[0], query)
    assert code == 1008
    assert named in reason


def test_a_request_without_a_key_or_from_another_origin_is_refused(
    server: tuple[str, httpx.Client],
) -> None:
    url, _ = server
    query = "app_name=hello&user_id=u&session_id=s1"
    code, reason = _closed(url, query, {"X-Other": "1"})
    assert (code, "API key" in reason) == (1008, True)
    code, reason = _closed(url, query, {**_HEADERS, "Origin": "http://elsewhere.example"})
    assert (code, "Origin not allowed" in reason) == (1008, True)
    same_host = url.removeprefix("http://")
    code, reason = _closed(url, query, {**_HEADERS, "Origin": f"http://{same_host}"})
    assert (code, "/run_sse" in reason) == (1008, True)  # its own pages may connect


@pytest.mark.parametrize("path", ["/static/app.js", "/list-apps", "/nothing"])
async def test_a_socket_to_any_other_path_is_refused_before_its_handshake(
    start_live: StartLive, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    """Only `/run_live` takes a WebSocket: a handshake to any other path, the pages'
    static files too (whose app serves HTTP only, and failed with 500 and a logged
    traceback), is refused with 403 and nothing logged as an error."""
    live: Live = await start_live(web=True)
    with pytest.raises(InvalidStatus) as refused:
        async with asyncio.timeout(20), ws_connect(live.url.replace("http://", "ws://") + path):
            pass
    assert refused.value.response.status_code == 403
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_run_live_is_reached_where_another_app_mounts_the_server(
    start_live: StartLive,
) -> None:
    """Mounted by another app (a `root_path`), the server still takes `/run_live` below
    its mount and refuses sockets to its other paths."""
    live: Live = await start_live()
    assert live.app is not None
    parent = FastAPI()
    parent.mount("/baton", live.app)
    serving = await serve(parent)
    try:
        base = serving.url.replace("http://", "ws://") + "/baton"
        async with asyncio.timeout(20), ws_connect(f"{base}/run_live?user_id=u&session_id=s") as s:
            with pytest.raises(ConnectionClosed) as closed:
                await s.recv()
        assert closed.value.rcvd is not None
        assert (closed.value.rcvd.code, "app_name" in closed.value.rcvd.reason) == (1008, True)
        with pytest.raises(InvalidStatus) as refused:
            async with asyncio.timeout(20), ws_connect(f"{base}/list-apps"):
                pass
        assert refused.value.response.status_code == 403
    finally:
        await serving.stop()
