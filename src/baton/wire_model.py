"""The base of every serialized model: camelCase on the wire, either case read back, and
the reference's (google.genai's) way of refusing a field it does not know."""

from __future__ import annotations

import base64
import binascii
from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["StrictWireModel", "WireModel", "base64_bytes"]


class WireModel(BaseModel):
    """Base of every serialized model: camelCase on the wire (`to_json`, `to_wire`,
    `by_alias=True`), either case accepted. `model_dump()` and `model_dump_json()` give
    the field names, as pydantic's and the reference's do, so code reading
    `event.model_dump()["actions"]["state_delta"]` works."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=False,
        extra="ignore",
    )

    def to_json(self) -> str:
        """Return the wire JSON: camelCase keys, unset (None) fields dropped."""
        return self.model_dump_json(by_alias=True, exclude_none=True)

    def to_wire(self) -> dict[str, Any]:
        """Return the wire form as a JSON-compatible dict."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_json_dict(self) -> dict[str, Any]:
        """Return the dict the reference's (google.genai's) `to_json_dict` gives: field
        names, unset (None) fields dropped, JSON values (bytes as base64)."""
        return self.model_dump(mode="json", exclude_none=True)

    @classmethod
    def from_wire(cls, data: str | bytes | dict[str, Any]) -> Self:
        """Parse the wire form (a JSON text or an already decoded dict)."""
        if isinstance(data, str | bytes):
            return cls.model_validate_json(data)
        return cls.model_validate(data)


class StrictWireModel(WireModel):
    """A wire model whose unknown fields are refused, as the reference's message types
    (google.genai's) and its EventActions refuse them: a misspelled field fails loudly."""

    model_config = ConfigDict(extra="forbid")


def base64_bytes(value: object, field: str) -> object:
    # A JSON text is decoded by `val_json_bytes`; a dict parsed from JSON arrives here
    # with the base64 text still in it.
    if not isinstance(value, str):
        return value
    padded = value + "=" * (-len(value) % 4)
    try:
        return base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except binascii.Error as error:
        raise ValueError(
            f"{field} is not base64 ({error}); send the bytes base64-encoded."
        ) from error
