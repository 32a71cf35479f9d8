"""The reference's memory, artifact and plugin examples, with only their imports changed
(and a scripted model for Gemini): they run as the reference documents them."""

from __future__ import annotations

from baton.agents import LlmAgent
from baton.agents.callbacks import CallbackContext
from baton.artifacts import InMemoryArtifactService
from baton.memory import InMemoryMemoryService
from baton.models import LlmRequest, ScriptedModel
from baton.plugins.base_plugin import BasePlugin
from baton.runner import Runner
from baton.sessions.services import InMemorySessionService
from baton.tools import ToolContext, load_memory
from baton.types import Content, FunctionCall, Part

APP_NAME = "memory_example_app"
USER_ID = "mem_user"


def gemini(*turns: str | list[FunctionCall]) -> ScriptedModel:
    """Stands in for MODEL = "gemini-2.0-flash" (no API key in tests)."""
    return ScriptedModel(list(turns))


async def test_the_memory_quickstart() -> None:
    info_capture_agent = LlmAgent(
        model=gemini("Noted."),
        name="InfoCaptureAgent",
        instruction="Acknowledge the user's statement.",
    )
    recall_model = gemini(
        [FunctionCall(id="f1", name="load_memory", args={"query": "favorite project"})],
        "Your favorite project is Project Alpha.",
    )
    memory_recall_agent = LlmAgent(
        model=recall_model,
        name="MemoryRecallAgent",
        instruction="Answer the user's question. Use the 'load_memory' tool "
        "if the answer might be in past conversations.",
        tools=[load_memory],
    )
    session_service = InMemorySessionService()
    memory_service = InMemoryMemoryService()

    runner = Runner(
        agent=info_capture_agent,
        app_name=APP_NAME,
        session_service=session_service,
        memory_service=memory_service,
    )
    session1_id = "session_info"
    await runner.session_service.create_session(
        app_name=APP_NAME, user_id=USER_ID, session_id=session1_id
    )
    user_input1 = Content(parts=[Part(text="My favorite project is Project Alpha.")], role="user")
    async for _event in runner.run_async(
        user_id=USER_ID, session_id=session1_id, new_message=user_input1
    ):
        pass
    completed_session1 = await runner.session_service.get_session(
        app_name=APP_NAME, user_id=USER_ID, session_id=session1_id
    )
    assert completed_session1 is not None
    await memory_service.add_session_to_memory(completed_session1)

    runner = Runner(
        agent=memory_recall_agent,
        app_name=APP_NAME,
        session_service=session_service,
        memory_service=memory_service,
    )
    session2_id = "session_recall"
    await runner.session_service.create_session(
        app_name=APP_NAME, user_id=USER_ID, session_id=session2_id
    )
    user_input2 = Content(parts=[Part(text="What is my favorite project?")], role="user")
    final_response_text = "(No final response)"
    async for event in runner.run_async(
        user_id=USER_ID, session_id=session2_id, new_message=user_input2
    ):
        if event.is_final_response() and event.content and event.content.parts:
            final_response_text = event.content.parts[0].text or ""

    assert final_response_text == "Your favorite project is Project Alpha."
    [recalled] = [
        r.response for c in recall_model.requests[1].contents for r in c.function_responses
    ]
    assert recalled is not None
    assert "Project Alpha" in str(recalled["memories"])


class CountInvocationPlugin(BasePlugin):
    """A custom plugin that counts agent and tool invocations."""

    def __init__(self) -> None:
        """Initialize the plugin with counters."""
        super().__init__(name="count_invocation")
        self.agent_count: int = 0
        self.tool_count: int = 0
        self.llm_request_count: int = 0

    async def before_agent_callback(
        self, *, agent: object, callback_context: CallbackContext
    ) -> None:
        """Count agent runs."""
        self.agent_count += 1

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> None:
        """Count LLM requests."""
        self.llm_request_count += 1


async def test_the_plugin_and_artifact_examples() -> None:
    async def save_report(text: str, tool_context: ToolContext) -> dict[str, int]:
        """Save a report.

        Args:
            text: the report.
        """
        version = await tool_context.save_artifact(filename="report.txt", artifact=Part(text=text))
        return {"version": version}

    root_agent = LlmAgent(
        model=gemini(
            [FunctionCall(id="s1", name="save_report", args={"text": "all good"})], "saved"
        ),
        name="hello_world",
        tools=[save_report],
    )
    plugin = CountInvocationPlugin()
    artifact_service = InMemoryArtifactService()
    runner = Runner(
        agent=root_agent,
        app_name="test_app_with_plugin",
        session_service=InMemorySessionService(),
        artifact_service=artifact_service,
        plugins=[plugin],
    )
    session = await runner.session_service.create_session(
        user_id="user", app_name="test_app_with_plugin"
    )
    async for _event in runner.run_async(
        user_id="user",
        session_id=session.id,
        new_message=Content(role="user", parts=[Part.from_text(text="hello")]),
    ):
        pass

    assert (plugin.agent_count, plugin.llm_request_count) == (1, 2)
    report = await artifact_service.load_artifact(
        app_name="test_app_with_plugin",
        user_id="user",
        session_id=session.id,
        filename="report.txt",
    )
    assert report == Part(text="all good")
