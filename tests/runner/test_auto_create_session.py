"""`Runner(auto_create_session=True)`: a call naming a session that does not exist creates
it for a run it starts, and a refused call creates nothing (every backend)."""

from __future__ import annotations

import pytest

from baton import App, ResumabilityConfig, Runner
from baton.agents import LlmAgent, MissingStateKeyError
from baton.errors import InvocationNotFoundError, UnknownInterruptError
from baton.models import ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.store import SessionKey
from baton.types import Content, FunctionResponse, Part, SessionId
from tests.conftest import StoreFactory

KEY = SessionKey("app", "u", SessionId("new"))
HI = Content(role="user", parts=[Part(text="hi")])


def creating_runner(stores: StoreFactory, instruction: str) -> Runner:
    agent = LlmAgent(name="a", model=ScriptedModel(responses=["hello"]), instruction=instruction)
    return Runner(
        app=App(
            name="app", root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True)
        ),
        session_service=BaseSessionService(stores.open()),
        auto_create_session=True,
    )


async def test_a_new_run_refused_for_its_instruction_leaves_no_session_behind(
    stores: StoreFactory,
) -> None:
    runner = creating_runner(stores, "About {topic}.")

    run = runner.run_async(user_id="u", session_id="new", new_message=HI)
    with pytest.raises(MissingStateKeyError, match=r"\{topic\}"):
        await anext(run)

    assert await runner.store.get_session(KEY) is None
    assert (await runner.store.list_sessions("app", "u")) == []


@pytest.mark.parametrize("call", ["answer", "continue"])
async def test_an_answer_or_a_continue_naming_no_session_is_refused_without_creating_it(
    stores: StoreFactory, call: str
) -> None:
    """Answers and continues need a run the new session cannot have: refused as they are
    in an empty session, and the session is not created."""
    runner = creating_runner(stores, "Hi.")
    answer = FunctionResponse(id="ask-1", name="ask", response={"ok": True})
    if call == "answer":
        message = Content(role="user", parts=[Part(function_response=answer)])
        run = runner.run_async(user_id="u", session_id="new", new_message=message)
    else:
        run = runner.run_async(user_id="u", session_id="new", invocation_id="e-1")
    error = UnknownInterruptError if call == "answer" else InvocationNotFoundError

    with pytest.raises(error):
        await anext(run)

    assert await runner.store.get_session(KEY) is None


async def test_a_new_run_creates_its_session_and_fills_its_instruction_from_the_users_state(
    stores: StoreFactory,
) -> None:
    """The created session reads the user's and the app's shared keys, as any of theirs:
    the instruction naming them is filled, not refused."""
    runner = creating_runner(stores, "Hello {user:name} of {app:team}.")
    await runner.session_service.create_session(
        app_name="app", user_id="u", state={"user:name": "Ann", "app:team": "T"}
    )

    replies = [
        e.content.text
        async for e in runner.run_async(user_id="u", session_id="new", new_message=HI)
        if e.content is not None
    ]

    created = await runner.store.get_session(KEY)
    assert created is not None
    assert replies[-1] == "hello"
    assert [e.content.text for e in created.events if e.content] == ["hi", "hello"]
