"""Errors reference code catches by the built-in class the reference's subclass."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton import InMemorySessionService, Runner, Workflow, types
from baton.artifacts import BaseArtifactService
from baton.errors import (
    AlreadyExistsError,
    InputValidationError,
    NotFoundError,
    SessionNotFoundError,
)
from baton.server.refusals import status_of
from baton.sessions.services import SqliteSessionService


async def test_an_unknown_session_is_caught_as_a_value_error_and_is_still_a_404() -> None:
    def echo(node_input: str) -> str:
        return node_input

    service = InMemorySessionService()
    runner = Runner(
        app_name="x", agent=Workflow(name="wf", edges=[("START", echo)]), session_service=service
    )
    message = types.Content(role="user", parts=[types.Part(text="hi")])
    run = runner.run_async(user_id="u", session_id="nope", new_message=message)
    with pytest.raises(ValueError, match="nope") as caught:  # the reference's except clause
        await anext(run)
    assert isinstance(caught.value, SessionNotFoundError)
    assert isinstance(caught.value, LookupError)
    assert status_of(caught.value) == 404


async def test_the_reference_s_error_names_catch_what_it_raises_for_the_same_misuse(
    tmp_path: Path,
) -> None:
    """`AlreadyExistsError` (a second session with one id), `InvocationNotFoundError`
    (a `NotFoundError` and a `ValueError`: rewinding to an unknown invocation) and
    `InputValidationError` (an artifact saved without a session) are the reference's
    classes for these; code catching them keeps working with baton's."""
    service = SqliteSessionService(str(tmp_path / "errors.db"))
    runner = Runner(
        app_name="x",
        agent=Workflow(name="wf", edges=[("START", _echo)]),
        session_service=service,
        artifact_service=BaseArtifactService(service.store),
    )
    await service.create_session(app_name="x", user_id="u", session_id="s1")
    with pytest.raises(AlreadyExistsError, match="s1"):
        await service.create_session(app_name="x", user_id="u", session_id="s1")
    for caught in (NotFoundError, ValueError):
        with pytest.raises(caught, match="nope"):
            await runner.rewind_async(
                user_id="u", session_id="s1", rewind_before_invocation_id="nope"
            )
    assert runner.artifact_service is not None
    with pytest.raises(InputValidationError, match="notes.txt"):
        await runner.artifact_service.save_artifact(
            app_name="x", user_id="u", filename="notes.txt", artifact=types.Part(text="hi")
        )
    session = await service.get_session(app_name="x", user_id="u", session_id="s1")
    assert session is not None
    assert session.events == []
    assert await runner.artifact_service.list_artifact_keys(app_name="x", user_id="u") == []
    await runner.close()


def _echo(node_input: str) -> str:
    return node_input


async def test_resuming_an_invocation_the_session_does_not_have_is_refused_storing_nothing(
    tmp_path: Path,
) -> None:
    service = SqliteSessionService(str(tmp_path / "resume.db"))
    runner = Runner(
        app_name="x", agent=Workflow(name="wf", edges=[("START", _echo)]), session_service=service
    )
    await service.create_session(app_name="x", user_id="u", session_id="s1")
    run = runner.run_async(user_id="u", session_id="s1", invocation_id="nope")
    with pytest.raises(ValueError, match="nope") as caught:
        await anext(run)
    assert isinstance(caught.value, NotFoundError)
    session = await service.get_session(app_name="x", user_id="u", session_id="s1")
    assert session is not None
    assert session.events == []
    await runner.close()
