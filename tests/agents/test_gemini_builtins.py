"""Gemini's built-in tools and code executor, as reference code lists them: importable;
for a Gemini model they add their `types.Tool` entry to the request, which a model of the
user's that speaks Gemini's protocol receives, and baton's chat-completions models refuse
before anything is sent, with the reference's kind of error (a ValueError naming the tool
and the model). So do a function declaration's Gemini-only fields."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import JsonValue

from baton import types
from baton.agents import CallbackContext, LlmAgent
from baton.code_executors import BuiltInCodeExecutor
from baton.models import LlmRequest, OpenAiModel, ScriptedModel
from baton.tools import BaseTool, enterprise_web_search, google_search, url_context
from baton.tools.enterprise_search_tool import EnterpriseWebSearchTool
from baton.tools.google_search_tool import GoogleSearchTool
from baton.tools.tool_context import ToolContext
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


async def test_a_gemini_model_of_the_user_s_receives_the_built_in_tools_entries(
    make: MakeRunner,
) -> None:
    # ScriptedModel stands in for a BaseLlm of the user's that speaks Gemini's protocol:
    # it records the request it would send.
    model = ScriptedModel(responses=["Here is the news."], model="gemini-2.5-flash")
    agent = LlmAgent(
        name="researcher",
        model=model,
        tools=[lookup, GoogleSearchTool(model="gemini-2.0-flash"), url_context],
        code_executor=BuiltInCodeExecutor(),
    )
    h = await make(agent)

    await h.start("What's new?")

    (request,) = model.requests
    assert request.model == "gemini-2.0-flash"
    assert [d.name for d in request.config.function_declarations] == ["lookup"]
    assert [t.built_ins for t in request.config.tools] == [
        [],
        ["google_search"],
        ["url_context"],
        ["code_execution"],
    ]
    assert request.config.tools[1] == types.Tool(google_search=types.GoogleSearch())


def add_search(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
    """What reference code does to offer a built-in tool by hand."""
    llm_request.config.tools.append(types.Tool(google_search=types.GoogleSearch()))


def add_retrieval(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
    retrieval = types.Retrieval(vertex_ai_search={"datastore": "projects/p/datastores/d"})
    llm_request.config.tools.append(types.Tool(retrieval=retrieval))


@pytest.mark.parametrize(
    ("callback", "label"),
    [(add_search, "Google search tool"), (add_retrieval, r"Gemini built-in tool Tool\(retrieval")],
    ids=["google_search", "retrieval"],
)
async def test_a_chat_completions_model_refuses_a_built_in_tool_added_to_its_request(
    make: MakeRunner,
    chat_server: ChatServer,
    openai_model: OpenAiModel,
    callback: Callable[[CallbackContext, LlmRequest], None],
    label: str,
) -> None:
    chat_server.reply(completion(content="never sent"))
    agent = LlmAgent(
        name="researcher", model=openai_model, tools=[lookup], before_model_callback=callback
    )
    h = await make(agent)

    with pytest.raises(ValueError, match="^" + label + ".* is not supported for model "):
        await h.start("What's new?")

    assert chat_server.requests == []


class DeclaredTool(BaseTool):
    """A custom tool whose declaration carries Gemini-only fields."""

    def __init__(self, declaration: types.FunctionDeclaration) -> None:
        super().__init__(name=declaration.name, description="")
        self._declaration = declaration

    def declaration(self) -> types.FunctionDeclaration:
        return self._declaration

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        return 3


@pytest.mark.parametrize(
    ("declaration", "refusal"),
    [
        (
            types.FunctionDeclaration(name="price", response=types.Schema(type=types.Type.NUMBER)),
            "function 'price' declares a response schema, which model openai/served-model",
        ),
        (
            types.FunctionDeclaration(name="price", response_json_schema={"type": "number"}),
            "function 'price' declares a response schema",
        ),
        (
            types.FunctionDeclaration(name="price", behavior=types.Behavior.NON_BLOCKING),
            "function 'price' has behavior NON_BLOCKING, which model openai/served-model",
        ),
    ],
    ids=["response", "response_json_schema", "non-blocking"],
)
async def test_a_chat_completions_model_refuses_a_declaration_s_gemini_only_fields(
    make: MakeRunner,
    chat_server: ChatServer,
    openai_model: OpenAiModel,
    declaration: types.FunctionDeclaration,
    refusal: str,
) -> None:
    chat_server.reply(completion(content="never sent"))
    agent = LlmAgent(name="shop", model=openai_model, tools=[DeclaredTool(declaration)])
    h = await make(agent)

    with pytest.raises(ValueError, match="^" + refusal):
        await h.start("How much?")

    assert chat_server.requests == []


async def test_a_blocking_declaration_reaches_a_chat_completions_model(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    chat_server.reply(completion(content="It costs 3."))
    declared = types.FunctionDeclaration.from_callable(callable=lookup)
    blocking = declared.model_copy(update={"behavior": types.Behavior.BLOCKING})
    agent = LlmAgent(name="shop", model=openai_model, tools=[DeclaredTool(blocking)])
    h = await make(agent)

    await h.start("How much?")

    (sent,) = chat_server.requests
    assert [t["function"]["name"] for t in sent["tools"]] == ["lookup"]
