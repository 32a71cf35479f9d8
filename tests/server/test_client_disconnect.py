"""A client that disconnects from `/run_sse` or `/run` mid-run stops the run, as the reference's
server stops its run by cancelling it: a real `baton api_server` process, a client that
closes its connection while a node waits; the rest of the workflow does not run, every
committed step stays, and the run continues by its id."""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import JsonValue

from tests.server.processes import BATON, HTTP_TIMEOUT, KEEP_IDLE, serving

_AGENT = """
import asyncio
from pathlib import Path
from baton import App, Context, ResumabilityConfig, Workflow

HERE = Path(__file__).parent

def _note(ctx, name):
    (HERE / f"{ctx.session.id}.{name}.log").open("a").write("ran\\n")

def first(ctx: Context, node_input):
    _note(ctx, "first")
    return "one"

async def slow(ctx: Context, node_input):
    _note(ctx, "slow")
    try:
        while not (HERE / f"{ctx.session.id}.go").exists():
            await asyncio.sleep(0.02)
    except asyncio.CancelledError:
        _note(ctx, "cancelled")
        raise
    return "two"

def last(ctx: Context, node_input):
    _note(ctx, "last")
    return "three"

app = App(
    name="steps",
    root_agent=Workflow(name="steps_wf", edges=[("START", first, slow, last)]),
    resumability_config=ResumabilityConfig(is_resumable=True),
)
"""


@dataclass(frozen=True)
class Steps:
    """The module's server of the `steps` app (each node notes its runs in a file per
    session in the app's folder) and a session of this test's on it."""

    folder: Path
    url: str
    client: httpx.Client
    session: str

    def runs(self, node: str) -> int:
        log = self.folder / f"{self.session}.{node}.log"
        return len(log.read_text().splitlines()) if log.exists() else 0

    @property
    def body(self) -> dict[str, JsonValue]:
        message: JsonValue = {"role": "user", "parts": [{"text": "go"}]}
        return {"appName": "steps", "userId": "u", "sessionId": self.session, "newMessage": message}

    def events(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.client.get(
            f"/apps/steps/users/u/sessions/{self.session}"
        ).json()["events"]
        return events


def _wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + 20
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, httpx.Client]]:
    """A real server of the `steps` app on a SQLite file, for the module's tests (starting
    one takes seconds): the app's folder, the server's URL and a client."""
    root = tmp_path_factory.mktemp("disconnect")
    folder = root / "agents" / "steps"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(_AGENT)
    args = [str(BATON), "api_server", str(root / "agents"), "--port", "0"]
    with (
        serving([*args, "--db", str(root / "s.db")]) as url,
        httpx.Client(base_url=url, timeout=HTTP_TIMEOUT, limits=KEEP_IDLE) as client,
    ):
        yield folder, url, client


@pytest.fixture
def steps(server: tuple[Path, str, httpx.Client]) -> Steps:
    """A new session of the test's on the module's server."""
    folder, url, client = server
    session = f"s-{uuid.uuid4().hex[:8]}"
    client.post("/apps/steps/users/u/sessions", json={"sessionId": session}).raise_for_status()
    return Steps(folder, url, client, session)


def _stopped_then_resumed(steps: Steps) -> None:
    """The client has left while `slow` ran: the run is sealed, `last` never runs, and
    a call by the run's id runs `slow` again and `last` once."""
    _wait_for(
        lambda: any(e.get("errorCode") == "INVOCATION_ABORTED" for e in steps.events()),
        "the run to be sealed",
    )
    # The slow node was cancelled, not left waiting: once `go` exists, nothing of the first
    # run is left to finish it and run `last`.
    _wait_for(lambda: steps.runs("cancelled") == 1, "the slow node to be cancelled")
    (steps.folder / f"{steps.session}.go").touch()
    assert steps.runs("last") == 0
    events = steps.events()
    assert [e["output"] for e in events if "output" in e] == ["one"]
    by_id = {"appName": "steps", "userId": "u", "sessionId": steps.session}
    resumed = steps.client.post("/run", json={**by_id, "invocationId": events[0]["invocationId"]})
    assert resumed.status_code == 200, resumed.text
    assert [e["output"] for e in resumed.json() if "output" in e] == ["two", "three"]
    assert [steps.runs(node) for node in ("first", "slow", "cancelled", "last")] == [1, 2, 1, 1]


def test_a_client_leaving_run_sse_stops_the_run_resumable_by_id(steps: Steps) -> None:
    with steps.client.stream("POST", "/run_sse", json=steps.body) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:") and json.loads(line[5:]).get("output") == "one":
                break
        _wait_for(lambda: steps.runs("slow") == 1, "the slow node to start")
    # The connection is closed: the run stops; the slow node is cancelled.
    _stopped_then_resumed(steps)


def test_a_client_leaving_run_stops_the_run_resumable_by_id(steps: Steps) -> None:
    """`/run` (no stream) too: a client whose connection closes before the reply stops
    the run; it continues by its id."""
    # /run replies only when the run ends: a raw connection sends the request, waits
    # for the slow node to start, and closes without reading a reply.
    address = httpx.URL(steps.url)
    payload = json.dumps(steps.body).encode()
    request = (
        f"POST /run HTTP/1.1\r\nHost: {address.host}\r\nContent-Type: application/json"
        f"\r\nContent-Length: {len(payload)}\r\n\r\n"
    ).encode() + payload
    port = address.port or 80
    with socket.create_connection((address.host, port), timeout=20) as leaving:
        leaving.sendall(request)
        _wait_for(lambda: steps.runs("slow") == 1, "the slow node to start")
    _stopped_then_resumed(steps)
