"""Compaction: `App(events_compaction_config=...)` summarizes a long chat's older events
and the chat agent's model is then shown the summary instead of them, as google-adk 2.13
does (the requests below are the ones its runner made with a fake model, probed with the
same script), stored as a step of its own on every backend, and read after a restart.
"""

from __future__ import annotations

import pytest
from pydantic import JsonValue, ValidationError

from baton import (
    App,
    BaseEventsSummarizer,
    EventsCompactionConfig,
    LlmAgent,
    LlmEventSummarizer,
    LongRunningFunctionTool,
    Runner,
    Workflow,
    types,
)
from baton.events import Event, EventActions, EventCompaction
from baton.models import LlmRequest, LlmResponse, ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.store import SessionKey, Store
from baton.types import SessionId, UsageMetadata
from tests.conftest import StoreFactory

SUMMARY_PROMPT = "Below is a conversation"


def _texts(request: LlmRequest) -> list[tuple[str | None, str]]:
    return [(c.role, "".join(p.text or "" for p in c.parts or [])) for c in request.contents]


def _is_summary_request(request: LlmRequest) -> bool:
    first = request.contents[0].parts or [] if request.contents else []
    return bool(first) and (first[0].text or "").startswith(SUMMARY_PROMPT)


def _chat_model(usage: dict[int, int] | None = None) -> ScriptedModel:
    """Replies `reply<n>` to the n-th request, `SUMMARY<n>` to a summarizer's; with
    `usage`, the n-th reply reports that many prompt tokens."""

    def respond(request: LlmRequest) -> LlmResponse:
        turn = len(model.requests)
        text = f"SUMMARY{turn}" if _is_summary_request(request) else f"reply{turn}"
        tokens = (usage or {}).get(turn)
        return LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=text)]),
            usage_metadata=None if tokens is None else UsageMetadata(prompt_token_count=tokens),
        )

    model = ScriptedModel(responder=respond)
    return model


def _runner(store: Store, model: ScriptedModel, config: EventsCompactionConfig) -> Runner:
    agent = LlmAgent(name="assistant", model=model, instruction="Be brief.")
    app = App(name="app", root_agent=agent, events_compaction_config=config)
    return Runner(app=app, session_service=BaseSessionService(store))


async def _say(runner: Runner, session_id: str, text: str) -> None:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    async for _ in runner.run_async(user_id="u", session_id=session_id, new_message=message):
        pass


async def _events(store: Store, session_id: str) -> list[Event]:
    session = await store.get_session(SessionKey("app", "u", SessionId(session_id)))
    assert session is not None
    return session.events


async def test_a_chat_compacts_every_interval_and_its_model_sees_the_summaries_after_a_restart(
    stores: StoreFactory,
) -> None:
    model = _chat_model()
    config = EventsCompactionConfig(compaction_interval=2, overlap_size=1)
    runner = _runner(stores.open(), model, config)
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    for n in range(1, 6):
        await _say(runner, session.id, f"msg{n}")

    requests = [_texts(r) for r in model.requests]
    assert requests[0] == [("user", "msg1")]
    assert requests[1] == [("user", "msg1"), ("model", "reply1"), ("user", "msg2")]
    # After the second invocation, its model summarizes the first two (default summarizer).
    assert _is_summary_request(model.requests[2])
    assert requests[2][0][1].endswith(
        "\n\nuser: msg1\nassistant: reply1\nuser: msg2\nassistant: reply2"
    )
    assert model.requests[2].config.system_instruction is None
    assert requests[3] == [("model", "SUMMARY3"), ("user", "msg3")]
    assert requests[4] == [
        ("model", "SUMMARY3"),
        ("user", "msg3"),
        ("model", "reply4"),
        ("user", "msg4"),
    ]
    # Two more invocations: the window reaches one invocation back (overlap_size=1).
    assert requests[5][0][1].endswith(
        "\n\nuser: msg2\nassistant: reply2\nuser: msg3\nassistant: reply4"
        "\nuser: msg4\nassistant: reply5"
    )
    assert requests[6] == [("model", "SUMMARY3"), ("model", "SUMMARY6"), ("user", "msg5")]

    stored = await _events(stores.open(), session.id)
    summaries = [e for e in stored if e.actions.compaction]
    assert len(stored) == 12  # ten messages and two summaries: nothing deleted
    first = summaries[0]
    assert (first.author, first.content) == ("user", None)
    assert first.actions.compaction == EventCompaction(
        start_timestamp=stored[0].timestamp,  # msg1
        end_timestamp=stored[3].timestamp,  # reply2
        compacted_content=types.Content(role="model", parts=[types.Part(text="SUMMARY3")]),
    )
    assert stored.index(first) == 4

    # A new process on the same database reads the summaries back.
    restarted = _runner(stores.open(), model, config)
    await _say(restarted, session.id, "msg6")
    assert _is_summary_request(model.requests[-1])  # its invocation made two new ones
    assert _texts(model.requests[-2]) == [
        ("model", "SUMMARY3"),
        ("model", "SUMMARY6"),
        ("user", "msg5"),
        ("model", "reply7"),
        ("user", "msg6"),
    ]


async def test_a_prompt_over_the_token_threshold_compacts_all_but_the_newest_events(
    stores: StoreFactory,
) -> None:
    # The third reply's prompt had 300 tokens: over 250, so the first four events are
    # summarized and the newest two (msg3, reply3) kept; the next summary replaces it.
    model = _chat_model(usage={1: 100, 2: 200, 3: 300, 5: 400})
    config = EventsCompactionConfig(token_threshold=250, event_retention_size=2)
    runner = _runner(stores.open(), model, config)
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    for n in range(1, 6):
        await _say(runner, session.id, f"msg{n}")

    requests = [_texts(r) for r in model.requests]
    assert requests[3][0][1].endswith(
        "\n\nuser: msg1\nassistant: reply1\nuser: msg2\nassistant: reply2"
    )
    assert requests[4] == [
        ("model", "SUMMARY4"),
        ("user", "msg3"),
        ("model", "reply3"),
        ("user", "msg4"),
    ]
    # The earlier summary heads the next window, so the new one covers everything before.
    assert requests[5][0][1].endswith("\n\nmodel: SUMMARY4\nuser: msg3\nassistant: reply3")
    assert requests[6] == [
        ("model", "SUMMARY6"),
        ("user", "msg4"),
        ("model", "reply5"),
        ("user", "msg5"),
    ]


async def test_the_compaction_event_has_the_references_wire_form() -> None:
    # An event as the reference's server writes it (camelCase), read and written back.
    compaction: dict[str, JsonValue] = {
        "startTimestamp": 1795638049.91,
        "endTimestamp": 1795638049.95,
        "compactedContent": {"parts": [{"text": "SUMMARY3"}], "role": "model"},
    }
    wire: dict[str, JsonValue] = {
        "invocationId": "0ff0e6f9",
        "author": "user",
        "id": "0b361d62",
        "timestamp": 1795638049.96,
        "actions": {
            "stateDelta": {},
            "artifactDelta": {},
            "requestedAuthConfigs": {},
            "requestedToolConfirmations": {},
            "compaction": compaction,
        },
    }
    event = Event.model_validate(wire)
    assert event.actions.compaction == EventCompaction(
        start_timestamp=1795638049.91,
        end_timestamp=1795638049.95,
        compacted_content=types.Content(role="model", parts=[types.Part(text="SUMMARY3")]),
    )
    assert event.to_wire()["actions"]["compaction"] == compaction
    assert Event.model_validate_json(event.model_dump_json()) == event
    with pytest.raises(ValidationError, match=r"finite with start <= end; got 5\.0 to 4\.0"):
        EventActions.model_validate(
            {"compaction": {"startTimestamp": 5, "endTimestamp": 4, "compactedContent": {}}}
        )


class _Failing(BaseEventsSummarizer):
    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        raise RuntimeError("the summarizer's model is down")


async def test_a_failing_summarizer_leaves_the_session_as_it_was(stores: StoreFactory) -> None:
    model = _chat_model()
    config = EventsCompactionConfig(summarizer=_Failing(), compaction_interval=1, overlap_size=0)
    runner = _runner(stores.open(), model, config)
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    await _say(runner, session.id, "msg1")
    await _say(runner, session.id, "msg2")
    assert [e.actions.compaction for e in await _events(stores.open(), session.id)] == [None] * 4
    assert _texts(model.requests[-1]) == [("user", "msg1"), ("model", "reply1"), ("user", "msg2")]


def test_bad_compaction_configs_are_refused_by_name() -> None:
    with pytest.raises(ValidationError, match="needs a trigger: compaction_interval with"):
        EventsCompactionConfig()
    with pytest.raises(ValidationError, match="compaction_interval and overlap_size go together"):
        EventsCompactionConfig(compaction_interval=2)
    with pytest.raises(ValidationError, match="token_threshold and event_retention_size go"):
        EventsCompactionConfig(event_retention_size=2, compaction_interval=1, overlap_size=0)
    with pytest.raises(ValidationError, match="compaction_interval"):
        EventsCompactionConfig(compaction_interval=0, overlap_size=0)
    with pytest.raises(ValidationError, match="summarizer must be a BaseEventsSummarizer"):
        EventsCompactionConfig(summarizer="gpt", compaction_interval=1, overlap_size=0)  # pyright: ignore[reportArgumentType] -- the wrong type is the point
    with pytest.raises(ValueError, match="has no \\{conversation_history\\} where"):
        LlmEventSummarizer(llm=ScriptedModel(), prompt_template="Summarize this.")
    with pytest.raises(ValueError, match="cannot be filled"):
        LlmEventSummarizer(llm=ScriptedModel(), prompt_template="{x} {conversation_history}")


def test_an_app_whose_compaction_has_no_model_to_summarize_with_is_refused() -> None:
    def step() -> str:
        return "done"

    flow = Workflow(name="flow", edges=[("START", step)])
    config = EventsCompactionConfig(compaction_interval=2, overlap_size=0)
    with pytest.raises(ValidationError, match="root agent 'flow' is a Workflow, not an LlmAgent"):
        App(name="app", root_agent=flow, events_compaction_config=config)
    summarizer = LlmEventSummarizer(llm=ScriptedModel())
    with_one = config.model_copy(update={"summarizer": summarizer})
    assert App(name="app", root_agent=flow, events_compaction_config=with_one)


def test_context_caching_is_refused_as_gemini_only() -> None:
    agent = LlmAgent(name="assistant", model=ScriptedModel())
    with pytest.raises(ValidationError, match="Gemini context caching, which baton's model"):
        App(name="app", root_agent=agent, context_cache_config={"ttl_seconds": 600})


def wait_for_job(what: str) -> None:
    """Start a job whose result the client sends later."""
    del what


async def test_a_run_paused_on_a_call_resumes_after_a_compaction_and_is_summarized_once_answered(
    stores: StoreFactory,
) -> None:
    def respond(request: LlmRequest) -> str | types.FunctionCall:
        if _is_summary_request(request):
            return f"SUMMARY{len(model.requests)}"
        if request.contents[-1].function_responses:
            return "done"
        if _texts(request)[-1] == ("user", "go"):
            return types.FunctionCall(id="c1", name="wait_for_job", args={"what": "x"})
        return "ok"

    model = ScriptedModel(responder=respond)
    agent = LlmAgent(name="assistant", model=model, tools=[LongRunningFunctionTool(wait_for_job)])
    config = EventsCompactionConfig(compaction_interval=1, overlap_size=0)
    app = App(name="app", root_agent=agent, events_compaction_config=config)
    runner = Runner(app=app, session_service=BaseSessionService(stores.open()))
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    await _say(runner, session.id, "go")
    # Paused on the call: only what precedes it is summarized (request 2).
    assert _texts(model.requests[1])[0][1].endswith("\n\nuser: go")
    answer = types.FunctionResponse(id="c1", name="wait_for_job", response={"result": "42"})
    message = types.Content(role="user", parts=[types.Part(function_response=answer)])
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        pass
    # The resumed run is shown its history as it stood when it started.
    assert [role for role, _ in _texts(model.requests[2])] == ["user", "model", "user"]
    assert _texts(model.requests[3])[0][1].endswith(
        "\n\nuser: go\nassistant called tool: wait_for_job({'what': 'x'})"
        "\nTool response from wait_for_job: {'result': '42'}\nassistant: done"
    )
    await _say(runner, session.id, "more")
    assert _texts(model.requests[4]) == [("model", "SUMMARY4"), ("user", "more")]


class _Raced(BaseEventsSummarizer):
    """Summarizes as the default does, but another runner of the same session says
    something while the summary is being written."""

    def __init__(self, other: Runner, session_id: str, summarizer: BaseEventsSummarizer) -> None:
        self.other, self.session_id, self.summarizer = other, session_id, summarizer
        self.calls = 0

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        self.calls += 1
        if self.calls == 1:
            await _say(self.other, self.session_id, "meanwhile")
        return await self.summarizer.maybe_summarize_events(events=events)


async def test_a_summary_of_a_session_another_runner_changed_meanwhile_is_dropped(
    stores: StoreFactory,
) -> None:
    model = _chat_model()
    plain = LlmAgent(name="assistant", model=model, instruction="Be brief.")
    other = Runner(
        app=App(name="app", root_agent=plain), session_service=BaseSessionService(stores.open())
    )
    session = await other.session_service.create_session(app_name="app", user_id="u")
    raced = _Raced(other, session.id, LlmEventSummarizer(llm=model))
    config = EventsCompactionConfig(summarizer=raced, compaction_interval=1, overlap_size=0)
    runner = _runner(stores.open(), model, config)

    await _say(runner, session.id, "msg1")
    stored = await _events(stores.open(), session.id)
    # The summary of msg1's invocation was written after "meanwhile" landed: dropped.
    assert [(e.author, e.actions.compaction) for e in stored] == [
        ("user", None),
        ("assistant", None),
        ("user", None),
        ("assistant", None),
    ]
    assert _is_summary_request(model.requests[-1])
    # The next invocation's end summarizes again, and that summary lands.
    await _say(runner, session.id, "msg2")
    stored = await _events(stores.open(), session.id)
    assert [e.actions.compaction is not None for e in stored] == [False] * 6 + [True]


class _Deleting(BaseEventsSummarizer):
    """Another client deletes the session while its summary is being written."""

    def __init__(self, service: BaseSessionService, summarizer: BaseEventsSummarizer) -> None:
        self.service, self.summarizer = service, summarizer

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        await self.service.delete_session(app_name="app", user_id="u", session_id=_SESSION)
        return await self.summarizer.maybe_summarize_events(events=events)


_SESSION = "deleted-meanwhile"


async def test_a_summary_of_a_session_deleted_meanwhile_is_dropped_and_the_run_ends_well(
    stores: StoreFactory,
) -> None:
    model = _chat_model()
    service = BaseSessionService(stores.open())
    summarizer = _Deleting(service, LlmEventSummarizer(llm=model))
    config = EventsCompactionConfig(summarizer=summarizer, compaction_interval=1, overlap_size=0)
    runner = _runner(stores.open(), model, config)
    await runner.session_service.create_session(app_name="app", user_id="u", session_id=_SESSION)

    message = types.Content(role="user", parts=[types.Part(text="msg1")])
    seen = [
        e.content.text if e.content else None
        async for e in runner.run_async(user_id="u", session_id=_SESSION, new_message=message)
    ]

    assert seen == ["reply1"]
    assert await service.get_session(app_name="app", user_id="u", session_id=_SESSION) is None


async def test_events_stored_out_of_timestamp_order_are_shown_in_stored_order_around_a_summary(
    stores: StoreFactory,
) -> None:
    model = _chat_model()
    config = EventsCompactionConfig(compaction_interval=100, overlap_size=0)
    runner = _runner(stores.open(), model, config)
    service = runner.session_service
    session = await service.create_session(app_name="app", user_id="u")

    def said(author: str, text: str, at: float) -> Event:
        role = "user" if author == "user" else "model"
        content = types.Content(role=role, parts=[types.Part(text=text)])
        return Event(author=author, invocation_id="i", timestamp=at, content=content)

    summary = EventCompaction(
        start_timestamp=100.0,
        end_timestamp=101.0,
        compacted_content=types.Content(role="model", parts=[types.Part(text="S")]),
    )
    for event in [
        said("user", "one", 100.0),
        said("assistant", "two", 101.0),
        Event(author="user", invocation_id="c", actions=EventActions(compaction=summary)),
        # Committed in this order, the first stamped later (its node made it earlier).
        said("user", "three", 300.0),
        said("assistant", "four", 200.0),
    ]:
        await service.append_event(session, event)

    await _say(runner, session.id, "five")

    assert _texts(model.requests[0]) == [
        ("model", "S"),
        ("user", "three"),
        ("model", "four"),
        ("user", "five"),
    ]
