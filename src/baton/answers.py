"""Turning a FunctionResponse into the value a node receives, validated first."""

from __future__ import annotations

import contextlib
import json

from jsonschema import Draft202012Validator
from jsonschema import exceptions as schema_errors
from jsonschema.exceptions import ValidationError
from pydantic import JsonValue

from baton.errors import InvalidResponseError
from baton.sessions.store import Interrupt

__all__ = ["unwrap_response", "validate_answer"]


def unwrap_response(response: dict[str, JsonValue] | None) -> JsonValue:
    """`{"result": x}` becomes `x`; any other object is the value itself."""
    if response is not None and response.keys() == {"result"}:
        return response["result"]
    return response


def validate_answer(row: Interrupt, value: JsonValue) -> JsonValue:
    """The answer checked against the interrupt's response_schema.

    A text answer to a non-text schema is read as JSON first (so a typed "42" in a
    terminal or a form reaches an integer schema as 42).

    Raises:
        InvalidResponseError: the answer does not match; names the interrupt and the problem.
    """
    schema = row.response_schema
    if schema is None:
        return value
    if isinstance(value, str) and schema.get("type") not in (None, "string"):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    errors: list[ValidationError] = list(
        Draft202012Validator(schema).iter_errors(value)  # pyright: ignore[reportUnknownMemberType] -- the stubs leave `instance` untyped
    )
    if not errors:
        return value
    error = _most_relevant(errors)
    where = "/".join(str(p) for p in error.absolute_path) or "the answer"
    raise InvalidResponseError(
        f"answer to interrupt '{row.interrupt_id}' does not match its response_schema: "
        f"{where}: {error.message}. Nothing was stored; correct the answer and send it again."
    )


def _most_relevant(errors: list[ValidationError]) -> ValidationError:
    """jsonschema's pick: for an anyOf/oneOf failure, the reason from the branch that fits."""
    found = schema_errors.best_match(errors)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] -- untyped return in the stubs
    assert isinstance(found, ValidationError)  # errors is non-empty
    return found
