"""Tools an LLM agent's model can call: BaseTool, FunctionTool, LongRunningFunctionTool,
exit_loop."""

from baton.tools.base import BaseTool, to_function_response, to_response_dict
from baton.tools.confirmation import ToolConfirmation
from baton.tools.exit_loop import exit_loop
from baton.tools.function_tool import FunctionTool, LongRunningFunctionTool
from baton.tools.memory_tools import LoadMemoryTool, PreloadMemoryTool, load_memory, preload_memory
from baton.tools.tool_context import ToolContext, ToolState

__all__ = [
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
