"""Wire types: the message parts a conversation is made of.

They serialize to the reference system's JSON (camelCase keys, absent fields
dropped), and accept snake_case or camelCase when parsed.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal, NewType, Self

from pydantic import BaseModel, ConfigDict, JsonValue, field_validator
from pydantic.alias_generators import to_camel

__all__ = [
    "Blob",
    "Content",
    "FileData",
    "FunctionCall",
    "FunctionResponse",
    "InterruptId",
    "InvocationId",
    "JsonValue",
    "Part",
    "RunId",
    "SessionId",
    "WireModel",
]


class WireModel(BaseModel):
    """Base of every serialized model: camelCase on the wire, either case accepted."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        extra="ignore",
    )

    def to_json(self) -> str:
        """Return the wire JSON: camelCase keys, unset (None) fields dropped."""
        return self.model_dump_json(by_alias=True, exclude_none=True)

    def to_wire(self) -> dict[str, Any]:
        """Return the wire form as a JSON-compatible dict."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def from_wire(cls, data: str | bytes | dict[str, Any]) -> Self:
        """Parse the wire form (a JSON text or an already decoded dict)."""
        if isinstance(data, str | bytes):
            return cls.model_validate_json(data)
        return cls.model_validate(data)


class FunctionCall(WireModel):
    """A request, by the model or a node, to call a function (or to ask a person)."""

    id: str | None = None
    name: str | None = None
    args: dict[str, JsonValue] | None = None


class FunctionResponse(WireModel):
    """The result of a function call; the answer to an interrupt carries its id."""

    id: str | None = None
    name: str | None = None
    response: dict[str, JsonValue] | None = None
    # More responses to the same call follow (a long-running tool's progress update):
    # the call stays open, and each response gives the agent's model a turn.
    will_continue: bool | None = None


class Blob(WireModel):
    """Bytes with their MIME type; `data` is base64 on the wire (URL-safe or standard
    alphabet accepted, as the reference's client sends either)."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    mime_type: str | None = None
    data: bytes | None = None
    display_name: str | None = None

    @field_validator("data", mode="before")
    @classmethod
    def _decode_base64(cls, value: object) -> object:
        # A JSON text is decoded by `val_json_bytes`; a dict parsed from JSON arrives
        # here with the base64 text still in it.
        if not isinstance(value, str):
            return value
        padded = value + "=" * (-len(value) % 4)
        try:
            return base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        except binascii.Error as error:
            raise ValueError(
                f"data is not base64 ({error}); send the bytes base64-encoded."
            ) from error


class FileData(WireModel):
    """A file kept elsewhere, by URI."""

    file_uri: str | None = None
    mime_type: str | None = None
    display_name: str | None = None


class Part(WireModel):
    """One part of a message: text, bytes, a file reference, a function call or response."""

    text: str | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    thought: bool | None = None

    @classmethod
    def from_bytes(cls, *, data: bytes, mime_type: str) -> Part:
        """A part holding bytes (an image, a PDF, ...)."""
        return cls(inline_data=Blob(mime_type=mime_type, data=data))

    @classmethod
    def from_uri(cls, *, file_uri: str, mime_type: str | None = None) -> Part:
        """A part naming a file by URI."""
        return cls(file_data=FileData(file_uri=file_uri, mime_type=mime_type))

    @classmethod
    def from_text(cls, *, text: str) -> Part:
        """A text part."""
        return cls(text=text)

    @classmethod
    def from_function_call(cls, *, name: str, args: dict[str, JsonValue]) -> Part:
        """A function-call part (no id; the runtime assigns one when it needs to)."""
        return cls(function_call=FunctionCall(name=name, args=args))

    @classmethod
    def from_function_response(cls, *, name: str, response: dict[str, JsonValue]) -> Part:
        """A function-response part (set `.function_response.id` to answer an interrupt)."""
        return cls(function_response=FunctionResponse(name=name, response=response))


class Content(WireModel):
    """A message: a role and its parts."""

    role: Literal["user", "model"] | str | None = None
    parts: list[Part] | None = None

    @property
    def text(self) -> str:
        """The concatenated text of the text parts ('' when there is none)."""
        return "".join(part.text for part in self.parts or [] if part.text)

    @property
    def function_responses(self) -> list[FunctionResponse]:
        """The function responses this message carries, in order."""
        return [p.function_response for p in self.parts or [] if p.function_response]

    @property
    def function_calls(self) -> list[FunctionCall]:
        """The function calls this message carries, in order."""
        return [p.function_call for p in self.parts or [] if p.function_call]


# Ids are plain strings on the wire; NewTypes keep them apart in signatures.
SessionId = NewType("SessionId", str)
InvocationId = NewType("InvocationId", str)
InterruptId = NewType("InterruptId", str)
RunId = NewType("RunId", str)
