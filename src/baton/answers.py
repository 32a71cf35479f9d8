"""Turning a FunctionResponse into the value a node receives, validated first."""

from __future__ import annotations

import contextlib
import functools
import json
import numbers
from collections.abc import Callable
from typing import TYPE_CHECKING

import pydantic_core
from pydantic import JsonValue

from baton.auth.auth_flow import answered_config
from baton.errors import InvalidResponseError
from baton.events import REQUEST_CREDENTIAL_FUNCTION
from baton.sessions.store import Interrupt

if TYPE_CHECKING:
    # jsonschema is read where a schema is first checked, not with baton: with its format
    # checkers it is a tenth of `import baton`'s instructions, which a process whose
    # questions, nodes and tasks declare no JSON schema never uses.
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

__all__ = ["schema_problem", "unwrap_response", "validate_answer"]


def unwrap_response(response: dict[str, JsonValue] | None) -> JsonValue:
    """`{"result": x}` becomes `x`; any other object is the value itself."""
    if response is not None and response.keys() == {"result"}:
        return response["result"]
    return response


def validate_answer(row: Interrupt, value: JsonValue) -> JsonValue:
    """The answer checked against the interrupt's response_schema.

    A text answer to a non-text schema is read as JSON first (so a typed "42" in a
    terminal or a form reaches an integer schema as 42). An optional property (not
    in its object's `required`) that arrives as null, where its schema does not
    accept null, is treated as absent: forms send null for every field left empty.
    The answer without those keys is what is validated and returned. An answer to a
    credential request is read and checked whole (see `answered_config`): what is kept is
    the request's AuthConfig with the user's credential in it.

    Raises:
        InvalidResponseError: the answer does not match; names the interrupt and the problem.
    """
    schema = row.response_schema
    if schema is None:
        return value
    if isinstance(value, str) and schema.get("type") not in (None, "string"):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    is_of_type = _simple_type_check(schema)
    if is_of_type is not None:
        if is_of_type(value):
            return value
        raise _mismatch(row, "the answer", f"{value!r} is not of type {schema['type']!r}")
    validator = _validator_for(schema)
    value = _without_null_optionals(validator, schema, schema, value)
    errors: list[ValidationError] = list(
        validator.iter_errors(value)  # pyright: ignore[reportUnknownMemberType] -- the stubs leave `instance` untyped
    )
    if not errors:
        if row.function_name == REQUEST_CREDENTIAL_FUNCTION:
            return answered_config(row.payload, value)
        return value
    error = _most_relevant(errors)
    where = "/".join(str(p) for p in error.absolute_path) or "the answer"
    raise _mismatch(row, where, error.message)


def _mismatch(row: Interrupt, where: str, problem: str) -> InvalidResponseError:
    return InvalidResponseError(
        f"answer to interrupt '{row.interrupt_id}' does not match its response_schema: "
        f"{where}: {problem}. Nothing was stored; correct the answer and send it again."
    )


# Speed: a schema that only names a type (`{"type": "boolean"}`, what
# `response_schema=bool`, `int`, `float`, `str` write) is checked here, as jsonschema's
# Draft 2020-12 type checker decides (an integral float is an integer, a bool is no
# number), with its message ("'yes' is not of type 'boolean'"): not through its
# validator, its schema's key and its error objects: 23.9k -> 5.6k instructions an answer
# (callgrind), and a process whose questions only name types never loads jsonschema
# (~280M instructions at its first answer). Any other keyword, or a list of types, takes
# the full validator.
_SIMPLE_TYPES: dict[str, Callable[[object], bool]] = {
    "array": lambda value: isinstance(value, list),
    "boolean": lambda value: isinstance(value, bool),
    "integer": lambda value: (
        not isinstance(value, bool)
        and (isinstance(value, int) or (isinstance(value, float) and value.is_integer()))
    ),
    "null": lambda value: value is None,
    "number": lambda value: not isinstance(value, bool) and isinstance(value, numbers.Number),
    "object": lambda value: isinstance(value, dict),
    "string": lambda value: isinstance(value, str),
}
_ONLY_NAMING_A_TYPE = frozenset(("type", "title", "description"))
"""The keywords of a schema `_simple_type_check` checks: its type and annotations."""


def _simple_type_check(schema: dict[str, JsonValue]) -> Callable[[object], bool] | None:
    """The check of a schema that only names one type (see `_SIMPLE_TYPES`), else None."""
    kind = schema.get("type")
    if not isinstance(kind, str) or not schema.keys() <= _ONLY_NAMING_A_TYPE:
        return None
    return _SIMPLE_TYPES.get(kind)


def _validator_for(schema: dict[str, JsonValue]) -> Draft202012Validator:
    """A validator of `schema`, kept for the next answer to the same schema."""
    return _validator_of(pydantic_core.to_json(schema))


# Validators by their schema's JSON text, the 256 used last. Building one (its reference
# registry) costs more than checking a small answer, and a question's schema recurs on
# every answer to it. Keyed by content, a schema that changed (a new workflow version)
# gets its own. `lru_cache` because every Runner's sync calls run on a loop thread of
# their own: its lock keeps threads replacing validators at once from failing (a dict
# evicted by hand raised KeyError there), and each validator holds a schema of its own,
# decoded from the key, that no caller's dict can change under it.
@functools.lru_cache(maxsize=256)
def _validator_of(schema_json: bytes) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


def _without_null_optionals(
    validator: Draft202012Validator,
    root: dict[str, JsonValue],
    schema: JsonValue,
    value: JsonValue,
) -> JsonValue:
    """`value` without the optional properties that are null where null is not allowed.

    Follows the object schemas `value` meets (through local `$ref`s and one-item
    `allOf`s, as pydantic writes nested models); anything else is left as it is.
    """
    schema = _resolved(root, schema)
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(value, dict) or not isinstance(properties, dict):
        return value
    assert isinstance(schema, dict)
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set[JsonValue]()
    kept: dict[str, JsonValue] = {}
    for key, item in value.items():
        sub = properties.get(key)
        if sub is None:
            kept[key] = item
        elif item is None and key not in needed and not _accepts_null(validator, root, sub):
            continue
        else:
            kept[key] = _without_null_optionals(validator, root, sub, item)
    return kept


def _resolved(root: dict[str, JsonValue], schema: JsonValue) -> JsonValue:
    """`schema` with a local `$ref` (`#/...`) or a one-item `allOf` followed."""
    for _ in range(32):  # a bound, in case of a reference cycle
        if not isinstance(schema, dict):
            return schema
        ref = schema.get("$ref")
        all_of = schema.get("allOf")
        if isinstance(ref, str) and ref.startswith("#/"):
            schema = _pointer(root, ref[2:])
        elif isinstance(all_of, list) and len(all_of) == 1:
            schema = all_of[0]
        else:
            return schema
    return schema


def _pointer(root: dict[str, JsonValue], path: str) -> JsonValue:
    """The part of `root` at a JSON pointer (without its `#/`); None when absent."""
    node: JsonValue = root
    for step in path.split("/"):
        step = step.replace("~1", "/").replace("~0", "~")
        node = node.get(step) if isinstance(node, dict) else None
    return node


def _accepts_null(
    validator: Draft202012Validator, root: dict[str, JsonValue], schema: JsonValue
) -> bool:
    """Whether null is a valid value of `schema` (a part of `root`)."""
    if not isinstance(schema, dict | bool):
        return True
    return validator.evolve(schema=schema).is_valid(None)  # pyright: ignore[reportUnknownMemberType] -- the stubs leave `instance` untyped


def schema_problem(schema: dict[str, JsonValue], value: JsonValue) -> str | None:
    """Why `value` does not match `schema` (the most relevant reason), or None when it does."""
    from jsonschema import Draft202012Validator

    errors: list[ValidationError] = list(
        Draft202012Validator(schema).iter_errors(value)  # pyright: ignore[reportUnknownMemberType] -- the stubs leave `instance` untyped
    )
    return _most_relevant(errors).message if errors else None


def _most_relevant(errors: list[ValidationError]) -> ValidationError:
    """jsonschema's pick: for an anyOf/oneOf failure, the reason from the branch that fits."""
    from jsonschema import exceptions as schema_errors

    found = schema_errors.best_match(errors)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] -- untyped return in the stubs
    assert isinstance(found, schema_errors.ValidationError)  # errors is non-empty
    return found
