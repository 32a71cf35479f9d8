"""`google_search`, the reference's Gemini built-in search (refused by baton's models,
see `baton.tools.gemini_builtin`)."""

from __future__ import annotations

from typing import final

from baton.tools.gemini_builtin import GeminiBuiltInTool

__all__ = ["GoogleSearchTool", "google_search"]


@final
class GoogleSearchTool(GeminiBuiltInTool):
    """Gemini's Google Search grounding.

    Args:
        bypass_multi_tools_limit, model: the reference's options, kept as attributes (an
            agent listing the tool fails before either could matter).
    """

    def __init__(self, *, bypass_multi_tools_limit: bool = False, model: str | None = None):
        super().__init__(name="google_search", label="Google search tool")
        self.bypass_multi_tools_limit = bypass_multi_tools_limit
        self.model = model


google_search = GoogleSearchTool()
