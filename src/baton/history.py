"""What an event means to a person, as data: one shape for the web page and the terminal.

`describe_event` turns a stored event into entries (a message, a tool call, a tool's
result, a question, an answer, an output, a state change, a widget to show, an error),
each with a one-line `summary` written here, in Python. The web inbox, `baton inspect`, `baton
sessions show` and the live lines of `baton run` all render these entries, so a run's
history reads the same everywhere.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping

from pydantic import JsonValue

from baton.answers import unwrap_response
from baton.auth.credential_asking import masked_credential, masked_credentials_in
from baton.events import REQUEST_CREDENTIAL_FUNCTION, REQUEST_INPUT_FUNCTION, Event, UiWidget
from baton.sessions.store import Interrupt, InterruptStatus
from baton.types import FunctionCall, FunctionResponse, WireModel

__all__ = ["AnswerIndex", "EntryKind", "TimelineEntry", "acting_node", "compact", "describe_event"]

AnswerIndex = Mapping[tuple[str, str], Interrupt]
"""Interrupt rows by (invocation id, interrupt id): who answered what, and when."""


class EntryKind(enum.StrEnum):
    MESSAGE = "message"
    CALLED = "called"
    RESULT = "result"
    ASKED = "asked"
    ANSWERED = "answered"
    OUTPUT = "output"
    STATE = "state"
    WIDGET = "widget"
    ERROR = "error"


class TimelineEntry(WireModel):
    """One thing that happened, with a line for people and the data behind it."""

    time: float
    invocation_id: str
    node: str
    path: str = ""
    kind: EntryKind
    summary: str = ""
    detail: JsonValue = None
    by: str | None = None


def describe_event(event: Event, index: AnswerIndex | None = None) -> list[TimelineEntry]:
    """The entries of `event`, in the order a person reads them (none for bookkeeping)."""
    found = _describe(event, index or {})
    return [
        TimelineEntry(
            time=event.timestamp,
            invocation_id=event.invocation_id,
            node=acting_node(event),
            path=event.node_info.path if event.node_info else "",
            kind=kind,
            summary=summary,
            detail=detail,
            by=by,
        )
        for kind, summary, detail, by in found
    ]


def acting_node(event: Event) -> str:
    """Who did what `event` records: its author, or the node when the author is a workflow.

    A function node's events are signed with its workflow's name, as in the reference;
    people want to read the node's.
    """
    info = event.node_info
    if info is None or not info.path:
        return event.author
    enclosing = {segment.split("@", 1)[0] for segment in info.path.split("/")[:-1]}
    return info.name if event.author in enclosing else event.author


_Found = tuple[EntryKind, str, JsonValue, str | None]


def _describe(event: Event, index: AnswerIndex) -> list[_Found]:
    if event.error_code:
        text = f"failed: {event.error_code}: {event.error_message}"
        return [(EntryKind.ERROR, text, event.error_message, None)]
    found: list[_Found] = []
    if event.content and event.content.text:
        text = event.content.text
        found.append((EntryKind.MESSAGE, _cut(text, 300), text, None))
    asking = set(event.long_running_tool_ids or ())
    for call in event.function_calls:
        found.append(_asked(call) if call.id in asking else _called(call))
    responses = event.content.function_responses if event.content else []
    for response in responses:
        if event.author == "user":
            found.append(_answered(event, response, index))
        else:
            found.append(_result(response))
    if event.output is not None:
        found.append((EntryKind.OUTPUT, f"→ {compact(event.output)}", event.output, None))
    if not found and event.actions.state_delta:
        delta: JsonValue = masked_credentials_in(dict(event.actions.state_delta))
        found.append((EntryKind.STATE, f"state {compact(delta)}", delta, None))
    found.extend(_widget(w) for w in event.actions.render_ui_widgets or ())
    return found


def _widget(widget: UiWidget) -> _Found:
    resource = widget.payload.get("resource_uri")
    shown = f"{widget.provider}: {resource}" if isinstance(resource, str) else widget.provider
    return EntryKind.WIDGET, f"shows widget '{widget.id}' ({shown})", widget.to_wire(), None


def _asked(call: FunctionCall) -> _Found:
    args = call.args or {}
    if call.name == REQUEST_INPUT_FUNCTION:
        message = args.get("message")
        detail: JsonValue = {
            "interruptId": call.id,
            "message": message,
            "payload": args.get("payload"),
        }
        return EntryKind.ASKED, f"asks [{call.id}]: {message or '(no message)'}", detail, None
    detail = {"interruptId": call.id, "tool": call.name, "args": args}
    summary = f"asks [{call.id}]: may {call.name}({_arguments(args)}) go ahead?"
    return EntryKind.ASKED, summary, detail, None


def _called(call: FunctionCall) -> _Found:
    args = call.args or {}
    detail: JsonValue = {"id": call.id, "tool": call.name, "args": args}
    return EntryKind.CALLED, f"calls {call.name}({_arguments(args)})", detail, None


def _result(response: FunctionResponse) -> _Found:
    value = unwrap_response(response.response)
    detail: JsonValue = {"id": response.id, "tool": response.name, "response": value}
    return EntryKind.RESULT, f"{response.name} returned {compact(value)}", detail, None


def _answered(event: Event, response: FunctionResponse, index: AnswerIndex) -> _Found:
    row = index.get((event.invocation_id, response.id or ""))
    answered = row is not None and row.status is InterruptStatus.ANSWERED
    value = row.answer if row is not None and answered else unwrap_response(response.response)
    if response.name == REQUEST_CREDENTIAL_FUNCTION or (
        row is not None and row.function_name == REQUEST_CREDENTIAL_FUNCTION
    ):
        value = masked_credential(value)  # the user's secret: never shown
    detail: JsonValue = {"interruptId": response.id, "answer": value}
    by = row.answered_by if row is not None else None
    return EntryKind.ANSWERED, f"answered [{response.id}]: {compact(value)}", detail, by


def _arguments(args: Mapping[str, JsonValue]) -> str:
    return ", ".join(f"{name}={compact(value, 60)}" for name, value in args.items())


def compact(value: object, limit: int = 160) -> str:
    """`value` as one line of compact JSON, cut to `limit` characters with an ellipsis."""
    return _cut(json.dumps(value, separators=(",", ":"), default=str), limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[: limit - 1]}…"
