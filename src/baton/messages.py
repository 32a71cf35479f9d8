"""Message types: the parts a conversation is made of (text, bytes, files, function calls
and responses, code and its result), a message (`Content`) and a model call's token counts.

They serialize to the reference system's JSON (camelCase keys, absent fields dropped), and
accept snake_case or camelCase when parsed; `baton.types` exports them under the names code
written for the reference finds in `google.genai.types`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Literal, NewType, cast

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from baton.images import Image
from baton.wire_enums import FinishReason, Language, Outcome
from baton.wire_model import StrictWireModel, UntakenFields, base64_bytes
from baton.wire_repr import ReferenceRepr

__all__ = [
    "Blob",
    "CodeExecutionResult",
    "Content",
    "ExecutableCode",
    "FileData",
    "FinishReasonValue",
    "FunctionCall",
    "FunctionResponse",
    "GenerateContentResponseUsageMetadata",
    "InterruptId",
    "InvocationId",
    "ModalityTokenCount",
    "ModelContent",
    "Part",
    "RunId",
    "SessionId",
    "UsageMetadata",
    "UserContent",
]


# What to do instead of setting a field of the reference's that baton does not take.
STREAMED_ARGS_ADVICE: Final = (
    "Gemini streams a call's arguments in pieces; baton's models give each call whole, in "
    "args: leave it out."
)
_STREAMED_ARGS: Final = UntakenFields(
    "FunctionCall",
    {"partial_args": STREAMED_ARGS_ADVICE, "will_continue": STREAMED_ARGS_ADVICE},
)
_RESPONSE_UNTAKEN: Final = UntakenFields(
    "FunctionResponse",
    {
        "parts": "baton's models are sent a function's result as the JSON of its response "
        "(a tool result is text to chat completions), not as parts: put the result in "
        "response={...}, and a file in an artifact (save_artifact) whose name it holds.",
        "scheduling": "it schedules a NON_BLOCKING call's response in Gemini's Live API, which "
        "baton does not run: leave it out (each response to a long-running call gives the "
        "model a turn).",
    },
)


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

    def __init__(self, /, **data: Any) -> None:
        _STREAMED_ARGS.refuse_arguments(data)
        super().__init__(**data)

    # Marked as pydantic marks its own, so that validating an event or a message builds
    # its calls from their fields without this __init__ (see Part's): the check costs a
    # direct call only, where a before-validator cost every validation ~9k instructions.
    __init__.__pydantic_base_init__ = True  # pyright: ignore[reportFunctionMemberAccess]


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

    def __init__(self, /, **data: Any) -> None:
        _RESPONSE_UNTAKEN.refuse_arguments(data)
        super().__init__(**data)

    # See FunctionCall's.
    __init__.__pydantic_base_init__ = True  # pyright: ignore[reportFunctionMemberAccess]

    @classmethod
    def from_mcp_response(cls, *, name: str, response: BaseModel) -> FunctionResponse:
        """The response of function `name` from an MCP tool's result (the SDK's
        `CallToolResult`), as genai makes it: `{"error": "MCP response is error."}` for a
        failed call, else `{"result": [content items]}`, each item as JSON (genai keeps
        the SDK's objects, which a session could not store).

        Args:
            name: the function's name.
            response: the MCP SDK's `CallToolResult`, of either major version.
        """
        fields = response.model_dump(mode="json", exclude_none=True)
        if fields.get("is_error") or fields.get("isError"):
            return cls(name=name, response={"error": "MCP response is error."})
        return cls(name=name, response={"result": fields.get("content", [])})


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
        return base64_bytes(value, "data")

    def as_image(self) -> Image | None:
        """The bytes as an `Image` when they are one (an `image/...` MIME type), else None."""
        if self.data is None or not (self.mime_type or "").startswith("image/"):
            return None
        return Image(image_bytes=self.data, mime_type=self.mime_type)


class FileData(ReferenceRepr, StrictWireModel):
    """A file kept elsewhere, by URI."""

    display_name: str | None = None
    file_uri: str | None = None
    mime_type: str | None = None


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

        # Marked as pydantic marks its own __init__, so that validating a Content (or an
        # Event) builds its parts straight from their fields instead of calling this
        # __init__ for each part (pydantic calls a model's own __init__ while validating
        # it in another otherwise): the positional value only ever comes in a direct
        # call, and a text part's Content validation stays ~29k instructions, not ~38k.
        __init__.__pydantic_base_init__ = True  # pyright: ignore[reportFunctionMemberAccess]

    @field_validator("thought_signature", mode="before")
    @classmethod
    def _decode_signature(cls, value: object) -> object:
        return base64_bytes(value, "thought_signature")

    @classmethod
    def from_bytes(
        cls, *, data: bytes, mime_type: str, media_resolution: str | dict[str, Any] | None = None
    ) -> Part:
        """A part holding bytes (an image, a PDF, ...); `media_resolution` (Gemini's: a
        level such as "MEDIA_RESOLUTION_HIGH") is kept on the part."""
        return cls(
            inline_data=Blob(mime_type=mime_type, data=data),
            media_resolution=_media_resolution(media_resolution),
        )

    @classmethod
    def from_uri(
        cls,
        *,
        file_uri: str,
        mime_type: str | None = None,
        media_resolution: str | dict[str, Any] | None = None,
    ) -> Part:
        """A part naming a file by URI (`media_resolution` as in `from_bytes`)."""
        return cls(
            file_data=FileData(file_uri=file_uri, mime_type=mime_type),
            media_resolution=_media_resolution(media_resolution),
        )

    @classmethod
    def from_executable_code(cls, *, code: str, language: Language | str) -> Part:
        """A part holding code a model wrote to be run."""
        return cls(executable_code=ExecutableCode(code=code, language=Language(language)))

    @classmethod
    def from_code_execution_result(cls, *, outcome: Outcome | str, output: str) -> Part:
        """A part holding what running code gave."""
        return cls(
            code_execution_result=CodeExecutionResult(outcome=Outcome(outcome), output=output)
        )

    def as_image(self) -> Image | None:
        """The part's bytes as an `Image` when they are one, else None (also for a file
        named by URI, as the reference's)."""
        return self.inline_data.as_image() if self.inline_data else None

    @classmethod
    def from_text(cls, *, text: str) -> Part:
        """A text part."""
        return cls(text=text)

    @classmethod
    def from_function_call(cls, *, name: str, args: dict[str, JsonValue]) -> Part:
        """A function-call part (no id; the runtime assigns one when it needs to)."""
        return cls(function_call=FunctionCall(name=name, args=args))

    @classmethod
    def from_function_response(
        cls, *, name: str, response: dict[str, JsonValue], parts: list[Any] | None = None
    ) -> Part:
        """A function-response part (set `.function_response.id` to answer an interrupt).
        `parts` (Gemini's multimodal responses) is refused, as `FunctionResponse` refuses it."""
        fields: dict[str, Any] = {"name": name, "response": response}
        if parts is not None:
            fields["parts"] = parts
        return cls(function_response=FunctionResponse.model_validate(fields))


def _media_resolution(value: str | dict[str, Any] | None) -> dict[str, Any] | None:
    """A part's `media_resolution` as the reference writes it: a level is `{"level": ...}`."""
    return {"level": value} if isinstance(value, str) else value


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


FinishReasonValue = Annotated[FinishReason | str, Field(union_mode="left_to_right")]
"""A finish reason: a `FinishReason` when it is one (in any case), else the text as it
came, so an event a custom model or the reference stored with another reason reads back."""


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
