"""A real PostgreSQL outage in the middle of a run: requests meanwhile get 503 JSON with
Retry-After (never a text 500), the run's commit waits for the database, and when it is
back the run goes on — nothing lost, nothing done twice."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.operation.processes import (
    APP,
    executions,
    logged,
    new_session,
    postgres_cluster,
    start_baton,
    start_run,
    waits_for_approval,
    write_app,
)

pytestmark = [pytest.mark.postgres, pytest.mark.restarts_database]


@asynccontextmanager
async def _database_down() -> AsyncIterator[None]:
    await postgres_cluster("stop", "-m", "fast")
    try:
        yield
    finally:
        await postgres_cluster("start")


async def test_a_database_outage_is_503_and_the_run_goes_on_after(
    postgres_url: str, tmp_path: Path
) -> None:
    agents, log = write_app(tmp_path)
    server = await start_baton(
        "api_server",
        str(agents),
        "--db",
        postgres_url,
        "--port",
        "0",
        "--worker-id",
        "one",
        log=log,
    )
    try:
        session = await new_session(server)
        run = await start_run(server, session, "slow:3")
        await logged(log, "prepare", session)  # its commit comes after the outage begins

        async with _database_down(), server.client() as client:
            during = await client.get(f"/apps/{APP}/users/u/sessions")
            await asyncio.sleep(1)

        assert during.status_code == 503
        assert during.headers["retry-after"] == "2"
        assert during.json()["error"] == "StoreUnavailableError"
        assert "cannot be reached right now" in during.json()["detail"]
        await waits_for_approval(server, session)
        reply = await run
        assert reply.status_code == 200, reply.text
        assert executions(log)[("prepare", session)] == 1  # its commit waited, it did not rerun
    finally:
        server.signal(signal.SIGTERM)
        await server.exit_code(within=30)
