"""Real `baton` server and worker processes for the operation tests, on loopback.

The app they serve (`write_app`) logs every node body it runs to a file, one line per
run (`node session pid`), so a test can count executions across processes; a
message `slow:S` makes the first node sleep S seconds the first time it runs in a
session (a later run after a takeover does not sleep again), and `after:NAME:S` makes
it wait until the test creates the file NAME beside the log, then sleep S seconds
(the same first time only): a run still in flight S seconds after the test's cue,
however long the processes took to start.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import sys
import time
from asyncio.subprocess import PIPE, Process
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.server.processes import HTTP_TIMEOUT, KEEP_IDLE

__all__ = [
    "APP",
    "WITHIN",
    "BatonProcess",
    "executions",
    "logged",
    "new_session",
    "postgres_cluster",
    "restart_mariadb",
    "start_baton",
    "start_run",
    "waits_for_approval",
    "write_app",
]

WITHIN = 20.0  # seconds any awaited outcome may take on a loaded machine

APP = "ops"
_URL = re.compile(rb"(http://127\.0\.0\.1:\d+)/")

_AGENT = '''
import asyncio
import os
from pathlib import Path

from baton import App, Context, RequestInput, ResumabilityConfig, Workflow

LOG = Path(os.environ["BATON_TEST_LOG"])


def _note(node: str, session: str) -> bool:
    """Log this run; True when the node ran before in this session."""
    seen = LOG.exists() and f"{node} {session} " in LOG.read_text()
    with LOG.open("a") as log:
        log.write(f"{node} {session} {os.getpid()}\\n")
    return seen


async def prepare(ctx: Context, node_input: str) -> str:
    again = _note("prepare", ctx.session.id)
    if node_input.startswith("slow:") and not again:
        await asyncio.sleep(float(node_input.split(":")[1]))
    if node_input.startswith("after:") and not again:
        _, cue, seconds = node_input.split(":")
        async with asyncio.timeout(60):
            while not LOG.with_name(cue).exists():
                await asyncio.sleep(0.05)
        await asyncio.sleep(float(seconds))
    return node_input


def ask(ctx: Context, node_input: str):
    return RequestInput(interrupt_id="approve", message=f"approve {node_input}?")


def finish(ctx: Context, node_input: object) -> str:
    _note("finish", ctx.session.id)
    return "done"


app = App(
    name="ops",
    root_agent=Workflow(name="ops", edges=[("START", prepare, ask, finish)]),
    resumability_config=ResumabilityConfig(is_resumable=True),
)
'''


def write_app(root: Path) -> tuple[Path, Path]:
    """An agents folder holding the `ops` app, and the log its nodes write."""
    agents = root / "agents"
    (agents / APP).mkdir(parents=True)
    (agents / APP / "agent.py").write_text(_AGENT)
    return agents, root / "executions.log"


def executions(log: Path) -> Counter[tuple[str, str]]:
    """How many times each (node, session) body ran, across every process."""
    if not log.exists():
        return Counter()
    return Counter(tuple(line.split()[:2]) for line in log.read_text().splitlines())  # pyright: ignore[reportReturnType] -- two fields per line


def _cluster() -> list[str]:
    """The pg_ctlcluster command for the local cluster (version, name)."""
    if shutil.which("pg_ctlcluster") is None or not Path("/etc/postgresql").is_dir():
        message = (
            "pg_ctlcluster is not installed: the outage and chaos tests need the local PostgreSQL"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    return ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main"]


_MARIADBD = "/usr/sbin/mariadbd"
_MARIADB_PID = Path("/run/mysqld/mysqld.pid")


async def restart_mariadb(down_for: float) -> None:
    """Stop the local MariaDB (SIGTERM to the pid in its pid file: a clean shutdown),
    keep it down `down_for` seconds, and start it again; returns once it answers."""
    if not Path(_MARIADBD).exists():
        message = "mariadbd is not installed: the MariaDB chaos test needs the local server"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    pid = int(_MARIADB_PID.read_text().strip())
    os.kill(pid, signal.SIGTERM)
    while _alive(pid):  # noqa: ASYNC110 - the server exits by itself
        await asyncio.sleep(0.05)
    try:
        await asyncio.sleep(down_for)
    finally:
        # Shielded: a load that failed meanwhile cancels this task, and the server must
        # still come back for the tests after it.
        await asyncio.shield(_start_mariadb())


async def _start_mariadb() -> None:
    starting = await asyncio.create_subprocess_exec(
        "start-stop-daemon", "--start", "--oknodo", "--background", "--exec", _MARIADBD
    )
    assert await starting.wait() == 0, "start-stop-daemon could not start mariadbd"
    await _until_mariadb_answers()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _until_mariadb_answers(within: float = 30.0) -> None:
    async with asyncio.timeout(within):
        while True:
            ping = await asyncio.create_subprocess_exec(
                "mariadb-admin",
                "--protocol=tcp",
                "-h",
                "127.0.0.1",
                "ping",
                stdout=PIPE,
                stderr=PIPE,
            )
            if await ping.wait() == 0:
                return
            await asyncio.sleep(0.2)


async def postgres_cluster(action: str, *extra: str) -> None:
    """`pg_ctlcluster ACTION` on the local cluster (skips, or fails under CI, without it)."""
    process = await asyncio.create_subprocess_exec(*_cluster(), action, *extra)
    assert await process.wait() == 0, f"pg_ctlcluster {action} failed"


@dataclass
class BatonProcess:
    """A running `baton` command and, for servers, its URL."""

    process: Process
    url: str
    output: asyncio.Task[bytes] | None = None

    def __post_init__(self) -> None:
        # Keep reading its output: a full pipe would block the process at its next log line.
        if self.process.stdout is not None:
            self.output = asyncio.create_task(self.process.stdout.read())

    def signal(self, signum: signal.Signals) -> None:
        self.process.send_signal(signum)

    async def exit_code(self, within: float) -> int:
        async with asyncio.timeout(within):
            return await self.process.wait()

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=HTTP_TIMEOUT, limits=KEEP_IDLE)


async def start_baton(*args: str, log: Path, within: float = 30.0) -> BatonProcess:
    """Start `baton ARGS` (a server on 127.0.0.1 port 0, or a worker) and wait until it
    says it is ready."""
    command = [str(Path(sys.executable).parent / "baton"), *args]
    env = {**os.environ, "BATON_TEST_LOG": str(log), "COLUMNS": "400"}
    process = await asyncio.create_subprocess_exec(*command, stdout=PIPE, env=env)
    assert process.stdout is not None
    try:
        async with asyncio.timeout(within):
            while True:
                line = await process.stdout.readline()
                if not line:
                    raise RuntimeError(f"baton {' '.join(args)} exited before it was ready")
                found = _URL.search(line)
                if found or b"baton worker" in line:
                    return BatonProcess(process, found.group(1).decode() if found else "")
    except BaseException:  # not ready in time (or cancelled): no server left running
        if process.returncode is None:
            process.kill()
            await process.wait()
        raise


async def start_together(*commands: tuple[str, ...], log: Path) -> list[BatonProcess]:
    """Start several `baton` commands at once (each spends seconds importing, and none
    needs another to be ready); if one fails to start, those already started are
    stopped, not left running beside the failure."""
    starting = [asyncio.ensure_future(start_baton(*command, log=log)) for command in commands]
    try:
        return list(await asyncio.gather(*starting))
    except BaseException:
        for each in starting:
            each.cancel()
        for outcome in await asyncio.gather(*starting, return_exceptions=True):
            if isinstance(outcome, BatonProcess) and outcome.process.returncode is None:
                outcome.process.kill()
                await outcome.process.wait()
        raise


async def start_run(server: BatonProcess, session: str, text: str) -> asyncio.Task[httpx.Response]:
    client = server.client()
    body = {
        "appName": APP,
        "userId": "u",
        "sessionId": session,
        "newMessage": {"role": "user", "parts": [{"text": text}]},
    }

    async def post() -> httpx.Response:
        async with client:
            return await client.post("/run", json=body, timeout=60)

    return asyncio.create_task(post())


async def new_session(server: BatonProcess) -> str:
    async with server.client() as client:
        r = await client.post(f"/apps/{APP}/users/u/sessions", json={})
        r.raise_for_status()
        return str(r.json()["id"])


async def waits_for_approval(server: BatonProcess, session: str) -> float:
    """Seconds until the session's run is paused at its question, asked of `server`."""
    began = time.monotonic()
    async with server.client() as client, asyncio.timeout(WITHIN):
        while True:
            r = await client.get(f"/apps/{APP}/users/u/pending", params={"session_id": session})
            if r.status_code == 200 and r.json():
                return time.monotonic() - began
            await asyncio.sleep(0.05)


async def logged(log: Path, node: str, session: str) -> None:
    async with asyncio.timeout(WITHIN):
        while executions(log)[(node, session)] == 0:  # noqa: ASYNC110 - another process writes it
            await asyncio.sleep(0.02)
