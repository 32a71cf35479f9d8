"""A real PostgreSQL outage in the middle of a run: requests meanwhile get 503 JSON with
Retry-After (never a text 500), the run's commit waits for the database, and when it is
back the run goes on — nothing lost, nothing done twice."""

from __future__ import annotations

import asyncio
import os
import shutil
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
    start_baton,
    start_run,
    waits_for_approval,
    write_app,
)

pytestmark = pytest.mark.postgres


def _cluster() -> list[str]:
    """The pg_ctlcluster command for the local cluster (version, name)."""
    if shutil.which("pg_ctlcluster") is None or not Path("/etc/postgresql").is_dir():
        message = "pg_ctlcluster is not installed: the outage test needs the local PostgreSQL"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    return ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main"]


async def _cluster_do(action: str, *extra: str) -> None:
    process = await asyncio.create_subprocess_exec(*_cluster(), action, *extra)
    assert await process.wait() == 0, f"pg_ctlcluster {action} failed"


@asynccontextmanager
async def _database_down() -> AsyncIterator[None]:
    await _cluster_do("stop", "-m", "fast")
    try:
        yield
    finally:
        await _cluster_do("start")


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
