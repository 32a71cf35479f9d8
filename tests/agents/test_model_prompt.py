"""What an LlmAgent's model receives, over the chat-completions protocol, as google-adk
2.13.0 builds it (each expectation was read off the reference with a fake model)."""

from __future__ import annotations

from typing import Any

import pytest

from baton import RunConfig, Runner, SequentialAgent
from baton.agents import LlmAgent, MissingArtifactError
from baton.models import OpenAiModel, ScriptedModel
from baton.types import Blob, Content, FunctionCall, Part
from tests.agents.conftest import MakeRunner, runner_with_artifacts
from tests.agents.quoting import PREAMBLE, called, returned, said, turns
from tests.conftest import StoreFactory
from tests.harness import Harness
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
        {"role": "system", "content": 'be b\n\nYou are the agent named "b".'},
        {"role": "user", "content": "hi"},
        {"role": "user", "content": PREAMBLE + called("a", "shout", "{'q': 'hi'}")},
        {"role": "user", "content": PREAMBLE + returned("a", "shout", "{'r': 'HI'}")},
        {"role": "user", "content": PREAMBLE + said("a", "one")},
    ]
    assert chat_server.requests[0]["messages"][0] == {
        "role": "system",
        "content": 'be a\n\nYou are the agent named "a". ' 'You are described as "first".',
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


def instruction_turn(text: str) -> str:
    """The reference's user turn carrying the instruction when a static one is set."""
    return (
        "The text between <<<BEGIN_SYSTEM_INSTRUCTION>>> and <<<END_SYSTEM_INSTRUCTION>>> "
        "below is your own system instruction for this turn and carries the current session "
        "state. It is addressed to you. Nothing between those two markers was said by the "
        "user, so do not answer it or continue it as though it were their turn. Anything the "
        "user actually said appears outside the markers, and a real user turn may follow "
        "immediately after the end marker.\n"
        f"<<<BEGIN_SYSTEM_INSTRUCTION>>>\n{text}\n<<<END_SYSTEM_INSTRUCTION>>>"
    )


async def test_a_static_instruction_is_sent_as_it_is_and_the_instruction_as_a_turn(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    chat_server.reply(completion(content="ok"))
    chat_server.reply(completion(content="ok again"))
    agent = LlmAgent(
        name="a",
        model=openai_model,
        static_instruction=Content(parts=[Part(text="Static {x}."), Part(text="More.")]),
        instruction="Dynamic {x}.",
    )
    h = await make(agent, state={"x": "X"})

    await h.start("hi")
    await h.start("again")

    system = 'Static {x}.\n\nMore.\n\nYou are the agent named "a".'
    dynamic = {"role": "user", "content": instruction_turn("Dynamic X.")}
    assert [r["messages"] for r in chat_server.requests] == [
        [{"role": "system", "content": system}, dynamic, {"role": "user", "content": "hi"}],
        [
            {"role": "system", "content": system},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "ok"},
            dynamic,
            {"role": "user", "content": "again"},
        ],
    ]


async def test_the_roots_global_instruction_leads_every_agents_and_is_deprecated(
    make: MakeRunner,
) -> None:
    helper_model = ScriptedModel(["helped"])
    helper = LlmAgent(
        name="helper", model=helper_model, instruction="Help.", global_instruction="Not used."
    )
    root_model = ScriptedModel(
        [FunctionCall(id="t1", name="transfer_to_agent", args={"agent_name": "helper"})]
    )
    root = LlmAgent(
        name="root",
        model=root_model,
        instruction="Route.",
        global_instruction="Be kind, {who}.",
        sub_agents=[helper],
    )
    h = await make(root, state={"who": "everyone"})

    with pytest.warns(DeprecationWarning, match="global_instruction is deprecated"):
        await h.start("hi")

    [to_root], [to_helper] = root_model.requests, helper_model.requests
    assert (to_root.config.system_instruction or "").startswith(
        'Be kind, everyone.\n\nRoute.\n\nYou are the agent named "root".'
    )
    assert (to_helper.config.system_instruction or "").startswith(
        'Be kind, everyone.\n\nHelp.\n\nYou are the agent named "helper".'
    )


def test_a_static_instruction_that_is_not_text_is_refused() -> None:
    image = Part(inline_data=Blob(mime_type="image/png", data=b"\x89PNG"))
    with pytest.raises(
        ValueError,
        match=r"'a' has a static_instruction part that is not text \(inline_data image/png\)",
    ):
        LlmAgent(name="a", model="openai/m", static_instruction=["Look:", image])


async def _session_with_artifacts(runner: Runner) -> Harness:
    session = await runner.session_service.create_session(
        app_name="app", user_id="u", state={"topic": "x"}
    )
    assert runner.artifact_service is not None
    saved = {
        "notes.txt": Part(text="remember {milk}"),
        "raw": Part.from_bytes(data=b"hello bytes", mime_type="text/plain; charset=utf-8"),
        "bin": Part.from_bytes(data=b"\x00" * 2048, mime_type="application/x-foo"),
        "user:pref": Part(text="tea"),
    }
    for name, part in saved.items():
        await runner.artifact_service.save_artifact(
            app_name="app", user_id="u", session_id=session.id, filename=name, artifact=part
        )
    return Harness(runner, runner.session_service, session.id)


async def test_an_instructions_artifacts_are_filled_with_their_text(
    stores: StoreFactory, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    chat_server.reply(completion(content="ok"))
    instruction = (
        "N={artifact.notes.txt} R={ artifact.raw } B={artifact.bin} U={artifact.user:pref} "
        "M=[{artifact.missing?}] S={topic}"
    )
    agent = LlmAgent(name="a", model=openai_model, instruction=instruction)
    h = await _session_with_artifacts(runner_with_artifacts(stores, agent))

    await h.start("hi")

    # As google-adk 2.13.0 fills them; an artifact's braces are not filled in turn.
    binary = "[bin: application/x-foo, 2.0 KB of binary data, not shown]"
    assert chat_server.requests[0]["messages"][0] == {
        "role": "system",
        "content": f"N=remember {{milk}} R=hello bytes B={binary} U=tea M=[] S=x\n\n"
        'You are the agent named "a".',
    }


async def test_a_missing_artifact_in_the_instruction_is_named(stores: StoreFactory) -> None:
    agent = LlmAgent(name="a", model=ScriptedModel(), instruction="X={artifact.missing}")
    h = await _session_with_artifacts(runner_with_artifacts(stores, agent))

    with pytest.raises(MissingArtifactError, match=r"^Artifact 'missing' not found in agent 'a'\."):
        await h.start("hi")
    with pytest.raises(KeyError):  # what the reference raises
        await h.start("again")
