"""Fenced commits with real processes: an `async def` node that blocks its process's
event loop (the user's bug) lets its lease lapse; another process's worker takes the
run over and finishes it; when the first process wakes, every commit it tries is
refused and it records nothing more. Exactly one holder's steps are in the store."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path

from baton.history import acting_node
from baton.sessions.sql.store import SqlStore
from baton.sessions.store import InvocationStatus, SessionKey
from baton.types import SessionId
from tests.operation.processes import WITHIN, executions, start_together

APP = "fence"
TTL = 1  # seconds: the lease lapses soon after the loop stops

_AGENT = '''
import asyncio
import os
import time
from pathlib import Path

from baton import App, Context, ResumabilityConfig, Workflow

LOG = Path(os.environ["BATON_TEST_LOG"])


def _ran(node: str, session: str) -> list[str]:
    """The pids that ran `node` in `session` so far."""
    if not LOG.exists():
        return []
    prefix = f"{node} {session} "
    return [line.split()[2] for line in LOG.read_text().splitlines() if line.startswith(prefix)]


def _note(node: str, session: str) -> None:
    with LOG.open("a") as log:
        log.write(f"{node} {session} {os.getpid()}\\n")


async def before(ctx: Context, node_input: str) -> str:
    _note("before", ctx.session.id)
    return f"before by {os.getpid()}"


async def block(ctx: Context, node_input: str) -> str:
    session = ctx.session.id
    first = not _ran("block", session)
    _note("block", session)
    if first:
        # The user's bug: a blocking call in an `async def` node holds the event loop, so
        # the lease is not renewed. It wakes once another process took the run over and
        # started this node again, and commits while that one has committed nothing yet:
        # only the lease's token tells the two holders apart.
        given_up = time.monotonic() + 20  # the other takes over about a TTL after
        while len(_ran("block", session)) < 2 and time.monotonic() < given_up:
            time.sleep(0.05)
        _note("woke", session)
    else:
        # Commit only once the stalled holder's commit was refused (the test writes the
        # file when that holder's reply says so): until then, the two race on the token.
        refused = LOG.with_name(f"refused-{session}")
        given_up = time.monotonic() + 40
        while not refused.exists() and time.monotonic() < given_up:
            await asyncio.sleep(0.05)
    return f"block by {os.getpid()}"


async def after(ctx: Context, node_input: str) -> str:
    _note("after", ctx.session.id)
    return f"after by {os.getpid()}"


app = App(
    name="fence",
    root_agent=Workflow(name="fence", edges=[("START", before, block, after)]),
    resumability_config=ResumabilityConfig(is_resumable=True),
)
'''

NODES = ("before", "block", "after")


def _write_app(root: Path) -> tuple[Path, Path]:
    agents = root / "agents"
    (agents / APP).mkdir(parents=True)
    (agents / APP / "agent.py").write_text(_AGENT)
    return agents, root / "executions.log"


def _pids(log: Path, node: str) -> list[int]:
    return [int(line.split()[2]) for line in log.read_text().splitlines() if line.startswith(node)]


async def _completed(store: SqlStore, key: SessionKey) -> None:
    async with asyncio.timeout(WITHIN * 2):
        while True:
            invocations = await store.list_invocations(key)
            if invocations and invocations[0].status is InvocationStatus.COMPLETED:
                return
            await asyncio.sleep(0.1)


async def test_a_stalled_holder_commits_nothing_after_another_took_its_run(
    emptied_store_url: str, tmp_path: Path
) -> None:
    agents, log = _write_app(tmp_path)
    common = ("--db", emptied_store_url, "--lease-ttl", str(TTL))
    stalled, taker = await start_together(
        ("api_server", str(agents), *common, "--port", "0", "--worker-id", "a"),
        ("worker", str(agents), *common, "--worker-id", "b"),
        log=log,
    )
    store = SqlStore(emptied_store_url)
    try:
        async with stalled.client() as client:
            created = await client.post(f"/apps/{APP}/users/u/sessions", json={})
            session = str(created.json()["id"])
            body = {
                "appName": APP,
                "userId": "u",
                "sessionId": session,
                "newMessage": {"role": "user", "parts": [{"text": "go"}]},
            }
            reply = await client.post("/run", json=body, timeout=WITHIN * 3)
            # The stalled process is awake again and serving: its run's reply tells it lost.
            assert reply.status_code == 409, reply.text
            assert reply.json()["error"] == "LeaseLostError", reply.text
            (log.parent / f"refused-{session}").touch()  # the taker's `block` may finish
            key = SessionKey(APP, "u", SessionId(session))
            await _completed(store, key)
            loaded = await store.get_session(key)
            assert loaded is not None
    finally:
        await store.close()
        for each in (stalled, taker):
            each.signal(signal.SIGTERM)
        for each in (stalled, taker):
            await each.exit_code(within=WITHIN)

    a, b = stalled.process.pid, taker.process.pid
    assert a != b
    # Bodies: `before` ran once in A; `block` ran in A (stalled) and again in B, and A
    # woke before B committed it; `after` ran only in B.
    assert _pids(log, "before") == [a]
    assert sorted(_pids(log, "block")) == sorted([a, b])
    assert _pids(log, "after") == [b]
    assert _pids(log, "woke") == [a]
    assert executions(log) == Counter(
        {
            (node, session): count
            for node, count in (("before", 1), ("block", 2), ("woke", 1), ("after", 1))
        }
    )

    outputs = [(acting_node(e), e.output) for e in loaded.events if e.output is not None]
    # Every node completed exactly once in the store: A's step before it stalled, then
    # only B's — A's late `block` output (and anything after) was refused.
    assert outputs == [
        ("before", f"before by {a}"),
        ("block", f"block by {b}"),
        ("after", f"after by {b}"),
    ]
