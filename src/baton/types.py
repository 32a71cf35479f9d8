"""Wire types: the message parts a conversation is made of, and what a model is asked
with (its config, tools and their schemas).

They serialize to the reference system's JSON (camelCase keys, absent fields
dropped), and accept snake_case or camelCase when parsed. The names are the ones
code written for the reference finds in `google.genai.types`.
"""

from __future__ import annotations

import base64
import binascii
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, NewType, Self, cast

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator
from pydantic.alias_generators import to_camel, to_snake

from baton.wire_repr import ReferenceRepr

__all__ = [
    "Blob",
    "CodeExecutionResult",
    "Content",
    "ExecutableCode",
    "FileData",
    "FunctionCall",
    "FunctionCallingConfig",
    "FunctionCallingConfigMode",
    "FunctionDeclaration",
    "FunctionResponse",
    "GenerateContentConfig",
    "GenerateContentResponseUsageMetadata",
    "HarmBlockThreshold",
    "HarmCategory",
    "HttpOptions",
    "HttpRetryOptions",
    "InterruptId",
    "InvocationId",
    "JsonValue",
    "Language",
    "ModalityTokenCount",
    "ModelContent",
    "Outcome",
    "Part",
    "RunId",
    "SafetySetting",
    "Schema",
    "SessionId",
    "StrictWireModel",
    "ThinkingConfig",
    "ThinkingLevel",
    "Tool",
    "ToolConfig",
    "Type",
    "UsageMetadata",
    "UserContent",
    "WireModel",
]


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


class FunctionCall(ReferenceRepr, StrictWireModel):
    """A request, by the model or a node, to call a function (or to ask a person)."""

    reference_fields: ClassVar[tuple[str, ...]] = (
        "id",
        "args",
        "name",
        "partial_args",
        "will_continue",
    )

    id: str | None = None
    args: dict[str, JsonValue] | None = None
    name: str | None = None


class FunctionResponse(ReferenceRepr, StrictWireModel):
    """The result of a function call; the answer to an interrupt carries its id."""

    reference_fields: ClassVar[tuple[str, ...]] = (
        "will_continue",
        "scheduling",
        "parts",
        "id",
        "name",
        "response",
    )

    # More responses to the same call follow (a long-running tool's progress update):
    # the call stays open, and each response gives the agent's model a turn.
    will_continue: bool | None = None
    id: str | None = None
    name: str | None = None
    response: dict[str, JsonValue] | None = None


class Blob(ReferenceRepr, StrictWireModel):
    """Bytes with their MIME type; `data` is base64 on the wire (URL-safe or standard
    alphabet accepted, as the reference's client sends either)."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64", extra="forbid")

    data: bytes | None = None
    display_name: str | None = None
    mime_type: str | None = None

    @field_validator("data", mode="before")
    @classmethod
    def _decode_base64(cls, value: object) -> object:
        return _base64_bytes(value, "data")


def _base64_bytes(value: object, field: str) -> object:
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


class FileData(ReferenceRepr, StrictWireModel):
    """A file kept elsewhere, by URI."""

    display_name: str | None = None
    file_uri: str | None = None
    mime_type: str | None = None


class _AnyCaseEnum(StrEnum):
    """An enum whose values are taken in any case ("python" is PYTHON), as the reference's
    (google.genai's) are; a value it does not have is refused, naming those it has."""

    @classmethod
    def _missing_(cls, value: object) -> Self:
        if isinstance(value, str):
            for member in cls:
                if member.value == value.upper():
                    return member
        raise ValueError(
            f"{value!r} is not a {cls.__name__}; use one of: {', '.join(m.value for m in cls)}."
        )


class Language(_AnyCaseEnum):
    """The programming language of `ExecutableCode`."""

    LANGUAGE_UNSPECIFIED = "LANGUAGE_UNSPECIFIED"
    PYTHON = "PYTHON"


class Outcome(_AnyCaseEnum):
    """How running `ExecutableCode` ended."""

    OUTCOME_UNSPECIFIED = "OUTCOME_UNSPECIFIED"
    OUTCOME_OK = "OUTCOME_OK"
    OUTCOME_FAILED = "OUTCOME_FAILED"
    OUTCOME_DEADLINE_EXCEEDED = "OUTCOME_DEADLINE_EXCEEDED"


class ExecutableCode(ReferenceRepr, StrictWireModel):
    """Code a model wrote to be run (a code executor runs it); its result comes in a
    `CodeExecutionResult` part."""

    code: str | None = None
    language: Language | None = None
    id: str | None = None


class CodeExecutionResult(ReferenceRepr, StrictWireModel):
    """What running an `ExecutableCode` gave: its outcome and its output (stdout, or the
    error when it failed)."""

    outcome: Outcome | None = None
    output: str | None = None
    id: str | None = None


class Part(ReferenceRepr, StrictWireModel):
    """One part of a message: text, bytes, a file reference, a function call or response,
    code a model wrote and what running it gave.

    The reference's fields that only Gemini fills (`thought_signature` and those after it)
    are kept as they came, stored and returned, so a session recorded with Gemini imports
    and reads back whole; baton's chat-completions models are not sent them, as the
    reference's LiteLlm does not send them to such models.
    """

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64", extra="forbid")

    media_resolution: dict[str, JsonValue] | None = None
    code_execution_result: CodeExecutionResult | None = None
    executable_code: ExecutableCode | None = None
    file_data: FileData | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    inline_data: Blob | None = None
    text: str | None = None
    thought: bool | None = None
    thought_signature: bytes | None = None
    video_metadata: dict[str, JsonValue] | None = None
    tool_call: dict[str, JsonValue] | None = None
    tool_response: dict[str, JsonValue] | None = None
    part_metadata: dict[str, JsonValue] | None = None
    audio_transcription: dict[str, JsonValue] | None = None
    media_processing: str | None = None
    speech_metadata: dict[str, JsonValue] | None = None

    if TYPE_CHECKING:
        # The signature pyright checks: one positional value, as google.genai's Part takes,
        # or the fields by name.
        def __init__(
            self,
            value: str | Part | dict[str, Any] | None = None,
            /,
            *,
            media_resolution: dict[str, JsonValue] | None = None,
            code_execution_result: CodeExecutionResult | None = None,
            executable_code: ExecutableCode | None = None,
            file_data: FileData | None = None,
            function_call: FunctionCall | None = None,
            function_response: FunctionResponse | None = None,
            inline_data: Blob | None = None,
            text: str | None = None,
            thought: bool | None = None,
            thought_signature: bytes | str | None = None,
            video_metadata: dict[str, JsonValue] | None = None,
            tool_call: dict[str, JsonValue] | None = None,
            tool_response: dict[str, JsonValue] | None = None,
            part_metadata: dict[str, JsonValue] | None = None,
            audio_transcription: dict[str, JsonValue] | None = None,
            media_processing: str | None = None,
            speech_metadata: dict[str, JsonValue] | None = None,
        ) -> None: ...
    else:

        def __init__(self, value: object = None, /, **fields: Any) -> None:
            # `Part("hi")` as google.genai takes it: a text, another part (copied) or a
            # dict of fields; `model_fields_set` holds what the value set.
            if value is not None:
                if fields:
                    raise ValueError(
                        f"Part was given a positional value and the fields {sorted(fields)}; "
                        "give either the value (a text, a Part or a dict of fields) or "
                        "the fields by name."
                    )
                fields = _part_fields(value)
            super().__init__(**fields)

    @field_validator("thought_signature", mode="before")
    @classmethod
    def _decode_signature(cls, value: object) -> object:
        return _base64_bytes(value, "thought_signature")

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


def _part_fields(value: object) -> dict[str, Any]:
    """The fields a Part's positional value stands for."""
    if isinstance(value, str):
        return {"text": value}
    if isinstance(value, Part):
        return {name: getattr(value, name) for name in value.model_fields_set}
    if isinstance(value, dict):
        return dict(cast("dict[str, Any]", value))
    raise ValueError(
        f"Part cannot be made from a value of type {type(value).__name__}; give a text, "
        "a Part or a dict of its fields, or name the fields (Part(inline_data=Blob(...)) "
        "for bytes)."
    )


class Content(ReferenceRepr, StrictWireModel):
    """A message: a role and its parts."""

    parts: list[Part] | None = None
    role: Literal["user", "model"] | str | None = None

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


class ModalityTokenCount(ReferenceRepr, StrictWireModel):
    """The tokens of one modality (`TEXT`, `IMAGE`, `AUDIO`, `VIDEO`, `DOCUMENT`)."""

    modality: str | None = None
    token_count: int | None = None


class UsageMetadata(ReferenceRepr, StrictWireModel):
    """Token counts of one model call, with the reference's fields.

    A field baton's models do not fill stays None; it is kept when an event exported
    from the reference is imported, and a field the reference does not have is refused.
    """

    reference_fields: ClassVar[tuple[str, ...]] = (
        "cache_tokens_details",
        "cached_content_token_count",
        "candidates_token_count",
        "candidates_tokens_details",
        "prompt_token_count",
        "prompt_tokens_details",
        "thoughts_token_count",
        "tool_use_prompt_token_count",
        "tool_use_prompt_tokens_details",
        "total_token_count",
        "traffic_type",
    )

    prompt_token_count: int | None = None
    candidates_token_count: int | None = None
    total_token_count: int | None = None
    cached_content_token_count: int | None = None
    thoughts_token_count: int | None = None
    tool_use_prompt_token_count: int | None = None
    prompt_tokens_details: list[ModalityTokenCount] | None = None
    candidates_tokens_details: list[ModalityTokenCount] | None = None
    cache_tokens_details: list[ModalityTokenCount] | None = None
    tool_use_prompt_tokens_details: list[ModalityTokenCount] | None = None
    traffic_type: str | None = None


# The reference's name for the same type.
GenerateContentResponseUsageMetadata = UsageMetadata


# Ids are plain strings on the wire; NewTypes keep them apart in signatures.
SessionId = NewType("SessionId", str)
InvocationId = NewType("InvocationId", str)
InterruptId = NewType("InterruptId", str)
RunId = NewType("RunId", str)


def _parts_of(parts: str | Part | list[str | Part] | None) -> list[Part]:
    """`UserContent` / `ModelContent` parts: a text or a Part, alone or in a list."""
    items: list[str | Part] = parts if isinstance(parts, list) else [] if parts is None else [parts]
    return [Part(text=item) if isinstance(item, str) else item for item in items]


class UserContent(Content):
    """A user's message: `UserContent("hi")` or `UserContent(parts=[...])`."""

    def __init__(self, parts: str | Part | list[str | Part] | None = None, **fields: Any) -> None:
        super().__init__(role="user", parts=_parts_of(parts), **fields)


class ModelContent(Content):
    """A model's message: `ModelContent("hello")` or `ModelContent(parts=[...])`."""

    def __init__(self, parts: str | Part | list[str | Part] | None = None, **fields: Any) -> None:
        super().__init__(role="model", parts=_parts_of(parts), **fields)


class Type(StrEnum):
    """A schema's type, in the reference's (OpenAPI) vocabulary."""

    TYPE_UNSPECIFIED = "TYPE_UNSPECIFIED"
    STRING = "STRING"
    NUMBER = "NUMBER"
    INTEGER = "INTEGER"
    BOOLEAN = "BOOLEAN"
    ARRAY = "ARRAY"
    OBJECT = "OBJECT"
    NULL = "NULL"


class Schema(ReferenceRepr, StrictWireModel):
    """A value's shape as the reference writes it (an OpenAPI subset); models are sent
    its JSON-schema form (`to_json_schema`)."""

    reference_fields: ClassVar[tuple[str, ...]] = (
        "additional_properties",
        "defs",
        "ref",
        "any_of",
        "default",
        "description",
        "enum",
        "example",
        "format",
        "items",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "nullable",
        "pattern",
        "properties",
        "property_ordering",
        "required",
        "title",
        "type",
    )

    any_of: list[Schema] | None = None
    default: JsonValue = None
    description: str | None = None
    enum: list[str] | None = None
    example: JsonValue = None
    format: str | None = None
    items: Schema | None = None
    max_items: int | None = None
    max_length: int | None = None
    max_properties: int | None = None
    maximum: float | None = None
    min_items: int | None = None
    min_length: int | None = None
    min_properties: int | None = None
    minimum: float | None = None
    nullable: bool | None = None
    pattern: str | None = None
    properties: dict[str, Schema] | None = None
    property_ordering: list[str] | None = None
    required: list[str] | None = None
    title: str | None = None
    type: Type | None = None

    @field_validator("type", mode="before")
    @classmethod
    def _upper_type(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value  # "object" as "OBJECT"

    def to_json_schema(self) -> dict[str, JsonValue]:
        """This schema as JSON Schema (lower-case types, `nullable` as a null type)."""
        out: dict[str, JsonValue] = {}
        if self.type is not None and self.type is not Type.TYPE_UNSPECIFIED:
            kind = self.type.value.lower()
            out["type"] = [kind, "null"] if self.nullable else kind
        for name in ("title", "description", "format", "enum", "default", "example", "pattern"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        for name, key in _JSON_SCHEMA_BOUNDS.items():
            value = getattr(self, name)
            if value is not None:
                out[key] = value
        if self.properties is not None:
            out["properties"] = {k: v.to_json_schema() for k, v in self.properties.items()}
        if self.required is not None:
            out["required"] = list(self.required)
        if self.items is not None:
            out["items"] = self.items.to_json_schema()
        if self.any_of is not None:
            out["anyOf"] = [option.to_json_schema() for option in self.any_of]
        return out


_JSON_SCHEMA_BOUNDS = {
    "minimum": "minimum",
    "maximum": "maximum",
    "min_items": "minItems",
    "max_items": "maxItems",
    "min_length": "minLength",
    "max_length": "maxLength",
    "min_properties": "minProperties",
    "max_properties": "maxProperties",
}


def _as_json_schema(value: object) -> object:
    """A schema given as the reference accepts one (a `Schema`, a pydantic model class,
    a JSON-schema dict) as a JSON-schema dict; anything else is left to validation."""
    if isinstance(value, Schema):
        return value.to_json_schema()
    if isinstance(value, type) and issubclass(value, BaseModel):
        from baton.events import json_schema_of  # events imports this module

        return json_schema_of(value)  # derived once per class, as a question's schema is
    return value


class FunctionDeclaration(ReferenceRepr, WireModel):
    """A function the model may call: its name, what it does, and its JSON-schema
    parameters (given as JSON Schema, a `Schema`, or `parameters_json_schema`)."""

    reference_fields: ClassVar[tuple[str, ...]] = (
        "description",
        "name",
        "parameters",
        "parameters_json_schema",
        "response",
        "response_json_schema",
        "behavior",
    )

    name: str
    description: str = ""
    parameters: dict[str, JsonValue] | None = None

    @model_validator(mode="before")
    @classmethod
    def _parameters_as_json_schema(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        fields: dict[str, Any] = dict(data)  # pyright: ignore[reportUnknownArgumentType]
        given = fields.pop("parameters_json_schema", fields.pop("parametersJsonSchema", None))
        if given is not None:
            if fields.get("parameters") is not None:
                raise ValueError("give parameters or parameters_json_schema, not both")
            fields["parameters"] = given
        if "parameters" in fields:
            fields["parameters"] = _as_json_schema(fields["parameters"])
        return fields


class Tool(ReferenceRepr, WireModel):
    """A group of functions the model may call, as the reference groups them.

    A model reads `llm_request.config.tools[i].function_declarations`.
    """

    reference_fields: ClassVar[tuple[str, ...]] = (
        "retrieval",
        "computer_use",
        "file_search",
        "google_search",
        "google_maps",
        "code_execution",
        "enterprise_web_search",
        "function_declarations",
        "google_search_retrieval",
        "parallel_ai_search",
        "url_context",
        "mcp_servers",
        "exa_ai_search",
    )

    function_declarations: list[FunctionDeclaration] | None = None


class FunctionCallingConfigMode(StrEnum):
    """Whether the model may, must or must not call functions."""

    MODE_UNSPECIFIED = "MODE_UNSPECIFIED"
    AUTO = "AUTO"
    ANY = "ANY"
    NONE = "NONE"
    VALIDATED = "VALIDATED"


class FunctionCallingConfig(ReferenceRepr, StrictWireModel):
    """How the model calls functions: `mode`, and with ANY the names it may call."""

    reference_fields: ClassVar[tuple[str, ...]] = (
        "allowed_function_names",
        "mode",
        "stream_function_call_arguments",
    )

    mode: FunctionCallingConfigMode | None = None
    allowed_function_names: list[str] | None = None


class ToolConfig(ReferenceRepr, StrictWireModel):
    """How the model uses the tools it is given."""

    reference_fields: ClassVar[tuple[str, ...]] = (
        "retrieval_config",
        "function_calling_config",
        "include_server_side_tool_invocations",
    )

    function_calling_config: FunctionCallingConfig | None = None


class ThinkingLevel(StrEnum):
    """How hard a reasoning model thinks."""

    THINKING_LEVEL_UNSPECIFIED = "THINKING_LEVEL_UNSPECIFIED"
    MINIMAL = "MINIMAL"
    LOW = "LOW"
    MEDIUM = "MEDIUM"
    HIGH = "HIGH"


class ThinkingConfig(ReferenceRepr, StrictWireModel):
    """A reasoning model's thinking: its level (or token budget), and whether its
    thoughts come back."""

    include_thoughts: bool | None = None
    thinking_budget: int | None = None
    thinking_level: ThinkingLevel | None = None


class HarmCategory(StrEnum):
    """A category of harmful content a safety setting is about."""

    HARM_CATEGORY_UNSPECIFIED = "HARM_CATEGORY_UNSPECIFIED"
    HARM_CATEGORY_HARASSMENT = "HARM_CATEGORY_HARASSMENT"
    HARM_CATEGORY_HATE_SPEECH = "HARM_CATEGORY_HATE_SPEECH"
    HARM_CATEGORY_SEXUALLY_EXPLICIT = "HARM_CATEGORY_SEXUALLY_EXPLICIT"
    HARM_CATEGORY_DANGEROUS_CONTENT = "HARM_CATEGORY_DANGEROUS_CONTENT"
    HARM_CATEGORY_CIVIC_INTEGRITY = "HARM_CATEGORY_CIVIC_INTEGRITY"


class HarmBlockThreshold(StrEnum):
    """From which probability of harm a response is blocked."""

    HARM_BLOCK_THRESHOLD_UNSPECIFIED = "HARM_BLOCK_THRESHOLD_UNSPECIFIED"
    BLOCK_LOW_AND_ABOVE = "BLOCK_LOW_AND_ABOVE"
    BLOCK_MEDIUM_AND_ABOVE = "BLOCK_MEDIUM_AND_ABOVE"
    BLOCK_ONLY_HIGH = "BLOCK_ONLY_HIGH"
    BLOCK_NONE = "BLOCK_NONE"
    OFF = "OFF"


class SafetySetting(ReferenceRepr, StrictWireModel):
    """A safety filter of Gemini's (models that have no such filter are not sent it)."""

    reference_fields: ClassVar[tuple[str, ...]] = ("category", "method", "threshold")

    category: HarmCategory | None = None
    threshold: HarmBlockThreshold | None = None


class HttpRetryOptions(ReferenceRepr, StrictWireModel):
    """How often a model request is tried (`attempts`, the first included)."""

    attempts: int | None = None
    initial_delay: float | None = None
    max_delay: float | None = None
    exp_base: float | None = None
    jitter: float | None = None
    http_status_codes: list[int] | None = None


class HttpOptions(ReferenceRepr, StrictWireModel):
    """The HTTP side of a model request: extra headers, a timeout (ms) and retries."""

    reference_fields: ClassVar[tuple[str, ...]] = (
        "base_url",
        "base_url_resource_scope",
        "api_version",
        "headers",
        "timeout",
        "client_args",
        "async_client_args",
        "extra_body",
        "retry_options",
        "httpx_client",
        "httpx_async_client",
        "aiohttp_client",
    )

    headers: dict[str, str] | None = None
    timeout: int | None = None
    retry_options: HttpRetryOptions | None = None


class GenerateContentConfig(ReferenceRepr, StrictWireModel):
    """How the model should answer: instruction, tools, sampling, output format.

    The reference's field names; a field it does not have is refused, and so is one
    only Gemini's own API takes. What each model is sent of it: see the model
    (`OpenAiModel` sends what chat completions take).
    """

    reference_fields: ClassVar[tuple[str, ...]] = (
        "http_options",
        "should_return_http_response",
        "system_instruction",
        "temperature",
        "top_p",
        "top_k",
        "candidate_count",
        "max_output_tokens",
        "stop_sequences",
        "response_logprobs",
        "logprobs",
        "presence_penalty",
        "frequency_penalty",
        "seed",
        "response_mime_type",
        "response_schema",
        "response_json_schema",
        "routing_config",
        "model_selection_config",
        "safety_settings",
        "tools",
        "tool_config",
        "labels",
        "cached_content",
        "response_modalities",
        "media_resolution",
        "speech_config",
        "audio_timestamp",
        "automatic_function_calling",
        "thinking_config",
        "image_config",
        "enable_enhanced_civic_answers",
        "model_armor_config",
        "service_tier",
        "audio_transcription_config",
        "continuation_token",
        "automatic_continuation",
        "generation_output_config",
        "store",
    )

    system_instruction: str | None = None
    tools: list[Tool] = Field(default_factory=list[Tool])
    tool_config: ToolConfig | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: float | None = None
    candidate_count: int | None = None
    max_output_tokens: int | None = None
    stop_sequences: list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    response_mime_type: str | None = None
    response_schema: dict[str, JsonValue] | None = None
    response_json_schema: dict[str, JsonValue] | None = None
    thinking_config: ThinkingConfig | None = None
    safety_settings: list[SafetySetting] | None = None
    labels: dict[str, str] | None = None
    http_options: HttpOptions | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_gemini_only_fields(cls, data: Any) -> Any:
        given: object = data
        fields = cast(dict[object, object], given) if isinstance(given, dict) else {}
        if fields:
            named = {to_snake(str(k)) for k in fields} & _GEMINI_ONLY
            if named:
                raise ValueError(
                    f"GenerateContentConfig: {', '.join(sorted(named))}: only Gemini's own "
                    "API takes it; baton's models (chat completions) do not: leave it out."
                )
        return data

    @field_validator("response_schema", "response_json_schema", mode="before")
    @classmethod
    def _schemas_as_json(cls, value: object) -> object:
        return _as_json_schema(value)

    @field_validator("system_instruction", mode="before")
    @classmethod
    def _instruction_text(cls, value: object) -> object:
        if isinstance(value, Content):  # the reference takes a Content too
            return value.text
        return value

    @field_validator("candidate_count")
    @classmethod
    def _one_candidate(cls, value: int | None) -> int | None:
        if value is not None and value != 1:
            raise ValueError(
                "baton's models return one candidate a turn: candidate_count must be 1"
            )
        return value

    @property
    def function_declarations(self) -> list[FunctionDeclaration]:
        """Every declared function, across `tools`, in order."""
        return [d for tool in self.tools for d in tool.function_declarations or []]


# Fields of the reference's config that only Gemini's own API takes: refused by name,
# with what to do, rather than by pydantic's bare "extra inputs are not permitted".
# They are the reference's fields that baton's config does not have.
_GEMINI_ONLY: Final = frozenset(GenerateContentConfig.reference_fields).difference(
    GenerateContentConfig.model_fields
)
