"""BaseToolset: a set of tools an agent lists when it runs (`LlmAgent(tools=[toolset])`),
as the reference's (e.g. the tools of an MCP server)."""

from __future__ import annotations

import asyncio
import copy
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Protocol, final, runtime_checkable

from baton.models.llm import LlmRequest
from baton.readonly_context import ReadonlyContext
from baton.tools.base import BaseTool
from baton.tools.tool_context import ToolContext
from baton.types import FunctionDeclaration

__all__ = ["BaseToolset", "ToolPredicate", "close_toolsets"]

_CLOSE_SECONDS = 10.0


@runtime_checkable
class ToolPredicate(Protocol):
    """Decides whether the model is offered a tool of a toolset (`tool_filter=`)."""

    def __call__(self, tool: BaseTool, readonly_context: ReadonlyContext | None = None) -> bool:
        """Whether the model may use `tool` in the run `readonly_context` describes."""
        ...


class BaseToolset(ABC):
    """A collection of tools an agent's model is offered, listed afresh for each
    invocation (`get_tools`, once per invocation). Subclass it and implement `get_tools`;
    `close` releases what the toolset holds (connections, processes): a Runner closes the
    toolsets of its agents when it closes (`await runner.close()`, `async with Runner`).

    Args:
        tool_filter: the names of the tools to offer, or a `ToolPredicate`; `get_tools`
            applies it, by calling `self._is_tool_selected(tool, readonly_context)` (as in
            the reference, the agent does not filter a toolset's tools itself).
        tool_name_prefix: offered as `<prefix>_<name>` (the model calls them so).
    """

    def __init__(
        self,
        *,
        tool_filter: ToolPredicate | list[str] | None = None,
        tool_name_prefix: str | None = None,
    ) -> None:
        self.tool_filter = tool_filter
        self.tool_name_prefix = tool_name_prefix
        self._listed: tuple[str | None, list[BaseTool]] | None = None

    @abstractmethod
    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The toolset's tools for a run.

        A tool listing that raises leaves the agent's run without this toolset's tools
        (the error is logged with its traceback); to offer something else instead, catch
        the error here and return other tools.

        Args:
            readonly_context: the run asking (None: outside a run; all tools).

        Returns:
            The tools the model may use, unprefixed.
        """

    @final
    async def get_tools_with_prefix(
        self, readonly_context: ReadonlyContext | None = None
    ) -> list[BaseTool]:
        """The tools of `get_tools`, renamed `<tool_name_prefix>_<name>` when the toolset has
        a prefix (copies: the listed tools keep their names). Listed once per invocation:
        a second call in the same invocation returns the same tools.

        Args:
            readonly_context: the run asking (None: outside a run).

        Returns:
            The tools as the model sees them.
        """
        invocation = readonly_context.invocation_id if readonly_context else None
        if self._listed is not None and self._listed[0] == invocation:
            return self._listed[1]
        tools = await self.get_tools(readonly_context)
        if self.tool_name_prefix:
            tools = [_prefixed(tool, self.tool_name_prefix) for tool in tools]
        self._listed = (invocation, tools)
        return tools

    async def close(self) -> None:
        """Release what the toolset holds (nothing by default)."""
        return None

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        """Change a model request before its tools' `process_llm_request` run (nothing by
        default)."""
        return None

    def _is_tool_selected(self, tool: BaseTool, readonly_context: ReadonlyContext | None) -> bool:
        """Whether `tool_filter` lets the model use `tool` (every tool without a filter).
        The reference's name, for subclasses' `get_tools`."""
        if not self.tool_filter:
            return True
        if isinstance(self.tool_filter, list):
            return tool.name in self.tool_filter
        return self.tool_filter(tool, readonly_context)


async def close_toolsets(toolsets: Iterable[BaseToolset]) -> None:
    """Close each toolset once, each within 10 seconds (as the reference allows).

    Raises:
        RuntimeError: naming each toolset whose close failed or timed out (after every
            toolset was given its turn).
    """
    failed: list[str] = []
    for toolset in dict.fromkeys(toolsets):
        try:
            async with asyncio.timeout(_CLOSE_SECONDS):
                await toolset.close()
        except Exception as error:  # every toolset gets its turn; all failures are named
            failed.append(f"{type(toolset).__name__}: {type(error).__name__}: {error}")
    if failed:
        raise RuntimeError(f"Failed to close toolsets: {'; '.join(failed)}")


def _prefixed(tool: BaseTool, prefix: str) -> BaseTool:
    """A copy of `tool` named and declared `<prefix>_<name>`."""
    renamed = copy.copy(tool)
    renamed.name = f"{prefix}_{tool.name}"
    renamed.declaration = _renamed_declaration(tool.declaration, renamed.name)  # pyright: ignore[reportAttributeAccessIssue] -- replaced on this copy only, as the reference's prefix does
    return renamed


def _renamed_declaration(
    declare: Callable[[], FunctionDeclaration | None], name: str
) -> Callable[[], FunctionDeclaration | None]:
    def declaration() -> FunctionDeclaration | None:
        declared = declare()
        return None if declared is None else declared.model_copy(update={"name": name})

    return declaration
