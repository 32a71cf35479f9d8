"""BasePlugin: the reference's runner-wide callbacks, one overridable method per hook.

A plugin is given to `Runner(plugins=[...])` (or `App(plugins=[...])`) and applies to
every agent, model call and tool call of the runs. Each method does nothing unless
overridden. Where a hook can decide (a `before_*` returning a value, an error hook
returning a replacement), plugins are asked first, in the order given, and the first
that returns something other than None wins: later plugins and the agent's own
callback are not called.

Durability: a plugin hook runs where the agent's callback of that name runs, and what
it returns lands with the same event, so a hook whose call was committed is not
called again when the run resumes after a pause or a crash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - annotations only: agents import this module
    from baton.agents.base_agent import BaseAgent
    from baton.agents.callbacks import CallbackContext
    from baton.context import InvocationContext
    from baton.events import Event
    from baton.models import LlmRequest, LlmResponse
    from baton.tools import BaseTool, ToolContext
    from baton.types import Content

__all__ = ["BasePlugin"]


class BasePlugin:
    """Subclass and override the hooks you need.

    Args:
        name: a name unique among the runner's plugins.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    async def on_user_message_callback(
        self, *, invocation_context: InvocationContext, user_message: Content
    ) -> Content | None:
        """A run starts with `user_message`; return a Content to record that instead."""
        return None

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> Content | None:
        """A run (a start, an answer or a continuation) begins; return a Content to end
        the run with it as the reply instead of running anything."""
        return None

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        """An event is about to be stored; return an Event to store (and yield) instead."""
        return None

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        """The run ended (finished, or paused for input)."""
        return None

    async def on_run_error_callback(
        self, *, invocation_context: InvocationContext, error: Exception
    ) -> None:
        """An exception escaped the run (it is raised afterwards all the same)."""
        return None

    async def close(self) -> None:
        """The runner is closing: release what the plugin holds."""
        return None

    async def before_agent_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext
    ) -> Content | None:
        """An agent starts; return a Content to answer for it (it does not run)."""
        return None

    async def after_agent_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext
    ) -> Content | None:
        """An agent ended; return a Content to add as its reply."""
        return None

    async def on_agent_error_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext, error: Exception
    ) -> None:
        """An exception escaped an agent (it is raised afterwards all the same)."""
        return None

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        """A model is about to be called; return an LlmResponse to use instead."""
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        """A model answered; return an LlmResponse to use instead."""
        return None

    async def on_model_error_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> LlmResponse | None:
        """A model call failed; return an LlmResponse to use instead of raising."""
        return None

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        """A tool is about to run; return a dict to use as its result (it does not run)."""
        return None

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: Any,
    ) -> dict[str, Any] | None:
        """A tool returned `result` (a dict, or a bare value as the tool returned it);
        return a dict to use instead."""
        return None

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> dict[str, Any] | None:
        """A tool raised; return a dict to use as its result instead of raising."""
        return None
