"""McpTool: one tool of an MCP server, as a tool the model calls.

Its declaration is the server's: name, description, and the input schema as the JSON
schema of the parameters. A call goes to the server on the toolset's open session; the
result reaches the model as the server's `CallToolResult` (`content`, `structuredContent`,
`isError`), as in the reference, so a tool's own failure (`isError: true`) is the model's
to read. A failure to reach the server, or an error the server answers the request with,
is given to the model as `{"error": "..."}` rather than failing the run, as the reference
does. Like any tool call, its result is committed once it returns: a resumed or recovered
run does not call the server again for it. A call in flight at a crash runs again (at
least once); each call carries its `tool_context.idempotency_key` in the request's
`_meta` under `IDEMPOTENCY_META_KEY`, the same on the call run again, so a server can
deduplicate it.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Final, Protocol, TypeAlias, cast, final

from pydantic import JsonValue

from baton.agents.transfer import TRANSFER_FUNCTION
from baton.events import REQUEST_CONFIRMATION_FUNCTION, REQUEST_INPUT_FUNCTION
from baton.models.llm import LlmRequest
from baton.readonly_context import ReadonlyContext
from baton.threads import run_sync
from baton.tools.base import BaseTool, hold_for_confirmation
from baton.tools.confirmation import ConfirmationRule, check_rule, needs_confirmation
from baton.tools.fencing import send_fenced
from baton.tools.mcp_tool.mcp_session_manager import MCPSessionManager
from baton.tools.mcp_tool.sdk import McpError, dump, field, mcp_types
from baton.tools.tool_context import ToolContext
from baton.types import FunctionDeclaration
from baton.ui_widget import UiWidget

__all__ = [
    "IDEMPOTENCY_META_KEY",
    "RESERVED_NAMES",
    "HeaderProvider",
    "McpTool",
    "ProgressCallback",
    "ProgressFn",
    "provide_headers",
]

_log = logging.getLogger(__name__)


class ProgressFn(Protocol):
    """Receives a call's progress notifications (the SDK calls it positionally)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        """One notification: how far, out of how much (if known), and what it says."""
        ...


ProgressCallback: TypeAlias = ProgressFn | Callable[..., ProgressFn | None]
"""A `ProgressFn` for every call (an async function), or a plain function making one per
call: `factory(tool_name, *, callback_context=tool_context, **kwargs)`, None for none."""

HeaderProvider: TypeAlias = Callable[[ReadonlyContext], dict[str, str] | Awaitable[dict[str, str]]]
"""Request headers for a run (sync or async), e.g. the user's token for the server."""

RESERVED_NAMES: Final = frozenset(
    {REQUEST_INPUT_FUNCTION, REQUEST_CONFIRMATION_FUNCTION, TRANSFER_FUNCTION}
)
"""Function names baton itself puts on the wire: a server's tool may not take one."""

IDEMPOTENCY_META_KEY: Final = "baton/idempotency-key"
"""The key of a call's idempotency key in its `tools/call` request's `_meta` (a prefixed
name, as MCP asks of keys a client adds there)."""


@final
class McpTool(BaseTool):
    """A tool of an MCP server (an `McpToolset` makes these from the server's listing).

    Args:
        mcp_tool: the tool as the server lists it.
        mcp_session_manager: the sessions to the server its calls go through.
        require_confirmation: a person must approve each call before it is sent (True),
            or the calls a function of the arguments picks (see `FunctionTool`).
        header_provider: request headers for each call, from the run's ReadonlyContext.
        progress_callback: gets the progress the server reports while a call runs (see
            `ProgressCallback`).

    Raises:
        ValueError: the tool's name is one baton reserves (`adk_request_input`,
            `adk_request_confirmation`, `transfer_to_agent`).
        TypeError: require_confirmation is neither a bool nor a function.
    """

    def __init__(
        self,
        *,
        mcp_tool: mcp_types.Tool,
        mcp_session_manager: MCPSessionManager,
        require_confirmation: ConfirmationRule = False,
        header_provider: HeaderProvider | None = None,
        progress_callback: ProgressCallback | None = None,
    ) -> None:
        if mcp_tool.name in RESERVED_NAMES:
            raise ValueError(
                f"MCP tool name '{mcp_tool.name}' is a function name baton reserves "
                f"({', '.join(sorted(RESERVED_NAMES))}); the server must name it otherwise."
            )
        super().__init__(name=mcp_tool.name, description=mcp_tool.description or "")
        self._mcp_tool = mcp_tool
        self._mcp_session_manager = mcp_session_manager
        self.require_confirmation = check_rule(require_confirmation, f"MCP tool '{self.name}'")
        self.header_provider = header_provider
        self.progress_callback = progress_callback

    @property
    def raw_mcp_tool(self) -> mcp_types.Tool:
        """The tool as the server listed it."""
        return self._mcp_tool

    @property
    def mcp_app_resource_uri(self) -> str | None:
        """The `ui://` view the tool's listing names (MCP Apps: `meta.ui.resourceUri`,
        or the older flat `meta["ui/resourceUri"]`), or None."""
        meta: object = getattr(self._mcp_tool, "meta", None)
        if not isinstance(meta, dict):
            return None
        listed = cast(dict[str, JsonValue], meta)
        ui = listed.get("ui")
        nested = ui.get("resourceUri") if isinstance(ui, dict) else None
        for uri in (nested, listed.get("ui/resourceUri")):
            if isinstance(uri, str) and uri.startswith("ui://"):
                return uri
        return None

    def declaration(self) -> FunctionDeclaration:
        """The server's name (with the toolset's prefix), description and input schema."""
        schema: dict[str, JsonValue] = field(self._mcp_tool, "inputSchema")
        return FunctionDeclaration(name=self.name, description=self.description, parameters=schema)

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        """Send the declaration with the server's descriptions fenced as data, as the
        reference does (see `baton.tools.fencing`)."""
        send_fenced(llm_request, self.declaration())

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """Call the tool on the server (once confirmed, when it needs confirmation).

        Args:
            args: the model's arguments, sent as they are (the server validates them).
            tool_context: the call's context.

        Returns:
            The server's `CallToolResult` as JSON, or `{"error": "..."}` when the server
            could not be reached or refused the request.
        """
        if await needs_confirmation(self.require_confirmation, args, tool_context):
            held = hold_for_confirmation(self.name, tool_context)
            if held is not None:
                return held
        try:
            return await self._call(args, tool_context)
        except McpError as error:
            _log.warning("MCP tool %s failed: %s", self.name, error)
            return {"error": f"MCP tool execution failed: {error}"}
        except Exception as error:
            _log.warning("MCP tool %s failed", self.name, exc_info=True)
            return {"error": f"Unexpected error during MCP tool execution: {error}"}

    async def _call(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        headers = None
        if self.header_provider is not None:
            context = tool_context.invocation_context
            readonly = ReadonlyContext(context, agent_name=tool_context.agent_name)
            headers = await provide_headers(self.header_provider, readonly)
        name = self._mcp_tool.name  # the server's name, without the toolset's prefix
        progress = self._progress_for(tool_context)
        # An open map in both majors (2.x types it as a TypedDict with extra keys).
        meta: Any = {IDEMPOTENCY_META_KEY: tool_context.idempotency_key}
        result = await self._mcp_session_manager.run(
            lambda session: session.call_tool(
                name, arguments=args, progress_callback=progress, meta=meta
            ),
            headers,
        )
        response = dump(result)
        response.pop("resultType", None)  # 2.x's marker of a complete result
        view = self.mcp_app_resource_uri
        if view is not None:
            # The client shows the tool's view beside the response, as the reference's does.
            payload: dict[str, JsonValue] = {
                "resource_uri": view,
                "tool": dump(self._mcp_tool),
                "tool_args": args,
            }
            call = tool_context.function_call_id or self.name
            tool_context.render_ui_widget(UiWidget(id=call, provider="mcp", payload=payload))
        return response

    def _progress_for(self, tool_context: ToolContext) -> ProgressFn | None:
        """This call's progress function: the one given, or what the factory makes."""
        given = self.progress_callback
        if given is None or _is_async(given):
            return cast(ProgressFn | None, given)
        factory = cast(Callable[..., ProgressFn | None], given)
        return factory(self.name, callback_context=tool_context)


def _is_async(function: object) -> bool:
    """An async function, or an object whose __call__ is one."""
    call = getattr(function, "__call__", None)  # noqa: B004
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


async def provide_headers(provider: HeaderProvider, context: ReadonlyContext) -> dict[str, str]:
    """The headers `provider` gives for this run (a sync provider runs in a worker thread).

    Raises:
        TypeError: it gave something other than a dict of strings.
    """
    if inspect.iscoroutinefunction(provider):
        given: Any = await provider(context)
    else:
        given = await run_sync(partial(provider, context))
        if inspect.isawaitable(given):
            given = await given
    if not isinstance(given, dict) or not all(
        isinstance(k, str) and isinstance(v, str)
        for k, v in given.items()  # pyright: ignore[reportUnknownVariableType]
    ):
        raise TypeError(f"header_provider must return a dict of strings, got {given!r}.")
    return given  # pyright: ignore[reportUnknownVariableType]
