"""Chaos, bounded: real server processes on one database serve a stream of human-in-the-
loop runs, with starts and answers sent to random processes, while one process is
SIGKILLed, one SIGTERMed and (on PostgreSQL and MariaDB) the database restarted, mid-load.

Every run completes by itself (recovery continues what a dead or draining process
held); in the store every node of every run completed exactly once; a node body ran
at most twice (once more only for work in flight at a kill). The client does what a
real one must: a refused connection, a 503 or a 409 busy means "try again, possibly on
another process"; a start whose request died is found through its session (one
session per run), and only sent again when nothing of it landed."""

from __future__ import annotations

import asyncio
import random
import signal
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from baton.events import REQUEST_INPUT_FUNCTION
from baton.history import acting_node
from baton.sessions.sql.store import SqlStore
from baton.sessions.store import InvocationStatus, SessionKey
from baton.types import SessionId
from tests.conftest import sqlite_url
from tests.operation.processes import (
    APP,
    BatonProcess,
    executions,
    postgres_cluster,
    restart_mariadb,
    start_together,
    write_app,
)

RUNS = 20
AT_ONCE = 6  # runs in flight at any moment
TTL = 2  # --lease-ttl: a killed process's runs are continued about this long after
GRACE = 2  # --grace: a SIGTERMed process's runs in flight get this long
WITHIN = 90.0  # the whole load, on a loaded 2-core machine
_SETTLE = 2 * TTL + 1  # after a start's request died: by then anything of it has landed
_PAUSE = 0.2  # between tries of one request


@dataclass
class Fleet:
    """The server processes, and those not yet signalled, which clients pick from."""

    processes: list[BatonProcess]
    live: list[BatonProcess] = field(default_factory=list[BatonProcess])
    started: int = 0  # runs whose start was sent at least once

    def __post_init__(self) -> None:
        self.live = list(self.processes)

    def leave(self, process: BatonProcess, signum: signal.Signals) -> None:
        self.live.remove(process)
        process.signal(signum)

    async def request(self, method: str, path: str, **options: Any) -> httpx.Response | None:
        """One try on a random live process; None when the request died on its way (the
        connection broke or was refused) or was turned away for now (503)."""
        server = random.choice(self.live)
        try:
            async with server.client() as client:
                reply = await client.request(method, path, timeout=30, **options)
        except httpx.TransportError:
            return None
        return None if reply.status_code == 503 else reply

    async def read(self, path: str, **options: Any) -> httpx.Response:
        """A read, tried until some process answers it."""
        while (reply := await self.request("GET", path, **options)) is None:  # noqa: ASYNC110 - another process answers
            await asyncio.sleep(_PAUSE)
        assert reply.status_code == 200, reply.text
        return reply


def _message(session: str) -> dict[str, Any]:
    return {
        "appName": APP,
        "userId": "u",
        "sessionId": session,
        "newMessage": {"role": "user", "parts": [{"text": "slow:0.3"}]},
    }


def _answer(session: str) -> dict[str, Any]:
    response = {"id": "approve", "name": REQUEST_INPUT_FUNCTION, "response": {"result": "yes"}}
    return {
        "appName": APP,
        "userId": "u",
        "sessionId": session,
        "newMessage": {"role": "user", "parts": [{"functionResponse": response}]},
    }


async def _events(fleet: Fleet, session: str) -> list[dict[str, Any]]:
    reply = await fleet.read(f"/apps/{APP}/users/u/sessions/{session}")
    events: list[dict[str, Any]] = reply.json()["events"]
    return events


async def _create(fleet: Fleet, session: str) -> None:
    while True:
        reply = await fleet.request("POST", f"/apps/{APP}/users/u/sessions/{session}", json={})
        if reply is not None:
            # 409: an earlier try landed although its reply was lost.
            assert reply.status_code in (200, 409), reply.text
            return
        await asyncio.sleep(_PAUSE)


async def _start(fleet: Fleet, session: str) -> None:
    """Start the session's run once: a start whose request died is looked for in the
    session, and sent again only when nothing of it landed."""
    fleet.started += 1
    while True:
        reply = await fleet.request("POST", "/run", json=_message(session))
        if reply is not None:
            assert reply.status_code == 200, reply.text
            return
        await asyncio.sleep(_SETTLE)
        if await _events(fleet, session):
            return  # it began; recovery continues it if its process is gone


async def _asked(fleet: Fleet, session: str) -> bool:
    reply = await fleet.read(f"/apps/{APP}/users/u/pending", params={"session_id": session})
    return bool(reply.json())


async def _finished(fleet: Fleet, session: str) -> bool:
    return any(e.get("author") == "finish" for e in await _events(fleet, session))


async def _answer_until_done(fleet: Fleet, session: str) -> None:
    """Answer the run's question (once it is asked) until the run finished."""
    while not await _finished(fleet, session):
        if await _asked(fleet, session):
            reply = await fleet.request("POST", "/run", json=_answer(session))
            # 409: busy elsewhere, or already answered by a try whose reply was lost.
            assert reply is None or reply.status_code in (200, 409), reply.text
            if reply is not None and reply.status_code == 200:
                return
        await asyncio.sleep(_PAUSE)


async def _one_run(fleet: Fleet, session: str, slots: asyncio.Semaphore) -> None:
    async with slots:
        await _create(fleet, session)
        await _start(fleet, session)
        await _answer_until_done(fleet, session)


async def _after_starts(fleet: Fleet, count: int, then: Callable[[], Awaitable[None]]) -> None:
    while fleet.started < count:  # noqa: ASYNC110 - the load counts its starts
        await asyncio.sleep(0.05)
    await then()


async def _load(fleet: Fleet, sessions: list[str], *chaos: Coroutine[Any, Any, None]) -> None:
    slots = asyncio.Semaphore(AT_ONCE)
    async with asyncio.timeout(WITHIN), asyncio.TaskGroup() as group:
        for each in chaos:
            group.create_task(each)
        for session in sessions:
            group.create_task(_one_run(fleet, session, slots))


async def _servers(count: int, db: str, log: Path, agents: Path) -> list[BatonProcess]:
    common = ("--db", db, "--port", "0", "--lease-ttl", str(TTL), "--grace", str(GRACE))
    return await start_together(
        *(("api_server", str(agents), *common, "--worker-id", f"p{i}") for i in range(count)),
        log=log,
    )


async def _check_store(db: str, sessions: list[str], log: Path) -> None:
    """Every run completed; each node's step landed exactly once; each body ran at most
    twice."""
    store = SqlStore(db)
    try:
        for session in sessions:
            key = SessionKey(APP, "u", SessionId(session))
            invocations = await store.list_invocations(key)
            assert [i.status for i in invocations] == [InvocationStatus.COMPLETED], session
            loaded = await store.get_session(key)
            assert loaded is not None
            shown = [e.model_dump(exclude_none=True) for e in loaded.events]
            outputs = Counter(acting_node(e) for e in loaded.events if e.output is not None)
            assert outputs == Counter({"prepare": 1, "ask": 1, "finish": 1}), shown
            asked = [e for e in loaded.events if e.long_running_tool_ids]
            assert len(asked) == 1, shown
            said = [e for e in loaded.events if e.author == "user"]
            assert len(said) == 2, shown  # the message that started it, and one answer
            assert len(loaded.events) == 6, shown
    finally:
        await store.close()
    ran = executions(log)
    for session in sessions:
        assert 1 <= ran[("prepare", session)] <= 2, session
        assert 1 <= ran[("finish", session)] <= 2, session


async def _stop(fleet: Fleet) -> None:
    """SIGTERM those still serving; wait for every process, even when the load failed."""
    for each in fleet.live:
        each.signal(signal.SIGTERM)
    for each in fleet.processes:
        await each.exit_code(within=30)


@pytest.mark.postgres
@pytest.mark.restarts_database
async def test_three_servers_on_postgresql_through_a_kill_a_shutdown_and_a_restart(
    postgres_url: str, tmp_path: Path
) -> None:
    async def restart_database() -> None:
        await postgres_cluster("stop", "-m", "fast")
        try:
            await asyncio.sleep(1)
        finally:
            await postgres_cluster("start")

    await _three_servers_through_chaos(postgres_url, tmp_path, restart_database)


@pytest.mark.mysql
@pytest.mark.restarts_database
async def test_three_servers_on_mariadb_through_a_kill_a_shutdown_and_a_restart(
    mysql_url: str, tmp_path: Path
) -> None:
    """As on PostgreSQL, with no cross-process wake-ups: processes find each other's
    work by polling."""

    async def restart_database() -> None:
        await restart_mariadb(down_for=1)

    await _three_servers_through_chaos(mysql_url, tmp_path, restart_database)


async def _three_servers_through_chaos(
    db: str, tmp_path: Path, restart_database: Callable[[], Awaitable[None]]
) -> None:
    """Three servers on `db`: one SIGKILLed, the database restarted, one SIGTERMed, in
    turn as the load goes; then every run is checked in the store."""
    agents, log = write_app(tmp_path)
    fleet = Fleet(await _servers(3, db, log, agents))
    killed, leaving = fleet.processes[0], fleet.processes[1]
    sessions = [f"chaos-{n}" for n in range(RUNS)]

    async def kill() -> None:
        fleet.leave(killed, signal.SIGKILL)

    async def shut_down() -> None:
        fleet.leave(leaving, signal.SIGTERM)
        assert await leaving.exit_code(within=30) == 0

    try:
        await _load(
            fleet,
            sessions,
            _after_starts(fleet, RUNS // 4, kill),
            _after_starts(fleet, RUNS // 2, restart_database),
            _after_starts(fleet, 3 * RUNS // 4, shut_down),
        )
    finally:
        await _stop(fleet)
    assert killed.process.returncode == -signal.SIGKILL
    await _check_store(db, sessions, log)


async def test_two_servers_on_a_sqlite_file_through_a_kill(tmp_path: Path) -> None:
    agents, log = write_app(tmp_path)
    db = sqlite_url(tmp_path)
    fleet = Fleet(await _servers(2, db, log, agents))
    killed = fleet.processes[0]
    sessions = [f"chaos-{n}" for n in range(RUNS)]

    async def kill() -> None:
        fleet.leave(killed, signal.SIGKILL)

    try:
        await _load(fleet, sessions, _after_starts(fleet, RUNS // 3, kill))
    finally:
        await _stop(fleet)
    assert killed.process.returncode == -signal.SIGKILL
    await _check_store(db, sessions, log)
