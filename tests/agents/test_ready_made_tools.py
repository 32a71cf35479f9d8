"""The reference's ready-made tools (`transfer_to_agent`, `TransferToAgentTool`,
`get_user_choice`) listed in `LlmAgent(tools=[...])`, from the user's side: what the model
is offered and sent over the OpenAI protocol, and the events that come out."""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue

from baton.agents import LlmAgent
from baton.events import Event
from baton.models import OpenAiModel
from baton.tools import TransferToAgentTool, get_user_choice, transfer_to_agent
from tests.agents.conftest import MakeRunner
from tests.models.chat_server import ChatServer, completion


def replies(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.author, e.content.text) for e in events if e.content and e.content.text]


def declared(request: dict[str, Any]) -> dict[str, Any]:
    return {t["function"]["name"]: t["function"] for t in request.get("tools", [])}


def tool_results(request: dict[str, Any]) -> list[tuple[str, JsonValue]]:
    return [
        (m["tool_call_id"], json.loads(m["content"]))
        for m in request["messages"]
        if m["role"] == "tool"
    ]


async def test_the_transfer_tool_listed_by_the_agent_hands_over_with_its_reason(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    sales = LlmAgent(name="sales", model=openai_model, description="Answers sales questions.")
    tool = TransferToAgentTool(agent_names=["sales"], include_transfer_reason=True)
    triage = LlmAgent(name="triage", model=openai_model, tools=[tool], sub_agents=[sales])
    args = json.dumps({"agent_name": "sales", "transfer_reason": "a price question"})
    chat_server.reply(completion(tool_calls=[("t1", "transfer_to_agent", args)]))
    chat_server.reply(completion(content="It costs 5."))
    h = await make(triage)

    events = await h.start("How much is it?")

    declaration = declared(chat_server.requests[0])["transfer_to_agent"]
    assert declaration["parameters"]["properties"]["agent_name"]["enum"] == ["sales"]
    assert "transfer_reason" in declaration["parameters"]["properties"]
    [result] = [e for e in events if e.actions.transfer_to_agent]
    assert (result.actions.transfer_to_agent, result.actions.transfer_reason) == (
        "sales",
        "a price question",
    )
    assert replies(events) == [("sales", "It costs 5.")]
    stored = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert stored is not None
    [kept] = [e for e in stored.events if e.id == result.id]
    assert kept.actions.transfer_reason == "a price question"


async def test_the_transfer_tool_without_a_reason_does_not_offer_one(
    openai_model: OpenAiModel,
) -> None:
    declaration = TransferToAgentTool(agent_names=["a", "b"]).declaration().to_wire()

    assert declaration["parameters"]["properties"] == {
        "agent_name": {
            "description": "the name of the agent to hand the conversation to.",
            "type": "string",
            "enum": ["a", "b"],
        }
    }
    assert "transfer_reason" not in declaration["description"]


async def test_the_transfer_function_to_an_agent_it_may_not_reach_answers_the_model(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    # The reference fails the invocation ("Transfer target agent 'billing' not found.");
    # baton answers the model, as its own transfer tool does, and transfers nothing.
    lonely = LlmAgent(name="lonely", model=openai_model, tools=[transfer_to_agent])
    args = json.dumps({"agent_name": "billing"})
    chat_server.reply(completion(tool_calls=[("t1", "transfer_to_agent", args)]))
    chat_server.reply(completion(content="I will answer myself."))
    h = await make(lonely)

    events = await h.start("Who handles billing?")

    assert [e.actions.transfer_to_agent for e in events] == [None] * len(events)
    assert tool_results(chat_server.requests[1]) == [
        (
            "t1",
            {
                "error": "there is no agent 'billing' that 'lonely' can transfer to; "
                "choose one of: none."
            },
        )
    ]
    assert replies(events) == [("lonely", "I will answer myself.")]


async def test_get_user_choice_waits_for_the_users_choice_and_the_model_reads_it(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    agent = LlmAgent(name="shop", model=openai_model, tools=[get_user_choice])
    args = json.dumps({"options": ["red", "blue"]})
    chat_server.reply(completion(tool_calls=[("c1", "get_user_choice", args)]))
    chat_server.reply(completion(content="You chose blue."))
    h = await make(agent)

    paused = await h.start("Which colour?")

    assert [e.long_running_tool_ids for e in paused if e.long_running_tool_ids] == [{"c1"}]
    assert len(chat_server.requests) == 1
    declaration = declared(chat_server.requests[0])["get_user_choice"]
    assert declaration["parameters"]["properties"]["options"]["type"] == "array"
    assert declaration["description"].startswith(
        "Provides the options to the user and asks them to choose one."
    )
    done = await h.answer(("c1", "blue"), name="get_user_choice")

    assert tool_results(chat_server.requests[1]) == [("c1", {"result": "blue"})]
    assert replies(done) == [("shop", "You chose blue.")]
