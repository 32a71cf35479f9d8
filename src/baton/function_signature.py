"""A Python function as a tool sees it: its name, description and parameters' JSON schema
(what a `FunctionDeclaration` declares), and its arguments validated and bound.

The JSON schema comes from the signature's type hints (pydantic does the work, so
models, Optional, lists, enums and Literal all work) and the per-parameter
descriptions from the docstring. A parameter named `tool_context` is not shown
to the model: the tool passes its ToolContext there.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, create_model
from pydantic.json_schema import GenerateJsonSchema

from baton.docstrings import parse_docstring

__all__ = ["TOOL_CONTEXT_PARAMETER", "BoundCall", "FunctionSignature", "InvalidArgumentsError"]

TOOL_CONTEXT_PARAMETER = "tool_context"
"""A parameter with this name receives the ToolContext and is hidden from the model."""

_SKIPPED_KINDS = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


class InvalidArgumentsError(ValueError):
    """The model's arguments do not fit the function; the message is meant for the model."""


class _NoFieldTitles(GenerateJsonSchema):
    # Titles repeat the property names; they cost the model tokens and say nothing.
    def field_title_should_be_set(self, schema: object) -> bool:
        return False


@dataclass(frozen=True)
class BoundCall:
    """Validated arguments, ready to call the function with."""

    args: tuple[object, ...]
    kwargs: dict[str, object]


@dataclass(frozen=True)
class FunctionSignature:
    """What a function declares to the model and how its arguments are checked.

    Build it with `FunctionSignature.of(func)`.
    """

    name: str
    description: str
    parameters: dict[str, JsonValue]
    args_model: type[BaseModel]
    positional: tuple[str, ...]
    takes_tool_context: bool
    accepted: frozenset[str]  # the parameters' names

    @classmethod
    def of(cls, func: Callable[..., object], *, name: str | None = None) -> FunctionSignature:
        """Read a function's signature, type hints and docstring.

        Args:
            func: a function, method or callable object, sync or async.
            name: the tool name (default: the function's `__name__`).

        Returns:
            The signature.

        Raises:
            TypeError: `func` is not callable, has no name, or its type hints cannot be
                resolved or turned into a JSON schema.
        """
        if not callable(func):
            raise TypeError(
                f"a tool needs a function (or a BaseTool); got {func!r} of type "
                f"{type(func).__name__}. Pass the function itself, not its result."
            )
        tool_name = name or _name_of(func)
        docs = parse_docstring(inspect.getdoc(func))
        params = [
            p
            for p in inspect.signature(func).parameters.values()
            if p.kind not in _SKIPPED_KINDS and p.name != TOOL_CONTEXT_PARAMETER
        ]
        args_model = _args_model(tool_name, params, _hints_of(func, tool_name), docs.params)
        return cls(
            name=tool_name,
            description=docs.description,
            parameters=_schema_of(args_model, tool_name),
            args_model=args_model,
            positional=tuple(p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_ONLY),
            takes_tool_context=TOOL_CONTEXT_PARAMETER in inspect.signature(func).parameters,
            accepted=frozenset(p.name for p in params),
        )

    def bind(self, args: dict[str, JsonValue]) -> BoundCall:
        """Validate the model's arguments and coerce them into the annotated types.

        Args:
            args: the function call's arguments.

        Returns:
            The arguments to call the function with (without the tool context).

        Raises:
            InvalidArgumentsError: an argument is missing or of the wrong type; the
                message lists every problem and the accepted parameters (a missing one
                alone: the reference's words). An argument the function does not take is
                dropped, as the reference drops it.
        """
        if not args.keys() <= self.accepted:
            # The reference drops what the function does not take and calls it.
            args = {name: value for name, value in args.items() if name in self.accepted}
        try:
            validated = self.args_model.model_validate(args)
        except ValidationError as exc:
            raise InvalidArgumentsError(self._explain(exc)) from exc
        values = {
            info.alias or key: getattr(validated, key)
            for key, info in self.args_model.model_fields.items()
        }
        positional = tuple(values.pop(key) for key in self.positional)
        return BoundCall(args=positional, kwargs=values)

    def _explain(self, error: ValidationError) -> str:
        errors = error.errors(include_url=False)
        if all(e["type"] == "missing" and len(e["loc"]) == 1 for e in errors):
            missing = "\n".join(str(e["loc"][0]) for e in errors)
            return (  # the reference's words, which models are prompted with
                f"Invoking `{self.name}()` failed as the following mandatory input parameters "
                f"are not present:\n{missing}\nYou could retry calling this tool, but it is "
                "IMPORTANT for you to provide all the mandatory parameters."
            )
        problems = "; ".join(
            f"'{'.'.join(str(part) for part in e['loc']) or '(arguments)'}': {e['msg']}"
            + (f" (got {e['input']!r})" if e["type"] != "missing" else "")
            for e in errors
        )
        accepted = ", ".join(
            info.alias or key for key, info in self.args_model.model_fields.items()
        )
        return (
            f"invalid arguments for tool '{self.name}': {problems}. Its parameters are: "
            f"{accepted or '(none)'}. Call it again with corrected arguments."
        )


def _name_of(func: Callable[..., object]) -> str:
    name = getattr(func, "__name__", None)
    if not isinstance(name, str) or name == "<lambda>":
        raise TypeError(f"tool function {func!r} has no usable __name__; pass name=... for it.")
    return name


def _hints_of(func: Callable[..., object], tool_name: str) -> dict[str, Any]:
    # A callable object's hints are on its __call__ method.
    target = func if inspect.isroutine(func) else func.__call__  # pyright: ignore[reportFunctionMemberAccess] -- not a function here
    try:
        return typing.get_type_hints(target, include_extras=True)
    except (NameError, TypeError) as exc:
        raise TypeError(
            f"the type hints of tool '{tool_name}' cannot be resolved ({exc}); define the "
            "types they name at module level."
        ) from exc


def _args_model(
    tool_name: str,
    params: list[inspect.Parameter],
    hints: dict[str, Any],
    descriptions: dict[str, str],
) -> type[BaseModel]:
    # Fields get neutral names and the parameter name as alias, so a parameter may be
    # called `json` or `model_id` without clashing with BaseModel's own attributes.
    fields: dict[str, Any] = {
        f"p{index}": (
            hints.get(param.name, Any),
            Field(
                ... if param.default is inspect.Parameter.empty else param.default,
                alias=param.name,
                description=descriptions.get(param.name),
            ),
        )
        for index, param in enumerate(params)
    }
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, title=tool_name)
    return create_model(f"{tool_name}_arguments", __config__=config, **fields)


def _schema_of(args_model: type[BaseModel], tool_name: str) -> dict[str, JsonValue]:
    try:
        schema: dict[str, JsonValue] = args_model.model_json_schema(schema_generator=_NoFieldTitles)
    except Exception as exc:  # pydantic raises several types for types it cannot describe
        raise TypeError(
            f"the parameters of tool '{tool_name}' cannot be described as JSON schema "
            f"({exc}); annotate them with JSON-compatible types or pydantic models (the "
            f"ToolContext parameter must be named '{TOOL_CONTEXT_PARAMETER}')."
        ) from exc
    schema.pop("title", None)
    return schema
