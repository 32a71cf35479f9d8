"""Ids and text are checked the same way on memory, SQLite and PostgreSQL, before any write.

PostgreSQL refuses NUL in text and ids over its column width; SQLite stores both.
The library refuses them up front on every backend, with the field and the rule.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import JsonValue

from baton import App, RequestInput, ResumabilityConfig, Runner, Workflow, types
from baton.errors import BatonError, InvalidIdError, InvalidMessageError
from baton.sessions.services import BaseSessionService
from baton.sessions.store import SessionKey
from baton.types import SessionId
from tests.conftest import StoreFactory
from tests.runner.test_guarantees import snapshot

LONG = "x" * 256
AT_LIMIT = "y" * 255


def nested(depth: int) -> JsonValue:
    """Lists inside each other, `depth` of them, a number at the bottom."""
    value: JsonValue = 1
    for _ in range(depth):
        value = [value]
    return value


def ask(node_input: JsonValue) -> RequestInput:
    # The question quotes the user's text: it lands in the interrupt index's text column.
    return RequestInput(interrupt_id="q", message=f"about {node_input}?")


def asking_app() -> App:
    return App(
        name="ids",
        root_agent=Workflow(name="ids_wf", edges=[("START", ask)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


def text(value: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=value)])


async def everything(service: BaseSessionService) -> list[dict[str, JsonValue]]:
    listed = (await service.list_sessions(app_name="ids")).sessions
    return [await snapshot(service, s.key) for s in listed]


@pytest.mark.parametrize(
    ("call", "error", "named"),
    [
        ({"session_id": "a\x00b"}, InvalidIdError, "session_id 'a\\x00b' holds the control"),
        ({"user_id": LONG}, InvalidIdError, "user_id 'xxx"),
        ({"session_id": "tab\there"}, InvalidIdError, "U+0009 at position 3"),
        ({"new_message": text("a\x00b")}, InvalidMessageError, "parts[0].text holds a NUL"),
        ({"invocation_id": LONG}, InvalidIdError, "invocation_id"),
        (
            {
                "new_message": types.Content(
                    role="user",
                    parts=[
                        types.Part(
                            function_response=types.FunctionResponse(
                                id="q\x00", name="adk_request_input", response={"result": 1}
                            )
                        )
                    ],
                )
            },
            InvalidIdError,
            "function_response.id",
        ),
        (
            {"state_delta": {"k": nested(100)}},
            InvalidMessageError,
            "state_delta nests JSON deeper than 100 levels",
        ),
    ],
)
async def test_run_async_refuses_bad_ids_and_text_on_every_backend(
    stores: StoreFactory, call: dict[str, Any], error: type[BatonError], named: str
) -> None:
    service = BaseSessionService(stores.open())
    runner = Runner(app=asking_app(), session_service=service)
    await service.create_session(app_name="ids", user_id="u", session_id="s")
    before = await everything(service)
    arguments: dict[str, Any] = {"user_id": "u", "session_id": "s", "new_message": text("hi")}
    arguments.update(call)
    with pytest.raises(error) as caught:
        _ = [event async for event in runner.run_async(**arguments)]
    assert named in str(caught.value)
    assert await everything(service) == before
    # Not vacuous: the same call with good values runs and asks its question.
    events = [
        e async for e in runner.run_async(user_id="u", session_id="s", new_message=text("hi"))
    ]
    assert events[-1].long_running_tool_ids == {"q"}


async def test_the_session_service_refuses_bad_ids_on_every_backend(
    stores: StoreFactory,
) -> None:
    service = BaseSessionService(stores.open())
    refused = [
        service.create_session(app_name="ids", user_id="u", session_id="a\x00b"),
        service.create_session(app_name="ids", user_id=LONG),
        service.get_session(app_name="ids", user_id="u", session_id="a\nb"),
        service.list_sessions(app_name="ids", user_id="u\x7f"),
        service.delete_session(app_name="ids", user_id="u", session_id=LONG),
        service.get_user_state(app_name="ids", user_id=LONG),
        service.get_user_state(app_name="i\x00ds", user_id="u"),
    ]
    for attempt in refused:
        with pytest.raises(InvalidIdError):
            await attempt
    assert await everything(service) == []
    made = await service.create_session(app_name="ids", user_id=AT_LIMIT, session_id=AT_LIMIT)
    assert made.key == SessionKey("ids", AT_LIMIT, SessionId(AT_LIMIT))
    found = await service.get_session(app_name="ids", user_id=AT_LIMIT, session_id=AT_LIMIT)
    assert found is not None
    assert found.id == AT_LIMIT


async def test_json_at_the_depth_limit_is_stored_and_read_back_on_every_backend(
    stores: StoreFactory,
) -> None:
    service = BaseSessionService(stores.open())
    with pytest.raises(InvalidMessageError, match="state nests JSON deeper than 100 levels"):
        await service.create_session(app_name="ids", user_id="u", state={"k": nested(100)})
    assert await everything(service) == []
    state: dict[str, JsonValue] = {"k": nested(99)}  # 100 levels with the state itself
    await service.create_session(app_name="ids", user_id="u", session_id="s", state=state)
    runner = Runner(app=asking_app(), session_service=service)
    _ = [
        e
        async for e in runner.run_async(
            user_id="u", session_id="s", new_message=text("hi"), state_delta={"j": nested(99)}
        )
    ]
    found = await service.get_session(app_name="ids", user_id="u", session_id="s")
    assert found is not None
    assert (found.state["k"], found.state["j"]) == (nested(99), nested(99))


async def drain(run: AsyncIterator[object]) -> None:
    async for _ in run:
        pass


@pytest.mark.parametrize(
    ("interrupt_id", "refusal"),
    [
        ("approve ", r"interrupt_id 'approve ' starts or ends with a space"),
        ("ap\tprove", r"interrupt_id 'ap\\tprove' holds the control character U\+0009"),
        ("a" * 256, r"interrupt_id 'a{40}'\.\.\. is 256 characters long"),
    ],
    ids=["padded", "tab", "too long"],
)
async def test_a_question_whose_id_no_answer_may_carry_is_refused_on_every_backend(
    stores: StoreFactory, interrupt_id: str, refusal: str
) -> None:
    """A question's id obeys the rules an answer's id does (`check_id`), or its node
    fails, naming the id, and no question is left open waiting for good."""

    def ask(node_input: JsonValue) -> RequestInput:
        del node_input
        return RequestInput(interrupt_id=interrupt_id, message="ok?")

    app = App(
        name="ids",
        root_agent=Workflow(name="ids_wf", edges=[("START", ask)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )
    service = BaseSessionService(stores.open())
    runner = Runner(app=app, session_service=service)
    await service.create_session(app_name="ids", user_id="u", session_id="s")

    run = runner.run_async(user_id="u", session_id="s", new_message=text("go"))
    with pytest.raises(ValueError, match=refusal):
        await drain(run)

    assert await runner.pending(user_id="u", status=None) == []
