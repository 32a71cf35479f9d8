"""Deployment shapes: servers sharing one database, racing answers, failing nodes, app folders."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue

from baton import App, ResumabilityConfig, Workflow
from baton.errors import AppNotFoundError
from baton.server.catalog import AppCatalog, AppLoadError, load_app
from baton.server.lenient_json import repair_trailing_commas
from baton.sessions.services import InMemorySessionService
from tests.server.conftest import Live, StartLive, approval_app
from tests.server.test_routes import read_sse


async def test_two_servers_on_one_database_share_runs(
    emptied_store_url: str, start_live: StartLive
) -> None:
    first: Live = await start_live(db_url=emptied_store_url)
    second: Live = await start_live(db_url=emptied_store_url)
    sid = await first.create("approval", "u")
    paused = await first.start("approval", "u", sid)
    pending = (await second.client.get("/apps/approval/users/u/pending")).json()
    assert [(p["sessionId"], p["interruptId"]) for p in pending] == [(sid, "approve")]
    url = f"/apps/approval/users/u/sessions/{sid}/interrupts/approve/respond"
    done = (await second.client.post(url, json={"response": {"approved": True}})).json()
    assert done[-1]["output"] == 'done:{"approved": true}'
    assert {e["invocationId"] for e in done} == {paused[0]["invocationId"]}


async def test_racing_answers_one_wins_the_other_is_refused(live: Live) -> None:
    sid = await live.create("approval", "u")
    await live.start("approval", "u", sid)
    url = f"/apps/approval/users/u/sessions/{sid}/interrupts/approve/respond"
    responses = await asyncio.gather(
        *(live.client.post(url, json={"response": {"approved": v}}) for v in (True, False))
    )
    codes = sorted(r.status_code for r in responses)
    assert codes == [200, 409], [r.text for r in responses]
    refused = next(r for r in responses if r.status_code == 409)
    assert refused.json()["error"] in ("InvocationBusyError", "AlreadyAnsweredError")
    session = (await live.client.get(f"/apps/approval/users/u/sessions/{sid}")).json()
    answers = [e for e in session["events"] if e["author"] == "user" and "content" in e]
    assert len(answers) == 2  # the start message and the one answer that won


def explode(node_input: str) -> str:
    raise RuntimeError(f"cannot handle {node_input!r}")


def failing_app() -> App:
    return App(
        name="failing",
        root_agent=Workflow(name="failing_wf", edges=[("START", explode)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


async def test_a_failing_node_ends_the_stream_with_an_error_frame(start_live: StartLive) -> None:
    live: Live = await start_live(apps=[failing_app()])
    sid = await live.create("failing", "u")
    message: JsonValue = {"role": "user", "parts": [{"text": "boom"}]}
    body = {"appName": "failing", "userId": "u", "sessionId": sid, "newMessage": message}
    async with live.client.stream("POST", "/run_sse", json=body) as response:
        assert response.status_code == 200
        frames = await read_sse(response)
    assert frames[0]["errorCode"] == "RuntimeError"
    assert frames[-1]["error"] == "RuntimeError: cannot handle 'boom'"
    assert frames[-1]["error_details"]["error_type"] == "RuntimeError"
    # /run answers with an error status too, the events committed before the failure kept.
    r = await live.client.post(
        "/run", json={**body, "sessionId": await live.create("failing", "u")}
    )
    assert (r.status_code, r.json()["error"], r.json()["detail"]) == (
        500,
        "RuntimeError",
        "cannot handle 'boom'",
    )
    assert [e["errorMessage"] for e in r.json()["events"]] == ["cannot handle 'boom'"]


def write_app(folder: Path, source: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(source)
    return folder


ROOT_ONLY = """
from baton import Workflow

def hello(node_input):
    return f"hello {node_input}"

root_agent = Workflow(name="hello_wf", edges=[("START", hello)])
"""


def test_folders_exporting_root_agent_are_apps_named_after_the_folder(tmp_path: Path) -> None:
    app = load_app(write_app(tmp_path / "greeter", ROOT_ONLY))
    assert app.name == "greeter"
    assert app.root_agent.name == "hello_wf"


def test_every_broken_folder_is_reported_at_once(tmp_path: Path) -> None:
    write_app(tmp_path / "good", ROOT_ONLY)
    write_app(tmp_path / "syntax", "def broken(:\n")
    write_app(tmp_path / "empty", "x = 1\n")
    with pytest.raises(AppLoadError) as caught:
        AppCatalog.from_folder(tmp_path, InMemorySessionService())
    message = str(caught.value)
    assert "app folder 'syntax' failed to import: SyntaxError" in message
    assert "exports neither `app`" in message
    assert "empty" in message


def test_unknown_app_names_the_served_ones() -> None:
    catalog = AppCatalog.of([approval_app()], InMemorySessionService())
    with pytest.raises(AppNotFoundError, match=r"'nope' is not served \(served: approval\)"):
        catalog.runner("nope")


@pytest.mark.parametrize(
    ("sent", "parsed"),
    [
        ('{"a": 1,}', {"a": 1}),
        ('{"a": [1, 2, ], }', {"a": [1, 2]}),
        ('{"a": ",}"}', {"a": ",}"}),
    ],
)
def test_trailing_commas_are_repaired_and_strings_left_alone(sent: str, parsed: object) -> None:
    assert json.loads(repair_trailing_commas(sent.encode())) == parsed


def test_bodies_that_are_not_json_stay_as_sent() -> None:
    assert repair_trailing_commas(b"{nope,}") == b"{nope,}"


async def test_a_slow_node_keeps_its_stream_alive_with_comments(start_live: StartLive) -> None:
    kept_alive = asyncio.Event()  # the client read a keepalive comment

    async def slow(node_input: Any) -> str:
        # Slow until the stream has carried a keepalive (the server runs in this loop),
        # so the comment is sent on a loaded machine too; none in 30 s fails the run.
        async with asyncio.timeout(30):
            await kept_alive.wait()
        return "slow but done"

    app = App(name="slow", root_agent=Workflow(name="slow_wf", edges=[("START", slow)]))
    live: Live = await start_live(apps=[app], keepalive=0.05)
    sid = await live.create("slow", "u")
    message: JsonValue = {"role": "user", "parts": [{"text": "go"}]}
    body = {"appName": "slow", "userId": "u", "sessionId": sid, "newMessage": message}
    lines: list[str] = []
    async with live.client.stream("POST", "/run_sse", json=body) as response:
        assert response.status_code == 200  # sent before the slow node finished
        async for line in response.aiter_lines():
            if line == ": keepalive":
                kept_alive.set()
            if line:
                lines.append(line)
    assert ": keepalive" in lines
    assert json.loads(lines[-1].removeprefix("data: "))["output"] == "slow but done"
