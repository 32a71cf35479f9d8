"""RunConfig from the caller's side: what a call asks of its run happens, on every backend.

`max_llm_calls` bounds one call's model calls, `custom_metadata` lands on every event of
the call, and unknown fields, wrong types and the live mode are refused before anything
is stored.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace

import pytest
from pydantic import JsonValue, ValidationError

from baton import (
    Context,
    InMemorySessionService,
    InvocationContext,
    RunConfig,
    StreamingMode,
    ToolThreadPoolConfig,
    Workflow,
    types,
)
from baton import run_config as run_config_module
from baton.agents import LlmAgent
from baton.errors import LlmCallsLimitExceededError, RunConfigError
from baton.events import Event
from baton.models import ScriptedModel
from baton.run_config import check_run_config, run_config_in_force
from baton.tools import FunctionTool, ToolContext
from baton.types import FunctionCall
from tests.harness import Harness, MakeHarness

WITHIN = 30.0  # seconds the unbounded nodes may take to all be running, on a loaded machine


def _go() -> types.Content:
    return types.Content(role="user", parts=[types.Part(text="go")])


def _looping_agent(tool_runs: list[int], turns: int) -> LlmAgent:
    """An agent whose model calls `tool` `turns` times, then answers "done" (then "again")."""

    def tool(x: int) -> int:
        tool_runs.append(x)
        return x

    script = [FunctionCall(id=f"c{i}", name="tool", args={"x": i}) for i in range(turns)]
    model = ScriptedModel([*script, "done"], responder=lambda _: "again")
    return LlmAgent(name="agent", model=model, tools=[FunctionTool(tool)])


async def _stored(h: Harness) -> list[Event]:
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    return session.events


def test_defaults_and_field_names_are_the_references(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADK_MAX_LLM_CALLS", raising=False)
    config = RunConfig()
    assert config.streaming_mode is StreamingMode.NONE
    assert StreamingMode.NONE.value is None
    assert StreamingMode.SSE.value == "sse"
    assert config.max_llm_calls == 500
    assert config.custom_metadata is None
    assert config.tool_thread_pool_config is None
    assert ToolThreadPoolConfig().max_workers == 4
    monkeypatch.setenv("ADK_MAX_LLM_CALLS", "7")
    assert RunConfig().max_llm_calls == 7


def test_a_call_without_a_run_config_gets_a_fresh_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ADK_MAX_LLM_CALLS", raising=False)
    first, second = check_run_config(None), check_run_config(None)
    assert first == RunConfig()
    assert first.model_fields_set == set()
    # Each call's own containers: a change to one call's config is not the next call's.
    assert first.output_audio_transcription is not None
    first.output_audio_transcription["changed"] = True
    assert second.output_audio_transcription == {}
    assert check_run_config(None).output_audio_transcription == {}
    monkeypatch.setenv("ADK_MAX_LLM_CALLS", "7")
    assert check_run_config(None).max_llm_calls == 7
    monkeypatch.setenv("ADK_MAX_LLM_CALLS", "lots")
    with pytest.raises(ValueError, match="ADK_MAX_LLM_CALLS='lots'"):
        check_run_config(None)


def test_bad_run_configs_are_refused_naming_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match="max_llm_cals"):
        RunConfig(max_llm_cals=3)  # pyright: ignore[reportCallIssue] -- the misspelling under test
    with pytest.raises(ValidationError, match="max_llm_calls"):
        RunConfig(max_llm_calls="many")  # pyright: ignore[reportArgumentType] -- the wrong type under test
    with pytest.raises(ValidationError, match="streaming_mode"):
        RunConfig(streaming_mode="fast")  # pyright: ignore[reportArgumentType] -- the wrong value under test
    with pytest.raises(ValidationError, match=str(sys.maxsize)):
        RunConfig(max_llm_calls=sys.maxsize)
    with pytest.raises(ValidationError, match="max_workers"):
        ToolThreadPoolConfig(max_workers=0)
    with pytest.raises(ValidationError, match="deferred"):
        RunConfig(service_tier="deferred", streaming_mode=StreamingMode.SSE)
    monkeypatch.setenv("ADK_MAX_LLM_CALLS", "lots")
    with pytest.raises(ValueError, match="ADK_MAX_LLM_CALLS='lots'"):
        RunConfig()


async def test_live_mode_and_foreign_configs_are_refused_before_anything_is_stored(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(_looping_agent([], 0))
    with pytest.raises(RunConfigError, match="BIDI"):
        await h.collect(new_message=_go(), run_config=RunConfig(streaming_mode=StreamingMode.BIDI))
    with pytest.raises(TypeError, match="dict"):
        await h.collect(new_message=_go(), run_config={"max_llm_calls": 3})
    with pytest.raises(RunConfigError, match="support_cfc"):  # the live API, in the reference
        await h.collect(new_message=_go(), run_config=RunConfig(support_cfc=True))
    assert await _stored(h) == []
    assert await h.service.store.list_invocations(h.key) == []


async def test_run_live_is_refused_at_the_call_with_a_clear_error(
    make_harness: MakeHarness,
) -> None:
    # The reference's live mode: a user calling it learns at once that baton has none.
    h = await make_harness(_looping_agent([], 0))
    with pytest.raises(RunConfigError, match="no live .*run_async"):
        h.runner.run_live(user_id=h.user_id, session_id=h.session_id, live_request_queue=None)
    with pytest.raises(RunConfigError, match="run_live"):
        h.runner.run_live(session=None)
    assert await _stored(h) == []
    assert await h.service.store.list_invocations(h.key) == []


async def test_the_call_past_max_llm_calls_fails_its_node_and_is_stored(
    make_harness: MakeHarness,
) -> None:
    tool_runs: list[int] = []
    agent = _looping_agent(tool_runs, 3)
    h = await make_harness(agent)

    with pytest.raises(LlmCallsLimitExceededError, match=r"max_llm_calls=2") as raised:
        await h.collect(new_message=_go(), run_config=RunConfig(max_llm_calls=2))

    assert "model call 3" in str(raised.value)
    assert tool_runs == [0, 1]
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert len(model.requests) == 2  # the third call was refused before it was made
    errors = [(e.error_code, e.author) for e in await _stored(h) if e.error_code]
    assert errors == [("LlmCallsLimitExceededError", "agent")]


async def test_max_llm_calls_counts_per_call_so_a_resume_gets_a_fresh_allowance(
    make_harness: MakeHarness,
) -> None:
    tool_runs: list[int] = []
    agent = _looping_agent(tool_runs, 3)
    h = await make_harness(agent)
    with pytest.raises(LlmCallsLimitExceededError):
        await h.collect(new_message=_go(), run_config=RunConfig(max_llm_calls=2))
    invocation = await h.invocation()

    events = await h.collect(invocation_id=invocation.id, run_config=RunConfig(max_llm_calls=2))

    assert tool_runs == [0, 1, 2]  # the committed tool calls did not run again
    assert [e.content.text for e in events if e.content and e.content.text] == ["done"]


async def test_a_call_without_a_run_config_reads_adk_max_llm_calls_once(
    make_harness: MakeHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Runner checks the call's config before anything changes and hands it to the run
    # (a read of an unset variable raises and catches a KeyError: ~9k instructions).
    reads: list[str] = []

    class _Environ(dict[str, str]):
        def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
            reads.append(key)
            return super().get(key, default)

    environ = SimpleNamespace(environ=_Environ({"ADK_MAX_LLM_CALLS": "2"}))
    monkeypatch.setattr(run_config_module, "os", environ)
    run_config_in_force(None)  # RunConfig() of this value made (and cached) once
    tool_runs: list[int] = []
    h = await make_harness(_looping_agent(tool_runs, 3))
    reads.clear()

    with pytest.raises(LlmCallsLimitExceededError, match=r"max_llm_calls=2"):
        await h.collect(new_message=_go())

    assert tool_runs == [0, 1]
    assert reads == ["ADK_MAX_LLM_CALLS"]


async def test_zero_or_less_max_llm_calls_is_no_limit(make_harness: MakeHarness) -> None:
    tool_runs: list[int] = []
    h = await make_harness(_looping_agent(tool_runs, 4))

    events = await h.collect(new_message=_go(), run_config=RunConfig(max_llm_calls=0))

    assert tool_runs == [0, 1, 2, 3]
    assert [e.content.text for e in events if e.content and e.content.text] == ["done"]


async def test_custom_metadata_is_stored_with_every_event_of_the_call(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(_looping_agent([], 1))
    config = RunConfig(custom_metadata={"tenant": "acme", "trace": [1, 2]})

    shown = await h.collect(new_message=_go(), run_config=config, yield_user_message=True)
    await h.collect(new_message=_go())  # a second call without metadata

    stored = await _stored(h)
    first = [e for e in stored if e.invocation_id == shown[0].invocation_id]
    assert [e.custom_metadata for e in shown] == [{"tenant": "acme", "trace": [1, 2]}] * len(shown)
    assert [e.custom_metadata for e in first] == [{"tenant": "acme", "trace": [1, 2]}] * len(first)
    assert all(e.custom_metadata is None for e in stored if e not in first)


async def test_model_input_context_goes_before_the_message_and_is_never_stored(
    make_harness: MakeHarness,
) -> None:
    agent = _looping_agent([], 0)
    h = await make_harness(agent)
    note = types.Content(role="user", parts=[types.Part(text="the user is on mobile")])

    await h.collect(new_message=_go(), run_config=RunConfig(model_input_context=[note]))

    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert [c.text for c in model.requests[0].contents] == ["the user is on mobile", "go"]
    stored = [e.content.text for e in await _stored(h) if e.content]
    assert "the user is on mobile" not in stored


def _a_moment() -> None:
    time.sleep(0.05)


def _parallel_sleepers(
    state: dict[str, int], lock: threading.Lock, hold: Callable[[], object]
) -> Workflow:
    def make(name: str):
        def sleeper(node_input: object) -> None:
            with lock:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            hold()
            with lock:
                state["now"] -= 1

        sleeper.__name__ = name
        return sleeper

    return Workflow(name="wf", edges=[("START", (make("a"), make("b"), make("c")))])


async def test_tool_thread_pool_max_workers_bounds_the_runs_threads(
    make_harness: MakeHarness,
) -> None:
    bounded = {"now": 0, "peak": 0}
    free = {"now": 0, "peak": 0}
    lock = threading.Lock()
    one = RunConfig(tool_thread_pool_config=ToolThreadPoolConfig(max_workers=1))
    # Unbounded, the three meet in their threads (each waits for the other two; the
    # barrier's timeout only bounds a failure). Bounded, each holds its thread a moment
    # for a sibling to overlap it: a window that can only miss a broken bound, never
    # fail a working one.
    all_three = threading.Barrier(3, timeout=WITHIN)

    h = await make_harness(_parallel_sleepers(bounded, lock, _a_moment))
    await h.collect(new_message=_go(), run_config=one)
    h = await make_harness(_parallel_sleepers(free, lock, all_three.wait))
    await h.collect(new_message=_go())

    assert bounded["peak"] == 1
    assert free["peak"] == 3


async def test_a_caller_built_context_takes_a_run_config_and_checks_it() -> None:
    service = InMemorySessionService()
    session = await service.create_session(app_name="app", user_id="u")
    tool_runs: list[int] = []
    agent = _looping_agent(tool_runs, 3)

    def context(run_config: object) -> InvocationContext:
        return InvocationContext(
            invocation_id="inv-1",
            agent=agent,
            session=session,
            session_service=service,
            user_content=_go(),
            run_config=run_config,  # pyright: ignore[reportArgumentType] -- bad values under test
        )

    with pytest.raises(TypeError, match="RunConfig"):
        context({"max_llm_calls": 1})
    with pytest.raises(RunConfigError, match="BIDI"):
        context(RunConfig(streaming_mode=StreamingMode.BIDI))
    events = agent.run_async(context(RunConfig(max_llm_calls=1)))
    with pytest.raises(LlmCallsLimitExceededError, match="max_llm_calls=1"):
        _ = [e async for e in events]
    assert tool_runs == [0]


async def test_a_runs_change_to_its_default_run_config_reaches_no_other_run(
    make_harness: MakeHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ADK_MAX_LLM_CALLS", raising=False)
    changed: list[int] = []

    def tighten(x: int, tool_context: ToolContext) -> int:
        if not changed:  # the first run's call only
            config = tool_context.run_config
            config.max_llm_calls = 1
            config.custom_metadata = {"tenant": "first"}
            assert config.output_audio_transcription is not None
            config.output_audio_transcription["changed"] = True
        changed.append(x)
        return x

    calls = [FunctionCall(id=f"c{i}", name="tighten", args={"x": i}) for i in range(2)]
    agent = LlmAgent(
        name="agent",
        model=ScriptedModel([*calls, "done"], responder=lambda _: "again"),
        tools=[FunctionTool(tighten)],
    )
    h = await make_harness(agent)

    # The change holds for the rest of its own run: its second model call is refused.
    with pytest.raises(LlmCallsLimitExceededError, match="max_llm_calls=1"):
        await h.collect(new_message=_go())
    # The next run, also without a run_config, makes its two model calls under the default.
    events = await h.collect(new_message=_go())

    assert changed == [0, 1]
    assert [e.content.text for e in events if e.content and e.content.text] == ["done"]
    assert all(e.custom_metadata is None for e in events)
    for config in (RunConfig(), check_run_config(None)):
        assert config.max_llm_calls == 500
        assert config.custom_metadata is None
        assert config.output_audio_transcription == {}

    # A caller-built context without a run_config: its run's own, too.
    session = await h.service.create_session(app_name="app", user_id="u")
    one, other = (InvocationContext(invocation_id=i, session=session) for i in ("a", "b"))
    assert one.run_config is one.run_config
    one.run_config.max_llm_calls = 1
    assert other.run_config.max_llm_calls == 500
    assert check_run_config(None).max_llm_calls == 500


async def test_a_node_reads_the_calls_custom_metadata(make_harness: MakeHarness) -> None:
    def tenant(ctx: Context, node_input: object) -> JsonValue:
        return ctx.custom_metadata.get("tenant")

    h = await make_harness(Workflow(name="wf", edges=[("START", tenant)]))

    tagged = await h.collect(
        new_message=_go(), run_config=RunConfig(custom_metadata={"tenant": "acme"})
    )
    plain = await h.collect(new_message=_go())

    assert [e.output for e in tagged if e.output is not None][-1] == "acme"
    assert all(e.output is None for e in plain)


async def test_labels_and_http_options_go_into_every_model_request_over_the_agent_s(
    make_harness: MakeHarness,
) -> None:
    own = types.GenerateContentConfig(
        temperature=0.1,
        labels={"team": "mine", "own": "x"},
        http_options=types.HttpOptions(headers={"a": "1", "b": "0"}, timeout=5),
    )
    as_given = own.model_copy(deep=True)
    model = ScriptedModel(["one", "two"])
    agent = LlmAgent(name="agent", model=model, generate_content_config=own)
    h = await make_harness(agent)
    headers = types.HttpOptions(headers={"b": "2"}, timeout=9)
    await h.collect(
        new_message=_go(), run_config=RunConfig(labels={"team": "a"}, http_options=headers)
    )
    await h.collect(new_message=_go())

    first, second = (request.config for request in model.requests)
    assert first.labels == {"team": "a", "own": "x", "adk_agent_name": "agent"}
    assert first.http_options == types.HttpOptions(headers={"a": "1", "b": "2"}, timeout=9)
    assert first.temperature == 0.1
    assert second.labels == {"team": "mine", "own": "x", "adk_agent_name": "agent"}
    assert second.http_options == own.http_options
    assert own == as_given  # the agent's own config is left as it was
