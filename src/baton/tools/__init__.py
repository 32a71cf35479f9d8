"""Tools an LLM agent's model can call: BaseTool, FunctionTool, LongRunningFunctionTool."""

from baton.tools.base import BaseTool, to_function_response, to_response_dict
from baton.tools.confirmation import ToolConfirmation
from baton.tools.function_tool import FunctionTool, LongRunningFunctionTool
from baton.tools.tool_context import ToolContext, ToolState

__all__ = [
    "BaseTool",
    "FunctionTool",
    "LongRunningFunctionTool",
    "ToolConfirmation",
    "ToolContext",
    "ToolState",
    "to_function_response",
    "to_response_dict",
]
