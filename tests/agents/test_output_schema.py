"""An LlmAgent with tools and an output_schema gives its structured reply through
`set_model_response`, as google-adk 2.13.0 does (each expectation read off the reference
with a fake model), over the chat-completions protocol."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from baton.agents import LlmAgent
from baton.agents.structured import OutputSchemaError
from baton.models import OpenAiModel, ScriptedModel
from baton.workflow import Workflow
from tests.agents.conftest import MakeRunner
from tests.models.chat_server import ChatServer, completion


class Weather(BaseModel):
    city: str
    temp: int


def forecast(city: str) -> dict[str, int]:
    """The forecast for a city."""
    return {"temp": 3}


async def test_set_model_response_ends_the_agent_with_the_validated_structured_reply(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    chat_server.reply(completion(tool_calls=[("c1", "forecast", '{"city": "Oslo"}')]))
    chat_server.reply(
        completion(tool_calls=[("c2", "set_model_response", '{"city": "Oslo", "temp": "hot"}')])
    )
    chat_server.reply(
        completion(tool_calls=[("c3", "set_model_response", '{"city": "Oslo", "temp": 3}')])
    )
    agent = LlmAgent(
        name="a",
        model=openai_model,
        instruction="Be brief.",
        tools=[forecast],
        output_schema=Weather,
        output_key="res",
    )
    h = await make(agent)

    events = await h.start("weather in Oslo?")

    first: dict[str, Any] = chat_server.requests[0]
    system = first["messages"][0]["content"]
    assert system.startswith('Be brief.\n\nYou are the agent named "a".\n\n')
    assert "`set_model_response`" in system
    declared = {t["function"]["name"]: t["function"] for t in first["tools"]}
    # set_model_response is declared first, as the reference declares it.
    assert list(declared) == ["set_model_response", "forecast"]
    parameters = declared["set_model_response"]["parameters"]
    assert parameters["properties"] == Weather.model_json_schema()["properties"]
    assert parameters["required"] == ["city", "temp"]
    assert "response_format" not in first
    # Arguments that do not fit are answered with the error; the model tries again.
    tool_message = chat_server.requests[2]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "c2"
    assert "temp: Input should be a valid integer" in tool_message["content"]
    assert len(chat_server.requests) == 3

    replies = [e for e in events if e.content is not None]
    last = replies[-1]
    assert last.author == "a"
    assert last.is_final_response()
    assert last.content is not None
    assert last.content.role == "model"
    text = "".join(p.text or "" for p in last.content.parts or [])
    assert json.loads(text) == {"city": "Oslo", "temp": 3}
    assert last.actions.state_delta == {"res": {"city": "Oslo", "temp": 3}}
    answered = replies[-2]
    assert answered.get_function_responses()[0].name == "set_model_response"
    assert answered.get_function_responses()[0].response == {"city": "Oslo", "temp": 3}
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state["res"] == {"city": "Oslo", "temp": 3}

    # The next message starts a new turn, with the structured reply in the history.
    chat_server.reply(
        completion(tool_calls=[("c4", "set_model_response", '{"city": "Bergen", "temp": 5}')])
    )
    await h.start("and Bergen?")
    history = chat_server.requests[3]["messages"]
    assert {"role": "assistant", "content": '{"city": "Oslo", "temp": 3}'} in history
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state["res"] == {"city": "Bergen", "temp": 5}


async def test_without_tools_the_model_is_asked_for_json_and_output_key_gets_it_parsed(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    chat_server.reply(completion(content='```json\n{"city": "Oslo", "temp": 3}\n```'))
    agent = LlmAgent(name="a", model=openai_model, output_schema=Weather, output_key="res")
    h = await make(agent)

    events = await h.start("weather in Oslo?")

    [request] = chat_server.requests
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": Weather.model_json_schema()},
    }
    assert "tools" not in request
    [said] = [e for e in events if e.content and e.content.text]
    assert said.actions.state_delta == {"res": {"city": "Oslo", "temp": 3}}
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state["res"] == {"city": "Oslo", "temp": 3}


@pytest.mark.parametrize(
    ("reply", "complaint"),
    [
        ("Oslo, 3 degrees", "replied with text that is not JSON"),
        ('{"city": "Oslo", "temp": "hot"}', "does not fit its output_schema: temp"),
        ('["Oslo", 3]', "JSON that is not an object"),
    ],
)
async def test_without_tools_a_reply_that_does_not_fit_fails_the_run(
    make: MakeRunner,
    chat_server: ChatServer,
    openai_model: OpenAiModel,
    reply: str,
    complaint: str,
) -> None:
    chat_server.reply(completion(content=reply))
    agent = LlmAgent(name="a", model=openai_model, output_schema=Weather, output_key="res")
    h = await make(agent)

    with pytest.raises(OutputSchemaError, match=complaint):
        await h.start("weather in Oslo?")

    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert "res" not in session.state


async def test_with_tools_a_text_reply_is_checked_against_the_schema_as_in_the_reference(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    agent = LlmAgent(
        name="a", model=openai_model, tools=[forecast], output_schema=Weather, output_key="res"
    )
    chat_server.reply(completion(content="Oslo, 3 degrees"))
    chat_server.reply(completion(content='{"city": "Oslo", "temp": 3}'))
    refused, stored = await make(agent), await make(agent)

    with pytest.raises(OutputSchemaError, match="replied with text that is not JSON"):
        await refused.start("weather in Oslo?")
    await stored.start("weather in Oslo?")

    assert "response_format" not in chat_server.requests[0]  # the reply is asked for as a call
    states = [
        await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
        for h in (refused, stored)
    ]
    assert [s.state if s else None for s in states] == [{}, {"res": {"city": "Oslo", "temp": 3}}]


def test_an_output_schema_beside_a_tool_named_set_model_response_is_refused() -> None:
    def set_model_response(x: str) -> str:
        """Mine."""
        return x

    with pytest.raises(ValueError, match="has a tool named 'set_model_response'"):
        LlmAgent(
            name="a",
            model=ScriptedModel(responses=[]),
            tools=[set_model_response],
            output_schema=Weather,
        )


async def test_a_workflow_node_with_an_output_schema_outputs_the_parsed_value(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    chat_server.reply(completion(content='{"city": "Oslo", "temp": 3}'))
    got: list[object] = []

    def after(node_input: object) -> str:
        got.append(node_input)
        return "done"

    agent = LlmAgent(name="a", model=openai_model, output_schema=Weather)
    h = await make(Workflow(name="w", edges=[("START", agent, after)]))

    await h.start("weather in Oslo?")

    assert got == [{"city": "Oslo", "temp": 3}]  # the value, as in the reference, not its text
