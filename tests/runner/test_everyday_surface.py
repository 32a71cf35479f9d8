"""The everyday surface the reference's users write, as they write it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import JsonValue, ValidationError

from baton import (
    App,
    Context,
    Event,
    InMemoryRunner,
    RequestInput,
    RetryConfig,
    Runner,
    Workflow,
    node,
    types,
)
from baton.errors import UnknownInterruptError
from baton.events import NodeInfo
from baton.history import acting_node
from baton.sessions import State
from baton.sessions.services import InMemorySessionService, SqliteSessionService


def ask(ctx: Context) -> RequestInput:
    return RequestInput(interrupt_id="q", message="ok?")


def done(node_input: str) -> str:
    return f"done {node_input}"


def _text(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def _answer(iid: str, value: JsonValue) -> types.Content:
    response = types.FunctionResponse(id=iid, name="adk_request_input", response={"result": value})
    return types.Content(role="user", parts=[types.Part(function_response=response)])


def test_sync_run_and_sync_session_methods_drive_a_pause_and_an_answer() -> None:
    runner = InMemoryRunner(node=Workflow(name="wf", edges=[("START", ask, done)]))
    assert runner.app_name == "InMemoryRunner"
    sessions = runner.session_service
    session = sessions.create_session_sync(app_name=runner.app_name, user_id="u", state={"k": 1})
    first = list(runner.run(user_id="u", session_id=session.id, new_message=_text("hi")))
    assert [e.long_running_tool_ids for e in first] == [{"q"}]
    second = list(runner.run(user_id="u", session_id=session.id, new_message=_answer("q", "yes")))
    assert [(acting_node(e), e.output) for e in second] == [("ask", "yes"), ("done", "done yes")]

    stored = sessions.get_session_sync(app_name=runner.app_name, user_id="u", session_id=session.id)
    assert stored is not None
    assert stored.state == {"k": 1}
    assert len(sessions.list_sessions_sync(app_name=runner.app_name).sessions) == 1
    sessions.delete_session_sync(app_name=runner.app_name, user_id="u", session_id=session.id)
    assert (
        sessions.get_session_sync(app_name="InMemoryRunner", user_id="u", session_id=session.id)
        is None
    )


async def test_sync_run_on_sqlite_keeps_its_loop_across_calls_and_raises_refusals(
    tmp_path: Path,
) -> None:
    service = SqliteSessionService(str(tmp_path / "s.db"))
    app = App(name="app", root_agent=Workflow(name="wf", edges=[("START", ask, done)]))
    runner = Runner(app=app, session_service=service)
    created = await service.create_session(app_name="app", user_id="u")
    list(runner.run(user_id="u", session_id=created.id, new_message=_text("hi")))
    with pytest.raises(ValueError, match="not open"):  # an unknown id is a ValueError too
        list(runner.run(user_id="u", session_id=created.id, new_message=_answer("nope", 1)))
    events = list(runner.run(user_id="u", session_id=created.id, new_message=_answer("q", "ok")))
    assert events[-1].output == "done ok"
    await runner.close()


async def test_an_unknown_function_response_id_is_a_value_error() -> None:
    runner = InMemoryRunner(agent=Workflow(name="wf", edges=[("START", ask, done)]), app_name="a")
    session = await runner.session_service.create_session(app_name="a", user_id="u")
    _ = [
        e
        async for e in runner.run_async(user_id="u", session_id=session.id, new_message=_text("x"))
    ]
    answering = runner.run_async(user_id="u", session_id=session.id, new_message=_answer("z", 1))
    with pytest.raises(ValueError, match="'z'") as raised:
        await anext(answering)
    assert isinstance(raised.value, UnknownInterruptError)


async def test_a_workflow_waiting_for_output_triggers_its_successor_only_once_it_has_one() -> None:
    def a() -> str:
        return "a"

    def b() -> str:
        return "b"

    def keep_b(node_input: str) -> str | None:
        return f"kept {node_input}" if node_input == "b" else None

    after_inputs: list[object] = []

    def after(node_input: object) -> None:
        after_inputs.append(node_input)

    gather = Workflow(name="gather", edges=[("START", keep_b)], wait_for_output=True)
    runner = InMemoryRunner(node=Workflow(name="wf", edges=[("START", (a, b), gather, after)]))
    session = runner.session_service.create_session_sync(app_name=runner.app_name, user_id="u")
    list(runner.run(user_id="u", session_id=session.id, new_message=_text("go")))
    assert after_inputs == ["kept b"]


def test_retry_config_keeps_what_was_given_and_dumps_as_the_reference() -> None:
    assert RetryConfig().model_dump() == {
        "max_attempts": None,
        "initial_delay": None,
        "max_delay": None,
        "backoff_factor": None,
        "jitter": None,
        "exceptions": None,
    }
    config = RetryConfig(initial_delay=0.5, exceptions=[ValueError])
    assert config.model_dump(exclude_none=True) == {
        "initial_delay": 0.5,
        "exceptions": ["ValueError"],
    }
    config.max_attempts = 3  # a plain pydantic model, as the reference's
    assert RetryConfig.model_validate(config.model_dump()) == config
    assert config.should_retry(ValueError(), 2)
    assert not config.should_retry(ValueError(), 3)
    assert not config.should_retry(KeyError(), 1)


def test_retry_config_checks_what_is_assigned_as_what_is_given() -> None:
    config = RetryConfig()
    # Kept by name, as given to the constructor (the field reads back as names only).
    config.exceptions = [ConnectionError]  # pyright: ignore[reportAttributeAccessIssue]

    assert config.exceptions == ["ConnectionError"]
    assert config.should_retry(ConnectionRefusedError(), 1)
    with pytest.raises(ValidationError, match="max_attempts"):
        config.max_attempts = -1
    with pytest.raises(ValidationError, match="exceptions"):
        config.exceptions = [42]  # pyright: ignore[reportAttributeAccessIssue] -- bad on purpose
    assert config.model_dump(exclude_none=True) == {"exceptions": ["ConnectionError"]}


async def test_retry_config_takes_exception_classes_in_a_list_and_none_for_defaults() -> None:
    calls: list[int] = []

    @node(retry_config=RetryConfig(exceptions=[ConnectionError], initial_delay=0, jitter=None))
    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionRefusedError("down")  # a subclass of the listed class
        return "up"

    config = RetryConfig(max_attempts=None, exceptions=[ConnectionError, "TimeoutError"])
    assert config.max_attempts is None  # 5 when retrying, as in the reference
    assert config.exceptions == ["ConnectionError", "TimeoutError"]
    assert not RetryConfig(max_attempts=1).should_retry(ValueError(), 1)
    runner = InMemoryRunner(node=Workflow(name="wf", edges=[("START", flaky)]))
    session = runner.session_service.create_session_sync(app_name=runner.app_name, user_id="u")
    events = list(runner.run(user_id="u", session_id=session.id, new_message=_text("go")))
    assert [e.error_code for e in events] == [
        "ConnectionRefusedError",
        "ConnectionRefusedError",
        None,
    ]
    assert events[-1].output == "up"
    assert events[-1].node_info is not None
    assert events[-1].node_info.name == "flaky"


def test_node_info_names_and_event_fields_set() -> None:
    info = NodeInfo(path="outer@1/inner@2/ask@3")
    assert (info.name, info.parent_run_id) == ("ask", "2")
    assert NodeInfo(path="wf@1").parent_run_id is None
    # As the reference's: the fields given, and the id (it assigns one after construction).
    assert Event(author="x", output=1).model_fields_set == {"id", "author", "output"}
    assert Event(message="hi", state={"k": 1}).model_fields_set == {"id", "content", "actions"}
    assert Event().model_fields_set == {"id"}
    assert Event(id="e1").id == "e1"
    kept = Event(author="x").model_dump(exclude_unset=True)
    assert Event.model_validate(kept).id == kept["id"]


def test_in_memory_runner_takes_an_app_or_an_agent() -> None:
    wf = Workflow(name="wf", edges=[("START", done)])
    assert InMemoryRunner(app=App(name="mine", root_agent=wf)).app_name == "mine"
    assert InMemoryRunner(wf).app_name == "InMemoryRunner"
    assert isinstance(InMemoryRunner(wf).session_service, InMemorySessionService)


async def test_a_node_s_event_message_is_a_user_content_as_in_the_reference() -> None:
    async def speak(node_input: object) -> AsyncIterator[Event]:
        yield Event(message="hi")
        later = Event()
        later.message = "set"
        yield later
        yield Event(message=["a", types.Part(text="b")])
        yield Event(message=types.Part(function_call=types.FunctionCall(name="f", args={})))

    runner = InMemoryRunner(node=Workflow(name="wf", edges=[("START", speak)]))
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
    events = [
        e
        async for e in runner.run_async(user_id="u", session_id=session.id, new_message=_text("go"))
    ]

    assert [(e.author, e.content.role, e.content.text) for e in events if e.content] == [
        ("wf", "user", "hi"),
        ("wf", "user", "set"),
        ("wf", "user", "ab"),
        ("wf", "model", ""),
    ]
    with pytest.raises(ValueError, match="message= or content=, not both"):
        Event(message="hi", content=_text("there"))


def test_state_takes_the_reference_s_value_and_delta() -> None:
    value: dict[str, JsonValue] = {"a": 1, "b": 1}
    delta: dict[str, JsonValue] = {"b": 2}
    state = State(value, delta)
    assert (state["a"], state["b"], state.has_delta()) == (1, 2, True)

    state["c"] = 3

    assert delta == {"b": 2, "c": 3}  # the caller's delta receives the writes, as there
    assert state.to_dict() == {"a": 1, "b": 2, "c": 3}
    assert not State({"a": 1}, {}).has_delta()


async def test_flush_on_every_session_service_keeps_what_was_appended(tmp_path: Path) -> None:
    for sessions in (
        InMemorySessionService(),
        SqliteSessionService(str(tmp_path / "s.db")),
    ):
        session = await sessions.create_session(app_name="app", user_id="u")
        await sessions.append_event(session, Event(author="user", message="hi"))

        await sessions.flush()

        stored = await sessions.get_session(app_name="app", user_id="u", session_id=session.id)
        assert stored is not None
        assert [e.content.text for e in stored.events if e.content] == ["hi"]
        await sessions.close()
