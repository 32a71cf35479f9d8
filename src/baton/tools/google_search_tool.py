"""`google_search`, the reference's Gemini built-in search (see `baton.tools.gemini_builtin`)."""

from __future__ import annotations

from typing import final

from baton.models.llm import LlmRequest
from baton.tools.gemini_builtin import GeminiBuiltInTool
from baton.tools.tool_context import ToolContext
from baton.types import GoogleSearch, Tool

__all__ = ["GoogleSearchTool", "google_search"]


@final
class GoogleSearchTool(GeminiBuiltInTool):
    """Gemini's Google Search grounding.

    Args:
        bypass_multi_tools_limit: the reference's option for Gemini 1.x models, which take
            search alone; kept as an attribute.
        model: the model the request is sent to instead (`llm_request.model`), as the
            reference's option does.
    """

    def __init__(self, *, bypass_multi_tools_limit: bool = False, model: str | None = None):
        super().__init__(
            name="google_search",
            label="Google search tool",
            entry=Tool(google_search=GoogleSearch()),
        )
        self.bypass_multi_tools_limit = bypass_multi_tools_limit
        self.model = model

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        """Send the request to `model` when given, and offer search to a Gemini model.

        Raises:
            ValueError: the model is not a Gemini one.
        """
        if self.model is not None:
            llm_request.model = self.model
        await super().process_llm_request(tool_context=tool_context, llm_request=llm_request)


google_search = GoogleSearchTool()
