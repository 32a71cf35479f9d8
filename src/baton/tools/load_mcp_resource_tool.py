"""load_mcp_resource: the tool `McpToolset(use_mcp_resources=True)` adds, as the
reference's. It names the MCP server's resources in the instruction and, when the model
calls it with some of their names, puts their contents in the next model request (not in
the session)."""

from __future__ import annotations

import base64
import binascii
import json
import logging
from typing import Any, Protocol

from baton.models.llm import LlmRequest
from baton.readonly_context import ReadonlyContext
from baton.tools.next_request import LoadIntoNextRequestTool
from baton.tools.tool_context import ToolContext
from baton.types import Blob, Content, Part

__all__ = ["LoadMcpResourceTool", "ResourceSource"]

_log = logging.getLogger(__name__)

_STATUS = (
    "The contents of these resources come with your next request only; call "
    "load_mcp_resource again to see them later."
)


class ResourceSource(Protocol):
    """Where the resources come from: an `McpToolset`."""

    async def list_resources(self, readonly_context: ReadonlyContext | None = None) -> list[str]:
        """The names of the server's resources."""
        ...

    async def read_resource(
        self, name: str, readonly_context: ReadonlyContext | None = None
    ) -> list[Any]:
        """The contents of one resource (the SDK's text or blob contents)."""
        ...


class LoadMcpResourceTool(LoadIntoNextRequestTool):
    """Lists an MCP server's resources in the instruction, and sends the model the
    contents of those it asks for with the request after its call (a resource that
    cannot be listed or read is logged and left out, as the reference does).

    Args:
        mcp_toolset: the toolset whose server holds the resources.
    """

    def __init__(self, mcp_toolset: ResourceSource) -> None:
        super().__init__(
            name="load_mcp_resource",
            names_key="resource_names",
            status=_STATUS,
            description=(
                "Puts the MCP server's resources you name into your next request. Call it "
                "when you need what one holds."
            ),
        )
        self._mcp_toolset = mcp_toolset

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        """Name the resources in the instruction; after the model's call, add the
        contents of those it asked for."""
        try:
            available = await self._mcp_toolset.list_resources(tool_context)
        except Exception as error:  # the model still gets its request, as the reference's
            _log.warning("Could not list the MCP server's resources: %s", error)
            available = []
        if available:
            llm_request.append_instructions([_instruction(available)])
        for name in list(self.requested(llm_request)):
            llm_request.contents.extend(await self._loaded(tool_context, name))

    async def _loaded(self, tool_context: ToolContext, name: str) -> list[Content]:
        """A user turn per content of the resource (none when it cannot be read)."""
        try:
            contents = await self._mcp_toolset.read_resource(name, tool_context)
        except Exception as error:
            _log.warning("Could not read MCP resource %r: %s", name, error)
            return []
        return [
            Content(
                role="user", parts=[Part(text=f"Contents of resource {name}:"), _as_part(c, name)]
            )
            for c in contents
        ]


def _instruction(names: list[str]) -> str:
    return (
        f"MCP resources you can read: {json.dumps(names)}\nBefore answering anything about "
        "one of them, call `load_mcp_resource` with its name."
    )


def _as_part(content: object, name: str) -> Part:
    """One of a resource's contents as the model is sent it: text as text, a blob as
    its bytes (with its MIME type), anything else as a line saying so."""
    text = getattr(content, "text", None)
    if isinstance(text, str):
        return Part(text=text)
    blob = getattr(content, "blob", None)
    if not isinstance(blob, str):
        return Part(text=f"[resource {name}: content of a kind not shown]")
    try:
        data = base64.b64decode(blob)
    except (binascii.Error, ValueError):
        return Part(text=f"[resource {name}: binary content that is not valid base64]")
    mime = getattr(content, "mimeType", None) or getattr(content, "mime_type", None)
    return Part(inline_data=Blob(mime_type=str(mime or "application/octet-stream"), data=data))
