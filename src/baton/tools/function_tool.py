"""FunctionTool and LongRunningFunctionTool: a Python function as a tool."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from contextlib import nullcontext
from functools import partial
from typing import final

from pydantic import JsonValue

from baton.events import check_assignee, json_schema_of, to_json_value
from baton.function_signature import (
    TOOL_CONTEXT_PARAMETER,
    FunctionSignature,
    InvalidArgumentsError,
)
from baton.models.llm import FunctionDeclaration
from baton.threads import run_sync
from baton.tools.base import BaseTool, hold_for_confirmation
from baton.tools.confirmation import ConfirmationRule, check_rule, needs_confirmation
from baton.tools.tool_context import ToolContext

__all__ = ["LONG_RUNNING_NOTE", "ConfirmationRule", "FunctionTool", "LongRunningFunctionTool"]

LONG_RUNNING_NOTE = (
    "NOTE: This is a long-running operation. Do not call this tool again if it has "
    "already returned some status; its result arrives later."
)
"""Appended to a long-running tool's description, so the model waits instead of retrying."""


class FunctionTool(BaseTool):
    """A Python function (sync or async) the model can call.

    The declaration comes from the signature: parameter types become the JSON schema
    and the docstring's "Args:" (or numpy "Parameters") entries their descriptions.
    A parameter named `tool_context` receives the ToolContext and is hidden from the
    model. Arguments are validated and coerced into the annotated types before the
    call; invalid ones are not passed on: the model gets `{"error": "..."}` back, saying
    what to fix. Sync functions run in a worker thread.

    Args:
        func: the function; its name is the tool's name.
        name: overrides the tool's name.
        description: overrides the description taken from the docstring.
        is_long_running: see `BaseTool`; `LongRunningFunctionTool` sets it.
        require_confirmation: a person must approve each call before it runs (True), or
            the calls a function of the arguments picks (it gets the arguments it names,
            and `tool_context`; sync or async). See `baton.tools.confirmation`.

    Raises:
        TypeError: the function's type hints cannot be resolved or described as JSON schema.
    """

    def __init__(
        self,
        func: Callable[..., object],
        *,
        name: str | None = None,
        description: str | None = None,
        is_long_running: bool = False,
        require_confirmation: ConfirmationRule = False,
    ) -> None:
        check_rule(require_confirmation, f"tool {name or getattr(func, '__name__', func)!r}")
        self.func = func
        self.require_confirmation = require_confirmation
        self.signature = FunctionSignature.of(func, name=name)
        text = self.signature.description if description is None else description
        super().__init__(
            name=self.signature.name, description=text, is_long_running=is_long_running
        )

    def declaration(self) -> FunctionDeclaration:
        """The declaration: name, description and the JSON schema of the parameters.

        Returns:
            The declaration.
        """
        signature = self.signature
        return FunctionDeclaration(
            name=signature.name, description=self.description, parameters=signature.parameters
        )

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """Validate the arguments and call the function.

        Args:
            args: the model's arguments.
            tool_context: passed to the function's `tool_context` parameter, if it has one.

        Returns:
            The function's result as JSON, or `{"error": "..."}` for invalid arguments.

        Raises:
            Exception: whatever the function raises.
        """
        try:
            bound = self.signature.bind(args)
        except InvalidArgumentsError as exc:
            return {"error": str(exc)}
        kwargs = dict(bound.kwargs)
        if await needs_confirmation(self.require_confirmation, kwargs, tool_context):
            held = hold_for_confirmation(self.name, tool_context)
            if held is not None:
                return held
        if self.signature.takes_tool_context:
            kwargs[TOOL_CONTEXT_PARAMETER] = tool_context
        result = await self._call(tool_context.sync_tools, *bound.args, **kwargs)
        return to_json_value(result, what=f"the result of tool '{self.name}'")

    async def _call(
        self, sync_tools: asyncio.Lock | None, /, *args: object, **kwargs: object
    ) -> object:
        """The function's result: a sync one runs in a worker thread, holding its model
        turn's `sync_tools` lock, if any (see `ToolContext.sync_tools`)."""
        if inspect.iscoroutinefunction(self.func):
            return await self.func(*args, **kwargs)
        async with sync_tools or nullcontext():  # one sync tool of the turn at a time
            result = await run_sync(partial(self.func, *args, **kwargs))  # never on the loop
            # A callable object with an async __call__, or a sync function returning a
            # coroutine.
            return await result if inspect.isawaitable(result) else result


@final
class LongRunningFunctionTool(FunctionTool):
    """A FunctionTool whose call stays open until a FunctionResponse with its id arrives.

    The function runs once, when the model calls it (typically to start the work,
    e.g. send an approval request; returning None means "no status yet"). Its
    description tells the model not to call it again while the result is pending.

    Args:
        func: the function.
        name: overrides the tool's name.
        description: overrides the description taken from the docstring (the note
            is appended either way).
        response_schema: the answer the call waits for (a pydantic model, a Python
            type or a JSON-schema dict), e.g. `class Decision(BaseModel): approved: bool`.
            The inbox shows it as a form, `baton run` asks for it (y/n for a lone yes/no
            field), and an answer that does not match is refused before it is stored.
        assignee: the user id of the person who must answer (baton's own addition, as
            `RequestInput(assignee=)`): the call is listed in their inbox, and only
            their answer is accepted.

    Raises:
        TypeError: `response_schema` is not a model, a type or a JSON-schema dict.
        ValueError: `assignee` is not a user id.
    """

    def __init__(
        self,
        func: Callable[..., object],
        *,
        name: str | None = None,
        description: str | None = None,
        response_schema: object = None,
        assignee: str | None = None,
    ) -> None:
        super().__init__(func, name=name, description=description, is_long_running=True)
        self.description = "\n\n".join(p for p in (self.description, LONG_RUNNING_NOTE) if p)
        self.response_schema = json_schema_of(response_schema)
        self.assignee = check_assignee(assignee)
