"""Tools an LLM agent's model can call: BaseTool, FunctionTool, LongRunningFunctionTool,
AgentTool, exit_loop."""

from typing import TYPE_CHECKING, Any

from baton.tools.base import BaseTool, to_function_response, to_response_dict
from baton.tools.confirmation import ToolConfirmation
from baton.tools.exit_loop import exit_loop
from baton.tools.function_tool import FunctionTool, LongRunningFunctionTool
from baton.tools.memory_tools import LoadMemoryTool, PreloadMemoryTool, load_memory, preload_memory
from baton.tools.tool_context import ToolContext, ToolState

if TYPE_CHECKING:
    from baton.agents.delegation import AgentTool

__all__ = [
    "AgentTool",
    "BaseTool",
    "FunctionTool",
    "LoadMemoryTool",
    "LongRunningFunctionTool",
    "PreloadMemoryTool",
    "ToolConfirmation",
    "ToolContext",
    "ToolState",
    "exit_loop",
    "load_memory",
    "preload_memory",
    "to_function_response",
    "to_response_dict",
]


def __getattr__(name: str) -> Any:
    """`AgentTool` lives with the agents (which import this package): read on first use."""
    if name == "AgentTool":
        from baton.agents.delegation import AgentTool

        return AgentTool
    raise AttributeError(f"module 'baton.tools' has no attribute {name!r}")
