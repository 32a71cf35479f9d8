"""Errors reference code catches by the built-in class the reference's subclass."""

from __future__ import annotations

import pytest

from baton import InMemorySessionService, Runner, Workflow, types
from baton.errors import SessionNotFoundError
from baton.server.refusals import status_of


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
