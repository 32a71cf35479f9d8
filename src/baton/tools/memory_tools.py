"""The reference's memory tools: `load_memory` (the model searches) and `preload_memory`
(every model request carries what the user's message recalls)."""

from __future__ import annotations

from typing import final

from pydantic import JsonValue

from baton.memory import MemoryEntry
from baton.models.llm import FunctionDeclaration, LlmRequest
from baton.tools.base import BaseTool
from baton.tools.function_tool import FunctionTool
from baton.tools.tool_context import ToolContext
from baton.types import Content, Part

__all__ = ["LoadMemoryTool", "PreloadMemoryTool", "load_memory", "preload_memory"]

_LOAD_INSTRUCTION = (
    "You have memory of past conversations with this user. When a question needs it, "
    "call load_memory with a query."
)


async def _load_memory(query: str, tool_context: ToolContext) -> dict[str, JsonValue]:
    """Search the memory of past conversations with this user.

    Args:
        query: words to look for.
    """
    found = await tool_context.search_memory(query)
    return {"memories": [m.to_wire() for m in found.memories]}


@final
class LoadMemoryTool(FunctionTool):
    """`load_memory(query)`: the model searches the user's memory."""

    def __init__(self) -> None:
        super().__init__(_load_memory, name="load_memory")

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        """Tell the model it has memory to search."""
        llm_request.append_instructions([_LOAD_INSTRUCTION])


@final
class PreloadMemoryTool(BaseTool):
    """Not called by the model: before each model call, what the user's message recalls
    from memory is put in the request as a user message."""

    def __init__(self) -> None:
        super().__init__(name="preload_memory", description="preload_memory")

    def declaration(self) -> FunctionDeclaration | None:
        """None: the model is not told about this tool."""
        return None

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """The model cannot call it; a call gets an error it can act on."""
        return {"error": "preload_memory is not a tool to call; memory is already given."}

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        """Add the memories the user's message recalls (nothing when none)."""
        query = tool_context.user_content.text if tool_context.user_content else ""
        if not query.strip():
            return
        found = await tool_context.search_memory(query)
        lines = [line for memory in found.memories for line in _lines(memory)]
        if not lines:
            return
        recalled = "\n".join(lines)
        text = (
            "The following content is from your previous conversations with the user. "
            "It may help with the current message.\n<PAST_CONVERSATIONS>\n"
            f"{recalled}\n</PAST_CONVERSATIONS>"
        )
        llm_request.contents.insert(
            max(len(llm_request.contents) - 1, 0),
            Content(role="user", parts=[Part(text=text)]),
        )


def _lines(memory: MemoryEntry) -> list[str]:
    said = " ".join(p.text for p in memory.content.parts or [] if p.text)
    if not said:
        return []
    when = [f"Time: {memory.timestamp}"] if memory.timestamp else []
    return [*when, f"{memory.author}: {said}" if memory.author else said]


load_memory = LoadMemoryTool()
"""The reference's `load_memory` tool instance."""

preload_memory = PreloadMemoryTool()
"""The reference's `preload_memory` tool instance."""
