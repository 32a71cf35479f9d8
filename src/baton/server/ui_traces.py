"""Spans kept per session in memory, for the reference web UI's Traces tab.

With `baton api_server --trace-to-ui` (needs the OpenTelemetry SDK: `pip install
'baton[otel]'`), the spans baton records (`baton.invocation` per call that runs
an invocation, nested `baton.node` per node run; see `baton.tracing`) are kept by
trace, and each trace is filed under the app and session its invocation span
names. The newest `max_traces` traces are kept; older ones are dropped.

`GET /dev/apps/{app}/debug/trace/session/{id}` returns them in the UI's span
shape: name, start/end times (ns since the epoch), trace/span/parent ids (hex),
attributes and logs (none). The invocation span also carries the two attributes
the UI groups and labels traces by: `gcp.vertex.agent.invocation_id` and
`gen_ai.conversation.id` (the session id).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Final, final

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from pydantic import JsonValue

__all__ = ["SessionTraces", "install_session_traces", "ui_span"]

_APP: Final = "baton.app"
_USER: Final = "baton.user"
_SESSION: Final = "baton.session"
_INVOCATION: Final = "baton.invocation"
UI_INVOCATION: Final = "gcp.vertex.agent.invocation_id"
UI_CONVERSATION: Final = "gen_ai.conversation.id"


@final
class SessionTraces(SpanProcessor):
    """Finished spans by trace; traces by (app, session), with the users they ran for."""

    def __init__(self, max_traces: int = 2000) -> None:
        """Keep at most `max_traces` traces (the oldest go first)."""
        self._max = max_traces
        self._lock = threading.Lock()
        self._spans: OrderedDict[int, list[ReadableSpan]] = OrderedDict()
        self._owner: dict[int, tuple[str, str, str]] = {}  # trace id -> (app, session, user)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing: spans are kept when they end."""

    def on_end(self, span: ReadableSpan) -> None:
        """Keep the span; file its trace under the session an invocation span names."""
        context = span.context
        if context is None:
            return
        attributes = span.attributes or {}
        with self._lock:
            self._spans.setdefault(context.trace_id, []).append(span)
            self._spans.move_to_end(context.trace_id)
            session = attributes.get(_SESSION)
            if session is not None:
                owner = (str(attributes.get(_APP)), str(session), str(attributes.get(_USER)))
                self._owner[context.trace_id] = owner
            while len(self._spans) > self._max:
                dropped, _ = self._spans.popitem(last=False)
                self._owner.pop(dropped, None)

    def shutdown(self) -> None:
        """Nothing to release."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered."""
        return True

    def spans_of(self, app: str, session: str) -> list[tuple[str, ReadableSpan]]:
        """(user, span) for every kept span of the session's traces, oldest trace first."""
        with self._lock:
            return [
                (owner[2], span)
                for trace_id, spans in self._spans.items()
                if (owner := self._owner.get(trace_id)) is not None and owner[:2] == (app, session)
                for span in spans
            ]


def install_session_traces(max_traces: int = 2000) -> SessionTraces:
    """Keep spans for the UI: on the application's SDK provider, or on a new one.

    Raises:
        RuntimeError: a tracer provider that is not the SDK's is already set.
    """
    kept = SessionTraces(max_traces)
    provider: object = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.add_span_processor(kept)
        return kept
    if not isinstance(provider, trace.ProxyTracerProvider):
        raise RuntimeError(
            f"the tracer provider set by the application ({type(provider).__name__}) is not "
            "the OpenTelemetry SDK's; spans cannot be kept for the web UI."
        )
    own = TracerProvider()
    own.add_span_processor(kept)
    trace.set_tracer_provider(own)
    return kept


def ui_span(span: ReadableSpan) -> dict[str, JsonValue]:
    """One span in the web UI's shape."""
    context = span.context
    assert context is not None  # kept spans have one (see on_end)
    attributes: dict[str, JsonValue] = {k: _plain(v) for k, v in (span.attributes or {}).items()}
    if _INVOCATION in attributes:
        attributes[UI_INVOCATION] = attributes[_INVOCATION]
        attributes[UI_CONVERSATION] = attributes.get(_SESSION)
    parent = span.parent
    return {
        "name": span.name,
        "start_time": span.start_time,
        "end_time": span.end_time,
        "trace_id": trace.format_trace_id(context.trace_id),
        "span_id": trace.format_span_id(context.span_id),
        "parent_span_id": None if parent is None else trace.format_span_id(parent.span_id),
        "attributes": attributes,
        "logs": [],
    }


def _plain(value: object) -> JsonValue:
    """An attribute value (a primitive, or a sequence of them) as JSON."""
    if isinstance(value, str | bool | int | float):
        return value
    assert isinstance(value, tuple | list)
    items: list[object] = list(value)  # pyright: ignore[reportUnknownArgumentType] -- attribute sequences hold primitives
    return [_plain(item) for item in items]
