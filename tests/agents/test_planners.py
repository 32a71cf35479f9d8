"""An LlmAgent's planner, from the user's side over the chat-completions protocol: what
the model is sent, and what the agent's turn keeps of its reply."""

from __future__ import annotations

from typing import Any

from typing_extensions import override

from baton.agents import LlmAgent
from baton.agents.callbacks import CallbackContext
from baton.models import LlmRequest, OpenAiModel
from baton.planners import BasePlanner, BuiltInPlanner, PlanReActPlanner
from baton.planners.plan_re_act_planner import FINAL_ANSWER_TAG, PLANNING_TAG
from baton.readonly_context import ReadonlyContext
from baton.run_config import RunConfig, StreamingMode
from baton.types import Content, GenerateContentConfig, Part, ThinkingConfig, ThinkingLevel
from baton.workflow import Workflow
from tests.agents.conftest import MakeRunner
from tests.models.chat_server import ChatServer, chunk, completion


async def test_a_built_in_planners_thinking_level_replaces_the_agents(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    chat_server.reply(completion(content="done"))
    agent = LlmAgent(
        name="a",
        model=openai_model,
        generate_content_config=GenerateContentConfig(
            temperature=0.5, thinking_config=ThinkingConfig(thinking_level=ThinkingLevel.LOW)
        ),
        planner=BuiltInPlanner(thinking_config=ThinkingConfig(thinking_level=ThinkingLevel.HIGH)),
    )
    h = await make(agent)

    await h.start("hi")

    sent = chat_server.requests[0]
    assert sent["reasoning_effort"] == "high"
    assert sent["temperature"] == 0.5
    assert sent["messages"][0] == {
        "role": "system",
        "content": 'You are the agent named "a".',
    }


async def test_a_plan_re_act_reply_is_split_into_thoughts_and_the_answer(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    planner = PlanReActPlanner()
    chat_server.reply(
        completion(content=f"{PLANNING_TAG}1. look it up{FINAL_ANSWER_TAG}Paris is the capital.")
    )
    chat_server.reply(completion(content="again"))
    agent = LlmAgent(
        name="a", model=openai_model, instruction="be a", planner=planner, output_key="answer"
    )
    h = await make(agent)

    events = await h.start("capital of France?")

    [turn] = [e.content for e in events if e.author == "a" and e.content]
    assert turn.parts == [
        Part(text="1. look it up", thought=True),
        Part(text="Paris is the capital."),
    ]
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state["answer"] == "Paris is the capital."
    messages: list[dict[str, Any]] = chat_server.requests[0]["messages"]
    assert messages[0]["role"] == "system"
    told: str = messages[0]["content"]
    head = 'be a\n\nYou are the agent named "a".\n\n'
    assert told.startswith(head)
    tags = ("/*PLANNING*/", "/*ACTION*/", "/*REASONING*/", "/*REPLANNING*/", "/*FINAL_ANSWER*/")
    assert all(tag in told[len(head) :] for tag in tags)

    # The next turn shows the model its earlier plan as plain text, as the reference does.
    await h.start("and Italy?")

    assert chat_server.requests[1]["messages"][2:] == [
        {"role": "assistant", "content": "1. look it upParis is the capital."},
        {"role": "user", "content": "and Italy?"},
    ]


class Recording(BasePlanner):
    """Adds an instruction naming the agent, and keeps only the reply's last part."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @override
    def build_planning_instruction(
        self, readonly_context: ReadonlyContext, llm_request: LlmRequest
    ) -> str | None:
        self.seen.append(f"asked {readonly_context.agent_name}")
        return f"plan for {readonly_context.agent_name}"

    @override
    def process_planning_response(
        self, callback_context: CallbackContext, response_parts: list[Part]
    ) -> list[Part] | None:
        self.seen.append(f"answered {[p.text for p in response_parts]}")
        callback_context.state["planned"] = True
        return [Part(text=f"planned: {response_parts[-1].text}")]


async def test_a_custom_planners_hooks_shape_the_request_and_the_reply(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    planner = Recording()
    chat_server.reply(completion(content="done"))
    h = await make(LlmAgent(name="a", model=openai_model, planner=planner))

    events = await h.start("hi")

    assert planner.seen == ["asked a", "answered ['done']"]
    assert chat_server.requests[0]["messages"][0]["content"].endswith("\n\nplan for a")
    [turn] = [e.content for e in events if e.author == "a" and e.content]
    assert turn.parts == [Part(text="planned: done")]
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state["planned"] is True


async def test_streamed_plan_re_act_chunks_pass_the_planner_and_the_next_node_gets_the_answer(
    make: MakeRunner, chat_server: ChatServer, openai_model: OpenAiModel
) -> None:
    said = [f"{PLANNING_TAG}1. greet", " the user\n", f"{FINAL_ANSWER_TAG}Hel", "lo"]
    chat_server.reply([chunk({"role": "assistant", "content": c}) for c in said])
    got: list[object] = []

    def after(node_input: str) -> str:
        got.append(node_input)
        return "done"

    agent = LlmAgent(name="a", model=openai_model, planner=PlanReActPlanner())
    h = await make(Workflow(name="w", edges=[("START", agent, after)]))

    events = await h.collect(
        new_message=Content(role="user", parts=[Part(text="hi")]),
        run_config=RunConfig(streaming_mode=StreamingMode.SSE),
    )

    # Each chunk passes the planner on its own, as in google-adk 2.13.0: the tags never
    # reach the caller, a chunk opening with a planning tag is a thought.
    streamed = [e.content.parts for e in events if e.partial and e.content]
    assert streamed == [
        [Part(text="1. greet", thought=True)],
        [Part(text=" the user\n")],
        [Part(text="Hel")],
        [Part(text="lo")],
    ]
    [turn] = [e.content for e in events if e.author == "a" and e.content and not e.partial]
    assert turn.parts == [Part(text="1. greet the user\n", thought=True), Part(text="Hello")]
    assert got == ["Hello"]
