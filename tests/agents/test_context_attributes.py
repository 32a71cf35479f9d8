"""ToolContext and CallbackContext carry the run's invocation as the reference's do:
`user_id`, `session`, `branch`, `invocation_context` and `run_config`."""

from __future__ import annotations

from typing import Any

import pytest

from baton import InMemorySessionService, Runner, types
from baton.agents import LlmAgent
from baton.agents.callbacks import CallbackContext
from baton.models import ScriptedModel
from baton.run_config import RunConfig
from baton.tools import ToolContext
from baton.types import FunctionCall


async def test_tool_and_callback_contexts_name_the_run() -> None:
    seen: dict[str, Any] = {}

    def look(tool_context: ToolContext) -> str:
        """Looks around."""
        seen["tool"] = (
            tool_context.user_id,
            tool_context.session.id,
            tool_context.branch,
            tool_context.run_config.custom_metadata,
            tool_context.invocation_context.invocation_id == tool_context.invocation_id,
        )
        return "ok"

    def before_model(callback_context: CallbackContext, llm_request: Any) -> None:
        seen["callback"] = (
            callback_context.user_id,
            callback_context.session.id,
            callback_context.run_config.custom_metadata,
        )

    model = ScriptedModel([FunctionCall(name="look", args={}, id="c1"), "done"])
    agent = LlmAgent(name="a", model=model, tools=[look], before_model_callback=before_model)
    service = InMemorySessionService()
    runner = Runner(app_name="x", agent=agent, session_service=service)
    session = await service.create_session(app_name="x", user_id="ann")
    message = types.Content(role="user", parts=[types.Part(text="hi")])
    config = RunConfig(custom_metadata={"k": 1})
    async for _ in runner.run_async(
        user_id="ann", session_id=session.id, new_message=message, run_config=config
    ):
        pass
    assert seen == {
        "tool": ("ann", session.id, None, {"k": 1}, True),
        "callback": ("ann", session.id, {"k": 1}),
    }


def test_a_context_made_by_hand_says_it_has_no_invocation() -> None:
    with pytest.raises(ValueError, match="made outside a run and has no invocation"):
        _ = ToolContext().session
