"""Tools an LLM agent's model can call: BaseTool, FunctionTool, LongRunningFunctionTool,
AgentTool, and the reference's ready-made ones (exit_loop, get_user_choice,
transfer_to_agent, load_artifacts, load_memory, preload_memory; Gemini's built-ins google_search,
url_context and enterprise_web_search, which baton's models refuse)."""

from typing import TYPE_CHECKING, Any

from baton.tools.base import BaseTool, to_function_response, to_response_dict
from baton.tools.confirmation import ToolConfirmation
from baton.tools.enterprise_search_tool import enterprise_web_search_tool as enterprise_web_search
from baton.tools.exit_loop import exit_loop
from baton.tools.function_tool import FunctionTool, LongRunningFunctionTool
from baton.tools.get_user_choice_tool import get_user_choice_tool as get_user_choice
from baton.tools.google_search_tool import google_search
from baton.tools.load_artifacts_tool import load_artifacts_tool as load_artifacts
from baton.tools.memory_tools import LoadMemoryTool, PreloadMemoryTool, load_memory, preload_memory
from baton.tools.tool_context import ToolContext, ToolState
from baton.tools.transfer_to_agent_tool import TransferToAgentTool, transfer_to_agent
from baton.tools.url_context_tool import url_context

if TYPE_CHECKING:  # read on first use at run time (see __getattr__), typed for checkers
    from baton.agents.delegation import AgentTool
    from baton.tools.mcp_tool import McpToolset

    MCPToolset = McpToolset  # the reference's older name

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
    "TransferToAgentTool",
    "enterprise_web_search",
    "exit_loop",
    "get_user_choice",
    "google_search",
    "load_artifacts",
    "load_memory",
    "preload_memory",
    "to_function_response",
    "to_response_dict",
    "transfer_to_agent",
    "url_context",
]


def __getattr__(name: str) -> Any:
    """`AgentTool` lives with the agents, which import this package for the tool base
    types (base_agent -> callbacks -> baton.tools: a plain import here would load
    delegation while base_agent is half made). `McpToolset` needs the MCP SDK, an
    optional extra (`pip install 'baton[mcp]'`; it is left out of `__all__`) whose ~390
    modules would cost `import baton` 58% more instructions (callgrind: 4.1G -> 6.5G).
    Each is read on first use."""
    if name == "AgentTool":
        from baton.agents.delegation import AgentTool

        return AgentTool
    if name in ("McpToolset", "MCPToolset"):  # the second, the reference's older name
        from baton.tools.mcp_tool import McpToolset

        return McpToolset
    raise AttributeError(f"module 'baton.tools' has no attribute {name!r}")
