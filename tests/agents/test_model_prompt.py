"""What an LlmAgent's model receives, over the chat-completions protocol, as google-adk
2.13.0 builds it (each expectation was read off the reference with a fake model)."""

from __future__ import annotations

from typing import Any

import pytest

from baton import RunConfig, SequentialAgent
from baton.agents import LlmAgent
from baton.models import OpenAiModel, ScriptedModel
from baton.types import Content, Part
from tests.agents.conftest import MakeRunner
from tests.agents.quoting import PREAMBLE, called, returned, said, turns
from tests.models.chat_server import ChatServer, completion


def shout(q: str) -> dict[str, str]:
    """Shouts."""
    return {"r": q.upper()}


async def test_an_agent_is_told_who_it_is_and_sees_another_agents_turns_quoted(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    chat_server.reply(completion(tool_calls=[("c1", "shout", '{"q": "hi"}')]))
    chat_server.reply(completion(content="one"))
    chat_server.reply(completion(content="two"))
    a = LlmAgent(
        name="a", model=openai_model, instruction="be a", description="first", tools=[shout]
    )
    b = LlmAgent(name="b", model=openai_model, instruction="be b")
    h = await make(SequentialAgent(name="root", sub_agents=[a, b]))

    await h.start("hi")

    messages: list[dict[str, Any]] = chat_server.requests[2]["messages"]
    assert messages == [
        {"role": "system", "content": 'be b\n\nYou are an agent. Your internal name is "b".'},
        {"role": "user", "content": "hi"},
        {"role": "user", "content": PREAMBLE + called("a", "shout", "{'q': 'hi'}")},
        {"role": "user", "content": PREAMBLE + returned("a", "shout", "{'r': 'HI'}")},
        {"role": "user", "content": PREAMBLE + said("a", "one")},
    ]
    assert chat_server.requests[0]["messages"][0] == {
        "role": "system",
        "content": 'be a\n\nYou are an agent. Your internal name is "a". '
        'The description about you is "first".',
    }


@pytest.mark.parametrize("include", [False, True])
async def test_another_agents_thoughts_are_shown_only_when_the_run_config_asks(
    make: MakeRunner, include: bool
) -> None:
    first = ScriptedModel([[Part(text="pondering", thought=True), Part(text="one")]])
    second = ScriptedModel(["two"])
    pipeline = SequentialAgent(
        name="root",
        sub_agents=[LlmAgent(name="a", model=first), LlmAgent(name="b", model=second)],
    )
    h = await make(pipeline)

    await h.collect(
        new_message=Content(role="user", parts=[Part(text="hi")]),
        run_config=RunConfig(include_thoughts_from_other_agents=include),
    )

    thought = "[a] thought:\n<<<BEGIN_QUOTED_AGENT_CONTENT>>>\npondering\n"
    thought += "<<<END_QUOTED_AGENT_CONTENT>>>"
    shown = [PREAMBLE, *([thought] if include else []), said("a", "one")]
    assert turns(second.requests[0]) == [("user", ["hi"]), ("user", shown)]
