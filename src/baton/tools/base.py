"""BaseTool, and how a tool's result becomes a FunctionResponse."""

from __future__ import annotations

from typing import Any, cast

from pydantic import JsonValue, ValidationError

from baton.models.llm import FunctionDeclaration, LlmRequest
from baton.tools.confirmation import REJECTED, REQUIRED
from baton.tools.tool_context import ToolContext
from baton.types import FunctionCall, FunctionResponse

__all__ = [
    "BaseTool",
    "described",
    "hold_for_confirmation",
    "string_parameters",
    "to_function_response",
    "to_response_dict",
    "unfit_call",
]


class BaseTool:
    """Base class of every tool: subclass it and implement `declaration` and `run`, or
    the reference's names for them, `_get_declaration` and `run_async(*, args,
    tool_context)` (a tool written for the reference runs as it is).

    Args:
        name: the function name the model calls.
        description: what the tool does, for the model.
        is_long_running: the tool starts work that finishes later (e.g. a person's
            approval): its call stays open until a FunctionResponse with the call's
            id arrives.
        custom_metadata: anything the tool's own code wants to keep with it (kept as
            `self.custom_metadata`, as in the reference).

    Raises:
        TypeError: the subclass implements neither `run` nor `run_async`.
    """

    # Class-level defaults as well as instance values, as in the reference: a subclass
    # whose __init__ does not call BaseTool's still reads as an ordinary tool.
    is_long_running: bool = False
    """Whether the tool's calls stay open until their FunctionResponse arrives."""

    custom_metadata: dict[str, Any] | None = None
    """Anything the tool's own code keeps with it (baton reads none of it)."""

    response_schema: dict[str, JsonValue] | None = None
    """For a long-running tool: the JSON schema of the answer it waits for (None: any).
    Answers are checked against it before they are stored, and forms are built from it."""

    assignee: str | None = None
    """For a long-running tool: the user id of the person who must answer its calls
    (None: the session's user), as `RequestInput(assignee=)`."""

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        is_long_running: bool = False,
        custom_metadata: dict[str, Any] | None = None,
    ) -> None:
        cls = type(self)
        if cls.run is BaseTool.run and cls.run_async is BaseTool.run_async:
            raise TypeError(
                f"tool class {cls.__name__} implements neither run(args, tool_context) nor "
                "the reference's run_async(*, args, tool_context): implement one."
            )
        self.name = name
        self.description = description
        self.is_long_running = is_long_running
        self.custom_metadata = custom_metadata

    def declaration(self) -> FunctionDeclaration | None:
        """The declaration the model sees (by default the reference's `_get_declaration`).

        Returns:
            The declaration, or None for a tool the model is not told about.
        """
        return self._get_declaration()

    def _get_declaration(self) -> FunctionDeclaration | None:
        """The reference's name for `declaration`; None unless a subclass declares."""
        return None

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """Run the tool for one function call (by default the reference's `run_async`).

        Args:
            args: the function call's arguments.
            tool_context: the call's context (state, ids, actions).

        Returns:
            The result as JSON; see `to_response_dict` for how it is sent back.
        """
        return cast(JsonValue, await self.run_async(args=args, tool_context=tool_context))

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """The reference's name for `run`, with keyword arguments (by default `run`)."""
        if type(self).run is BaseTool.run:  # neither is implemented: refused in __init__
            raise NotImplementedError(f"tool '{self.name}' implements neither run nor run_async")
        return await self.run(args, tool_context)

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        """Change a model request before it is sent (nothing by default); the reference's
        hook, used by `preload_memory` and `load_memory`."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def to_response_dict(result: JsonValue) -> dict[str, JsonValue]:
    """The `response` of a FunctionResponse: a dict as is, anything else as {"result": value}.

    Args:
        result: a tool's result.

    Returns:
        The response dict.
    """
    return result if isinstance(result, dict) else {"result": result}


def to_function_response(call: FunctionCall, result: JsonValue) -> FunctionResponse:
    """The FunctionResponse answering a call (same id and name).

    Args:
        call: the model's function call.
        result: the tool's result.

    Returns:
        The response.
    """
    return FunctionResponse(id=call.id, name=call.name, response=to_response_dict(result))


def hold_for_confirmation(tool: str, tool_context: ToolContext) -> dict[str, JsonValue] | None:
    """For a call that needs a person's confirmation: ask for it (the first time), and the
    result the model gets meanwhile, or on a rejection; None once the call is confirmed.

    Args:
        tool: the tool's name, for the person.
        tool_context: the call's context (its `tool_confirmation` is the answer, if any).
    """
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(
            hint=f"Please approve or reject the tool call {tool}() by responding "
            "with a FunctionResponse with an expected ToolConfirmation payload."
        )
        return dict(REQUIRED)
    return None if confirmation.confirmed else dict(REJECTED)


def string_parameters(**fields: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """A declaration's parameters: required string arguments, each with its own further
    JSON-schema keys (`string_parameters(request={})`).

    Args:
        fields: each argument's name and schema keys besides `"type": "string"`.

    Returns:
        The JSON schema of the arguments object.
    """
    properties: dict[str, JsonValue] = {
        name: {"type": "string", **schema} for name, schema in fields.items()
    }
    return {"type": "object", "properties": properties, "required": list(fields)}


def described(error: ValidationError) -> str:
    """A validation error as a model reads it: each field's path and problem."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'the value'}: {e['msg']}" for e in error.errors()
    )


def unfit_call(tool: str, problem: str) -> JsonValue:
    """The answer to a call of `tool` whose arguments do not fit: the model tries again."""
    return {
        "error": f"`{tool}` was called with arguments that do not fit: {problem}. "
        "Call it again with every required parameter, of the right type."
    }
