"""`enterprise_web_search`, the reference's Gemini built-in Enterprise Web Search (refused
by baton's models, see `baton.tools.gemini_builtin`)."""

from __future__ import annotations

from typing import final

from baton.tools.gemini_builtin import GeminiBuiltInTool
from baton.types import EnterpriseWebSearch, Tool

__all__ = ["EnterpriseWebSearchTool", "enterprise_web_search_tool"]


@final
class EnterpriseWebSearchTool(GeminiBuiltInTool):
    """Gemini's Enterprise Web Search grounding."""

    def __init__(self) -> None:
        super().__init__(
            name="enterprise_web_search",
            label="Enterprise Web Search tool",
            entry=Tool(enterprise_web_search=EnterpriseWebSearch()),
        )


enterprise_web_search_tool = EnterpriseWebSearchTool()
