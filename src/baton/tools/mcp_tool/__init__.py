"""MCP servers as tools: `McpToolset(connection_params=...)` offers an MCP server's tools
to an agent's model, as the reference's `google.adk.tools.mcp_tool`.

Needs the MCP SDK (`pip install 'baton[mcp]'`); importing this package without it raises
ImportError saying so. `baton` itself imports without it.
"""

from baton.tools.mcp_tool.mcp_session_manager import (
    MCPSessionManager,
    SseConnectionParams,
    SseServerParams,
    StdioConnectionParams,
    StdioServerParameters,
    StreamableHTTPConnectionParams,
    StreamableHTTPServerParams,
)
from baton.tools.mcp_tool.mcp_tool import IDEMPOTENCY_META_KEY, McpTool
from baton.tools.mcp_tool.mcp_toolset import MCPToolset, McpToolset

__all__ = [
    "IDEMPOTENCY_META_KEY",
    "MCPSessionManager",
    "MCPToolset",
    "McpTool",
    "McpToolset",
    "SseConnectionParams",
    "SseServerParams",
    "StdioConnectionParams",
    "StdioServerParameters",
    "StreamableHTTPConnectionParams",
    "StreamableHTTPServerParams",
]
