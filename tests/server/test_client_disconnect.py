"""A client that disconnects from `/run_sse` or `/run` mid-run stops the run, as the reference's
server stops its run by cancelling it: a real `baton api_server` process, a client that
closes its connection while a node waits; the rest of the workflow does not run, every
committed step stays, and the run continues by its id."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.server.processes import BATON, serving

_AGENT = """
import asyncio
from pathlib import Path
from baton import App, ResumabilityConfig, Workflow

HERE = Path(__file__).parent

def first(node_input):
    (HERE / "first.log").open("a").write("ran\\n")
    return "one"

async def slow(node_input):
    (HERE / "slow.log").open("a").write("ran\\n")
    try:
        while not (HERE / "go").exists():
            await asyncio.sleep(0.02)
    except asyncio.CancelledError:
        (HERE / "cancelled.log").open("a").write("ran\\n")
        raise
    return "two"

def last(node_input):
    (HERE / "last.log").open("a").write("ran\\n")
    return "three"

app = App(
    name="steps",
    root_agent=Workflow(name="steps_wf", edges=[("START", first, slow, last)]),
    resumability_config=ResumabilityConfig(is_resumable=True),
)
"""


def _runs(folder: Path, name: str) -> int:
    log = folder / f"{name}.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def _wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + 20
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


_BODY = {
    "appName": "steps",
    "userId": "u",
    "sessionId": "s1",
    "newMessage": {"role": "user", "parts": [{"text": "go"}]},
}
_SESSION = "/apps/steps/users/u/sessions/s1"


@contextmanager
def _steps_server(tmp_path: Path) -> Iterator[tuple[Path, str, httpx.Client]]:
    """A real server of the `steps` app on a SQLite file, its session s1 created: the
    app's folder, the server's URL and a client."""
    folder = tmp_path / "agents" / "steps"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(_AGENT)
    args = [str(BATON), "api_server", str(tmp_path / "agents"), "--port", "0"]
    with (
        serving([*args, "--db", str(tmp_path / "s.db")]) as url,
        httpx.Client(base_url=url) as client,
    ):
        client.post("/apps/steps/users/u/sessions", json={"sessionId": "s1"}).raise_for_status()
        yield folder, url, client


def _stopped_then_resumed(folder: Path, client: httpx.Client) -> None:
    """The client has left while `slow` ran: the run is sealed, `last` never runs, and
    a call by the run's id runs `slow` again and `last` once."""
    _wait_for(
        lambda: any(
            e.get("errorCode") == "INVOCATION_ABORTED"
            for e in client.get(_SESSION).json()["events"]
        ),
        "the run to be sealed",
    )
    # The slow node was cancelled, not left waiting: once `go` exists, nothing of the first
    # run is left to finish it and run `last`.
    _wait_for(lambda: _runs(folder, "cancelled") == 1, "the slow node to be cancelled")
    (folder / "go").touch()
    assert _runs(folder, "last") == 0
    events = client.get(_SESSION).json()["events"]
    assert [e["output"] for e in events if "output" in e] == ["one"]
    by_id = {"appName": "steps", "userId": "u", "sessionId": "s1"}
    resumed = client.post("/run", json={**by_id, "invocationId": events[0]["invocationId"]})
    assert resumed.status_code == 200, resumed.text
    assert [e["output"] for e in resumed.json() if "output" in e] == ["two", "three"]
    assert [_runs(folder, node) for node in ("first", "slow", "cancelled", "last")] == [1, 2, 1, 1]


def test_a_client_leaving_run_sse_stops_the_run_resumable_by_id(tmp_path: Path) -> None:
    with _steps_server(tmp_path) as (folder, _, client):
        with client.stream("POST", "/run_sse", json=_BODY) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:") and json.loads(line[5:]).get("output") == "one":
                    break
            _wait_for(lambda: _runs(folder, "slow") == 1, "the slow node to start")
        # The connection is closed: the run stops; the slow node is cancelled.
        _stopped_then_resumed(folder, client)


def test_a_client_leaving_run_stops_the_run_resumable_by_id(tmp_path: Path) -> None:
    """`/run` (no stream) too: a client whose connection closes before the reply stops
    the run; it continues by its id."""
    with _steps_server(tmp_path) as (folder, url, client):
        # /run replies only when the run ends: a raw connection sends the request, waits
        # for the slow node to start, and closes without reading a reply.
        address = httpx.URL(url)
        payload = json.dumps(_BODY).encode()
        request = (
            f"POST /run HTTP/1.1\r\nHost: {address.host}\r\nContent-Type: application/json"
            f"\r\nContent-Length: {len(payload)}\r\n\r\n"
        ).encode() + payload
        port = address.port or 80
        with socket.create_connection((address.host, port), timeout=20) as leaving:
            leaving.sendall(request)
            _wait_for(lambda: _runs(folder, "slow") == 1, "the slow node to start")
        _stopped_then_resumed(folder, client)
