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
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import Any, TextIO, TypeVar, final

from pydantic import JsonValue

from baton.auth import AuthCredential, auth_headers
from baton.readonly_context import ReadonlyContext
from baton.tools.base import BaseTool
from baton.tools.base_toolset import BaseToolset, ToolPredicate
from baton.tools.confirmation import ConfirmationRule, check_rule
from baton.tools.load_mcp_resource_tool import LoadMcpResourceTool
from baton.tools.mcp_tool.mcp_session_manager import (
    ConnectionParams,
    MCPSessionManager,
    SseConnectionParams,
    StdioConnectionParams,
    StdioServerParameters,
    StreamableHTTPConnectionParams,
)
from baton.tools.mcp_tool.mcp_tool import (
    RESERVED_NAMES,
    HeaderProvider,
    McpTool,
    ProgressCallback,
    provide_headers,
)
from baton.tools.mcp_tool.sdk import (
    ClientSession,
    ElicitationFnT,
    SamplingCapability,
    SamplingFnT,
    dump,
    mcp_types,
)

__all__ = [
    "MCPToolset",
    "McpToolset",
    "SseConnectionParams",
    "StdioConnectionParams",
    "StdioServerParameters",
    "StreamableHTTPConnectionParams",
]

_log = logging.getLogger(__name__)

_MOST_LISTINGS = 64
_T = TypeVar("_T")


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
        progress_callback: gets the progress the server reports while a call runs: an
            async function of (progress, total, message) for every call, or a plain
            function making one per call, `factory(tool_name, *, callback_context=
            tool_context, **kwargs)` (None: none for that call).
        tool_list_cache_ttl_seconds: reuse the server's tool listing this many seconds
            (per distinct headers) instead of asking for it in each invocation; a tool
            the server adds or removes meanwhile goes unnoticed until then. None: ask
            each time.
        sampling_callback: answers the server's requests for a completion from the
            client's model (`sampling/createMessage`), as the SDK calls it: an async
            `(context, CreateMessageRequestParams)` returning a `CreateMessageResult`.
        sampling_capabilities: the sampling capability declared with it.
        elicitation_callback: answers the server's requests for the user's input
            (`elicitation/create`): an async `(context, ElicitRequestParams)` returning
            an `ElicitResult`. It runs while the tool call waits, in the process running
            it: a run does not pause for it.
        auth_scheme: how the server takes a credential, e.g. fastapi's `APIKey(in_=
            APIKeyIn.header, name="X-API-Key")` or `HTTPBearer()`.
        auth_credential: the credential (`baton.auth.AuthCredential`): an API key (in
            the header its scheme names), an HTTP scheme's token or user and password
            (`Authorization`, with its additional headers), or an OAuth2 / OpenID
            Connect credential: its `oauth2.access_token` as a bearer token, else, when
            the scheme offers the client-credentials grant (an OAuth2 clientCredentials
            flow), a token the scheme's token URL gives its client_id and
            client_secret, asked for when first needed and again once it expires. Sent
            with every request over a header_provider's headers of the same name.
            Ignored by a stdio server, which has no headers.
        credential_key: where a credential service would keep the credential; baton
            has none, so it only names it.
        use_mcp_resources: offer the model the `load_mcp_resource` tool besides the
            server's tools (whatever tool_filter says): the instruction names the
            server's resources, and the contents of those the model asks for go in its
            next request.

    Raises:
        ValueError: no connection_params; a tool_list_cache_ttl_seconds that is not
            positive; a credential that does not fit its scheme (an API key outside a
            header, an HTTP scheme without its secret, an OAuth2 credential with
            neither an access token nor a client id for its scheme's grant).
        NotImplementedError: a credential that needs a user's consent (OAuth2 or OpenID
            Connect without an access token, its scheme offering no client-credentials
            grant) or a Google token exchange (a service account), or an auth_scheme
            without its auth_credential: a toolset asks no user for consent.
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
        tool_list_cache_ttl_seconds: float | None = None,
        progress_callback: ProgressCallback | None = None,
        sampling_callback: SamplingFnT | None = None,
        sampling_capabilities: SamplingCapability | None = None,
        elicitation_callback: ElicitationFnT | None = None,
        auth_scheme: object | None = None,
        auth_credential: AuthCredential | None = None,
        credential_key: str | None = None,
        use_mcp_resources: bool | None = False,
    ) -> None:
        super().__init__(tool_filter=tool_filter, tool_name_prefix=tool_name_prefix)
        if not connection_params:
            raise ValueError("Missing connection params in McpToolset.")
        if tool_list_cache_ttl_seconds is not None and tool_list_cache_ttl_seconds <= 0:
            raise ValueError(
                "tool_list_cache_ttl_seconds must be positive (or None: no cache), got "
                f"{tool_list_cache_ttl_seconds}."
            )
        self._listings = _Listings(tool_list_cache_ttl_seconds)
        self._progress_callback = progress_callback
        self._connection_params = connection_params
        self._errlog = errlog
        self._mcp_session_manager = MCPSessionManager(
            connection_params,
            errlog,
            sampling_callback=sampling_callback,
            sampling_capabilities=sampling_capabilities,
            elicitation_callback=elicitation_callback,
            auth_headers=auth_headers(auth_scheme, auth_credential, owner="McpToolset"),
        )
        self._auth_scheme, self._auth_credential = auth_scheme, auth_credential
        del credential_key  # a credential service's key: baton has none to give it to
        self._require_confirmation = check_rule(require_confirmation, "McpToolset")
        self._header_provider = header_provider
        self._use_mcp_resources = bool(use_mcp_resources)

    @property
    def connection_params(self) -> ConnectionParams:
        return self._connection_params

    @property
    def auth_scheme(self) -> object | None:
        return self._auth_scheme

    @property
    def auth_credential(self) -> AuthCredential | None:
        return self._auth_credential

    @classmethod
    def from_config(cls, config: object, config_abs_path: str) -> McpToolset:
        """The reference's way to build the toolset from an agent config file's entry.

        Raises:
            NotImplementedError: always; baton reads no agent config files.
        """
        raise NotImplementedError(
            "McpToolset.from_config builds a toolset from an agent config file (YAML), "
            "which baton does not read; build McpToolset(connection_params=...) in Python."
        )

    @property
    def errlog(self) -> TextIO:
        return self._errlog

    @property
    def require_confirmation(self) -> ConfirmationRule:
        return self._require_confirmation

    @property
    def header_provider(self) -> HeaderProvider | None:
        return self._header_provider

    @property
    def progress_callback(self) -> ProgressCallback | None:
        return self._progress_callback

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The server's tools that `tool_filter` selects, by name, then (with
        use_mcp_resources) `load_mcp_resource`. A tool named as a function baton
        reserves is left out (and logged).

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
                progress_callback=self._progress_callback,
            )
            if self._is_tool_selected(tool, readonly_context):
                tools.append(tool)
        tools.sort(key=lambda tool: tool.name)
        if self._use_mcp_resources:
            tools.append(LoadMcpResourceTool(self))
        return tools

    async def list_resources(self, readonly_context: ReadonlyContext | None = None) -> list[str]:
        """The names of the server's resources.

        Raises:
            ConnectionError: the server could not be reached or refused the listing.
        """
        return [r.name for r in await self._resources(readonly_context)]

    async def get_resource_info(
        self, name: str, readonly_context: ReadonlyContext | None = None
    ) -> dict[str, JsonValue]:
        """What the server lists about the resource of this name (`uri`, `mimeType`, ...).

        Raises:
            ValueError: the server lists no resource of this name.
            ConnectionError: the server could not be reached or refused the listing.
        """
        for resource in await self._resources(readonly_context):
            if resource.name == name:
                return dump(resource)
        raise ValueError(f"Resource with name '{name}' not found.")

    async def read_resource(
        self, name: str, readonly_context: ReadonlyContext | None = None
    ) -> list[Any]:
        """The contents of the resource of this name (the SDK's text or blob contents).

        Raises:
            ValueError: the server lists no resource of this name, or one without a URI.
            ConnectionError: the server could not be reached or refused the read.
        """
        uri = (await self.get_resource_info(name, readonly_context)).get("uri")
        if not isinstance(uri, str):
            raise ValueError(f"Resource '{name}' has no URI.")
        result = await self._with_session(
            lambda session: session.read_resource(uri),
            f"Failed to get resource {name} from MCP server",
            readonly_context,
        )
        return list(result.contents)

    async def _resources(self, readonly_context: ReadonlyContext | None) -> list[Any]:
        result = await self._with_session(
            lambda session: session.list_resources(),
            "Failed to list resources from MCP server",
            readonly_context,
        )
        return list(result.resources)

    async def _with_session(
        self,
        work: Callable[[ClientSession], Coroutine[Any, Any, _T]],
        failure: str,
        readonly_context: ReadonlyContext | None,
    ) -> _T:
        """`work` on the session for this run's headers; a failure is a ConnectionError
        starting with `failure`."""
        headers = None
        if self._header_provider is not None and readonly_context is not None:
            headers = await provide_headers(self._header_provider, readonly_context)
        try:
            return await self._mcp_session_manager.run(work, headers)
        except Exception as error:
            raise ConnectionError(f"{failure}: {error}") from error

    async def close(self) -> None:
        """Close the sessions to the server (a stdio server's process ends) and forget its
        listings. Safe to call again; the toolset opens a new session if it is used
        after."""
        self._listings.clear()
        await self._mcp_session_manager.close()

    async def _list_tools(self, headers: dict[str, str] | None) -> list[mcp_types.Tool]:
        """The server's listing: the cached one while it is fresh, else asked for."""
        key = self._mcp_session_manager.session_key(headers)
        listing = self._listings.get(key)
        if listing is None:
            listing = await self._ask_listing(headers)
            self._listings.put(key, listing)
        return listing

    async def _ask_listing(self, headers: dict[str, str] | None) -> list[mcp_types.Tool]:
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
        tool_list_cache_ttl_seconds: float | None = None,
        progress_callback: ProgressCallback | None = None,
        sampling_callback: SamplingFnT | None = None,
        sampling_capabilities: SamplingCapability | None = None,
        elicitation_callback: ElicitationFnT | None = None,
        auth_scheme: object | None = None,
        auth_credential: AuthCredential | None = None,
        credential_key: str | None = None,
        use_mcp_resources: bool | None = False,
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
            tool_list_cache_ttl_seconds=tool_list_cache_ttl_seconds,
            progress_callback=progress_callback,
            sampling_callback=sampling_callback,
            sampling_capabilities=sampling_capabilities,
            elicitation_callback=elicitation_callback,
            auth_scheme=auth_scheme,
            auth_credential=auth_credential,
            credential_key=credential_key,
            use_mcp_resources=use_mcp_resources,
        )


@final
class _Listings:
    """Tool listings kept `ttl` seconds, by session key (none without a ttl), at most
    `_MOST_LISTINGS` of them: a header_provider giving new headers each run must not
    grow them without bound."""

    def __init__(self, ttl: float | None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl, self._clock = ttl, clock
        self._kept: OrderedDict[str, tuple[float, list[mcp_types.Tool]]] = OrderedDict()

    def get(self, key: str) -> list[mcp_types.Tool] | None:
        kept = self._kept.get(key)
        if kept is None or kept[0] <= self._clock():
            return None
        return kept[1]

    def put(self, key: str, listing: list[mcp_types.Tool]) -> None:
        if self._ttl is None:
            return
        now = self._clock()
        for stale in [k for k, (until, _) in self._kept.items() if until <= now]:
            del self._kept[stale]
        self._kept[key] = (now + self._ttl, listing)
        self._kept.move_to_end(key)
        while len(self._kept) > _MOST_LISTINGS:
            self._kept.popitem(last=False)

    def clear(self) -> None:
        self._kept.clear()
