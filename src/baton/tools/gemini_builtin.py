"""Gemini's built-in tools (google_search, url_context, enterprise_web_search): tools a
Gemini model runs itself. As in the reference, listing one adds its entry to the request
(`types.Tool(google_search=types.GoogleSearch())`) when the model's name is a Gemini one,
and fails the run before the model is asked otherwise. baton's own models speak the OpenAI
chat-completions protocol, which has no place for them: they refuse such a request,
naming the tool and the model (`baton.models.gemini_only`); a model of the user's that
speaks Gemini's protocol receives the entry."""

from __future__ import annotations

from pydantic import JsonValue

from baton.models.gemini_only import is_gemini_model, unsupported_built_in
from baton.models.llm import LlmRequest
from baton.tools.base import BaseTool
from baton.tools.tool_context import ToolContext
from baton.types import Tool

__all__ = ["GeminiBuiltInTool", "offer_built_in", "unsupported_built_in"]


def offer_built_in(entry: Tool, label: str, llm_request: LlmRequest) -> None:
    """Add a built-in tool's `entry` to a request for a Gemini model.

    Raises:
        ValueError: the request's model is not a Gemini one (named by `label`).
    """
    if not is_gemini_model(llm_request.model):
        raise unsupported_built_in(label, llm_request.model)
    llm_request.config.tools.append(entry)


class GeminiBuiltInTool(BaseTool):
    """A tool the model runs itself; the model is never told of it by a declaration.

    Args:
        name: the reference's name for it.
        label: how the error names it (the reference's wording, e.g. "Google search tool").
        entry: what it adds to the request's `config.tools`.
    """

    def __init__(self, *, name: str, label: str, entry: Tool) -> None:
        super().__init__(name=name, description=name)
        self.label = label
        self.entry = entry

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        """Offer the tool to a Gemini model.

        Raises:
            ValueError: the model is not a Gemini one.
        """
        offer_built_in(self.entry.model_copy(deep=True), self.label, llm_request)

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """Never reached: the model runs the tool itself and never calls it by name.

        Raises:
            ValueError: always.
        """
        raise unsupported_built_in(self.label, None)
