"""The approval example against an OpenAI-compatible server (the real adapter, over HTTP)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import cast

import pytest

from baton import LongRunningFunctionTool, Workflow, types
from baton.agents import LlmAgent
from baton.models import OpenAiModel
from baton.models.registry import GEMINI_OPENAI_URL, resolve_model
from tests.agents.conftest import MakeRunner
from tests.agents.examples import load_example
from tests.harness import outputs
from tests.models.chat_server import ChatServer, completion, serve_chat


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    with serve_chat() as server:
        yield server


async def test_the_approval_example_runs_against_a_chat_completions_server(
    make: MakeRunner, chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_MODEL", "openai/served-model")
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    agent = cast(LlmAgent, load_example("approval_agent").root_agent)
    chat_server.reply(completion(tool_calls=[("c1", "lookup_order", '{"order_id": "42"}')]))
    refund = json.dumps({"order_id": "42", "amount": 35.0, "reason": "broken"})
    chat_server.reply(completion(tool_calls=[("c2", "issue_refund", refund)]))
    chat_server.reply(completion(content="Your refund of 35.0 was approved."))
    h = await make(agent)

    paused = await h.start("Refund order 42, it is broken.")
    assert [e.long_running_tool_ids for e in paused if e.long_running_tool_ids] == [{"c2"}]
    assert len(chat_server.requests) == 2
    done = await h.answer(("c2", {"approved": True}), name="issue_refund", wrap=False)

    assert outputs(done)[-1][1] == "Your refund of 35.0 was approved."
    assert len(chat_server.requests) == 3
    messages = chat_server.requests[2]["messages"]
    tool_messages = [
        (m["tool_call_id"], json.loads(m["content"])) for m in messages if m["role"] == "tool"
    ]
    assert tool_messages == [
        ("c1", {"item": "teapot", "amount": 35.0, "status": "delivered"}),
        ("c2", {"approved": True}),
    ]
    assert {t["function"]["name"] for t in chat_server.requests[0]["tools"]} == {
        "lookup_order",
        "issue_refund",
    }
    model = agent.canonical_model
    assert isinstance(model, OpenAiModel)
    await model.aclose()


# --- seed 004, "LLM agents support HITL via LongRunningFunctionTool" (imports changed) ---
def approval_tool(request: str) -> str:
    """Request human approval for an action."""
    return f"Approved: {request}"


def next_step(node_input: str) -> str:  # the seed leaves it to the reader
    return f"next step after: {node_input}"


def seed_004_llm_workflow() -> Workflow:
    llm_agent = LlmAgent(
        name="agent_with_approval",
        model="gemini-2.5-flash",
        instruction="When you need approval, use the approval_tool.",
        tools=[LongRunningFunctionTool(func=approval_tool)],
    )

    # LlmAgentWrapper has rerun_on_resume=True by default
    agent = Workflow(
        name="hitl_workflow",
        edges=[
            ("START", llm_agent),
            (llm_agent, next_step),
        ],
    )
    return agent


async def test_seed_004_llm_example_runs_on_a_gemini_model_string(
    make: MakeRunner, chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "gemini-..." goes to Google's OpenAI-compatible endpoint; here, the local stand-in.
    monkeypatch.setenv("GEMINI_BASE_URL", chat_server.url)
    monkeypatch.setenv("GEMINI_API_KEY", "gem-key")
    chat_server.reply(completion(tool_calls=[("fc-1", "approval_tool", '{"request": "ship"}')]))
    chat_server.reply(completion(content="Shipping waits for approval."))
    chat_server.reply(completion(content="Shipping was approved."))
    h = await make(seed_004_llm_workflow())

    paused = await h.start("Ship order 7")
    [interrupt_event] = [e for e in paused if e.long_running_tool_ids]
    # --- seed 004, "From the client side" ---
    function_call_id = interrupt_event.content.parts[0].function_call.id  # pyright: ignore[reportOptionalMemberAccess, reportOptionalSubscript, reportUnknownMemberType, reportUnknownVariableType] -- as the seed writes it
    response = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id=function_call_id,  # pyright: ignore[reportUnknownArgumentType] -- see above
                    name="adk_request_input",
                    response={"result": "User's answer here"},
                )
            )
        ],
    )
    done = await h.collect(new_message=response)

    assert function_call_id == "fc-1"
    assert outputs(done)[-1] == ("next_step", "next step after: Shipping was approved.")
    # The tool's value went to the model as an interim result in the first turn.
    assert [r["model"] for r in chat_server.requests] == ["gemini-2.5-flash"] * 3
    assert {h["authorization"] for h in chat_server.headers} == {"Bearer gem-key"}
    for request, result in [(1, "Approved: ship"), (2, "User's answer here")]:
        # The call's newest response right after the call, as the endpoint requires.
        roles = [m["role"] for m in chat_server.requests[request]["messages"]]
        assert roles[-3:] == ["user", "assistant", "tool"]
        tool_messages = [
            m for m in chat_server.requests[request]["messages"] if m["role"] == "tool"
        ]
        assert [(m["tool_call_id"], json.loads(m["content"])) for m in tool_messages] == [
            ("fc-1", {"result": result})  # the response as the client sent it
        ]


async def test_a_gemini_model_without_a_key_is_refused_before_the_run_starts(
    make: MakeRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    h = await make(seed_004_llm_workflow())

    with pytest.raises(ValueError, match="set GEMINI_API_KEY \\(or GOOGLE_API_KEY\\)") as caught:
        await h.start("Ship order 7")

    assert "model 'gemini-2.5-flash'" in str(caught.value)
    assert await h.service.store.list_invocations(h.key) == []


def test_gemini_model_strings_use_googles_endpoint_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GEMINI_BASE_URL", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")

    model = resolve_model("gemini-2.0-flash")

    assert isinstance(model, OpenAiModel)
    assert (model.server_model, model.base_url, model.api_key) == (
        "gemini-2.0-flash",
        GEMINI_OPENAI_URL,
        "google-key",
    )


# --- a user's files and pictures reach a chat-completions model ---
PNG = b"\x89PNG\r\n\x1a\nfake"


async def test_an_agent_sends_the_users_picture_audio_and_document_to_the_model(
    make: MakeRunner, chat_server: ChatServer
) -> None:
    model = OpenAiModel(model="openai/served-model", base_url=chat_server.url, api_key="k")
    agent = LlmAgent(name="looker", model=model, instruction="Describe what you get.")
    chat_server.reply(completion(content="A cat, a beep and a report."))
    h = await make(agent)
    message = types.Content(
        role="user",
        parts=[
            types.Part(text="What is in these?"),
            types.Part.from_bytes(data=PNG, mime_type="image/png"),
            types.Part.from_bytes(data=b"RIFFwav", mime_type="audio/wav"),
            types.Part(
                inline_data=types.Blob(
                    data=b"%PDF-1.7", mime_type="application/pdf", display_name="q3.pdf"
                )
            ),
            types.Part.from_bytes(data="notes: é".encode(), mime_type="text/plain; charset=utf-8"),
            types.Part.from_uri(file_uri="https://example.com/cat.jpg"),
            types.Part.from_uri(file_uri="file-abc123", mime_type="application/pdf"),
        ],
    )

    done = await h.collect(new_message=message)

    assert outputs(done)[-1][1] == "A cat, a beep and a report."
    [user_message] = [m for m in chat_server.requests[0]["messages"] if m["role"] == "user"]
    assert user_message["content"] == [
        {"type": "text", "text": "What is in these?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgpmYWtl"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRndhdg==", "format": "wav"}},
        {
            "type": "file",
            "file": {"file_data": "data:application/pdf;base64,JVBERi0xLjc=", "filename": "q3.pdf"},
        },
        {"type": "text", "text": "notes: é"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        {"type": "file", "file": {"file_id": "file-abc123"}},
    ]
    await model.aclose()


@pytest.mark.parametrize(
    ("part", "complaint"),
    [
        (types.Part.from_bytes(data=b"PK", mime_type="application/zip"), "is application/zip"),
        (types.Part(inline_data=types.Blob(data=PNG)), "needs both its bytes and a mime_type"),
        (types.Part.from_uri(file_uri="gs://bucket/a.png"), r"gs://bucket/a\.png, image/png"),
        (types.Part.from_uri(file_uri="https://example.com/a.zip"), "cannot be sent"),
    ],
)
async def test_a_file_the_model_cannot_be_sent_fails_the_turn_before_sending(
    make: MakeRunner, chat_server: ChatServer, part: types.Part, complaint: str
) -> None:
    model = OpenAiModel(model="openai/served-model", base_url=chat_server.url, api_key="k")
    agent = LlmAgent(name="looker", model=model, instruction="Describe what you get.")
    h = await make(agent)

    with pytest.raises(ValueError, match=complaint):
        await h.collect(new_message=types.Content(role="user", parts=[types.Part(text="?"), part]))

    assert chat_server.requests == []
    await model.aclose()
