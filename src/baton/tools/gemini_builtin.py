"""Gemini's built-in tools (google_search, url_context, enterprise_web_search): tools the
reference asks a Gemini model to run itself. baton's models speak the OpenAI
chat-completions protocol, which has no place for them, so an agent listing one fails
before its model is asked, where the reference fails for a model it does not support."""

from __future__ import annotations

from pydantic import JsonValue

from baton.models.llm import LlmRequest
from baton.tools.base import BaseTool
from baton.tools.tool_context import ToolContext

__all__ = ["GeminiBuiltInTool", "unsupported_built_in"]


def unsupported_built_in(what: str, model: str | None) -> ValueError:
    """The error for a Gemini built-in `what` asked of `model`, saying what to do instead."""
    return ValueError(
        f"{what} is not supported for model {model}: it is a Gemini built-in the model runs "
        "itself, and baton sends model requests over the OpenAI chat-completions protocol, "
        "which has no place for it. Remove it from the agent, or give the agent a "
        "FunctionTool that does the same through an API of your own."
    )


class GeminiBuiltInTool(BaseTool):
    """A tool the model runs itself; the model is never told of it by a declaration.

    Args:
        name: the reference's name for it.
        label: how the error names it (the reference's wording, e.g. "Google search tool").
    """

    def __init__(self, *, name: str, label: str) -> None:
        super().__init__(name=name, description=name)
        self.label = label

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        """Refuse the request before it is sent.

        Raises:
            ValueError: always (no baton model runs Gemini's built-in tools).
        """
        raise unsupported_built_in(self.label, llm_request.model)

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """Never reached: the request that would offer the tool is refused first.

        Raises:
            ValueError: always.
        """
        raise unsupported_built_in(self.label, None)
