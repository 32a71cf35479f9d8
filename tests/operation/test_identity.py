"""A server's worker identity: a process that starts beside a live one never takes its
runs — not with --port 0 (no shared HOST:0), not when its port is taken (it stops
before its worker starts) — with real processes on one SQLite file."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from tests.conftest import sqlite_url
from tests.operation.processes import (
    WITHIN,
    executions,
    logged,
    new_session,
    start_baton,
    start_run,
    waits_for_approval,
    write_app,
)


async def test_servers_started_beside_a_live_one_leave_its_runs_alone(tmp_path: Path) -> None:
    agents, log = write_app(tmp_path)
    common = ("api_server", str(agents), "--db", sqlite_url(tmp_path))
    first = await start_baton(*common, "--port", "0", log=log)
    try:
        session = await new_session(first)
        # The run stays in flight until 3 s after the second server is ready (the cue),
        # however slowly the processes start: a run over before then would leave the
        # second nothing to take, and the test nothing to check.
        request = await start_run(first, session, "after:second-ready:3")
        await logged(log, "prepare", session)

        port = first.url.rsplit(":", 1)[1]
        taken = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / "baton"),
            *common,
            "--port",
            port,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        async with asyncio.timeout(WITHIN):
            said, _ = await taken.communicate()
        assert taken.returncode == 2
        assert f"cannot listen on 127.0.0.1:{port}" in said.decode()

        second = await start_baton(*common, "--port", "0", log=log)
        log.with_name("second-ready").touch()
        try:
            await waits_for_approval(first, session)
        finally:
            second.signal(signal.SIGTERM)
            await second.exit_code(within=WITHIN)
        await asyncio.gather(request, return_exceptions=True)
    finally:
        first.signal(signal.SIGTERM)
        await first.exit_code(within=WITHIN)

    assert executions(log)[("prepare", session)] == 1  # only its first holder ran it
