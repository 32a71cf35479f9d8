"""Compaction: a long conversation's older events summarized, so its model is shown the
summary instead of them, as the reference's `App(events_compaction_config=...)` does.

After an invocation ends (completed or paused, not failed nor aborted), the Runner asks
`compact_session` whether the session is due: `compaction_interval` invocations since
the last summary (a sliding window reaching `overlap_size` invocations back), or a
prompt of `token_threshold` tokens (all but the newest `event_retention_size` events).
The summarizer turns the window into one event carrying `actions.compaction`, and that
event lands as a step of its own, atomically, on every backend; nothing is deleted.
What an agent's model is shown then reads the summary in place of the events it covers
(see `baton.sessions.compacted`).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any, Final, Self, final

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from baton.agents import LlmAgent
from baton.errors import SessionNotFoundError, StaleSessionError
from baton.events import Event, EventActions, EventCompaction
from baton.models.llm import BaseLlm, LlmRequest
from baton.models.registry import resolve_model
from baton.sessions.compacted import sliding_window, token_window
from baton.sessions.rewind import live_events
from baton.sessions.store import SessionKey, StepCommit, Store
from baton.types import Content, Part

__all__ = [
    "BaseEventsSummarizer",
    "EventsCompactionConfig",
    "LlmEventSummarizer",
    "check_summarizer",
    "compact_session",
    "summarizer_for",
]

_log = logging.getLogger("baton")

_HISTORY: Final = "{conversation_history}"
# A tool's arguments or result are cut to this many characters in the conversation the
# summarizer reads, so a large search result does not swell the very prompt it shrinks.
_TOOL_TEXT_LIMIT: Final = 2000
_DEFAULT_PROMPT: Final = (
    "Below is a conversation between a user and an AI agent; it may begin with a summary "
    "of an earlier part. Write a summary the agent can carry on from without the "
    "conversation: the user's request, the decisions made and facts learned so far, and "
    "what is still open. Start with the language the user writes in (for example "
    '"Conversation Language: English"), and name each tool the agent called exactly as it '
    "is named. Keep the rest short.\n\n" + _HISTORY
)


class BaseEventsSummarizer(ABC):
    """Turns a window of a session's events into one summary event (subclass it)."""

    @abstractmethod
    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        """The summary of `events`: an event whose `actions.compaction` covers them, or
        None to leave them as they are.

        Args:
            events: the events to summarize, oldest first.
        """


@final
class LlmEventSummarizer(BaseEventsSummarizer):
    """Summarizes events with a model: one request holding the prompt and the
    conversation as text lines (`author: text`, tool calls and their results).

    Args:
        llm: the model (a BaseLlm, or a name such as 'openai/gpt-4o-mini').
        prompt_template: the prompt, with `{conversation_history}` where the
            conversation goes (str.format: other braces doubled).

    Raises:
        ValueError: the template has no `{conversation_history}`, or other braces.
    """

    def __init__(self, llm: BaseLlm | str, prompt_template: str | None = None) -> None:
        template = _DEFAULT_PROMPT if prompt_template is None else prompt_template
        try:
            has_history = _HISTORY in template and bool(template.format(conversation_history=""))
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"prompt_template {template[:80]!r} cannot be filled: {exc!r}; it may hold "
                "only {conversation_history}, other braces doubled ({{ and }})."
            ) from exc
        if not has_history:
            raise ValueError(
                f"prompt_template {template[:80]!r} has no {_HISTORY} where the "
                "conversation goes; add it."
            )
        self._llm = resolve_model(llm)
        self._prompt_template = template

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        """The model's summary of `events` as a compaction event (None: no events, or
        the model said nothing)."""
        if not events:
            return None
        prompt = self._prompt_template.format(conversation_history=_as_text(events))
        request = LlmRequest(
            model=self._llm.model, contents=[Content(role="user", parts=[Part(text=prompt)])]
        )
        summary = None
        async for response in self._llm.generate_content_async(request, stream=False):
            if response.content is not None:
                summary = response
                break
        if summary is None or summary.content is None:
            return None
        compaction = EventCompaction(
            start_timestamp=events[0].timestamp,
            end_timestamp=events[-1].timestamp,
            compacted_content=summary.content.model_copy(update={"role": "model"}),
        )
        return Event(
            author="user",
            invocation_id=Event.new_id(),
            actions=EventActions(compaction=compaction),
            usage_metadata=summary.usage_metadata,
        )


def _as_text(events: list[Event]) -> str:
    """The conversation as the summarizer reads it, one line per text, call or result;
    an earlier summary's own thoughts left out."""
    lines: list[str] = []
    for event in events:
        is_summary = event.actions.compaction is not None
        for part in (event.content.parts or []) if event.content else []:
            if part.text and part.thought:
                if not is_summary:
                    lines.append(f"{event.author} (thought): {part.text}")
            elif part.text:
                lines.append(f"{event.author}: {part.text}")
            if part.function_call:
                call = part.function_call
                lines.append(f"{event.author} called tool: {call.name}({_cut(call.args)})")
            if part.function_response:
                result = part.function_response
                lines.append(f"Tool response from {result.name}: {_cut(result.response)}")
    return "\n".join(lines)


def _cut(value: object) -> str:
    text = str(value)
    if len(text) <= _TOOL_TEXT_LIMIT:
        return text
    return f"{text[:_TOOL_TEXT_LIMIT]}... [{len(text) - _TOOL_TEXT_LIMIT} more characters]"


class EventsCompactionConfig(BaseModel):
    """When a session's events are summarized: give the sliding-window pair, the
    token-threshold pair, or both (the token threshold is tried first).

    Args:
        summarizer: what writes the summary (None: an `LlmEventSummarizer` with the
            App's root LlmAgent's model).
        compaction_interval: summarize once this many invocations ended since the
            last summary's range...
        overlap_size: ...reaching this many invocations further back.
        token_threshold: summarize once the newest model call's prompt had this many
            tokens (estimated from the events when no call reported it)...
        event_retention_size: ...all but this many of the newest events.
    """

    # defer_build: see WireModel.
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)

    summarizer: BaseEventsSummarizer | None = None
    compaction_interval: int | None = Field(default=None, gt=0)
    overlap_size: int | None = Field(default=None, ge=0)
    token_threshold: int | None = Field(default=None, gt=0)
    event_retention_size: int | None = Field(default=None, ge=0)

    @field_validator("summarizer", mode="before")
    @classmethod
    def _is_summarizer(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, BaseEventsSummarizer):
            raise ValueError(
                f"summarizer must be a BaseEventsSummarizer (LlmEventSummarizer(llm=...) or a "
                f"subclass), got {type(value).__name__}."
            )
        return value

    @model_validator(mode="after")
    def _has_a_trigger(self) -> Self:
        pairs = {
            "compaction_interval and overlap_size": (self.compaction_interval, self.overlap_size),
            "token_threshold and event_retention_size": (
                self.token_threshold,
                self.event_retention_size,
            ),
        }
        for names, (first, second) in pairs.items():
            if (first is None) != (second is None):
                raise ValueError(f"{names} go together: give both or neither.")
        if self.compaction_interval is None and self.token_threshold is None:
            raise ValueError(
                "EventsCompactionConfig needs a trigger: compaction_interval with "
                "overlap_size, or token_threshold with event_retention_size."
            )
        return self


def summarizer_for(config: EventsCompactionConfig, root: object) -> BaseEventsSummarizer:
    """The config's summarizer, or one with the root LlmAgent's model.

    Raises:
        ValueError: there is neither (see `check_summarizer`).
    """
    check_summarizer(config, root)
    if config.summarizer is not None:
        return config.summarizer
    assert isinstance(root, LlmAgent)  # checked above
    return LlmEventSummarizer(llm=root.canonical_model)


def check_summarizer(config: EventsCompactionConfig, root: object) -> None:
    """Check that the config has a summarizer, or the root is an LlmAgent whose model can
    be one (its model is resolved only when a summary is written).

    Raises:
        ValueError: there is neither.
    """
    if config.summarizer is None and not isinstance(root, LlmAgent):
        raise ValueError(
            f"events_compaction_config has no summarizer, and the root agent "
            f"'{getattr(root, 'name', root)}' is a {type(root).__name__}, not an LlmAgent "
            "whose model could summarize; give EventsCompactionConfig(summarizer="
            "LlmEventSummarizer(llm=...))."
        )


def _window(events: list[Event], config: EventsCompactionConfig) -> list[Event]:
    """The events the session is due to have summarized ([]: not due)."""
    if config.token_threshold is not None and config.event_retention_size is not None:
        window = token_window(
            events, threshold=config.token_threshold, retention=config.event_retention_size
        )
        if window:
            return window
    if config.compaction_interval is not None and config.overlap_size is not None:
        return sliding_window(
            events, interval=config.compaction_interval, overlap=config.overlap_size
        )
    return []


async def compact_session(
    store: Store,
    key: SessionKey,
    config: EventsCompactionConfig,
    summarizer: BaseEventsSummarizer,
) -> Event | None:
    """Summarize the session's events if it is due, and store the summary; the summary
    event, or None.

    Best effort, as the invocation already ended: a summarizer that fails is logged and
    the session is left as it was (the next invocation's end tries again); so is a
    summary of a session that changed, or was deleted, while it was written.
    """
    session = await store.get_session(key)
    if session is None:
        return None
    window = _window(live_events(session.events), config)
    if not window:
        return None
    try:
        summary = await summarizer.maybe_summarize_events(events=window)
    except Exception:
        _log.warning(
            "compaction of session '%s' failed; it stays as it was", key.session_id, exc_info=True
        )
        return None
    if summary is None:
        return None
    commit = StepCommit(
        session=key,
        invocation_id=None,
        expected_version=0,
        events=(summary,),
        unchanged_since=session.last_update_time,
    )
    try:
        await store.commit_session_events(commit)
    except StaleSessionError:
        _log.info("session '%s' changed while it was summarized; summary dropped", key.session_id)
        return None
    except SessionNotFoundError:
        # Deleted by another call: the invocation that ended went well all the same.
        _log.info("session '%s' was deleted while it was summarized", key.session_id)
        return None
    return summary
