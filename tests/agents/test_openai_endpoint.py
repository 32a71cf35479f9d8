"""The approval example against an OpenAI-compatible server (the real adapter, over HTTP)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import cast

import pytest

from baton.agents import LlmAgent
from baton.models import OpenAiModel
from tests.agents.conftest import MakeRunner
from tests.agents.examples import load_example
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

    assert done[-1].output == "Your refund of 35.0 was approved."
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
