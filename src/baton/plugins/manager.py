"""PluginManager: a runner's plugins, asked in order at each hook.

Deciding hooks stop at the first plugin that returns something other than None; the
agent-level hooks are handed to the agents as callbacks placed before the agent's
own (`*_hooks`), so one short-circuit rule covers both. Notifications reach every
plugin.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar, final

from baton.plugins.base_plugin import BasePlugin

if TYPE_CHECKING:  # pragma: no cover - annotations only: agents import this module
    from baton.agents.callbacks import CallbackContext
    from baton.context import InvocationContext
    from baton.events import Event
    from baton.tools import BaseTool, ToolContext
    from baton.types import Content

__all__ = ["NO_PLUGINS", "Hook", "PluginManager"]

Hook = Callable[..., Awaitable[Any]]
"""A plugin hook shaped as an agent callback of the same name."""

_T = TypeVar("_T")


@final
class PluginManager:
    """The plugins of a runner, in the order given.

    Args:
        plugins: BasePlugin instances with distinct names.
        close_timeout: seconds each plugin's `close()` may take (5.0, as the reference's).

    Raises:
        TypeError: an item is not a BasePlugin.
        ValueError: two plugins share a name, or a close_timeout that is not positive.
    """

    def __init__(self, plugins: Sequence[object] = (), *, close_timeout: float = 5.0) -> None:
        if not close_timeout > 0:
            raise ValueError(
                f"plugin_close_timeout must be a positive number of seconds, got {close_timeout!r}."
            )
        self.close_timeout = close_timeout
        checked: list[BasePlugin] = []
        for plugin in plugins:
            if not isinstance(plugin, BasePlugin):
                raise TypeError(
                    f"plugins must be BasePlugin instances (baton.plugins.BasePlugin), got "
                    f"{type(plugin).__name__}; subclass BasePlugin and override its hooks."
                )
            if any(p.name == plugin.name for p in checked):
                raise ValueError(
                    f"two plugins are named '{plugin.name}'; give each plugin its own name."
                )
            checked.append(plugin)
        self.plugins: tuple[BasePlugin, ...] = tuple(checked)

    def __bool__(self) -> bool:
        return bool(self.plugins)

    def get_plugin(self, name: str) -> BasePlugin | None:
        """The plugin of that name, or None."""
        return next((p for p in self.plugins if p.name == name), None)

    async def on_user_message(self, ic: InvocationContext, message: Content) -> Content | None:
        """The first plugin's replacement of the user's message, or None."""
        return await _first(
            p.on_user_message_callback(invocation_context=ic, user_message=message)
            for p in self.plugins
        )

    async def before_run(self, ic: InvocationContext) -> Content | None:
        """The first plugin's reply that ends the run before it runs, or None."""
        return await _first(p.before_run_callback(invocation_context=ic) for p in self.plugins)

    async def on_event(self, ic: InvocationContext, event: Event) -> Event | None:
        """The first plugin's replacement of an event about to be stored, or None."""
        return await _first(
            p.on_event_callback(invocation_context=ic, event=event) for p in self.plugins
        )

    async def after_run(self, ic: InvocationContext) -> None:
        """Tell every plugin the run ended."""
        for plugin in self.plugins:
            await plugin.after_run_callback(invocation_context=ic)

    async def on_run_error(self, ic: InvocationContext, error: Exception) -> None:
        """Tell every plugin an exception escaped the run."""
        for plugin in self.plugins:
            await plugin.on_run_error_callback(invocation_context=ic, error=error)

    async def on_agent_error(
        self, agent: Any, callback_context: CallbackContext, error: Exception
    ) -> None:
        """Tell every plugin an exception escaped an agent."""
        for plugin in self.plugins:
            await plugin.on_agent_error_callback(
                agent=agent, callback_context=callback_context, error=error
            )

    async def close(self) -> None:
        """Close every plugin, each within `close_timeout` seconds.

        Raises:
            RuntimeError: naming each plugin whose close failed or timed out (after
                every plugin was given its turn).
        """
        failed: dict[str, Exception] = {}
        for plugin in self.plugins:
            try:
                async with asyncio.timeout(self.close_timeout):
                    await plugin.close()
            except Exception as error:  # every plugin gets its turn; all failures are named
                failed[plugin.name] = error
        if failed:
            names = ", ".join(f"'{name}': {type(e).__name__}" for name, e in failed.items())
            raise RuntimeError(f"Failed to close plugins: {names}")

    def agent_hooks(self, when: str, agent: Any) -> list[Hook]:
        """`before`/`after` agent hooks, called as agent callbacks (callback_context=)."""
        if when == "before":
            return [partial(p.before_agent_callback, agent=agent) for p in self.plugins]
        return [partial(p.after_agent_callback, agent=agent) for p in self.plugins]

    def model_hooks(self, when: str) -> list[Hook]:
        """`before`/`after`/`error` model hooks: their keywords match the agent's callbacks."""
        if when == "before":
            return [p.before_model_callback for p in self.plugins]
        if when == "after":
            return [p.after_model_callback for p in self.plugins]
        return [p.on_model_error_callback for p in self.plugins]

    def tool_hooks(self, when: str) -> list[Hook]:
        """`before`/`after`/`error` tool hooks, taking the agent callbacks' keywords
        (`args`, `tool_response`) and passing the plugin's (`tool_args`, `result`)."""
        return [_tool_hook(p, when) for p in self.plugins]


NO_PLUGINS: Final = PluginManager()
"""The plugins of a runner given none."""


def _tool_hook(plugin: BasePlugin, when: str) -> Hook:
    async def hook(
        *, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, **rest: Any
    ) -> Any:
        if when == "before":
            return await plugin.before_tool_callback(
                tool=tool, tool_args=args, tool_context=tool_context
            )
        if when == "after":
            return await plugin.after_tool_callback(
                tool=tool, tool_args=args, tool_context=tool_context, result=rest["tool_response"]
            )
        return await plugin.on_tool_error_callback(
            tool=tool, tool_args=args, tool_context=tool_context, error=rest["error"]
        )

    return hook


async def _first(calls: Iterable[Awaitable[_T | None]]) -> _T | None:
    for call in calls:
        result = await call
        if result is not None:
            return result
    return None
