"""Config and response types of the reference (google.genai) that only Gemini's own API
uses: importable so that code written for the reference runs unchanged, and refused by
name where baton's models are given one they cannot honour (`GenerateContentConfig`)."""

from __future__ import annotations

from pydantic import JsonValue

from baton.wire_model import StrictWireModel
from baton.wire_repr import ReferenceRepr

__all__ = [
    "AutomaticFunctionCallingConfig",
    "GroundingMetadata",
    "MultiSpeakerVoiceConfig",
    "PrebuiltVoiceConfig",
    "SpeakerVoiceConfig",
    "SpeechConfig",
    "VoiceConfig",
]


class AutomaticFunctionCallingConfig(ReferenceRepr, StrictWireModel):
    """google.genai's calling of Python functions from its client. baton's agents run
    their tools themselves and its models never call a function, so `disable=True` is
    what they do; any other setting is refused (`GenerateContentConfig`)."""

    disable: bool | None = None
    maximum_remote_calls: int | None = None
    ignore_call_history: bool | None = None


class PrebuiltVoiceConfig(ReferenceRepr, StrictWireModel):
    """One of Gemini's voices, by name."""

    voice_name: str | None = None


class VoiceConfig(ReferenceRepr, StrictWireModel):
    """The voice a Gemini model speaks with."""

    replicated_voice_config: dict[str, JsonValue] | None = None
    prebuilt_voice_config: PrebuiltVoiceConfig | None = None
    voice: str | None = None


class SpeakerVoiceConfig(ReferenceRepr, StrictWireModel):
    """One speaker's voice in a multi-speaker answer."""

    speaker: str | None = None
    voice_config: VoiceConfig | None = None


class MultiSpeakerVoiceConfig(ReferenceRepr, StrictWireModel):
    """The voices of a multi-speaker answer."""

    speaker_voice_configs: list[SpeakerVoiceConfig] | None = None


class SpeechConfig(ReferenceRepr, StrictWireModel):
    """How a Gemini model speaks (audio answers): its voice and language. baton's models
    answer in text, so a `GenerateContentConfig` holding one is refused."""

    voice_config: VoiceConfig | None = None
    language_code: str | None = None
    multi_speaker_voice_config: MultiSpeakerVoiceConfig | None = None


class GroundingMetadata(ReferenceRepr, StrictWireModel):
    """The sources Gemini grounded an answer in (search queries, web chunks, ...).
    baton's models fill none: `event.grounding_metadata` reads None."""

    image_search_queries: list[str] | None = None
    grounding_chunks: list[dict[str, JsonValue]] | None = None
    grounding_supports: list[dict[str, JsonValue]] | None = None
    retrieval_metadata: dict[str, JsonValue] | None = None
    search_entry_point: dict[str, JsonValue] | None = None
    web_search_queries: list[str] | None = None
    google_maps_widget_context_token: str | None = None
    retrieval_queries: list[str] | None = None
    source_flagging_uris: list[dict[str, JsonValue]] | None = None
