"""OpenTelemetry spans: one per executed invocation call, one per node run, nested."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.context import Context as OtelContext
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind, StatusCode
from opentelemetry.util.types import Attributes

from baton import Context, RequestInput, Workflow
from baton.tracing import invocation_span
from tests.harness import MakeHarness, asked, outputs


class _Switch(Sampler):
    """Records only while a test collects, so the other tests' spans cost nothing."""

    def __init__(self) -> None:
        self.on = False

    def should_sample(
        self,
        parent_context: OtelContext | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        if not self.on:
            return SamplingResult(Decision.DROP)
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)  # keeps the span's own

    def get_description(self) -> str:
        return "baton test switch"


_SWITCH = _Switch()
_EXPORTER = InMemorySpanExporter()


def _install_provider() -> None:
    # The global provider can be set once per process; the switch does the rest.
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider(sampler=_SWITCH)
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _install_provider()
    _EXPORTER.clear()
    _SWITCH.on = True
    try:
        yield _EXPORTER
    finally:
        _SWITCH.on = False
        _EXPORTER.clear()


def _flow(fail_b: bool = False) -> Workflow:
    def a(node_input: str) -> str:
        return f"a({node_input})"

    async def ask(ctx: Context, node_input: str):
        yield RequestInput(interrupt_id="ok", message="go on?")

    def b(node_input: Any) -> str:
        if fail_b:
            raise RuntimeError("b broke")
        return f"b({node_input})"

    return Workflow(name="flow", edges=[("START", a, ask, b)])


def _tree(finished: Sequence[ReadableSpan]) -> list[tuple[str, str, str]]:
    """(span, its node or call, its parent's node or call), in start order."""
    by_id = {s.context.span_id: s for s in finished if s.context is not None}

    def label(span: ReadableSpan | None) -> str:
        if span is None:
            return "-"
        attributes = span.attributes or {}
        return str(attributes.get("baton.node") or attributes.get("baton.call"))

    ordered = sorted(finished, key=lambda s: s.start_time or 0)
    return [
        (s.name, label(s), label(by_id.get(s.parent.span_id) if s.parent else None))
        for s in ordered
    ]


async def test_each_call_and_node_run_gets_a_span_nested_as_the_nodes_are(
    make_harness: MakeHarness, spans: InMemorySpanExporter
) -> None:
    h = await make_harness(_flow())
    assert asked(await h.start("x")) == ["ok"]
    invocation = await h.invocation()
    done = await h.answer(("ok", "yes"))
    assert outputs(done) == [("ask", "yes"), ("b", "b(yes)")]

    finished = spans.get_finished_spans()
    assert _tree(finished) == [
        ("baton.invocation", "start", "-"),
        ("baton.node", "flow", "start"),
        ("baton.node", "a", "flow"),
        ("baton.node", "ask", "flow"),
        ("baton.invocation", "answer", "-"),
        ("baton.node", "flow", "answer"),
        ("baton.node", "b", "flow"),
    ]
    calls = [dict(s.attributes or {}) for s in finished if s.name == "baton.invocation"]
    assert calls == [
        {
            "baton.app": "app",
            "baton.user": "u",
            "baton.session": h.session_id,
            "baton.invocation": invocation.id,
            "baton.call": call,
            "baton.status": status,
        }
        for call, status in (("start", "paused"), ("answer", "completed"))
    ]
    ask_span = next(s for s in finished if (s.attributes or {}).get("baton.node") == "ask")
    assert dict(ask_span.attributes or {}) == {
        "baton.node": "ask",
        "baton.node.path": "flow@1/ask@1",
        "baton.node.run_id": "1",
        "baton.node.status": "waiting",
        "baton.node.attempts": 1,
    }


async def test_a_failing_node_marks_its_span_and_the_call_as_errors(
    make_harness: MakeHarness, spans: InMemorySpanExporter
) -> None:
    h = await make_harness(_flow(fail_b=True))
    await h.start("x")
    with pytest.raises(RuntimeError, match="b broke"):
        await h.answer(("ok", "yes"))

    finished = spans.get_finished_spans()
    failed = {
        str((s.attributes or {}).get("baton.node") or (s.attributes or {}).get("baton.call"))
        for s in finished
        if s.status.status_code is StatusCode.ERROR
    }
    assert failed == {"b", "flow", "answer"}
    call = next(s for s in finished if (s.attributes or {}).get("baton.call") == "answer")
    assert (call.attributes or {})["baton.status"] == "failed"
    assert call.status.description == "RuntimeError: b broke"
    assert [e.name for e in call.events] == ["exception"]


def test_nothing_records_without_a_sampled_provider() -> None:
    _install_provider()  # the switch is off: spans are dropped, so node spans are skipped
    with invocation_span({"baton.call": "start"}) as traced:
        assert traced is None


# Stands in for an install without OpenTelemetry: its package cannot be imported.
_WITHOUT_OTEL = """
import asyncio, sys
sys.modules["opentelemetry"] = None
from baton import InMemoryRunner, Workflow, types
def a(node_input: str):
    return f"a({node_input})"
async def main():
    runner = InMemoryRunner(Workflow(name="flow", edges=[("START", a)]))
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="x")])
    async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        print(event.output)
asyncio.run(main())
"""


def test_baton_runs_without_opentelemetry_installed() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_OTEL],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["a(x)"]
