"""Agent, model and tool callbacks on every backend: sync or async, lists, the reference's
short-circuits, and each called once per logical call across a pause and a restart."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from baton.agents import LlmAgent, SequentialAgent
from baton.agents.callbacks import CallbackContext
from baton.models import LlmRequest, LlmResponse, ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus
from baton.tools import BaseTool, FunctionTool, LongRunningFunctionTool, ToolContext
from baton.types import Content, FunctionCall, Part
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, asked, attach_harness, build_harness


def text(value: str) -> Content:
    return Content(role="model", parts=[Part(text=value)])


def responses(request: LlmRequest) -> dict[str, object]:
    return {r.id or "": r.response for c in request.contents for r in c.function_responses}


def counted_agent(counter: Counter, model: ScriptedModel) -> LlmAgent:
    """An agent whose every callback counts its calls; its tool pauses for a person."""

    def ask_manager(amount: int) -> None:
        """Ask a manager.

        Args:
            amount: how much.
        """
        counter.bump("tool")

    async def before_agent(callback_context: CallbackContext) -> None:
        counter.bump("before_agent")
        callback_context.state["started"] = True

    def after_agent(callback_context: CallbackContext) -> Content:
        counter.bump("after_agent")
        return text("after the agent")

    async def before_model(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        counter.bump("before_model")

    def after_model(callback_context: CallbackContext, llm_response: LlmResponse) -> None:
        counter.bump("after_model")
        callback_context.state["model_calls"] = counter.runs["after_model"]

    def before_tool(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> None:
        counter.bump("before_tool")

    async def after_tool(
        tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
    ) -> None:
        counter.bump("after_tool")

    return LlmAgent(
        name="clerk",
        model=model,
        tools=[LongRunningFunctionTool(ask_manager)],
        before_agent_callback=before_agent,
        after_agent_callback=after_agent,
        before_model_callback=before_model,
        after_model_callback=after_model,
        before_tool_callback=before_tool,
        after_tool_callback=after_tool,
    )


async def start(stores: StoreFactory, agent: Any) -> Harness:
    return await build_harness(agent, BaseSessionService(stores.open()), resumable=True)


async def test_each_callback_runs_once_per_call_across_a_pause_and_a_restart(
    stores: StoreFactory,
) -> None:
    counter = Counter()
    model = ScriptedModel(
        responses=[[FunctionCall(id="m1", name="ask_manager", args={"amount": 9})], "approved"]
    )
    h = await start(stores, counted_agent(counter, model))

    first = await h.start("buy a chair")

    assert asked(first) == ["m1"]
    assert counter.runs == {
        "before_agent": 1,
        "before_model": 1,
        "after_model": 1,
        "before_tool": 1,
        "tool": 1,
        "after_tool": 1,
    }
    again = attach_harness(
        counted_agent(counter, model),
        BaseSessionService(stores.open()),
        h.session_id,
        resumable=True,
    )
    last = await again.answer(("m1", "yes"), name="ask_manager")

    assert counter.runs == {
        "before_agent": 1,
        "before_model": 2,
        "after_model": 2,
        "before_tool": 1,
        "tool": 1,
        "after_tool": 1,
        "after_agent": 1,
    }
    assert [e.content.text for e in last if e.content and e.content.role == "model"] == [
        "approved",
        "after the agent",
    ]
    session = await again.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state == {"started": True, "model_calls": 2}
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


async def test_a_before_agent_reply_skips_the_agent(stores: StoreFactory) -> None:
    model = ScriptedModel(responses=["never"])

    def closed(callback_context: CallbackContext) -> Content:
        return text("We are closed today.")

    agent = LlmAgent(name="shop", model=model, before_agent_callback=closed)
    after = LlmAgent(name="after", model=ScriptedModel(responses=["next one ran"]))
    h = await start(stores, SequentialAgent(name="root", sub_agents=[agent, after]))

    events = await h.collect(new_message=text("hello").model_copy(update={"role": "user"}))

    replies = [
        (e.author, e.content.text) for e in events if e.content and e.content.role == "model"
    ]
    assert replies == [("shop", "We are closed today."), ("after", "next one ran")]
    assert model.requests == []


async def test_model_and_tool_callbacks_short_circuit_as_the_reference(
    stores: StoreFactory,
) -> None:
    counter = Counter()
    model = ScriptedModel(
        responses=[[FunctionCall(id="a", name="lookup", args={"city": "Oslo"})], "model text"]
    )

    def lookup(city: str) -> str:
        """Look the weather up.

        Args:
            city: where.
        """
        counter.bump("lookup")
        return "rain"

    def cached(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> JsonValue:
        return {"weather": "sun (cached)", "city": args["city"]}

    def tagged(
        tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
    ) -> dict[str, JsonValue]:
        return {**tool_response, "checked": True}

    def never(*_: Any, **__: Any) -> None:
        counter.bump("second callback")

    def polite(callback_context: CallbackContext, llm_response: LlmResponse) -> LlmResponse | None:
        if llm_response.content and llm_response.content.text:
            return LlmResponse(content=text(f"{llm_response.content.text}, kindly"))
        return None

    agent = LlmAgent(
        name="weather",
        model=model,
        tools=[FunctionTool(lookup)],
        before_tool_callback=[cached, never],
        after_tool_callback=tagged,
        after_model_callback=polite,
    )
    h = await start(stores, agent)

    events = await h.start("weather in Oslo?")

    assert responses(model.requests[-1]) == {
        "a": {"weather": "sun (cached)", "city": "Oslo", "checked": True}
    }
    assert counter.runs == {}  # the tool and the second callback never ran
    assert [e.content.text for e in events if e.content and e.content.role == "model"][-1] == (
        "model text, kindly"
    )


async def test_a_before_model_response_replaces_the_model_call(stores: StoreFactory) -> None:
    model = ScriptedModel(responses=[])

    def canned(callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse:
        return LlmResponse(content=text("from the cache"))

    h = await start(stores, LlmAgent(name="bot", model=model, before_model_callback=canned))

    events = await h.start("hi")

    assert [e.content.text for e in events if e.content and e.content.role == "model"] == [
        "from the cache"
    ]
    assert model.requests == []


async def test_a_callback_returning_the_wrong_type_fails_naming_the_agent(
    stores: StoreFactory,
) -> None:
    def wrong(callback_context: CallbackContext, llm_request: LlmRequest) -> str:
        return "not a response"

    agent = LlmAgent(name="bot", model=ScriptedModel(responses=["x"]), before_model_callback=wrong)
    h = await start(stores, agent)

    with pytest.raises(TypeError, match="model callback of agent 'bot' returned str"):
        await h.start("hi")


@pytest.mark.parametrize(
    ("returned", "sent"),
    [
        ({"a": 1}, {"a": 1}),
        (5, {"result": 5}),
        ("rain", {"result": "rain"}),
        (None, {"result": None}),
        ([1, 2], {"result": [1, 2]}),
    ],
)
async def test_after_tool_callback_gets_the_tool_s_bare_result_as_the_reference(
    stores: StoreFactory, returned: JsonValue, sent: JsonValue
) -> None:
    seen: list[object] = []
    model = ScriptedModel(responses=[[FunctionCall(id="a", name="lookup", args={})], "done"])

    def lookup() -> JsonValue:
        """Look it up."""
        return returned

    def after(
        tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
    ) -> None:
        seen.append(tool_response)

    agent = LlmAgent(
        name="clerk", model=model, tools=[FunctionTool(lookup)], after_tool_callback=after
    )
    h = await start(stores, agent)
    await h.start("go")

    assert seen == [returned]
    assert responses(model.requests[-1]) == {"a": sent}


async def test_after_tool_callback_gets_an_error_or_before_callback_s_bare_result(
    stores: StoreFactory,
) -> None:
    seen: list[object] = []
    calls = [FunctionCall(id="a", name="broken", args={}), FunctionCall(id="b", name="skipped")]
    model = ScriptedModel(responses=[calls, "done"])

    def broken() -> None:
        """Fail."""
        raise ValueError("boom")

    def skipped() -> None:
        """Never runs."""

    def before(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> JsonValue:
        return 7 if tool.name == "skipped" else None

    def on_error(
        tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, error: Exception
    ) -> JsonValue:
        return f"failed: {error}"

    def after(
        tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
    ) -> JsonValue:
        seen.append(tool_response)
        return ["replaced"] if tool.name == "skipped" else None

    agent = LlmAgent(
        name="clerk",
        model=model,
        tools=[FunctionTool(broken), FunctionTool(skipped)],
        before_tool_callback=before,
        on_tool_error_callback=on_error,
        after_tool_callback=after,
    )
    h = await start(stores, agent)
    await h.start("go")

    # the two calls run at once: their after_tool_callbacks in either order
    assert sorted(seen, key=repr) == sorted(["failed: boom", 7], key=repr)
    assert responses(model.requests[-1]) == {
        "a": {"result": "failed: boom"},
        "b": {"result": ["replaced"]},
    }
