"""JSON Schema as the reference (google.genai) types it, `JSONSchema`, and its reading
into the reference's `Schema` fields (`Schema.from_json_schema`)."""

from __future__ import annotations

from typing import Any, Final

from pydantic import ConfigDict, Field, JsonValue

from baton.wire_enums import WireEnum
from baton.wire_model import WireModel
from baton.wire_repr import ReferenceRepr

__all__ = ["JSONSchema", "JSONSchemaType", "schema_fields_of"]


class JSONSchemaType(WireEnum):
    """A JSON Schema type (lower case, as JSON Schema writes it)."""

    NULL = "null"
    BOOLEAN = "boolean"
    OBJECT = "object"
    ARRAY = "array"
    NUMBER = "number"
    INTEGER = "integer"
    STRING = "string"

    @classmethod
    def _missing_(cls, value: object) -> JSONSchemaType:
        if isinstance(value, str) and value.lower() != value:
            return cls(value.lower())
        return super()._missing_(value)


class JSONSchema(ReferenceRepr, WireModel):
    """A JSON Schema, with the reference's field names (`$ref` and `$defs` read as `ref`
    and `defs`); unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")

    type: JSONSchemaType | list[JSONSchemaType] | None = None
    format: str | None = None
    title: str | None = None
    description: str | None = None
    default: JsonValue = None
    items: JSONSchema | None = None
    min_items: int | None = None
    max_items: int | None = None
    enum: list[JsonValue] | None = None
    properties: dict[str, JSONSchema] | None = None
    required: list[str] | None = None
    min_properties: int | None = None
    max_properties: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    additional_properties: JsonValue = None
    any_of: list[JSONSchema] | None = None
    unique_items: bool | None = None
    ref: str | None = Field(default=None, alias="$ref")
    defs: dict[str, JSONSchema] | None = Field(default=None, alias="$defs")
    one_of: list[JSONSchema] | None = None


# JSON Schema's keywords a `Schema` has no field for: refused by name, where the
# reference drops them unless asked to raise.
_UNSUPPORTED: Final = ("unique_items", "one_of")


def schema_fields_of(json_schema: JSONSchema) -> dict[str, Any]:
    """The `Schema` fields a JSON Schema stands for (its nested schemas as field dicts).

    Raises:
        ValueError: the schema uses a keyword `Schema` cannot hold (`oneOf`,
            `uniqueItems`), naming it.
    """
    given = {name: getattr(json_schema, name) for name in json_schema.model_fields_set}
    given = {name: value for name, value in given.items() if value is not None}
    for name in _UNSUPPORTED:
        if name in given:
            raise ValueError(
                f"JSON Schema keyword {name!r} has no place in a Schema (the reference "
                "drops it unless raise_error_on_unsupported_field=True; baton refuses it): "
                "leave it out, or give the JSON Schema itself as response_json_schema / "
                "parameters_json_schema."
            )
    fields: dict[str, Any] = {}
    for name, value in given.items():
        if name == "type":
            fields.update(_type_fields(value))
        elif name in ("items",):
            fields[name] = schema_fields_of(value)
        elif name in ("properties", "defs"):
            fields[name] = {key: schema_fields_of(item) for key, item in value.items()}
        elif name == "any_of":
            fields[name] = [schema_fields_of(item) for item in value]
        else:
            fields[name] = value
    return fields


def _type_fields(kind: JSONSchemaType | list[JSONSchemaType]) -> dict[str, Any]:
    """`type` and `nullable` for a JSON Schema type or list of types ("null" as nullable)."""
    kinds = kind if isinstance(kind, list) else [kind]
    others = [k for k in kinds if k is not JSONSchemaType.NULL]
    fields: dict[str, Any] = {"nullable": True} if len(others) < len(kinds) else {}
    if len(others) > 1:
        raise ValueError(
            f"JSON Schema type {[k.value for k in kinds]} is more than one type besides "
            "null, which a Schema cannot hold: use any_of with one type each."
        )
    if others:
        fields["type"] = others[0].value.upper()
    return fields
