"""`end_invocation` set on the invocation context ends the agent that set it, as in the
reference: an LlmAgent's tool stops its run after the tool's result, a before-agent
callback skips the agent, and its after-agent callback is not called. The agent's
parent goes on (a sequence's next agent runs), as the reference's does."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from baton import Event, InMemoryRunner, InvocationContext, types
from baton.agents import BaseAgent, LlmAgent, SequentialAgent
from baton.agents.callbacks import CallbackContext
from baton.models import ScriptedModel
from baton.tools import ToolContext
from baton.types import FunctionCall


class After(BaseAgent):
    """Says that it ran."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        yield Event(author=self.name, content=types.ModelContent("after ran"))


class Stopper(BaseAgent):
    """Ends its own run and says so."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        ctx.end_invocation = True
        yield Event(author=self.name, content=types.ModelContent("stopping"))


def stop(tool_context: ToolContext) -> str:
    """Stops the agent."""
    tool_context._invocation_context.end_invocation = True  # pyright: ignore[reportPrivateUsage] -- the reference's documented way
    return "stopped"


def _model() -> ScriptedModel:
    return ScriptedModel([FunctionCall(id="c1", name="stop", args={}), "turn 2", "turn 3"])


async def _said(agent: BaseAgent) -> list[tuple[str, str]]:
    runner = InMemoryRunner(agent=agent, app_name="app")
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    said: list[tuple[str, str]] = []
    message = types.UserContent("hi")
    async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        for part in (event.content.parts or []) if event.content else []:
            if part.text:
                said.append((event.author, part.text))
            elif part.function_call:
                said.append((event.author, f"call {part.function_call.name}"))
            elif part.function_response:
                said.append((event.author, f"result {part.function_response.name}"))
    return said


async def test_a_tool_setting_end_invocation_ends_its_agent_after_its_result() -> None:
    assert await _said(LlmAgent(name="l", model=_model(), tools=[stop])) == [
        ("l", "call stop"),
        ("l", "result stop"),
    ]
    sequence = SequentialAgent(
        name="s", sub_agents=[LlmAgent(name="l", model=_model(), tools=[stop]), After(name="b")]
    )
    assert await _said(sequence) == [("l", "call stop"), ("l", "result stop"), ("b", "after ran")]


async def test_a_before_agent_callback_setting_end_invocation_skips_the_agent() -> None:
    called: list[str] = []

    def before(callback_context: CallbackContext) -> None:
        callback_context._invocation_context.end_invocation = True  # pyright: ignore[reportPrivateUsage] -- as the reference's users write it

    def after(callback_context: CallbackContext) -> None:
        called.append(callback_context.agent_name)

    skipped = LlmAgent(
        name="l", model=_model(), before_agent_callback=before, after_agent_callback=after
    )
    assert await _said(SequentialAgent(name="s", sub_agents=[skipped, After(name="b")])) == [
        ("b", "after ran")
    ]
    assert called == []


async def test_an_agent_setting_end_invocation_skips_its_after_callback_only() -> None:
    called: list[str] = []

    def after(callback_context: CallbackContext) -> None:
        called.append(callback_context.agent_name)

    stopper = Stopper(name="a", after_agent_callback=after)
    assert await _said(SequentialAgent(name="s", sub_agents=[stopper, After(name="b")])) == [
        ("a", "stopping"),
        ("b", "after ran"),
    ]
    assert called == []
