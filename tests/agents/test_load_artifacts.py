"""The reference's `load_artifacts` tool from the user's side: the model is told which
artifacts the session has, and after it calls the tool it is sent their contents (over
the OpenAI protocol), on every backend."""

from __future__ import annotations

import json
from typing import Any

import pytest

from baton import App, ResumabilityConfig, Runner, types
from baton.agents import LlmAgent
from baton.artifacts import BaseArtifactService
from baton.events import Event
from baton.models import OpenAiModel
from baton.sessions.services import BaseSessionService
from baton.tools import load_artifacts
from baton.tools.load_artifacts_tool import LoadArtifactsTool
from baton.types import Part
from tests.models.chat_server import ChatServer, completion


async def run(
    agent: LlmAgent, service: BaseSessionService, files: dict[str, Part], text: str
) -> list[Event]:
    artifacts = BaseArtifactService(service.store)
    runner = Runner(
        app=App(
            name="app",
            root_agent=agent,
            resumability_config=ResumabilityConfig(is_resumable=True),
        ),
        session_service=service,
        artifact_service=artifacts,
    )
    session = await service.create_session(app_name="app", user_id="u")
    for name, part in files.items():
        await artifacts.save_artifact(
            app_name="app", user_id="u", session_id=session.id, filename=name, artifact=part
        )
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return [
        e async for e in runner.run_async(user_id="u", session_id=session.id, new_message=message)
    ]


def messages(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m.get("content") or "") for m in request["messages"]]


async def test_the_model_is_told_the_artifacts_and_sent_those_it_loads(
    service: BaseSessionService, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    agent = LlmAgent(
        name="reader", model=openai_model, instruction="Be brief.", tools=[load_artifacts]
    )
    files = {
        "notes.txt": Part.from_bytes(data=b"the meeting is at 3", mime_type="text/plain"),
        "user:blob.bin": Part.from_bytes(data=b"\x00" * 2048, mime_type="application/x-thing"),
    }
    args = json.dumps({"artifact_names": ["notes.txt", "blob.bin", "missing.txt"]})
    chat_server.reply(completion(tool_calls=[("c1", "load_artifacts", args)]))
    chat_server.reply(completion(content="At 3."))

    events = await run(agent, service, files, "When is the meeting?")

    first, second = chat_server.requests
    system = first["messages"][0]["content"]
    assert system.startswith(
        'Be brief.\n\nYou are the agent named "reader".\n\n'
        'Artifacts you can read: ["notes.txt", "user:blob.bin"]'
    )
    assert [t["function"]["name"] for t in first["tools"]] == ["load_artifacts"]
    assert messages(second)[1:] == [
        ("user", "When is the meeting?"),
        ("assistant", ""),
        (
            "tool",
            json.dumps(
                {
                    "artifact_names": ["notes.txt", "blob.bin", "missing.txt"],
                    "status": "The contents of these artifacts come with your next request "
                    "only; call load_artifacts again to see them later.",
                }
            ),
        ),
        ("user", "Contents of artifact notes.txt:the meeting is at 3"),
        (
            "user",
            "Contents of artifact blob.bin:"
            "[blob.bin: application/x-thing, 2.0 KB of binary data, not shown]",
        ),
    ]
    assert [e.content.text for e in events if e.content and e.content.text] == ["At 3."]


async def test_without_artifacts_the_model_is_told_nothing_and_a_bad_call_is_answered(
    service: BaseSessionService, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    agent = LlmAgent(name="reader", model=openai_model, tools=[load_artifacts])
    args = json.dumps({"artifact_names": "notes.txt"})
    chat_server.reply(completion(tool_calls=[("c1", "load_artifacts", args)]))
    chat_server.reply(completion(content="Nothing to read."))

    await run(agent, service, {}, "Read my notes")

    [system] = [m["content"] for m in chat_server.requests[0]["messages"] if m["role"] == "system"]
    assert system == 'You are the agent named "reader".'  # no artifacts named
    assert messages(chat_server.requests[1])[-1] == (
        "tool",
        json.dumps(
            {
                "error": "'artifact_names' must be a list of strings.",
                "error_code": "INVALID_ARGUMENTS",
            }
        ),
    )


async def test_process_artifact_decides_what_the_model_is_sent(
    service: BaseSessionService, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    seen: list[str] = []

    async def shorten(artifact: Part, name: str) -> Part | None:
        seen.append(name)
        return None if name == "secret.txt" else Part(text=f"<{name}>")

    tool = LoadArtifactsTool(process_artifact=shorten)
    agent = LlmAgent(name="reader", model=openai_model, tools=[tool])
    files = {
        "report.txt": Part.from_bytes(data=b"long report", mime_type="text/plain"),
        "secret.txt": Part.from_bytes(data=b"hidden", mime_type="text/plain"),
    }
    args = json.dumps({"artifact_names": ["report.txt", "secret.txt"]})
    chat_server.reply(completion(tool_calls=[("c1", "load_artifacts", args)]))
    chat_server.reply(completion(content="Done."))

    await run(agent, service, files, "Summarize")

    assert seen == ["report.txt", "secret.txt"]
    assert messages(chat_server.requests[1])[-1] == (
        "user",
        "Contents of artifact report.txt:<report.txt>",
    )


def test_spreadsheet_parsing_is_refused_with_what_to_do() -> None:
    with pytest.raises(ValueError, match="enable_spreadsheet_parsing=True.*process_artifact="):
        LoadArtifactsTool(enable_spreadsheet_parsing=True)


async def test_a_loaded_picture_reaches_the_model_as_a_picture(
    service: BaseSessionService, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    agent = LlmAgent(
        name="reader", model=openai_model, instruction="Be brief.", tools=[load_artifacts]
    )
    files = {"cat.png": Part.from_bytes(data=b"\x89PNG", mime_type="image/png")}
    args = json.dumps({"artifact_names": ["cat.png"]})
    chat_server.reply(completion(tool_calls=[("c1", "load_artifacts", args)]))
    chat_server.reply(completion(content="A cat."))

    await run(agent, service, files, "What is it?")

    loaded = chat_server.requests[1]["messages"][-1]
    assert loaded == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Contents of artifact cat.png:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
        ],
    }
