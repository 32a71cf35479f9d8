"""The reference's model-response fields that only Gemini (and its live mode) fills.

The reference's `LlmResponse`, and so its `Event`, carries them; baton's models never
fill them, so on baton's `LlmResponse` and `Event` they read None, as the reference's
read when Gemini sent nothing, and code that checks `event.grounding_metadata` or
`event.interrupted` runs unchanged. Given to a constructor they are dropped, as any
field baton's events do not have.
"""

from __future__ import annotations

from typing import Any


def _never_filled(name: str) -> property:
    def read(_self: Any) -> None:
        return None

    return property(read, doc=f"Always None: baton's models do not fill `{name}`.")


class GeminiResponseFields:
    """Mixin: the reference's Gemini-only response fields, each reading None."""

    model_version = _never_filled("model_version")
    grounding_metadata = _never_filled("grounding_metadata")
    citation_metadata = _never_filled("citation_metadata")
    cache_metadata = _never_filled("cache_metadata")
    avg_logprobs = _never_filled("avg_logprobs")
    logprobs_result = _never_filled("logprobs_result")
    turn_complete_reason = _never_filled("turn_complete_reason")
    interrupted = _never_filled("interrupted")
    interaction_id = _never_filled("interaction_id")
    interaction_status = _never_filled("interaction_status")
    environment_id = _never_filled("environment_id")
    input_transcription = _never_filled("input_transcription")
    output_transcription = _never_filled("output_transcription")
    voice_activity = _never_filled("voice_activity")
    go_away = _never_filled("go_away")
    live_session_id = _never_filled("live_session_id")
    live_session_resumption_update = _never_filled("live_session_resumption_update")
