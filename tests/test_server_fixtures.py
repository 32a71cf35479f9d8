"""The fixtures' rule for database servers (tests/conftest.py): a server that is not there
skips its tests with a message (fails them under CI=true), and a server that is only slow
to take a connection, as on a loaded machine, is not taken for one that is not there."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import pytest
from sqlalchemy import make_url

from tests import conftest


@asynccontextmanager
async def first_connect_stalls(url: str) -> AsyncIterator[str]:
    """`url` through a loopback proxy whose first connection is accepted and never
    answered (a server too busy to answer in time); later ones reach the server."""
    server = make_url(url)
    stalled: list[asyncio.StreamWriter] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not stalled:
            stalled.append(writer)
            return
        upstream_reader, upstream = await asyncio.open_connection(server.host, server.port)
        async with asyncio.TaskGroup() as group:
            group.create_task(pipe(reader, upstream))
            group.create_task(pipe(upstream_reader, writer))

    proxy = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = proxy.sockets[0].getsockname()[1]
    try:
        yield server.set(port=port).render_as_string(hide_password=False)
        assert stalled, "the proxy's first connection never came"
    finally:
        proxy.close()
        for writer in stalled:
            writer.close()
        await proxy.wait_closed()


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()
        with suppress(ConnectionError):
            await writer.wait_closed()


async def test_a_postgresql_slow_to_take_a_connection_is_waited_for_not_skipped(
    emptied_postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await check_a_slow_first_connect_is_waited_for("PostgreSQL", conftest.POSTGRES_URL, monkeypatch)


async def test_a_mysql_slow_to_take_a_connection_is_waited_for_not_skipped(
    mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await check_a_slow_first_connect_is_waited_for("MySQL", conftest.MYSQL_URL, monkeypatch)


async def check_a_slow_first_connect_is_waited_for(
    name: str, server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixture (a database on the server) says the server is there."""
    monkeypatch.setattr(conftest, "CONNECT_ATTEMPT", 1.0)  # one try's bound, short for the test
    monkeypatch.setattr(conftest, "reachability", {})
    async with first_connect_stalls(server_url) as url:
        try:
            await conftest.run_on_server(name, url, "SELECT 1")
        except (pytest.skip.Exception, pytest.fail.Exception) as error:
            pytest.fail(f"a slow first connect was taken for an absent server: {error}")
    assert conftest.reachability == {name: None}


@pytest.mark.parametrize("ci", ["true", ""])
async def test_a_server_that_refuses_is_decided_absent_once_skipped_or_failed_under_ci(
    monkeypatch: pytest.MonkeyPatch, ci: str
) -> None:
    with socket.socket() as probe:  # a port nothing listens on: connections are refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        url = f"postgresql+asyncpg://postgres@127.0.0.1:{port}/test"
        monkeypatch.setattr(conftest, "reachability", {})
        monkeypatch.setenv("CI", ci)
        outcome = pytest.fail.Exception if ci else pytest.skip.Exception
        with pytest.raises(outcome, match="ConnectionRefusedError") as first:
            await conftest.run_on_server("PostgreSQL", url, "SELECT 1")
    words = "CI=true requires it" if ci else "start it (make services)"
    assert words in str(first.value)
    assert list(conftest.reachability) == ["PostgreSQL"]
    with pytest.raises(outcome, match="ConnectionRefusedError"):  # decided: not asked again
        await conftest.run_on_server("PostgreSQL", "postgresql+asyncpg://nowhere.invalid/x", "")
