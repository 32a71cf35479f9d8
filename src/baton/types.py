"""Wire types, under the names code written for the reference finds in
`google.genai.types`: what a model is asked with (its config, tools and their schemas),
defined here, and the message types (`baton.messages`), the enums (`baton.wire_enums`),
Gemini's built-in tools and configs (`baton.gemini_tool_configs`, `baton.gemini_configs`),
`Image` and `JSONSchema`, exported from here.

They serialize to the reference system's JSON (camelCase keys, absent fields
dropped), and accept snake_case or camelCase when parsed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar, Final, Literal, TypeAlias, get_args

from pydantic import BaseModel, Field, JsonValue, field_validator, model_validator

from baton.function_signature import FunctionSignature
from baton.gemini_configs import (
    AutomaticFunctionCallingConfig,
    GroundingMetadata,
    MultiSpeakerVoiceConfig,
    PrebuiltVoiceConfig,
    SpeakerVoiceConfig,
    SpeechConfig,
    VoiceConfig,
)
from baton.gemini_tool_configs import (
    ComputerUse,
    DynamicRetrievalConfig,
    EnterpriseWebSearch,
    FileSearch,
    GoogleMaps,
    GoogleSearch,
    GoogleSearchRetrieval,
    Interval,
    McpServer,
    Retrieval,
    ToolCodeExecution,
    UrlContext,
)
from baton.images import Image
from baton.json_schema_types import JSONSchema, JSONSchemaType, schema_fields_of
from baton.messages import (
    STREAMED_ARGS_ADVICE,
    Blob,
    CodeExecutionResult,
    Content,
    ExecutableCode,
    FileData,
    FinishReasonValue,
    FunctionCall,
    FunctionResponse,
    GenerateContentResponseUsageMetadata,
    InterruptId,
    InvocationId,
    ModalityTokenCount,
    ModelContent,
    Part,
    RunId,
    SessionId,
    UsageMetadata,
    UserContent,
)
from baton.wire_enums import (
    Behavior,
    FinishReason,
    FunctionCallingConfigMode,
    HarmBlockThreshold,
    HarmCategory,
    Language,
    Modality,
    Outcome,
    ThinkingLevel,
    Type,
)
from baton.wire_model import StrictWireModel, UntakenFields, WireModel
from baton.wire_repr import ReferenceRepr

__all__ = [
    "AutomaticFunctionCallingConfig",
    "Behavior",
    "Blob",
    "CodeExecutionResult",
    "ComputerUse",
    "Content",
    "DynamicRetrievalConfig",
    "EnterpriseWebSearch",
    "ExecutableCode",
    "FileData",
    "FileSearch",
    "FinishReason",
    "FinishReasonValue",
    "FunctionCall",
    "FunctionCallingConfig",
    "FunctionCallingConfigMode",
    "FunctionDeclaration",
    "FunctionResponse",
    "GenerateContentConfig",
    "GenerateContentResponseUsageMetadata",
    "GoogleMaps",
    "GoogleSearch",
    "GoogleSearchRetrieval",
    "GroundingMetadata",
    "HarmBlockThreshold",
    "HarmCategory",
    "HttpOptions",
    "HttpRetryOptions",
    "Image",
    "InterruptId",
    "Interval",
    "InvocationId",
    "JSONSchema",
    "JSONSchemaType",
    "JsonValue",
    "Language",
    "McpServer",
    "Modality",
    "ModalityTokenCount",
    "ModelContent",
    "MultiSpeakerVoiceConfig",
    "Outcome",
    "Part",
    "PrebuiltVoiceConfig",
    "Retrieval",
    "RunId",
    "SafetySetting",
    "Schema",
    "SessionId",
    "SpeakerVoiceConfig",
    "SpeechConfig",
    "StrictWireModel",
    "ThinkingConfig",
    "ThinkingLevel",
    "Tool",
    "ToolCodeExecution",
    "ToolConfig",
    "Type",
    "UrlContext",
    "UsageMetadata",
    "UserContent",
    "VoiceConfig",
    "WireModel",
]


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

    additional_properties: JsonValue = None
    defs: dict[str, Schema] | None = None
    ref: str | None = None
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

    @classmethod
    def from_json_schema(
        cls,
        *,
        json_schema: JSONSchema | dict[str, JsonValue],
        api_option: _ApiOption = "GEMINI_API",
        raise_error_on_unsupported_field: bool = False,
    ) -> Schema:
        """The Schema a JSON Schema stands for (`["string", "null"]` as a nullable
        STRING, `$ref` / `$defs` as `ref` / `defs`).

        Args:
            json_schema: a `JSONSchema`, or the JSON Schema as a dict.
            api_option: the reference's choice of dialect; baton's Schema is one.
            raise_error_on_unsupported_field: the reference's; baton always refuses a
                keyword a Schema cannot hold.

        Returns:
            The schema.

        Raises:
            ValueError: the JSON Schema uses `oneOf` or `uniqueItems`, or several
                non-null types in one `type`.
        """
        if isinstance(json_schema, dict):
            json_schema = JSONSchema.model_validate(json_schema)
        return cls.model_validate(schema_fields_of(json_schema))

    @property
    def json_schema(self) -> JSONSchema:
        """This schema as a `JSONSchema` (see `to_json_schema` for the dict)."""
        return JSONSchema.model_validate(self.to_json_schema())

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
        self._add_nested_json_schemas(out)
        if self.additional_properties is not None:
            out["additionalProperties"] = self.additional_properties
        if self.ref is not None:
            out["$ref"] = self.ref
        if self.defs is not None:
            out["$defs"] = {k: v.to_json_schema() for k, v in self.defs.items()}
        return out

    def _add_nested_json_schemas(self, out: dict[str, JsonValue]) -> None:
        if self.properties is not None:
            out["properties"] = {k: v.to_json_schema() for k, v in self.properties.items()}
        if self.required is not None:
            out["required"] = list(self.required)
        if self.items is not None:
            out["items"] = self.items.to_json_schema()
        if self.any_of is not None:
            out["anyOf"] = [option.to_json_schema() for option in self.any_of]


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


_ApiOption: TypeAlias = Literal["ENTERPRISE", "GEMINI_API", "VERTEX_AI"]
"""The reference's API options of `FunctionDeclaration.from_callable_with_api_option`."""


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
    # Gemini's: baton's chat-completions models refuse a declaration with a response
    # schema or NON_BLOCKING behavior (baton.models.gemini_only); a model of the user's
    # that speaks Gemini's protocol receives them.
    response: Schema | None = None
    response_json_schema: dict[str, JsonValue] | None = None
    behavior: Behavior | None = None

    @classmethod
    def from_callable(
        cls,
        *,
        client: object = None,
        callable: Callable[..., object],  # the reference's keyword
        behavior: Behavior | None = None,
        use_json_schema: bool = False,
    ) -> FunctionDeclaration:
        """The declaration of a Python function, as a `FunctionTool` declares it.

        Args:
            client: the reference's API client, which picks its schema dialect; baton has
                one dialect (JSON Schema), so any value (or none) gives the same result.
            callable: the function; its name, docstring and annotated parameters.
            behavior: the declaration's `behavior`.
            use_json_schema: the reference's choice of `parameters_json_schema` over
                `parameters`; baton's `parameters` is JSON Schema either way.

        Returns:
            The declaration: the function's name, its whole docstring as the description
            and its parameters as JSON Schema. Unlike the reference's, no `response`
            schema is derived from the return annotation (chat-completions models cannot
            be sent one).

        Raises:
            TypeError: the function's annotations cannot be turned into a JSON schema.
        """
        return cls.from_callable_with_api_option(
            callable=callable, behavior=behavior, use_json_schema=use_json_schema
        )

    @classmethod
    def from_callable_with_api_option(
        cls,
        *,
        callable: Callable[..., object],  # the reference's keyword
        api_option: Literal["ENTERPRISE", "GEMINI_API", "VERTEX_AI"] = "GEMINI_API",
        behavior: Behavior | None = None,
        use_json_schema: bool = False,
    ) -> FunctionDeclaration:
        """`from_callable` with the reference's API option (`api_option` only picks the
        reference's schema dialect; baton's declaration is the same for each).

        Raises:
            ValueError: `api_option` is not one of the reference's.
            TypeError: as `from_callable`.
        """
        if api_option not in get_args(_ApiOption):
            raise ValueError(
                f"api_option {api_option!r} is not one of "
                f"{', '.join(repr(o) for o in get_args(_ApiOption))}; baton's declaration is "
                "the same for each, so leave it out or give one of them."
            )
        signature = FunctionSignature.of(callable)
        return cls(
            name=signature.name,
            description=inspect.getdoc(callable) or "",
            parameters=signature.parameters,
            behavior=behavior,
        )

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


class Tool(ReferenceRepr, StrictWireModel):
    """What the model may use: functions (`function_declarations`, what a model reads as
    `llm_request.config.tools[i].function_declarations`), or one of Gemini's built-in
    tools, which the model runs itself (`google_search=GoogleSearch()`, ...).

    A built-in tool reaches a model of the user's that speaks Gemini's protocol; baton's
    chat-completions models refuse a request holding one, naming it and the model.
    """

    retrieval: Retrieval | None = None
    computer_use: ComputerUse | None = None
    file_search: FileSearch | None = None
    google_search: GoogleSearch | None = None
    google_maps: GoogleMaps | None = None
    code_execution: ToolCodeExecution | None = None
    enterprise_web_search: EnterpriseWebSearch | None = None
    function_declarations: list[FunctionDeclaration] | None = None
    google_search_retrieval: GoogleSearchRetrieval | None = None
    parallel_ai_search: dict[str, JsonValue] | None = None
    url_context: UrlContext | None = None
    mcp_servers: list[McpServer] | None = None
    exa_ai_search: dict[str, JsonValue] | None = None

    @property
    def built_ins(self) -> list[str]:
        """The names of the built-in tools this entry holds (its fields other than
        `function_declarations` that are set), in the reference's order."""
        return [
            name
            for name in type(self).model_fields
            if name != "function_declarations" and getattr(self, name) is not None
        ]


# What to do instead of setting a config field of the reference's that baton does not
# take (pydantic's own refusal says only "Extra inputs are not permitted").
_CALLING_UNTAKEN: Final = UntakenFields(
    "FunctionCallingConfig", {"stream_function_call_arguments": STREAMED_ARGS_ADVICE}
)
_GEMINI_GROUNDING: Final = (
    "only Gemini's own API takes it (its search and maps grounding); baton's ToolConfig "
    "takes function_calling_config: leave it out."
)
_TOOL_CONFIG_UNTAKEN: Final = UntakenFields(
    "ToolConfig",
    dict.fromkeys(("retrieval_config", "include_server_side_tool_invocations"), _GEMINI_GROUNDING),
)
_SAFETY_UNTAKEN: Final = UntakenFields(
    "SafetySetting",
    {
        "method": "only Gemini's own API takes it; baton keeps a SafetySetting's category "
        "and threshold (sent to no model of baton's, which have no such filter): leave it out."
    },
)
_HTTP_TAKES: Final = "HttpOptions takes headers, timeout and retry_options"
_ENDPOINT: Final = (
    "a model's endpoint is the model's own: OpenAiModel(base_url=...), or the "
    f"OPENAI_BASE_URL / GEMINI_BASE_URL environment variable; {_HTTP_TAKES}."
)
_CLIENT: Final = f"baton's models make their own HTTP client; {_HTTP_TAKES}."
_HTTP_UNTAKEN: Final = UntakenFields(
    "HttpOptions",
    {
        "base_url": _ENDPOINT,
        "base_url_resource_scope": _ENDPOINT,
        "api_version": _ENDPOINT,
        "client_args": _CLIENT,
        "async_client_args": _CLIENT,
        "httpx_client": _CLIENT,
        "httpx_async_client": _CLIENT,
        "aiohttp_client": _CLIENT,
        "extra_body": f"baton sends no extra body fields; {_HTTP_TAKES}.",
    },
)


class FunctionCallingConfig(ReferenceRepr, StrictWireModel):
    """How the model calls functions: `mode`, and with ANY the names it may call."""

    reference_fields: ClassVar[tuple[str, ...]] = (
        "allowed_function_names",
        "mode",
        "stream_function_call_arguments",
    )

    mode: FunctionCallingConfigMode | None = None
    allowed_function_names: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_streamed_args(cls, data: Any) -> Any:
        _CALLING_UNTAKEN.refuse(data)
        return data


class ToolConfig(ReferenceRepr, StrictWireModel):
    """How the model uses the tools it is given."""

    reference_fields: ClassVar[tuple[str, ...]] = (
        "retrieval_config",
        "function_calling_config",
        "include_server_side_tool_invocations",
    )

    function_calling_config: FunctionCallingConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_gemini_only_fields(cls, data: Any) -> Any:
        _TOOL_CONFIG_UNTAKEN.refuse(data)
        return data


class ThinkingConfig(ReferenceRepr, StrictWireModel):
    """A reasoning model's thinking: its level (or token budget), and whether its
    thoughts come back."""

    include_thoughts: bool | None = None
    thinking_budget: int | None = None
    thinking_level: ThinkingLevel | None = None


class SafetySetting(ReferenceRepr, StrictWireModel):
    """A safety filter of Gemini's (models that have no such filter are not sent it)."""

    reference_fields: ClassVar[tuple[str, ...]] = ("category", "method", "threshold")

    category: HarmCategory | None = None
    threshold: HarmBlockThreshold | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_method(cls, data: Any) -> Any:
        _SAFETY_UNTAKEN.refuse(data)
        return data


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

    @model_validator(mode="before")
    @classmethod
    def _no_endpoint_nor_client(cls, data: Any) -> Any:
        _HTTP_UNTAKEN.refuse(data)
        return data


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
    automatic_function_calling: AutomaticFunctionCallingConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_gemini_only_fields(cls, data: Any) -> Any:
        _GEMINI_ONLY.refuse(data)
        return data

    @field_validator("automatic_function_calling")
    @classmethod
    def _no_automatic_calls(
        cls, value: AutomaticFunctionCallingConfig | None
    ) -> AutomaticFunctionCallingConfig | None:
        if value is not None and value != AutomaticFunctionCallingConfig(disable=True):
            raise ValueError(
                f"automatic_function_calling={value.to_json_dict()}: baton's models never "
                "call functions themselves (an agent runs its tools), so only "
                "AutomaticFunctionCallingConfig(disable=True), which is what they do, is "
                "taken: leave the other settings out."
            )
        return value

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
_GEMINI_ONLY: Final = UntakenFields(
    "GenerateContentConfig",
    dict.fromkeys(
        sorted(
            set(GenerateContentConfig.reference_fields) - GenerateContentConfig.model_fields.keys()
        ),
        "only Gemini's own API takes it; baton's models (chat completions) do not: leave it out.",
    ),
)
