"""Toolsets (`BaseToolset`) in `LlmAgent(tools=[...])`, from the user's side: what the
model is offered and calls over the OpenAI protocol, and the Runner closing them."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pydantic import JsonValue

from baton import InMemoryRunner
from baton.agents import LlmAgent
from baton.agents.readonly_context import ReadonlyContext
from baton.events import Event
from baton.models import OpenAiModel
from baton.sessions.services import BaseSessionService
from baton.tools import BaseTool, FunctionTool, LongRunningFunctionTool
from baton.tools.base_toolset import BaseToolset, ToolPredicate
from tests.agents.conftest import MakeRunner
from tests.harness import attach_harness
from tests.models.chat_server import ChatServer, completion


@pytest.fixture
def model(openai_model: OpenAiModel) -> OpenAiModel:
    """The real OpenAI adapter, talking to `chat_server` (both from tests/conftest.py)."""
    return openai_model


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def subtract(a: int, b: int) -> int:
    """Subtracts b from a."""
    return a - b


def greet(name: str) -> str:
    """Greets someone."""
    return f"hello {name}"


def shout(text: str) -> str:
    """Shouts."""
    return text.upper()


def ask_manager(request: str) -> None:
    """Asks the manager to approve a request."""


class MathToolset(BaseToolset):
    """Lists its tools through the filter, and records what each listing saw."""

    def __init__(self, tools: list[BaseTool], **options: Any) -> None:
        super().__init__(**options)
        self.tools = tools
        self.seen: list[dict[str, JsonValue]] = []
        self.closed = 0

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        assert readonly_context is not None
        self.seen.append(
            {
                "agent": readonly_context.agent_name,
                "invocation": readonly_context.invocation_id,
                "user": readonly_context.user_id,
                "state": dict(readonly_context.state),
                "said": readonly_context.user_content.text
                if readonly_context.user_content
                else None,
            }
        )
        return [t for t in self.tools if self._is_tool_selected(t, readonly_context)]

    async def close(self) -> None:
        self.closed += 1


def replies(events: list[Event]) -> list[str]:
    return [e.content.text for e in events if e.content and e.content.text]


def offered(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


def tool_results(request: dict[str, Any]) -> list[tuple[str, JsonValue]]:
    return [
        (m["tool_call_id"], json.loads(m["content"]))
        for m in request["messages"]
        if m["role"] == "tool"
    ]


async def test_a_toolsets_tools_are_offered_with_a_prefix_among_the_agents_own(
    make: MakeRunner, chat_server: ChatServer, model: OpenAiModel
) -> None:
    math = MathToolset(
        [FunctionTool(add), FunctionTool(subtract)], tool_filter=["add"], tool_name_prefix="math"
    )
    agent = LlmAgent(name="calc", model=model, tools=[greet, math, FunctionTool(shout)])
    chat_server.reply(completion(tool_calls=[("c1", "math_add", '{"a": 2, "b": 3}')]))
    chat_server.reply(completion(content="2 + 3 = 5"))
    h = await make(agent, state={"level": 1})

    events = await h.start("add 2 and 3")

    assert [offered(r) for r in chat_server.requests] == [["greet", "math_add", "shout"]] * 2
    assert tool_results(chat_server.requests[1]) == [("c1", {"result": 5})]
    [call] = events[0].function_calls
    assert (call.name, events[1].get_function_responses()[0].name) == ("math_add", "math_add")
    assert replies(events) == ["2 + 3 = 5"]
    invocation = events[0].invocation_id
    # Listed once for the invocation, though the model was asked twice.
    assert math.seen == [
        {
            "agent": "calc",
            "invocation": invocation,
            "user": "u",
            "state": {"level": 1},
            "said": "add 2 and 3",
        }
    ]
    assert [t.name for t in math.tools] == ["add", "subtract"]  # the listed tools keep theirs


async def test_a_predicate_filters_a_toolsets_tools_by_the_run(
    make: MakeRunner, chat_server: ChatServer, model: OpenAiModel
) -> None:
    def for_admins(tool: BaseTool, readonly_context: ReadonlyContext | None = None) -> bool:
        assert readonly_context is not None
        return tool.name == "add" or readonly_context.state.get("role") == "admin"

    assert isinstance(for_admins, ToolPredicate)
    math = MathToolset([FunctionTool(add), FunctionTool(subtract)], tool_filter=for_admins)
    agent = LlmAgent(name="calc", model=model, tools=[math])
    chat_server.reply(completion(content="hi"))
    chat_server.reply(completion(content="hi admin"))
    h = await make(agent, state={"role": "guest"})
    await h.start("hi")
    admin = await make(agent, state={"role": "admin"})
    await admin.start("hi")

    assert [offered(r) for r in chat_server.requests] == [["add"], ["add", "subtract"]]


async def test_a_long_running_tool_of_a_toolset_pauses_and_a_new_runner_resumes_it(
    make: MakeRunner, chat_server: ChatServer, model: OpenAiModel, service: BaseSessionService
) -> None:
    approvals = MathToolset([LongRunningFunctionTool(ask_manager)], tool_name_prefix="hr")
    agent = LlmAgent(name="clerk", model=model, tools=[approvals])
    chat_server.reply(completion(tool_calls=[("c1", "hr_ask_manager", '{"request": "leave"}')]))
    chat_server.reply(completion(content="Your leave is approved."))
    h = await make(agent)

    paused = await h.start("I want leave")
    assert paused[0].long_running_tool_ids == {"c1"}
    restarted = attach_harness(agent, service, h.session_id, resumable=True)
    done = await restarted.answer(("c1", {"approved": True}), name="hr_ask_manager", wrap=False)

    assert replies(done) == ["Your leave is approved."]
    assert tool_results(chat_server.requests[1]) == [("c1", {"approved": True})]
    assert offered(chat_server.requests[1]) == ["hr_ask_manager"]
    assert len(approvals.seen) == 1  # the answer continues the invocation that listed them


class BrokenToolset(BaseToolset):
    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        raise ConnectionError("server down")


async def test_a_toolset_whose_listing_fails_is_left_out_and_logged(
    make: MakeRunner,
    chat_server: ChatServer,
    model: OpenAiModel,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="baton")
    agent = LlmAgent(
        name="calc", model=model, tools=[greet, BrokenToolset(tool_name_prefix="remote")]
    )
    chat_server.reply(completion(content="hi"))
    h = await make(agent)

    events = await h.start("hi")

    assert replies(events) == ["hi"]
    assert offered(chat_server.requests[0]) == ["greet"]
    # Listed again while it fails (each time the run looks at its tools), as the reference.
    assert {
        (r.getMessage(), type(r.exc_info[1]) if r.exc_info else None) for r in caplog.records
    } == {
        (
            "agent calc runs without the tools of toolset BrokenToolset (prefix 'remote'), "
            "whose listing failed",
            ConnectionError,
        )
    }


async def test_a_toolset_tool_named_as_another_tool_is_refused_by_name(
    make: MakeRunner, chat_server: ChatServer, model: OpenAiModel
) -> None:
    agent = LlmAgent(name="calc", model=model, tools=[add, MathToolset([FunctionTool(add)])])
    h = await make(agent)

    with pytest.raises(ValueError, match="lists a tool named 'add'") as raised:
        await h.start("hi")

    assert "tool_name_prefix" in str(raised.value)
    assert chat_server.requests == []


async def test_the_runner_closes_each_toolset_once_when_it_closes(model: OpenAiModel) -> None:
    shared = MathToolset([FunctionTool(add)])
    other = MathToolset([FunctionTool(subtract)])
    helper = LlmAgent(name="helper", model=model, tools=[shared, other])
    root = LlmAgent(name="root", model=model, tools=[shared], sub_agents=[helper])

    async with InMemoryRunner(agent=root) as runner:
        session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
        assert session.id
        assert (shared.closed, other.closed) == (0, 0)

    assert (shared.closed, other.closed) == (1, 1)


class StuckToolset(BaseToolset):
    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        return []

    async def close(self) -> None:
        raise OSError("socket already gone")


async def test_a_toolset_failing_to_close_is_named_after_the_others_closed(
    model: OpenAiModel,
) -> None:
    after = MathToolset([FunctionTool(add)])
    root = LlmAgent(name="root", model=model, tools=[StuckToolset(), after])
    runner = InMemoryRunner(agent=root)

    with pytest.raises(RuntimeError) as raised:
        await runner.close()

    assert str(raised.value) == (
        "Failed to close toolsets: StuckToolset: OSError: socket already gone"
    )
    assert after.closed == 1
