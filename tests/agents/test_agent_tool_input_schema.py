"""An agent with an `input_schema` called as a tool (AgentTool), as google-adk 2.13.0
does it (read off the reference with a fake model): the schema is the tool's
parameters, and a call's validated arguments are the agent's input message, as JSON."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from baton.agents import LlmAgent
from baton.models import OpenAiModel
from baton.tools.agent_tool import AgentTool
from tests.agents.conftest import MakeRunner
from tests.models.chat_server import ChatServer, completion


class Trip(BaseModel):
    city: str
    days: int


def tool_results(request: dict[str, Any]) -> list[Any]:
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def test_the_input_schema_is_the_tools_parameters_and_the_agents_input_is_the_json(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    chat_server.reply(completion(tool_calls=[("c1", "planner", '{"city": "Oslo"}')]))
    chat_server.reply(completion(tool_calls=[("c2", "planner", '{"city": "Oslo", "days": "3"}')]))
    chat_server.reply(completion(content="planned"))  # the planner's reply
    chat_server.reply(completion(content="ok"))
    planner = LlmAgent(
        name="planner", description="Plans trips.", model=openai_model, input_schema=Trip
    )
    parent = LlmAgent(name="p", model=openai_model, tools=[AgentTool(planner)])
    h = await make(parent)

    await h.start("plan Oslo")

    [declared] = [t["function"] for t in chat_server.requests[0]["tools"]]
    assert declared["name"] == "planner"
    assert declared["description"] == "Plans trips."
    assert declared["parameters"]["properties"] == Trip.model_json_schema()["properties"]
    assert declared["parameters"]["required"] == ["city", "days"]
    # Arguments that do not fit are answered with the problem; the planner does not run.
    [refused] = tool_results(chat_server.requests[1])
    assert "days: Field required" in refused["error"]
    # Arguments that fit (coerced by the schema) are the planner's input, as JSON.
    planner_saw = chat_server.requests[2]["messages"]
    assert {"role": "user", "content": '{"city":"Oslo","days":3}'} in planner_saw
    assert tool_results(chat_server.requests[3])[-1] == {"result": "planned"}
