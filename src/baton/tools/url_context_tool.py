"""`url_context`, the reference's Gemini built-in URL reader (see `baton.tools.gemini_builtin`)."""

from __future__ import annotations

from typing import final

from baton.tools.gemini_builtin import GeminiBuiltInTool
from baton.types import Tool, UrlContext

__all__ = ["UrlContextTool", "url_context"]


@final
class UrlContextTool(GeminiBuiltInTool):
    """Gemini's URL context: the model reads the URLs in the conversation itself."""

    def __init__(self) -> None:
        super().__init__(
            name="url_context", label="Url context tool", entry=Tool(url_context=UrlContext())
        )


url_context = UrlContextTool()
