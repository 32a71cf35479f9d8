"""get_user_choice: the reference's long-running tool that asks the user to choose one of
the options the model gives; the user's answer (a FunctionResponse to the call) is the
choice, and the model is asked again with it."""

from __future__ import annotations

from baton.tools.function_tool import LongRunningFunctionTool
from baton.tools.tool_context import ToolContext

__all__ = ["get_user_choice", "get_user_choice_tool"]


def get_user_choice(options: list[str], tool_context: ToolContext) -> str | None:
    """Provides the options to the user and asks them to choose one."""
    tool_context.actions.skip_summarization = True
    return None


get_user_choice_tool = LongRunningFunctionTool(get_user_choice)
"""The tool (`baton.tools.get_user_choice`): its calls wait for the user's choice."""
