"""The event a failed node run leaves, as the reference writes it: its `error_code`
and who signs it (google-adk 2.13.0 probed for each case)."""

from __future__ import annotations

import pytest

from baton import Event, LlmAgent, Workflow, types
from baton.models import LlmRequest, ScriptedModel
from tests.harness import MakeHarness


class PermissionDenied(Exception):
    """An API error that carries its canonical status, as google-genai's errors do."""

    status = "PERMISSION_DENIED"


class HttpFailure(Exception):
    """An error whose `.status` is a number (aiohttp's is): not an error code."""

    status = 403


async def failure_events(make_harness: MakeHarness, root: Workflow) -> list[Event]:
    h = await make_harness(root)
    with pytest.raises((PermissionDenied, HttpFailure)):
        await h.start("go")
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    return [e for e in session.events if e.error_code]


async def test_an_errors_string_status_is_its_error_code(make_harness: MakeHarness) -> None:
    def denied(node_input: str) -> str:
        raise PermissionDenied("no access to the ledger")

    def refused(node_input: str) -> str:
        raise HttpFailure("403 from the ledger")

    failed = await failure_events(make_harness, Workflow(name="wf", edges=[("START", denied)]))
    assert [(e.error_code, e.error_message) for e in failed] == [
        ("PERMISSION_DENIED", "no access to the ledger")
    ]
    failed = await failure_events(make_harness, Workflow(name="wf", edges=[("START", refused)]))
    assert [e.error_code for e in failed] == ["HttpFailure"]  # a number: the class's name


async def test_an_agents_failure_carries_the_status_of_its_tools_error(
    make_harness: MakeHarness,
) -> None:
    def ledger() -> str:
        """Read the ledger."""
        raise PermissionDenied("no access to the ledger")

    model = ScriptedModel(responses=[types.FunctionCall(id="c1", name="ledger", args={})])
    agent = LlmAgent(name="helper", model=model, tools=[ledger])

    failed = await failure_events(make_harness, Workflow(name="wf", edges=[("START", agent)]))

    assert [e.error_code for e in failed] == ["PERMISSION_DENIED"]


async def test_an_agents_failure_is_signed_by_the_author_of_its_last_event(
    make_harness: MakeHarness,
) -> None:
    # google-adk 2.13.0: an agent node that fails before it said anything leaves an event
    # signed by its workflow; once it has spoken, by the author of its last event.
    def refuse(request: LlmRequest) -> str:
        raise PermissionDenied("the model is not allowed")

    silent = LlmAgent(name="helper", model=ScriptedModel(responder=refuse))
    failed = await failure_events(make_harness, Workflow(name="wf", edges=[("START", silent)]))
    assert [(e.author, e.node_info and e.node_info.path) for e in failed] == [
        ("wf", "wf@1/helper@1")
    ]

    def ledger() -> str:
        """Read the ledger."""
        raise PermissionDenied("no access to the ledger")

    model = ScriptedModel(responses=[types.FunctionCall(id="c1", name="ledger", args={})])
    spoken = LlmAgent(name="helper", model=model, tools=[ledger])
    failed = await failure_events(make_harness, Workflow(name="wf", edges=[("START", spoken)]))
    assert [(e.author, e.node_info and e.node_info.path) for e in failed] == [
        ("helper", "wf@1/helper@1")
    ]
