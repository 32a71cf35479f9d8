"""The MCP Python SDK (`pip install 'baton[mcp]'`), either major: the names that differ
between 1.x and 2.x are resolved here once, as the reference spans both.

2.x renamed `McpError` to `MCPError`, moved its HTTP client from httpx to httpx2, takes a
session's read timeout as seconds (1.x: a timedelta) and names its models' fields in
snake_case (camelCase aliases, as 1.x names them).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from importlib import import_module, metadata
from typing import Any, Final

from pydantic import BaseModel, JsonValue

INSTALL_HINT: Final = "MCP tools need the MCP SDK: pip install 'baton[mcp]'"

try:
    from mcp import ClientSession, SamplingCapability, StdioServerParameters
    from mcp import types as mcp_types
    from mcp.client.session import ElicitationFnT, SamplingFnT
    from mcp.client.sse import sse_client
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import (
        create_mcp_http_client as _create_http_client,  # pyright: ignore[reportPrivateImportUsage] -- the path both majors (and the reference) use
    )
    from mcp.client.streamable_http import streamable_http_client
except ImportError as error:  # pragma: no cover - the dev extra installs it
    raise ImportError(f"{INSTALL_HINT} ({error})") from error

try:
    from mcp.shared.exceptions import MCPError as McpError

    _v2 = True
except ImportError:  # pragma: no cover - the dev extra installs 2.x
    from mcp.shared.exceptions import (  # pyright: ignore[reportAttributeAccessIssue] -- 1.x's name
        McpError,  # pyright: ignore[reportUnknownVariableType, reportAttributeAccessIssue]
    )

    _v2 = False

IS_V2: Final = _v2

create_mcp_http_client: Final[Callable[..., Any]] = _create_http_client
"""The SDK's default HTTP client factory (`headers`, `timeout`, `auth`)."""

http: Final = import_module("httpx2" if IS_V2 else "httpx")
"""The HTTP library the SDK's transports use (2.x: httpx2; 1.x: httpx)."""

__all__ = [
    "CLIENT_INFO",
    "INSTALL_HINT",
    "IS_V2",
    "ClientSession",
    "ElicitationFnT",
    "McpError",
    "SamplingCapability",
    "SamplingFnT",
    "StdioServerParameters",
    "create_mcp_http_client",
    "dump",
    "field",
    "http",
    "mcp_types",
    "read_timeout",
    "sse_client",
    "stdio_client",
    "streamable_http_client",
]

CLIENT_INFO: Final = mcp_types.Implementation(name="baton", version=metadata.version("baton"))
"""How baton introduces itself to MCP servers."""

# Values a server writes as it likes (schemas, structured results): a `_meta` in them is
# the server's own key, not the SDK's alias, and stays as it is.
_SERVER_OWNED: Final = frozenset({"_meta", "inputSchema", "outputSchema", "structuredContent"})


def read_timeout(seconds: float | None) -> Any:
    """A session's read timeout as the installed SDK takes it (2.x: seconds; 1.x: a
    timedelta)."""
    if seconds is None or IS_V2:
        return seconds
    return timedelta(seconds=seconds)  # pragma: no cover - the dev extra installs 2.x


def field(model: BaseModel, name: str) -> Any:
    """A model's field by its wire (camelCase) name, whichever major named it.

    Args:
        model: an MCP model, e.g. a `Tool`.
        name: the camelCase name, e.g. "inputSchema".
    """
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
    return getattr(model, snake if hasattr(model, snake) else name)


def dump(model: BaseModel) -> dict[str, JsonValue]:
    """An MCP result as JSON with the wire's key names (`isError`, `structuredContent`,
    `meta`), the same from either major, as the reference hands it to the model.

    Args:
        model: an MCP model, e.g. a `CallToolResult`.
    """
    if not IS_V2:  # pragma: no cover - the dev extra installs 2.x; 1.x fields are camelCase
        return model.model_dump(exclude_none=True, mode="json")
    dumped = model.model_dump(exclude_none=True, mode="json", by_alias=True)
    return _meta_renamed(dumped)  # pyright: ignore[reportReturnType]


def _meta_renamed(value: JsonValue) -> JsonValue:
    """`_meta` (the SDK's alias of the field `meta`) back to `meta`, except inside what
    the server owns."""
    if isinstance(value, list):
        return [_meta_renamed(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {
        ("meta" if key == "_meta" else key): (item if key in _SERVER_OWNED else _meta_renamed(item))
        for key, item in value.items()
    }
