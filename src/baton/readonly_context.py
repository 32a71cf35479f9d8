"""ReadonlyContext: the reference's read-only view of an invocation, given to toolsets
(`BaseToolset.get_tools(readonly_context)`) and tool filters."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from baton.context import InvocationContext
from baton.run_config import RunConfig
from baton.sessions.store import Session
from baton.types import Content

__all__ = ["ReadonlyContext"]


class ReadonlyContext:
    """What code that must not change the run reads of it: ids, the user's message, the
    session and its state (read-only views).

    Args:
        invocation_context: the invocation to read (an agent's ctx: its state then
            includes the run's writes not yet committed).
        agent_name: the agent running (default: the invocation's `agent_name`).
    """

    def __init__(
        self, invocation_context: InvocationContext, *, agent_name: str | None = None
    ) -> None:
        self._invocation_context = invocation_context
        self._agent_name = agent_name

    @property
    def invocation_id(self) -> str:
        """The invocation's id."""
        return self._invocation_context.invocation_id

    @property
    def user_content(self) -> Content | None:
        """The message that started the invocation."""
        return self._invocation_context.user_content

    @property
    def agent_name(self) -> str:
        """The name of the agent running ("unknown" when none is)."""
        return self._agent_name or self._invocation_context.agent_name or "unknown"

    @property
    def state(self) -> Mapping[str, Any]:
        """The session state as the run sees it, read-only."""
        return MappingProxyType(self._invocation_context.state)

    @property
    def session(self) -> Session:
        """The session the invocation runs in."""
        return self._invocation_context.session

    @property
    def user_id(self) -> str:
        """The user's id."""
        return self._invocation_context.user_id

    @property
    def run_config(self) -> RunConfig:
        """What the run was asked for (`run_async(run_config=...)`)."""
        return self._invocation_context.run_config

    @property
    def custom_metadata(self) -> Mapping[str, Any]:
        """The run's custom metadata (`RunConfig(custom_metadata=...)`), read-only."""
        return MappingProxyType(self._invocation_context.custom_metadata)
