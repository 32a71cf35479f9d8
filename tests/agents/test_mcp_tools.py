"""An LlmAgent with MCP toolsets, its model served over the OpenAI protocol on 127.0.0.1
and its tools by the real MCP test server (tests/tools/mcp_server.py), on memory and on a
SQLite file: the model calls the server's tools and reads their results (errors
included), a run paused for a confirmation resumes in a new Runner with new toolsets (new
server processes) without calling a finished MCP tool again, and closing the Runner ends
the server processes."""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue

from baton import InMemoryRunner
from baton.agents import LlmAgent
from baton.events import REQUEST_CONFIRMATION_FUNCTION, Event
from baton.models import OpenAiModel, ScriptedModel
from baton.readonly_context import ReadonlyContext
from baton.tools.fencing import FENCE_BEGIN, FENCE_END, FENCE_NOTE
from baton.tools.mcp_tool import McpToolset, StreamableHTTPConnectionParams
from baton.types import Blob, Content, FunctionCall, FunctionDeclaration, Part
from tests.agents.conftest import MakeRunner
from tests.conftest import own_loop
from tests.harness import asked, attach_harness
from tests.models.chat_server import ChatServer, completion
from tests.tools.mcp_servers import (
    CallLog,
    is_running,
    result,
    serve_http,
    stdio,
)


def assistant(model: OpenAiModel, *toolsets: McpToolset) -> LlmAgent:
    return LlmAgent(name="assistant", model=model, instruction="Use the tools.", tools=toolsets)


def tool_results(request: dict[str, Any]) -> dict[str, JsonValue]:
    """The tool results a chat request shows the model, by call id."""
    return {
        m["tool_call_id"]: json.loads(m["content"])
        for m in request["messages"]
        if m["role"] == "tool"
    }


def reply(events: list[Event]) -> str | None:
    """The agent's last text reply among these events."""
    return [e.content.text for e in events if e.content and e.content.text][-1]


async def test_the_model_calls_mcp_tools_and_reads_their_results_and_errors(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel, log: CallLog
) -> None:
    toolset = McpToolset(connection_params=stdio(log), tool_filter=["add", "lookup"])
    calls = [("c1", "add", '{"a": 2, "b": 40}'), ("c2", "lookup", '{"key": "zeta"}')]
    chat_server.reply(completion(tool_calls=calls))
    chat_server.reply(completion(content="2 + 40 = 42; zeta is not in the table."))
    h = await make(assistant(openai_model, toolset))

    events = await h.start("Add 2 and 40, and look zeta up.")

    assert reply(events) == "2 + 40 = 42; zeta is not in the table."
    offered = [t["function"] for t in chat_server.requests[0]["tools"]]
    assert [t["name"] for t in offered] == ["add", "lookup"]
    # The server's descriptions are fenced as data, as the reference sends them.
    assert offered[0]["description"] == f"{FENCE_BEGIN}\nAdd two integers.\n{FENCE_END}"
    assert offered[0]["parameters"]["properties"] == {
        "a": {"title": "A", "type": "integer"},
        "b": {"title": "B", "type": "integer"},
    }
    system = chat_server.requests[0]["messages"][0]
    identity = 'You are the agent named "assistant".'
    assert system == {"role": "system", "content": f"Use the tools.\n\n{identity}\n\n{FENCE_NOTE}"}
    assert tool_results(chat_server.requests[1]) == {
        "c1": result(42),
        "c2": {
            "content": [
                {"type": "text", "text": "Error executing tool lookup: no entry for 'zeta'"}
            ],
            "isError": True,
        },
    }
    assert sorted(log.calls()) == ['add {"a": 2, "b": 40}', 'lookup {"key": "zeta"}']
    [pid] = log.pids()
    assert is_running(pid)
    await h.runner.close()
    assert not is_running(pid)


async def test_a_run_paused_for_confirmation_resumes_in_a_new_runner_without_calling_again(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel, log: CallLog
) -> None:
    def toolsets() -> list[McpToolset]:
        return [
            McpToolset(
                connection_params=stdio(log), tool_filter=["add"], require_confirmation=True
            ),
            McpToolset(connection_params=stdio(log), tool_filter=["lookup"]),
        ]

    calls = [("c1", "add", '{"a": 2, "b": 3}'), ("c2", "lookup", '{"key": "alpha"}')]
    chat_server.reply(completion(tool_calls=calls))
    chat_server.reply(completion(content="5, and alpha is the first letter."))
    h = await make(assistant(openai_model, *toolsets()))

    paused = await h.start("Add 2 and 3, and look alpha up.")

    assert asked(paused) == ["adk-confirm-c1"]
    assert log.calls() == ['lookup {"key": "alpha"}']
    await h.runner.close()
    assert len(log.pids()) == 2
    assert not any(is_running(p) for p in log.pids())
    # Another Runner, with new toolsets: the server is started again for the resumed run.
    again = attach_harness(
        assistant(openai_model, *toolsets()), h.service, h.session_id, resumable=True
    )

    done = await again.answer(
        ("adk-confirm-c1", {"confirmed": True}), name=REQUEST_CONFIRMATION_FUNCTION, wrap=False
    )

    assert reply(done) == "5, and alpha is the first letter."
    # The lookup finished before the pause: its committed result is reused, not asked again.
    assert log.calls() == ['lookup {"key": "alpha"}', 'add {"a": 2, "b": 3}']
    assert tool_results(chat_server.requests[-1]) == {
        "c1": result(5),
        "c2": result("the first letter"),
    }
    assert len(chat_server.requests) == 2
    await again.runner.close()
    assert len(log.pids()) == 4
    assert not any(is_running(p) for p in log.pids())


async def test_header_provider_gives_each_run_its_headers_over_streamable_http(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel, log: CallLog
) -> None:
    def headers(context: ReadonlyContext) -> dict[str, str]:
        return {"x-user": context.user_id}

    chat_server.reply(completion(tool_calls=[("c1", "whoami", "{}")]))
    chat_server.reply(completion(content="You are u."))
    with serve_http(log) as url:
        toolset = McpToolset(
            connection_params=StreamableHTTPConnectionParams(url=url),
            tool_filter=["whoami"],
            header_provider=headers,
        )
        h = await make(assistant(openai_model, toolset))

        await h.start("Who am I?")

        assert tool_results(chat_server.requests[1]) == {"c1": result("u")}
        await h.runner.close()
    assert log.calls() == ['whoami {"user": "u"}']


def test_the_sync_runner_and_another_event_loop_share_a_toolset(log: CallLog) -> None:
    # runner.run works on a loop thread of its own; a later run_async on another loop
    # opens its own session, closing the first one's on its loop.
    add = [FunctionCall(id="c1", name="add", args={"a": 1, "b": 2})]
    model = ScriptedModel(responses=[add, "3", add, "3 again"])
    toolset = McpToolset(connection_params=stdio(log), tool_filter=["add"])
    runner = InMemoryRunner(agent=LlmAgent(name="a", model=model, tools=[toolset]))
    session = runner.session_service.create_session_sync(app_name=runner.app_name, user_id="u")
    message = Content(role="user", parts=[Part(text="add 1 and 2")])

    list(runner.run(user_id="u", session_id=session.id, new_message=message))

    async def again() -> None:
        run = runner.run_async(user_id="u", session_id=session.id, new_message=message)
        assert reply([e async for e in run]) == "3 again"
        await runner.close()

    with own_loop() as another:
        another.run(again())
    assert log.calls() == ['add {"a": 1, "b": 2}', 'add {"a": 1, "b": 2}']
    assert len(log.pids()) == 2
    assert not any(is_running(p) for p in log.pids())


def test_use_mcp_resources_lets_the_model_load_the_servers_resources(log: CallLog) -> None:
    load = FunctionCall(
        id="c1",
        name="load_mcp_resource",
        args={"resource_names": ["greeting", "pixel", "absent"]},
    )
    bad = FunctionCall(id="c2", name="load_mcp_resource", args={"resource_names": "greeting"})
    model = ScriptedModel(responses=[[load], [bad], "It says hello."])
    toolset = McpToolset(connection_params=stdio(log), tool_filter=["add"], use_mcp_resources=True)
    runner = InMemoryRunner(agent=LlmAgent(name="a", model=model, tools=[toolset]))
    session = runner.session_service.create_session_sync(app_name=runner.app_name, user_id="u")
    message = Content(role="user", parts=[Part(text="What does the greeting say?")])

    events = list(runner.run(user_id="u", session_id=session.id, new_message=message))

    assert reply(events) == "It says hello."
    first, after_load, after_bad = model.requests
    [offered] = [t.function_declarations for t in first.config.tools if t.function_declarations]
    assert [d.name for d in offered] == ["add", "load_mcp_resource"]
    assert offered[1] == FunctionDeclaration(
        name="load_mcp_resource",
        description="Puts the MCP server's resources you name into your next request. Call it "
        "when you need what one holds.",
        parameters={
            "type": "object",
            "properties": {"resource_names": {"type": "array", "items": {"type": "string"}}},
        },
    )
    listed = (
        'MCP resources you can read: ["greeting", "pixel"]\nBefore answering anything about '
        "one of them, call `load_mcp_resource` with its name."
    )
    assert first.config.system_instruction is not None
    assert first.config.system_instruction.endswith(listed)
    # The model's call answers with the names; the contents follow it in the request
    # (an unknown name is left out), and are not kept in the session.
    [answer] = after_load.contents[-3].function_responses
    assert answer.response == {
        "resource_names": ["greeting", "pixel", "absent"],
        "status": "The contents of these resources come with your next request only; call "
        "load_mcp_resource again to see them later.",
    }
    assert after_load.contents[-2:] == [
        Content(
            role="user", parts=[Part(text="Contents of resource greeting:"), Part(text="hello")]
        ),
        Content(
            role="user",
            parts=[
                Part(text="Contents of resource pixel:"),
                Part(inline_data=Blob(mime_type="image/png", data=b"\x89PNG-1px")),
            ],
        ),
    ]
    [refused] = after_bad.contents[-1].function_responses
    assert refused.response == {
        "error": "'resource_names' must be a list of strings.",
        "error_code": "INVALID_ARGUMENTS",
    }
    stored = runner.session_service.get_session_sync(
        app_name=runner.app_name, user_id="u", session_id=session.id
    )
    assert stored is not None
    assert not any(
        "Contents of resource greeting:" in (e.content.text or "")
        for e in stored.events
        if e.content
    )
    with own_loop() as loop:
        loop.run(runner.close())
