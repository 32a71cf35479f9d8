"""RunConfig and StreamingMode: what one call of `Runner.run_async` asks of its run.

The reference's field names and defaults, so code written for it passes its
`RunConfig(...)` unchanged. What each field does in baton is said at the field; the
live-mode fields (audio, speech, video) are accepted and do nothing, as they do in the
reference outside live mode (baton has no live mode).
"""

from __future__ import annotations

import copy
import enum
import functools
import os
import sys
import warnings
from typing import Any, Final, cast

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from baton.errors import RunConfigError
from baton.events import assemble
from baton.sessions.services import GetSessionConfig
from baton.types import Content, GenerateContentConfig, HttpOptions

__all__ = [
    "MAX_LLM_CALLS_ENV",
    "RunConfig",
    "StreamingMode",
    "ToolThreadPoolConfig",
    "apply_run_config",
    "check_run_config",
    "own_copy",
    "run_config_in_force",
]

MAX_LLM_CALLS_ENV: Final = "ADK_MAX_LLM_CALLS"
"""The environment variable that sets `RunConfig.max_llm_calls`'s default (the reference's
name, so a deployment configured for it keeps its limit)."""

_DEFAULT_MAX_LLM_CALLS: Final = 500


def _default_max_llm_calls() -> int:
    text = os.environ.get(MAX_LLM_CALLS_ENV)
    if not text:
        return _DEFAULT_MAX_LLM_CALLS
    try:
        return int(text)
    except ValueError:
        raise ValueError(
            f"{MAX_LLM_CALLS_ENV}={text!r} is not an integer; set it to a whole number "
            f"(0 or less: no limit) or unset it for the default {_DEFAULT_MAX_LLM_CALLS}."
        ) from None


class StreamingMode(enum.Enum):
    """Whether a run's model replies reach the caller in pieces as they are generated.

    `NONE`: each model turn arrives whole, once committed. `SSE`: the LlmAgents ask
    their models to stream, and each chunk reaches the caller at once as an event with
    `partial=True` (never stored), before the committed whole turn. `BIDI`: the
    reference's live (audio/video) mode, which baton does not have: refused.
    """

    NONE = None
    SSE = "sse"
    BIDI = "bidi"


class ToolThreadPoolConfig(BaseModel):
    """How many worker threads run a run's synchronous tools and nodes at once.

    baton always runs synchronous tools and nodes off the event loop, in worker threads;
    `max_workers` bounds how many of one run's calls are in a thread at a time.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)  # see WireModel

    max_workers: int = Field(default=4, ge=1)


class RunConfig(BaseModel):
    """What one call asks of its run (`Runner.run_async(run_config=...)`).

    Unknown fields are refused (a misspelt field must not pass unnoticed), as in the
    reference. Honoured: `streaming_mode` (SSE; BIDI is refused), `max_llm_calls`,
    `custom_metadata`, `tool_thread_pool_config`, `model_input_context`,
    `include_thoughts_from_other_agents`, `labels` and `http_options` (merged into every
    model request's config). Refused: `support_cfc=True` (the reference's live API).
    Accepted and without effect in baton (see the README's differences):
    `get_session_config` (a run loads only what it needs already), `service_tier`,
    `telemetry`, `save_input_blobs_as_artifacts`, and the live-mode fields.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)  # see WireModel

    streaming_mode: StreamingMode = StreamingMode.NONE
    """SSE: model replies reach the caller in `partial=True` pieces as they arrive."""

    max_llm_calls: int = Field(default_factory=_default_max_llm_calls)
    """How many model calls one call of `run_async` may make (0 or less: no limit);
    the next one fails its node with `LlmCallsLimitExceededError`. Default 500, or
    the `ADK_MAX_LLM_CALLS` environment variable."""

    custom_metadata: dict[str, JsonValue] | None = None
    """Merged into the `custom_metadata` of every event of the call, stored with them
    (an event's own keys win)."""

    tool_thread_pool_config: ToolThreadPoolConfig | None = None
    """Bounds how many synchronous tools, nodes and instruction providers of the run are
    in a worker thread at once (baton runs them in threads with or without it)."""

    model_input_context: list[Content] | None = None
    """Contents put in every model request of the call, before the user's message (as
    the reference does); never stored."""

    get_session_config: GetSessionConfig | None = None
    """Accepted; a run already loads only the events it needs."""

    labels: dict[str, str] | None = None
    """Added to every model request's `config.labels` (over the agent's own)."""
    http_options: HttpOptions | None = None
    """Merged into every model request's `config.http_options`, over the agent's own:
    its headers are added, its timeout and retry options replace the agent's."""
    service_tier: str | None = None
    telemetry: dict[str, JsonValue] | None = None
    support_cfc: bool = False
    include_thoughts_from_other_agents: bool = False
    """Show other agents' thoughts in the turns of theirs an LlmAgent's model is shown."""
    save_input_blobs_as_artifacts: bool = False

    # Live (audio/video) mode only: accepted, without effect (baton has no live mode).
    speech_config: dict[str, JsonValue] | None = None
    response_modalities: list[str] | None = None
    avatar_config: dict[str, JsonValue] | None = None
    output_audio_transcription: dict[str, JsonValue] | None = Field(
        default_factory=dict[str, JsonValue]
    )
    input_audio_transcription: dict[str, JsonValue] | None = Field(
        default_factory=dict[str, JsonValue]
    )
    realtime_input_config: dict[str, JsonValue] | None = None
    explicit_vad_signal: bool | None = None
    translation_config: dict[str, JsonValue] | None = None
    enable_affective_dialog: bool | None = None
    proactivity: dict[str, JsonValue] | None = None
    session_resumption: dict[str, JsonValue] | None = None
    history_config: dict[str, JsonValue] | None = None
    context_window_compression: dict[str, JsonValue] | None = None
    save_live_blob: bool = False
    save_live_audio: bool = False
    """Deprecated spelling of `save_live_blob`, as in the reference."""

    @model_validator(mode="before")
    @classmethod
    def _live_audio_is_live_blob(cls, data: Any) -> Any:
        if isinstance(data, dict) and "save_live_audio" in data:
            fields = cast(dict[str, Any], data)
            warnings.warn(
                "RunConfig(save_live_audio=) is deprecated; use save_live_blob=.",
                DeprecationWarning,
                stacklevel=2,
            )
            if fields["save_live_audio"]:
                return {**fields, "save_live_blob": True}
        return cast(object, data)

    @field_validator("max_llm_calls")
    @classmethod
    def _below_maxsize(cls, value: int) -> int:
        if value >= sys.maxsize:
            raise ValueError(
                f"max_llm_calls={value} must be less than {sys.maxsize}; "
                "give 0 (or less) for no limit."
            )
        return value

    @model_validator(mode="after")
    def _deferred_does_not_stream(self) -> RunConfig:
        if self.service_tier == "deferred" and self.streaming_mode is StreamingMode.SSE:
            raise ValueError(
                "service_tier='deferred' cannot stream (a deferred call returns no reply "
                "to stream); drop streaming_mode=StreamingMode.SSE or the service tier."
            )
        return self

    @property
    def is_streaming(self) -> bool:
        """Whether model replies reach the caller in pieces (SSE)."""
        return self.streaming_mode is StreamingMode.SSE


def check_run_config(run_config: object) -> RunConfig:
    """The call's RunConfig (`RunConfig()` for None), once baton can do what it asks.

    Raises:
        TypeError: it is not a baton `RunConfig` (e.g. the reference's).
        RunConfigError: it asks for the reference's live mode (`StreamingMode.BIDI`,
            `support_cfc=True`).
    """
    if run_config is None:
        return own_copy(run_config_in_force(None))
    if not isinstance(run_config, RunConfig):
        raise TypeError(
            f"run_config must be a baton.RunConfig, got {type(run_config).__module__}."
            f"{type(run_config).__name__}; import RunConfig from baton."
        )
    if run_config.support_cfc:
        raise RunConfigError(
            "run_config asks for support_cfc=True, which sends every model call through "
            "the reference's live (bidirectional) API; baton has no live mode, so no model "
            "can serve it. Drop support_cfc."
        )
    if run_config.streaming_mode is StreamingMode.BIDI:
        raise RunConfigError(
            "run_config asks for StreamingMode.BIDI, the reference's live (audio/video) "
            "mode, which baton does not have; use StreamingMode.SSE to stream model "
            "replies, or StreamingMode.NONE."
        )
    return run_config


def apply_run_config(config: GenerateContentConfig, run_config: RunConfig) -> None:
    """Put the call's `labels` and `http_options` into a model request's config (the
    agent's own copy): its labels over the agent's, its headers added to the agent's,
    its timeout and retry options in place of the agent's."""
    if run_config.labels:
        config.labels = {**(config.labels or {}), **run_config.labels}
    given = run_config.http_options
    if given is None:
        return
    own = config.http_options or HttpOptions()
    headers = {**(own.headers or {}), **(given.headers or {})}
    config.http_options = HttpOptions(
        headers=headers if headers else None,
        timeout=own.timeout if given.timeout is None else given.timeout,
        retry_options=(own.retry_options if given.retry_options is None else given.retry_options),
    ).model_copy(deep=True)


def run_config_in_force(run_config: object) -> RunConfig:
    """What a call goes by, checked as `check_run_config` checks it: `run_config`, or for
    None the cached `RunConfig()` of the environment's `ADK_MAX_LLM_CALLS`. That one is
    shared by every call: read it, never change it nor hand it to the caller's code
    (`own_copy` gives a call its own).

    Speed: a call without a run_config reads its defaults here instead of copying them
    (the copy, 20k instructions, twice per `run_async`), and only a call whose code
    reads `ctx.run_config` pays for its own copy.

    Raises:
        TypeError, RunConfigError: as `check_run_config`.
        ValueError: `ADK_MAX_LLM_CALLS` is not a whole number.
    """
    if run_config is None:
        return _shared_default(os.environ.get(MAX_LLM_CALLS_ENV))
    return check_run_config(run_config)


def own_copy(config: RunConfig) -> RunConfig:
    """A copy of `config` (the shared default) with container fields of its own, so that
    a change to the copy reaches no other call."""
    fields: dict[str, Any] = dict(config)
    for name, value in fields.items():
        if isinstance(value, dict | list):
            fields[name] = copy.copy(cast("dict[str, Any] | list[Any]", value))
    return assemble(RunConfig, fields, set())


@functools.lru_cache(maxsize=4)
def _shared_default(max_llm_calls_text: str | None) -> RunConfig:
    """`RunConfig()` while the environment variable holds `max_llm_calls_text` (its errors
    are raised, not kept: the next call raises them again)."""
    del max_llm_calls_text  # the cache's key: RunConfig() reads the variable itself
    return RunConfig()
