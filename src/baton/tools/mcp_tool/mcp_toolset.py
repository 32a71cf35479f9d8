"""McpToolset: the tools of an MCP server, offered to an agent's model
(`LlmAgent(tools=[McpToolset(connection_params=...)])`).

The toolset lists the server's tools for each invocation and keeps its session open
between calls and turns (a stdio server's process runs until the toolset closes). A
Runner closes the toolsets of its agents when it closes; a closed toolset opens a new
session when it is used again, as does a session that died (the server restarted, the
run resumed in another process).
"""

from __future__ import annotations

import logging
import sys
import warnings
from typing import TextIO

from baton.readonly_context import ReadonlyContext
from baton.tools.base import BaseTool
from baton.tools.base_toolset import BaseToolset, ToolPredicate
from baton.tools.confirmation import ConfirmationRule, check_rule
from baton.tools.mcp_tool.mcp_session_manager import (
    ConnectionParams,
    MCPSessionManager,
    SseConnectionParams,
    StdioConnectionParams,
    StdioServerParameters,
    StreamableHTTPConnectionParams,
)
from baton.tools.mcp_tool.mcp_tool import RESERVED_NAMES, HeaderProvider, McpTool, provide_headers
from baton.tools.mcp_tool.sdk import mcp_types

__all__ = [
    "MCPToolset",
    "McpToolset",
    "SseConnectionParams",
    "StdioConnectionParams",
    "StdioServerParameters",
    "StreamableHTTPConnectionParams",
]

_log = logging.getLogger(__name__)


class McpToolset(BaseToolset):  # not final: MCPToolset, its older name, subclasses it
    """The tools of one MCP server.

    Args:
        connection_params: how to reach the server: `StdioConnectionParams` (a local
            command, e.g. `python server.py` or `npx ...`), `StreamableHTTPConnectionParams`
            or `SseConnectionParams` (a URL); a bare `mcp.StdioServerParameters` has a
            5 second timeout.
        tool_filter: the names of the tools to offer, or a `ToolPredicate`.
        tool_name_prefix: offer the tools as `<prefix>_<name>`.
        errlog: where a stdio server's stderr goes.
        require_confirmation: a person must approve each call of its tools before it is
            sent (True), or the calls a function of the arguments picks (see
            `FunctionTool`); the run waits for the answer, as for a FunctionTool.
        header_provider: request headers for each run (listing and calls), from its
            ReadonlyContext, e.g. the user's token; each distinct set of headers has a
            session of its own. Ignored by a stdio server, which has no headers.

    Raises:
        ValueError: no connection_params.
        TypeError: connection_params is none of the classes above; require_confirmation
            is neither a bool nor a function.
    """

    def __init__(
        self,
        *,
        connection_params: ConnectionParams,
        tool_filter: ToolPredicate | list[str] | None = None,
        tool_name_prefix: str | None = None,
        errlog: TextIO = sys.stderr,
        require_confirmation: ConfirmationRule = False,
        header_provider: HeaderProvider | None = None,
    ) -> None:
        super().__init__(tool_filter=tool_filter, tool_name_prefix=tool_name_prefix)
        if not connection_params:
            raise ValueError("Missing connection params in McpToolset.")
        self._connection_params = connection_params
        self._errlog = errlog
        self._mcp_session_manager = MCPSessionManager(connection_params, errlog)
        self._require_confirmation = check_rule(require_confirmation, "McpToolset")
        self._header_provider = header_provider

    @property
    def connection_params(self) -> ConnectionParams:
        return self._connection_params

    @property
    def errlog(self) -> TextIO:
        return self._errlog

    @property
    def require_confirmation(self) -> ConfirmationRule:
        return self._require_confirmation

    @property
    def header_provider(self) -> HeaderProvider | None:
        return self._header_provider

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The server's tools that `tool_filter` selects, by name. A tool named as a
        function baton reserves is left out (and logged).

        Args:
            readonly_context: the run asking (None: outside a run, without headers from
                `header_provider`).

        Raises:
            ConnectionError: the server could not be reached or refused the listing
                (after a second try).
        """
        headers = None
        if self._header_provider is not None and readonly_context is not None:
            headers = await provide_headers(self._header_provider, readonly_context)
        tools: list[BaseTool] = []
        for listed in await self._list_tools(headers):
            if listed.name in RESERVED_NAMES:
                _log.warning("MCP tool '%s' left out: baton reserves its name.", listed.name)
                continue
            tool = McpTool(
                mcp_tool=listed,
                mcp_session_manager=self._mcp_session_manager,
                require_confirmation=self._require_confirmation,
                header_provider=self._header_provider,
            )
            if self._is_tool_selected(tool, readonly_context):
                tools.append(tool)
        return sorted(tools, key=lambda tool: tool.name)

    async def close(self) -> None:
        """Close the sessions to the server (a stdio server's process ends). Safe to call
        again; the toolset opens a new session if it is used after."""
        await self._mcp_session_manager.close()

    async def _list_tools(self, headers: dict[str, str] | None) -> list[mcp_types.Tool]:
        """The server's listing; tried twice, as the reference does (a listing has no side
        effects, and a second try opens a new session if the first one died)."""
        try:
            return await self._list_once(headers)
        except Exception as error:
            _log.info("listing the tools of an MCP server failed, trying again: %s", error)
        try:
            return await self._list_once(headers)
        except Exception as error:
            raise ConnectionError(f"Failed to get tools from MCP server: {error}") from error

    async def _list_once(self, headers: dict[str, str] | None) -> list[mcp_types.Tool]:
        result = await self._mcp_session_manager.run(lambda session: session.list_tools(), headers)
        return list(result.tools)


class MCPToolset(McpToolset):
    """The reference's older name of `McpToolset` (it warns, as the reference does)."""

    def __init__(
        self,
        *,
        connection_params: ConnectionParams,
        tool_filter: ToolPredicate | list[str] | None = None,
        tool_name_prefix: str | None = None,
        errlog: TextIO = sys.stderr,
        require_confirmation: ConfirmationRule = False,
        header_provider: HeaderProvider | None = None,
    ) -> None:
        warnings.warn(
            "MCPToolset is the older name of McpToolset; use McpToolset.",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(
            connection_params=connection_params,
            tool_filter=tool_filter,
            tool_name_prefix=tool_name_prefix,
            errlog=errlog,
            require_confirmation=require_confirmation,
            header_provider=header_provider,
        )
