"""Graceful shutdown: SIGTERM refuses new runs, ends live streams, hands unfinished runs
over to another process at once, and exits 0 — with real processes on one database."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx

from baton.server.app import create_app, drain_server
from baton.server.catalog import AppCatalog
from baton.sessions.services import InMemorySessionService
from tests.conftest import sqlite_url
from tests.operation.processes import (
    APP,
    WITHIN,
    executions,
    logged,
    new_session,
    start_run,
    start_together,
    waits_for_approval,
    write_app,
)
from tests.server.conftest import approval_app, serve
from tests.server.processes import HTTP_TIMEOUT


async def test_sigterm_ends_streams_hands_the_run_over_and_exits_0(tmp_path: Path) -> None:
    agents, log = write_app(tmp_path)
    db = sqlite_url(tmp_path)
    common = ("--db", db, "--port", "0", "--lease-ttl", "30")
    leaving, staying = await start_together(
        ("api_server", str(agents), *common, "--grace", "1", "--worker-id", "leaving"),
        ("api_server", str(agents), *common, "--worker-id", "staying"),
        log=log,
    )
    try:
        session = await new_session(leaving)
        stream_client = leaving.client()
        async with (
            stream_client,
            stream_client.stream("GET", f"/apps/{APP}/users/u/pending/stream") as stream,
        ):
            request = await start_run(leaving, session, "slow:60")  # far longer than the grace
            await logged(log, "prepare", session)

            leaving.signal(signal.SIGTERM)
            async with asyncio.timeout(WITHIN):
                async for _ in stream.aiter_bytes():  # the live stream ends: no SIGKILL needed
                    pass

        assert await leaving.exit_code(within=WITHIN) == 0
        # The client of the run cut off at the end of the grace is told, not dropped.
        reply = await request
        assert reply.status_code == 503
        assert reply.json()["error"] == "ShuttingDownError"
        assert "handed over" in reply.json()["detail"]
        # The other process continues the run at once: no 30 s lease to wait out.
        took = await waits_for_approval(staying, session)
        assert took < 15
        assert executions(log)[("prepare", session)] == 2  # in flight at the handover: again once
        staying.signal(signal.SIGTERM)
        assert await staying.exit_code(within=WITHIN) == 0
    finally:  # a failed test leaves no server behind
        for each in (leaving, staying):
            if each.process.returncode is None:
                each.process.kill()
                await each.process.wait()


async def test_a_draining_server_refuses_new_runs_with_503_and_retry_after() -> None:
    app = create_app(AppCatalog.of([approval_app()], InMemorySessionService()))
    serving = await serve(app)
    try:
        async with httpx.AsyncClient(base_url=serving.url, timeout=HTTP_TIMEOUT) as client:
            created = await client.post("/apps/approval/users/u/sessions", json={})
            drain_server(app, grace=1)
            body = {
                "appName": "approval",
                "userId": "u",
                "sessionId": created.json()["id"],
                "newMessage": {"role": "user", "parts": [{"text": "go"}]},
            }
            refused = await client.post("/run", json=body)
            listed = await client.get("/apps/approval/users/u/sessions")
    finally:
        serving.server.should_exit = True
        await serving.task

    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "2"
    assert refused.json()["error"] == "ShuttingDownError"
    assert "shutting down" in refused.json()["detail"]
    assert listed.status_code == 200  # reads still work while it drains
