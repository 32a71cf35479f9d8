"""Optional OpenTelemetry spans: each invocation a call executes, and each node run in it.

With `opentelemetry-api` installed (`pip install 'baton[otel]'`) and a tracer
provider configured by the application (the OpenTelemetry SDK and an exporter),
baton reports:

- `baton.invocation`: one per `run_async` call that executes an invocation, with
  the app, user, session and invocation ids, what the call does (`start`,
  `answer`, `continue`) and the status it left the invocation in;
- `baton.node`: one per node run inside it, nested as the nodes are (a workflow's
  span holds its children's), with the node's name, path, run id, attempts and
  status; a run that failed records its exception.

Without a configured provider nothing is recorded and node runs pay nothing: the
invocation's span is checked once, and node spans are made only when it records.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from opentelemetry.trace import Span, Tracer

__all__ = ["end_invocation_span", "invocation_span", "is_tracing", "node_span"]

_INSTRUMENTATION = "baton"


def _load_trace() -> ModuleType | None:
    try:
        from opentelemetry import trace
    except ImportError:  # the otel extra is optional
        return None
    return trace


_trace = _load_trace()
# One tracer for the process: a proxy that follows the provider the application sets,
# whenever it sets it (getting a tracer per call costs microseconds).
_tracer: Tracer | None = None if _trace is None else _trace.get_tracer(_INSTRUMENTATION)


def is_tracing() -> bool:
    """Whether an invocation span would record (OpenTelemetry installed, a provider set).

    Speed: a call asks this first, and without tracing skips `invocation_span`'s generator
    and the span's attributes (most processes trace nothing, and it is every call)."""
    return _tracer is not None and not _no_provider()


@contextlib.contextmanager
def invocation_span(attributes: Mapping[str, str]) -> Iterator[tuple[Span, Tracer] | None]:
    """A `baton.invocation` span around the body, with the tracer for its node spans.

    Yields:
        The recording span and its tracer, or None when nothing records (no
        OpenTelemetry, or no provider configured).
    """
    tracer = _tracer
    if tracer is None or _no_provider():
        yield None
        return
    with tracer.start_as_current_span("baton.invocation", attributes=dict(attributes)) as span:
        yield (span, tracer) if span.is_recording() else None


def _no_provider() -> bool:
    """Whether the application has set no tracer provider (spans would record nothing)."""
    assert _trace is not None  # checked by the caller
    provider: object = _trace.get_tracer_provider()
    return isinstance(provider, _trace.ProxyTracerProvider)


def node_span(
    tracer: Tracer, name: str, path: str, run_id: str
) -> contextlib.AbstractContextManager[Span]:
    """A `baton.node` span, current while the node runs (its children nest under it)."""
    attributes = {"baton.node": name, "baton.node.path": path, "baton.node.run_id": run_id}
    return tracer.start_as_current_span("baton.node", attributes=attributes)


def end_invocation_span(span: Span, status: str, error: BaseException | None) -> None:
    """Note the status the call left the invocation in, and its error if it raised one.

    A node's failure is recorded by its own span too; here it marks the whole call.
    """
    span.set_attribute("baton.status", status)
    if error is not None:
        from opentelemetry.trace import StatusCode  # present: this span came from it

        span.record_exception(error)
        span.set_status(StatusCode.ERROR, f"{type(error).__name__}: {error}")
