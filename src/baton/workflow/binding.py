"""Binding a function node's parameters by name.

`ctx` gets the Context, `node_input` the predecessor's output; any other
parameter is read from session state by name or, when it is the only other
parameter and state has no such key, from the node input, validated into its
annotated type. Bound from the node input instead (`parameter_binding="node_input"`),
every parameter but `ctx` is read from the input object by name, and a `**kwargs`
gets its other keys.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass
from types import UnionType
from typing import Any, Final, TypeAlias, Union, cast, get_args, get_origin

from pydantic import JsonValue, TypeAdapter, ValidationError

from baton.context import Context
from baton.errors import MissingParameterError
from baton.types import Content, Part

__all__ = ["JSON_TYPES", "Binder", "NodeInput"]

_EMPTY: Final = inspect.Parameter.empty
# The types of a decoded JSON value (None's too): none of them is a `Content`.
JSON_TYPES: Final = frozenset({str, int, float, bool, dict, list, type(None)})

NodeInput: TypeAlias = JsonValue | Content
"""What a node run receives: a predecessor's output, or (after START) the user's message."""


@dataclass(frozen=True)
class _Param:
    name: str
    annotation: Any
    default: Any
    adapter: TypeAdapter[Any] | None

    @property
    def has_default(self) -> bool:
        return self.default is not _EMPTY


def _adapter_for(annotation: Any) -> TypeAdapter[Any] | None:
    if annotation is _EMPTY or annotation is Any or annotation is object or annotation is JsonValue:
        # Inputs and state values are JSON already: nothing to convert or check.
        return None
    try:
        return TypeAdapter(annotation)
    except Exception:  # pydantic raises several types for unsupported annotations
        return None


class Binder:
    """Computes the keyword arguments of one function for each run."""

    def __init__(
        self, func: Callable[..., object], node_name: str, *, from_input: bool = False
    ) -> None:
        self._node_name = node_name
        self._from_input = from_input
        self._takes_extra = False
        hints = _resolved_hints(func)
        self._ctx_params: list[str] = []
        self._input_param: _Param | None = None
        self._state_params: list[_Param] = []
        for p in inspect.signature(func).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                self._takes_extra |= p.kind is p.VAR_KEYWORD
                continue
            annotation = hints.get(p.name, p.annotation)
            if p.name == "ctx" or annotation is Context:
                self._ctx_params.append(p.name)
                continue
            param = _Param(p.name, annotation, p.default, _adapter_for(annotation))
            if p.name == "node_input" and not from_input:
                self._input_param = param
            else:
                self._state_params.append(param)
        self._input_fallback = len(self._state_params) == 1 and self._input_param is None

    @property
    def takes_ctx(self) -> bool:
        return bool(self._ctx_params)

    @property
    def passes_json_input(self) -> bool:
        """Whether `bind` of a JSON input (a value of `JSON_TYPES`) is just
        `{"node_input": node_input}`: the function's one parameter is `node_input`, whose
        annotation converts nothing (none, JsonValue, Any, object)."""
        param = self._input_param
        return (
            param is not None
            and param.adapter is None
            and param.annotation is not Content
            and not self._ctx_params
            and not self._state_params
        )

    def bind(self, ctx: Context, node_input: NodeInput) -> dict[str, Any]:
        """The arguments for one call.

        Raises:
            MissingParameterError: a parameter has no value anywhere; names it and the node.
        """
        # A literal when no parameter takes `ctx` (most functions): `dict.fromkeys` is a
        # method call, on every run.
        kwargs: dict[str, Any] = dict.fromkeys(self._ctx_params, ctx) if self._ctx_params else {}
        if self._from_input:
            return self._bind_input(kwargs, node_input)
        if self._input_param is not None:
            kwargs["node_input"] = self._convert(self._input_param, node_input)
        for param in self._state_params:
            kwargs[param.name] = self._bind_state(param, ctx, node_input)
        return kwargs

    def _bind_input(self, kwargs: dict[str, Any], node_input: NodeInput) -> dict[str, Any]:
        """The arguments read from the input object by name (`parameter_binding="node_input"`)."""
        source = node_input if isinstance(node_input, dict) else {}
        for param in self._state_params:
            if param.name in source:
                kwargs[param.name] = self._convert(param, source[param.name])
            elif param.has_default:
                kwargs[param.name] = param.default
            else:
                raise MissingParameterError(
                    f"node '{self._node_name}' binds its parameters from its input, which has "
                    f"no key '{param.name}' (got {node_input!r}); output an object with "
                    f"'{param.name}' from the node before it, or give the parameter a default."
                )
        if self._takes_extra:
            kwargs |= {k: v for k, v in source.items() if k not in kwargs}
        return kwargs

    def _bind_state(self, param: _Param, ctx: Context, node_input: NodeInput) -> Any:
        if param.name in ctx.state:
            return self._convert(param, ctx.state[param.name])
        if self._input_fallback and node_input is not None:
            return self._convert(param, node_input)
        if param.has_default:
            return param.default
        raise MissingParameterError(
            f"node '{self._node_name}' needs parameter '{param.name}', but session state has "
            f"no key '{param.name}'"
            + ("" if self._input_fallback else " (and it is not the node's only input parameter)")
            + f"; set state['{param.name}'] before this node runs or give the parameter a default."
        )

    def _convert(self, param: _Param, value: NodeInput) -> Any:
        # Speed: a value of a JSON type (most inputs) is no message: the isinstance test,
        # a pass through the model class's ABCMeta (~700 instructions), is skipped.
        if type(value) not in JSON_TYPES and isinstance(value, Content):
            value = _from_message(param.annotation, value)
            if isinstance(value, Content):
                return value
        if param.annotation is Content:
            return _as_content(cast(JsonValue, value))  # a message returned above
        if param.adapter is None or value is None:
            return value
        try:
            return param.adapter.validate_python(value)
        except ValidationError as first:
            if isinstance(value, str):
                try:
                    return param.adapter.validate_json(value)
                except ValidationError:
                    pass
            raise MissingParameterError(
                f"node '{self._node_name}' parameter '{param.name}' expects "
                f"{_type_name(param.annotation)}, got {value!r}: {first.errors()[0]['msg']}."
            ) from first


def _resolved_hints(func: Callable[..., object]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(func)
    except Exception:  # unresolvable forward references: fall back to raw annotations
        return {}


def _from_message(annotation: Any, message: Content) -> NodeInput:
    """A user's message as a parameter annotated `annotation` takes it, as the reference
    binds it: the message itself where a Content fits (no annotation, Any, object,
    Content), its text for `str`, else its text read as JSON (or the text itself)."""
    if _expects_text(annotation):
        return message.text
    if _accepts_message(annotation):
        return message
    try:
        return json.loads(message.text)
    except ValueError:
        return message.text


def _expects_text(annotation: Any) -> bool:
    """`str`, or a union of `str` with None or Content only."""
    if annotation is str:
        return True
    if get_origin(annotation) in (Union, UnionType):
        args = get_args(annotation)
        return any(_expects_text(a) for a in args) and all(
            _expects_text(a) or a is type(None) or a is Content for a in args
        )
    return False


def _accepts_message(annotation: Any) -> bool:
    if annotation in (_EMPTY, Any, object, Content):
        return True
    if get_origin(annotation) in (Union, UnionType):
        return any(_accepts_message(a) for a in get_args(annotation))
    return False


def _as_content(value: JsonValue) -> Content:
    if isinstance(value, dict):
        return Content.model_validate(value)
    return Content(role="user", parts=[Part(text="" if value is None else str(value))])


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or repr(annotation)
