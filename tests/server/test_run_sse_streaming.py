"""`/run_sse` with `"streaming": true` streams model replies as they come, in partial
frames, as the reference's server does; without it, and on `/run`, only whole turns."""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue

from baton import App, types
from baton.agents import LlmAgent
from baton.tools import FunctionTool, ToolContext
from tests.agents.test_llm_agent import ReferenceStyleModel
from tests.runner.test_run_config_streaming import STREAMED, ChunkedModel
from tests.server.conftest import StartLive
from tests.server.test_routes import read_sse

GO: JsonValue = {"role": "user", "parts": [{"text": "go"}]}


def _chat(model: ChunkedModel) -> App:
    def tool(x: int) -> int:
        return x

    return App(
        name="chat", root_agent=LlmAgent(name="agent", model=model, tools=[FunctionTool(tool)])
    )


def _shape(frame: dict[str, Any]) -> tuple[bool, str]:
    parts = frame.get("content", {}).get("parts", [])
    held = [
        p.get("text") or f"call:{p['functionCall']['name']}"
        for p in parts
        if "functionResponse" not in p
    ]
    held += [f"result:{p['functionResponse']['name']}" for p in parts if "functionResponse" in p]
    return bool(frame.get("partial")), "|".join(held)


async def test_run_sse_streams_partial_frames_as_the_model_yields_them(
    start_live: StartLive, emptied_store_url: str
) -> None:
    model = ChunkedModel()
    live = await start_live(apps=[_chat(model)], db_url=emptied_store_url)
    sid = await live.create("chat", "u")
    body: dict[str, JsonValue] = {
        "appName": "chat",
        "userId": "u",
        "sessionId": sid,
        "newMessage": GO,
        "streaming": True,
        "customMetadata": {"tenant": "acme"},
    }

    frames: list[dict[str, Any]] = []
    async with live.client.stream("POST", "/run_sse", json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                frames.append(json.loads(line.removeprefix("data: ")))
                if frames[-1].get("partial") and _shape(frames[-1])[1] == "hello ":
                    model.open_gate()  # the last piece comes only once this one is here

    shapes = [_shape(f) for f in frames if f.get("content")]
    assert shapes == STREAMED
    assert all(f["customMetadata"] == {"tenant": "acme"} for f in frames)
    session = (await live.client.get(f"/apps/chat/users/u/sessions/{sid}")).json()
    stored = {e["id"] for e in session["events"]}
    assert [f["id"] in stored for f in frames] == [not f.get("partial") for f in frames]
    assert model.streamed == [True, True]


async def test_run_sse_without_streaming_and_run_never_stream(
    start_live: StartLive, emptied_store_url: str
) -> None:
    model = ChunkedModel()
    model.open_gate()
    live = await start_live(apps=[_chat(model)], db_url=emptied_store_url)
    sid = await live.create("chat", "u")
    body: dict[str, JsonValue] = {"appName": "chat", "userId": "u", "sessionId": sid}

    async with live.client.stream("POST", "/run_sse", json={**body, "newMessage": GO}) as response:
        frames = await read_sse(response)
    events = await live.run("chat", "u", sid, newMessage=GO, streaming=True)

    assert not any(f.get("partial") for f in [*frames, *events])
    assert model.streamed == [False, False, False]


async def test_run_sse_sends_an_events_saved_artifacts_in_a_frame_of_their_own(
    start_live: StartLive, emptied_store_url: str
) -> None:
    async def save(x: int, tool_context: ToolContext) -> str:
        await tool_context.save_artifact("note.txt", types.Part(text=f"kept {x}"))
        return "ok"

    agent = LlmAgent(name="agent", model=ReferenceStyleModel(), tools=[FunctionTool(save)])
    live = await start_live(apps=[App(name="notes", root_agent=agent)], db_url=emptied_store_url)
    sid = await live.create("notes", "u")
    where = {"appName": "notes", "userId": "u", "sessionId": sid, "newMessage": GO}

    async with live.client.stream("POST", "/run_sse", json=where) as response:
        frames = await read_sse(response)

    # As the reference's server streams it (its web UI shows each artifact once so): the
    # tool's result with an empty artifactDelta, then the same event without content.
    shown = [(_shape(f)[1], f["actions"]["artifactDelta"]) for f in frames]
    assert shown == [
        ("call:save", {}),
        ("result:save", {}),
        ("", {"note.txt": 0}),
        ("the tool said ok", {}),
    ]
    assert frames[2] == {
        key: value for key, value in frames[1].items() if key not in ("content", "actions")
    } | {"actions": {**frames[1]["actions"], "artifactDelta": {"note.txt": 0}}}
    session = (await live.client.get(f"/apps/notes/users/u/sessions/{sid}")).json()
    stored = [e["actions"]["artifactDelta"] for e in session["events"] if e["author"] == "agent"]
    assert stored == [{}, {"note.txt": 0}, {}]  # the stored event is whole
