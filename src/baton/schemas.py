"""Schemas: a workflow's `state_schema`, and a node's `input_schema` / `output_schema`.

A `state_schema` is a pydantic model declaring the state keys a workflow writes:
every write (`ctx.state[key] = value`, `Event(state=...)`, a tool's or callback's
write, the caller's `state_delta`) is checked against the key's field before it is
kept, and refused with `StateSchemaError` naming the key, the value and the node.
Keys with a `:` (the reference's `app:`, `user:`, `temp:` scopes) are not checked.
Nested workflows inherit the schema of the workflow around them unless they
declare their own.

An `input_schema` / `output_schema` is a pydantic class, a Python type or a JSON
schema dict; the node's input is checked before it runs and its output before its
step is committed (values are coerced as pydantic does, e.g. "5" to 5 for an int),
and a mismatch fails the node with `NodeSchemaError` before the output is stored.
"""

from __future__ import annotations

import functools
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from pydantic import BaseModel, JsonValue, TypeAdapter, ValidationError

from baton.errors import NodeSchemaError, StateSchemaError

if TYPE_CHECKING:  # jsonschema is read on the first JSON-schema dict checked (see answers.py)
    from jsonschema.exceptions import ValidationError as SchemaViolation

__all__ = [
    "SchemaType",
    "check_node_data",
    "check_state_delta",
    "check_state_write",
    "current_state_schema",
]

SchemaType: TypeAlias = type[Any] | dict[str, JsonValue]
"""A pydantic class or Python type (validated by pydantic), or a JSON schema dict."""

current_state_schema: Final[ContextVar[type[BaseModel] | None]] = ContextVar(
    "baton_state_schema", default=None
)
"""The state_schema of the workflow whose nodes run in this task (set by the Workflow)."""


@functools.lru_cache(maxsize=256)
def _field_adapter(schema: type[BaseModel], key: str) -> TypeAdapter[Any]:
    return TypeAdapter(schema.model_fields[key].rebuild_annotation())


@functools.lru_cache(maxsize=256)
def _adapter(schema: type[Any]) -> TypeAdapter[Any]:
    adapter: TypeAdapter[Any] = TypeAdapter(schema)  # pyright: ignore[reportArgumentType, reportUnknownVariableType] -- pyright 1.1.391 predates pydantic's TypeForm parameter
    return adapter


def check_state_write(schema: type[BaseModel], key: str, value: JsonValue, node: str) -> None:
    """Refuse a state write that does not fit `schema`.

    Raises:
        StateSchemaError: the key is not declared, or the value does not fit its field.
    """
    if ":" in key:
        return
    fields = schema.model_fields
    if key not in fields:
        raise StateSchemaError(
            f"{node} wrote state key '{key}' = {value!r}, which state_schema "
            f"'{schema.__name__}' does not declare (declared: {', '.join(sorted(fields))}). "
            "Nothing was stored; declare the key in the schema or write a declared one."
        )
    try:
        _field_adapter(schema, key).validate_python(value)
    except ValidationError as error:
        problem = error.errors()[0]["msg"]
        raise StateSchemaError(
            f"{node} wrote state key '{key}' = {value!r}, which does not fit "
            f"{fields[key].rebuild_annotation()} in state_schema '{schema.__name__}': "
            f"{problem}. Nothing was stored."
        ) from error


def check_state_delta(
    schema: type[BaseModel] | None, delta: dict[str, JsonValue], node: str
) -> None:
    """`check_state_write` for every key of `delta` (nothing when there is no schema)."""
    if schema is None:
        return
    for key, value in delta.items():
        check_state_write(schema, key, value, node)


def check_node_data(
    schema: SchemaType | None,
    value: JsonValue,
    *,
    node: str,
    what: Literal["input", "output"],
) -> JsonValue:
    """The value checked against a node's input or output schema (coerced by pydantic).

    Raises:
        NodeSchemaError: the value does not fit; names the node, the value and the problem.
    """
    if schema is None:
        return value
    if isinstance(schema, dict):
        from jsonschema import Draft202012Validator

        errors = list(Draft202012Validator(schema).iter_errors(value))  # pyright: ignore[reportUnknownMemberType] -- the stubs leave `instance` untyped
        if errors:
            raise _refused(node, what, value, _describe(errors[0]))
        return value
    try:
        checked = _adapter(schema).validate_python(value)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or what
        raise _refused(node, what, value, f"{where}: {first['msg']}") from error
    return _adapter(schema).dump_python(checked, mode="json", exclude_none=True)


def _describe(error: SchemaViolation) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "the value"
    return f"{where}: {error.message}"


def _refused(node: str, what: str, value: JsonValue, problem: str) -> NodeSchemaError:
    return NodeSchemaError(
        f"the {what} of node '{node}' ({value!r}) does not fit its {what}_schema: {problem}. "
        f"The node's {what} was not stored; fix the node or its schema, then continue the "
        "invocation."
    )
