"""The enums of the wire types, as the reference's (google.genai's) behave: a member is its
value (`Type.OBJECT == "OBJECT"`, JSON `"OBJECT"`), prints as `Type.OBJECT` (`str()`,
`format()`, f-strings), and is looked up in any case (`Language("python")`)."""

from __future__ import annotations

from enum import Enum
from typing import Self

__all__ = [
    "Behavior",
    "FinishReason",
    "FunctionCallingConfigMode",
    "HarmBlockThreshold",
    "HarmCategory",
    "Language",
    "Modality",
    "Outcome",
    "ThinkingLevel",
    "Type",
    "WireEnum",
]


class WireEnum(str, Enum):
    """Base of the wire enums. A value it does not have is refused, naming those it has
    (google.genai takes one with a warning and keeps it, so a typo travels on)."""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __format__(self, format_spec: str) -> str:
        return format(str(self), format_spec)

    @classmethod
    def _missing_(cls, value: object) -> Self:
        if isinstance(value, str):
            for member in cls:
                if member.value == value.upper():
                    return member
        raise ValueError(
            f"{value!r} is not a {cls.__name__}; use one of: {', '.join(m.value for m in cls)}."
        )


class Language(WireEnum):
    """The programming language of `ExecutableCode`."""

    LANGUAGE_UNSPECIFIED = "LANGUAGE_UNSPECIFIED"
    PYTHON = "PYTHON"


class Outcome(WireEnum):
    """How running `ExecutableCode` ended."""

    OUTCOME_UNSPECIFIED = "OUTCOME_UNSPECIFIED"
    OUTCOME_OK = "OUTCOME_OK"
    OUTCOME_FAILED = "OUTCOME_FAILED"
    OUTCOME_DEADLINE_EXCEEDED = "OUTCOME_DEADLINE_EXCEEDED"


class Type(WireEnum):
    """A schema's type, in the reference's (OpenAPI) vocabulary."""

    TYPE_UNSPECIFIED = "TYPE_UNSPECIFIED"
    STRING = "STRING"
    NUMBER = "NUMBER"
    INTEGER = "INTEGER"
    BOOLEAN = "BOOLEAN"
    ARRAY = "ARRAY"
    OBJECT = "OBJECT"
    NULL = "NULL"


class FinishReason(WireEnum):
    """Why a model stopped (`LlmResponse.finish_reason`, `Event.finish_reason`); baton's
    models give STOP, MAX_TOKENS, SAFETY or MALFORMED_FUNCTION_CALL."""

    FINISH_REASON_UNSPECIFIED = "FINISH_REASON_UNSPECIFIED"
    STOP = "STOP"
    MAX_TOKENS = "MAX_TOKENS"
    SAFETY = "SAFETY"
    RECITATION = "RECITATION"
    LANGUAGE = "LANGUAGE"
    OTHER = "OTHER"
    BLOCKLIST = "BLOCKLIST"
    PROHIBITED_CONTENT = "PROHIBITED_CONTENT"
    SPII = "SPII"
    MALFORMED_FUNCTION_CALL = "MALFORMED_FUNCTION_CALL"
    IMAGE_SAFETY = "IMAGE_SAFETY"
    UNEXPECTED_TOOL_CALL = "UNEXPECTED_TOOL_CALL"
    TOO_MANY_TOOL_CALLS = "TOO_MANY_TOOL_CALLS"
    IMAGE_PROHIBITED_CONTENT = "IMAGE_PROHIBITED_CONTENT"
    NO_IMAGE = "NO_IMAGE"
    IMAGE_RECITATION = "IMAGE_RECITATION"
    IMAGE_OTHER = "IMAGE_OTHER"
    CONTINUATION = "CONTINUATION"


class Behavior(WireEnum):
    """Whether the model waits for a function's result (BLOCKING, what baton's models
    do) or goes on talking (NON_BLOCKING, Gemini's live API only: refused by baton's
    models)."""

    UNSPECIFIED = "UNSPECIFIED"
    BLOCKING = "BLOCKING"
    NON_BLOCKING = "NON_BLOCKING"


class Modality(WireEnum):
    """A kind of content a model answers with."""

    MODALITY_UNSPECIFIED = "MODALITY_UNSPECIFIED"
    TEXT = "TEXT"
    IMAGE = "IMAGE"
    AUDIO = "AUDIO"
    VIDEO = "VIDEO"


class FunctionCallingConfigMode(WireEnum):
    """Whether the model may, must or must not call functions."""

    MODE_UNSPECIFIED = "MODE_UNSPECIFIED"
    AUTO = "AUTO"
    ANY = "ANY"
    NONE = "NONE"
    VALIDATED = "VALIDATED"


class ThinkingLevel(WireEnum):
    """How hard a reasoning model thinks."""

    THINKING_LEVEL_UNSPECIFIED = "THINKING_LEVEL_UNSPECIFIED"
    MINIMAL = "MINIMAL"
    LOW = "LOW"
    MEDIUM = "MEDIUM"
    HIGH = "HIGH"


class HarmCategory(WireEnum):
    """A category of harmful content a safety setting is about."""

    HARM_CATEGORY_UNSPECIFIED = "HARM_CATEGORY_UNSPECIFIED"
    HARM_CATEGORY_HARASSMENT = "HARM_CATEGORY_HARASSMENT"
    HARM_CATEGORY_HATE_SPEECH = "HARM_CATEGORY_HATE_SPEECH"
    HARM_CATEGORY_SEXUALLY_EXPLICIT = "HARM_CATEGORY_SEXUALLY_EXPLICIT"
    HARM_CATEGORY_DANGEROUS_CONTENT = "HARM_CATEGORY_DANGEROUS_CONTENT"
    HARM_CATEGORY_CIVIC_INTEGRITY = "HARM_CATEGORY_CIVIC_INTEGRITY"
    HARM_CATEGORY_JAILBREAK = "HARM_CATEGORY_JAILBREAK"
    HARM_CATEGORY_IMAGE_HATE = "HARM_CATEGORY_IMAGE_HATE"
    HARM_CATEGORY_IMAGE_DANGEROUS_CONTENT = "HARM_CATEGORY_IMAGE_DANGEROUS_CONTENT"
    HARM_CATEGORY_IMAGE_HARASSMENT = "HARM_CATEGORY_IMAGE_HARASSMENT"
    HARM_CATEGORY_IMAGE_SEXUALLY_EXPLICIT = "HARM_CATEGORY_IMAGE_SEXUALLY_EXPLICIT"


class HarmBlockThreshold(WireEnum):
    """From which probability of harm a response is blocked."""

    HARM_BLOCK_THRESHOLD_UNSPECIFIED = "HARM_BLOCK_THRESHOLD_UNSPECIFIED"
    BLOCK_LOW_AND_ABOVE = "BLOCK_LOW_AND_ABOVE"
    BLOCK_MEDIUM_AND_ABOVE = "BLOCK_MEDIUM_AND_ABOVE"
    BLOCK_ONLY_HIGH = "BLOCK_ONLY_HIGH"
    BLOCK_NONE = "BLOCK_NONE"
    OFF = "OFF"
