"""The reference's agent, model and tool callbacks, and the context they receive.

A callback is a function (sync or async) or a list of them; in a list the first one
that returns something other than None decides, and the rest are not called. What
a callback returns short-circuits as in the reference:

- `before_agent_callback(callback_context)` -> Content: the agent does not run;
  the content is its reply. `after_agent_callback(callback_context)` -> Content:
  a reply added after the agent's own.
- `before_model_callback(callback_context, llm_request)` -> LlmResponse: used
  instead of calling the model. `after_model_callback(callback_context,
  llm_response)` -> LlmResponse: replaces the model's response.
- `before_tool_callback(tool, args, tool_context)` -> dict: used as the tool's
  result without running it. `after_tool_callback(tool, args, tool_context,
  tool_response)` -> dict: replaces the result. `tool_response` is the result as
  the tool (or a before- or error-callback) returned it: a dict, or a bare value
  (`5`, `"rain"`, `None`); the model gets a non-dict result as `{"result": value}`
  either way, as in the reference.

Durability: each callback's outcome lands in the event it shapes (the model turn,
the tool result, the agent's reply or end), so a callback whose call was committed
is not called again on resume: a committed model turn or tool result is reused
as it is, and an agent that started (or ended) is not started again.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

from pydantic import JsonValue

from baton.callback_context import CallbackContext
from baton.events import to_json_value
from baton.models import LlmResponse
from baton.tools import BaseTool, ToolContext
from baton.tools.confirmation import asked_confirmation

__all__ = [
    "CallbackContext",
    "Callbacks",
    "chain",
    "llm_response",
    "result_after_tool",
    "result_before_tool",
    "run_callbacks",
    "tool_result",
]

Callbacks: TypeAlias = Callable[..., Any] | list[Callable[..., Any]] | None
"""One callback, a list of them (the first non-None result wins), or none."""


def chain(hooks: Sequence[Callable[..., Any]], own: Callbacks) -> Callbacks:
    """Plugin hooks first, then the agent's own callbacks (None when there are none)."""
    if not hooks:
        return own
    mine = [] if own is None else own if isinstance(own, list) else [own]
    return [*hooks, *mine]


async def run_callbacks(callbacks: Callbacks, **kwargs: Any) -> Any:
    """Call the callbacks in order with `kwargs`; the first result that is not None.

    Returns:
        That result, or None when every callback returned None (or there are none).
    """
    if callbacks is None:
        return None
    for callback in callbacks if isinstance(callbacks, list) else [callbacks]:
        result = callback(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        if result is not None:
            return result
    return None


async def tool_result(
    tool: BaseTool,
    args: dict[str, JsonValue],
    tool_context: ToolContext,
    *,
    before: Callbacks,
    after: Callbacks,
    error: Callbacks = None,
) -> JsonValue:
    """A tool call's result: a before-callback's, or the tool's (an error callback's when
    it raised), then an after-callback's.

    A call that now waits for confirmation returns the tool's result untouched (it is
    not sent to the model): the after-tool callbacks see it, as the reference's do, but
    what they return goes nowhere.
    """
    result = await result_before_tool(before, tool, args, tool_context)
    if result is None:
        result = await _run_tool(tool, args, tool_context, error)
        call_id = tool_context.function_call_id or ""
        asked = asked_confirmation(call_id, tool_context.actions.requested_tool_confirmations)
        if asked is not None and tool_context.tool_confirmation is None:
            await result_after_tool(after, tool, args, tool_context, result)
            return result  # not a result yet: the call waits for confirmation
    return await result_after_tool(after, tool, args, tool_context, result)


async def result_before_tool(
    before: Callbacks, tool: BaseTool, args: dict[str, JsonValue], tool_context: ToolContext
) -> JsonValue:
    """The before-tool callbacks' result, which stands for the tool's (None: run the tool)."""
    early = await run_callbacks(before, tool=tool, args=args, tool_context=tool_context)
    if early is None:
        return None
    return to_json_value(early, what=f"the before_tool_callback result of '{tool.name}'")


async def result_after_tool(
    after: Callbacks,
    tool: BaseTool,
    args: dict[str, JsonValue],
    tool_context: ToolContext,
    result: JsonValue,
) -> JsonValue:
    """The call's result once the after-tool callbacks saw it: theirs, or `result`."""
    late = await run_callbacks(
        after,
        tool=tool,
        args=args,
        tool_context=tool_context,
        tool_response=result,
    )
    if late is None:
        return result
    return to_json_value(late, what=f"the after_tool_callback result of '{tool.name}'")


async def _run_tool(
    tool: BaseTool, args: dict[str, JsonValue], tool_context: ToolContext, error: Callbacks
) -> JsonValue:
    """The tool's result; when it raises, the first error callback's result instead (the
    error is raised when none answers)."""
    try:
        return await tool.run(args, tool_context)
    except Exception as failure:
        if error is None:
            raise
        handled = await run_callbacks(
            error, tool=tool, args=args, tool_context=tool_context, error=failure
        )
        if handled is None:
            raise
        return to_json_value(handled, what=f"the on_tool_error_callback result of '{tool.name}'")


def llm_response(agent: str, value: object) -> LlmResponse | None:
    """A model callback's result: an LlmResponse, or None to carry on.

    Raises:
        TypeError: the callback returned something else.
    """
    if value is None or isinstance(value, LlmResponse):
        return value
    raise TypeError(
        f"a model callback of agent '{agent}' returned {type(value).__name__}; return an "
        "LlmResponse to use instead of the model's, or None."
    )
