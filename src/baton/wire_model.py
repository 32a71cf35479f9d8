"""The base of every serialized model: camelCase on the wire, either case read back, and
the reference's (google.genai's) way of refusing a field it does not know."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Self, cast, final

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

__all__ = ["StrictWireModel", "UntakenFields", "WireModel", "base64_bytes"]


class WireModel(BaseModel):
    """Base of every serialized model: camelCase on the wire (`to_json`, `to_wire`,
    `by_alias=True`), either case accepted. `model_dump()` and `model_dump_json()` give
    the field names, as pydantic's and the reference's do, so code reading
    `event.model_dump()["actions"]["state_delta"]` works.

    Speed: `defer_build` (here and on baton's other model bases, which point here) builds
    a model's validator and serializer when it is first used instead of when its class
    is defined, so `import baton` (and `baton --help`) does not build ~100 of them.
    What a model accepts and gives is unchanged; a subclass's schema error shows when the
    subclass is first used."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=False,
        extra="ignore",
        defer_build=True,
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


@final
class UntakenFields:
    """The fields of the reference's `model` that baton's does not take, each with what to
    do instead (`advice`, by field name): refused by name, where pydantic would say only
    "Extra inputs are not permitted": a before-validator calls `refuse(data)`, a model
    whose validation is hot checks its constructor's arguments (`refuse_arguments`).
    """

    __slots__ = ("_advice", "_model", "_names")

    def __init__(self, model: str, advice: Mapping[str, str]) -> None:
        self._model = model
        self._advice = dict(advice)
        # Either spelling to the field's name, made once: a check is one lookup a key.
        self._names: dict[object, str] = {to_camel(name): name for name in advice}
        self._names.update({name: name for name in advice})

    def refuse(self, data: object) -> None:
        """Raise for the untaken fields `data` holds (when it is a dict): a before-validator's
        check.

        Raises:
            ValueError: naming each such field and what to do instead.
        """
        message = self.refusal(data)
        if message:
            raise ValueError(message)

    def refuse_arguments(self, arguments: dict[str, Any]) -> None:
        """Raise for the untaken fields among a constructor's keyword `arguments`, as
        pydantic raises for a field it refuses: an `__init__`'s check.

        Raises:
            ValidationError: naming each such field and what to do instead.
        """
        message = self.refusal(arguments)
        if message:
            error = PydanticCustomError("untaken_field", "{reason}", {"reason": message})
            raise ValidationError.from_exception_data(
                self._model, [InitErrorDetails(type=error, loc=(), input=arguments)]
            )

    def refusal(self, data: object) -> str:
        """What `refuse` says of `data` ("" when it holds no untaken field)."""
        if type(data) is not dict:
            return ""
        names = self._names
        named = sorted({names[key] for key in cast(dict[object, object], data) if key in names})
        by_advice: dict[str, list[str]] = {}
        for name in named:
            by_advice.setdefault(self._advice[name], []).append(name)
        return "; ".join(
            f"{self._model}: {', '.join(fields)}: {text}" for text, fields in by_advice.items()
        )


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
