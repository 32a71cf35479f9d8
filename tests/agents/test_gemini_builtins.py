"""Gemini's built-in tools and code executor, as reference code lists them: importable,
and an agent using one fails before its model is asked, with the reference's kind of
error (a ValueError naming the tool and the model), since no baton model runs them."""

from __future__ import annotations

import pytest

from baton.agents import LlmAgent
from baton.code_executors import BuiltInCodeExecutor
from baton.models import OpenAiModel
from baton.tools import BaseTool, enterprise_web_search, google_search, url_context
from baton.tools.enterprise_search_tool import EnterpriseWebSearchTool
from baton.tools.google_search_tool import GoogleSearchTool
from baton.tools.url_context_tool import UrlContextTool
from tests.agents.conftest import MakeRunner
from tests.models.chat_server import ChatServer, completion


def lookup(order: str) -> str:
    """Looks an order up."""
    return "shipped"


@pytest.mark.parametrize(
    ("tool", "label"),
    [
        (google_search, "Google search tool"),
        (GoogleSearchTool(bypass_multi_tools_limit=True), "Google search tool"),
        (url_context, "Url context tool"),
        (enterprise_web_search, "Enterprise Web Search tool"),
    ],
    ids=["google_search", "GoogleSearchTool", "url_context", "enterprise_web_search"],
)
async def test_a_gemini_built_in_tool_fails_the_run_before_the_model_is_asked(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel, tool: BaseTool, label: str
) -> None:
    chat_server.reply(completion(content="never sent"))
    agent = LlmAgent(name="researcher", model=openai_model, tools=[lookup, tool])
    h = await make(agent)

    with pytest.raises(ValueError, match="^" + label) as raised:
        await h.start("What's new?")

    message = str(raised.value)
    assert f"{label} is not supported for model openai/served-model" in message
    assert "OpenAI chat-completions protocol" in message
    assert "FunctionTool" in message
    assert chat_server.requests == []


async def test_a_gemini_model_name_does_not_make_a_built_in_tool_run(
    make: MakeRunner, chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reference runs it on a "gemini-..." model; baton reaches Gemini over its
    # OpenAI-compatible endpoint (here the local stand-in), which cannot carry it.
    monkeypatch.setenv("GEMINI_BASE_URL", chat_server.url)
    monkeypatch.setenv("GEMINI_API_KEY", "gem-key")
    agent = LlmAgent(name="researcher", model="gemini-2.5-flash", tools=[google_search])
    h = await make(agent)

    with pytest.raises(ValueError, match="Google search tool is not supported for model"):
        await h.start("What's new?")

    assert chat_server.requests == []
    served = agent.canonical_model
    assert isinstance(served, OpenAiModel)
    await served.aclose()


async def test_the_built_in_code_executor_fails_the_run_before_the_model_is_asked(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    agent = LlmAgent(name="coder", model=openai_model, code_executor=BuiltInCodeExecutor())
    h = await make(agent)

    with pytest.raises(
        ValueError,
        match="^Gemini code execution tool is not supported for model openai/served-model",
    ):
        await h.start("Compute 2**10")

    assert chat_server.requests == []


def test_the_built_in_tools_keep_the_reference_s_names() -> None:
    assert [t.name for t in (google_search, url_context, enterprise_web_search)] == [
        "google_search",
        "url_context",
        "enterprise_web_search",
    ]
    assert isinstance(url_context, UrlContextTool)
    assert isinstance(enterprise_web_search, EnterpriseWebSearchTool)
    assert GoogleSearchTool(model="gemini-2.0-flash").model == "gemini-2.0-flash"
    assert [t.declaration() for t in (google_search, url_context)] == [None, None]
