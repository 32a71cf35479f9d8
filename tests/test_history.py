"""A run's history reads the same on the web and in the terminal: one shape, from Python."""

from __future__ import annotations

import io
from typing import cast

from fastapi.openapi.models import APIKey, APIKeyIn
from pydantic import JsonValue
from rich.console import Console

from baton import FunctionTool, InMemoryRunner, LlmAgent, LongRunningFunctionTool
from baton.auth import AuthCredential, AuthCredentialTypes
from baton.auth.auth_tool import AuthConfig
from baton.auth.credential_asking import MASK
from baton.events import REQUEST_CREDENTIAL_FUNCTION, Event, EventActions
from baton.history import EntryKind, describe_event
from baton.models import ScriptedModel
from baton.reports import timeline_tables
from baton.server.timeline import build_timeline
from baton.sessions.store import SessionKey
from baton.terminal import format_event
from baton.tools import ToolContext
from baton.types import Content, FunctionCall, FunctionResponse, Part, SessionId


def lookup(order_id: str) -> dict[str, float]:
    """The order's total."""
    return {"total": 20.0}


def issue_refund(order_id: str, amount: float) -> dict[str, str]:
    """Refund an order; a person approves it first."""
    return {"status": "waiting for approval"}


def refund_agent() -> LlmAgent:
    model = ScriptedModel(
        responses=[
            FunctionCall(id="c1", name="lookup", args={"order_id": "7"}),
            FunctionCall(id="c2", name="issue_refund", args={"order_id": "7", "amount": 20.0}),
            "Your refund waits for approval.",
            "The refund is done.",
        ]
    )
    tools = [FunctionTool(func=lookup), LongRunningFunctionTool(func=issue_refund)]
    return LlmAgent(name="refunds", model=model, tools=tools)


async def test_an_llm_runs_history_names_calls_results_questions_and_answers() -> None:
    runner = InMemoryRunner(agent=refund_agent(), app_name="refunds")
    session = await runner.session_service.create_session(app_name="refunds", user_id="ann")
    start = Content(role="user", parts=[Part(text="refund order 7")])
    live = [
        e async for e in runner.run_async(user_id="ann", session_id=session.id, new_message=start)
    ]
    answer = FunctionResponse(id="c2", name="issue_refund", response={"result": {"approved": True}})
    message = Content(role="user", parts=[Part(function_response=answer)])
    live += [
        e
        async for e in runner.run_async(
            user_id="ann", session_id=session.id, new_message=message, answered_by="boss"
        )
    ]
    key = SessionKey("refunds", "ann", SessionId(session.id))
    stored = await runner.store.get_session(key)
    assert stored is not None
    rows = await runner.store.list_interrupts("refunds", "ann", status=None)
    timeline = build_timeline(stored, await runner.store.list_invocations(key), rows)

    seen = [(e.kind, e.summary, e.by) for e in timeline.entries]
    assert seen == [
        (EntryKind.MESSAGE, "refund order 7", None),
        (EntryKind.CALLED, 'calls lookup(order_id="7")', None),
        (EntryKind.RESULT, 'lookup returned {"total":20.0}', None),
        (EntryKind.ASKED, 'asks [c2]: may issue_refund(order_id="7", amount=20.0) go ahead?', None),
        (EntryKind.RESULT, 'issue_refund returned {"status":"waiting for approval"}', None),
        (EntryKind.MESSAGE, "Your refund waits for approval.", None),  # the interim reply
        (EntryKind.ANSWERED, 'answered [c2]: {"approved":true}', "boss"),
        (EntryKind.MESSAGE, "The refund is done.", None),  # said once, not again as output
    ]
    asked = next(e for e in timeline.entries if e.kind is EntryKind.ASKED)
    assert asked.detail == {
        "interruptId": "c2",
        "tool": "issue_refund",
        "args": {"order_id": "7", "amount": 20.0},
    }
    answered = next(e for e in timeline.entries if e.kind is EntryKind.ANSWERED)
    assert answered.detail == {"interruptId": "c2", "answer": {"approved": True}}
    assert all(e.detail is not None for e in timeline.entries)

    # The terminal prints the same summaries: live as the run goes, and in `baton inspect`.
    lines = [str(line) for e in live if (line := format_event(e)) is not None]
    printed = "\n".join(lines)
    for entry in timeline.entries:
        if entry.node != "user":  # the user's own message and answer are not echoed live
            assert entry.summary in printed
    out = io.StringIO()
    console = Console(file=out, width=400, color_system=None)
    for table in timeline_tables(timeline):
        console.print(table)
    for entry in timeline.entries:
        assert entry.summary in out.getvalue()


async def test_a_credential_answer_is_masked_wherever_the_history_shows_it() -> None:
    """The user's API key never shows in a session's timeline (the web's), its tables
    (`baton inspect`) or the terminal's live lines: only that it was answered."""
    config = AuthConfig(
        auth_scheme=APIKey.model_validate({"in": APIKeyIn.header, "name": "X-Key"}),
        raw_auth_credential=AuthCredential(auth_type=AuthCredentialTypes.API_KEY),
    )

    def fetch(tool_context: ToolContext) -> dict[str, bool]:
        """Fetch the user's data."""
        if tool_context.get_auth_response(config) is None:
            tool_context.request_credential(config)
            return {"pending": True}
        return {"ok": True}

    model = ScriptedModel(responses=[FunctionCall(id="c1", name="fetch", args={}), "done"])
    agent = LlmAgent(name="a", model=model, tools=[FunctionTool(func=fetch)])
    runner = InMemoryRunner(agent=agent, app_name="keys")
    session = await runner.session_service.create_session(app_name="keys", user_id="ann")
    start = Content(role="user", parts=[Part(text="fetch")])
    live = [
        e async for e in runner.run_async(user_id="ann", session_id=session.id, new_message=start)
    ]
    [request] = [c for e in live for c in e.function_calls if c.name == REQUEST_CREDENTIAL_FUNCTION]
    asked_config = cast(dict[str, JsonValue], (request.args or {})["authConfig"])
    given: dict[str, JsonValue] = {
        **asked_config,
        "exchangedAuthCredential": {"authType": "apiKey", "apiKey": "SECRET-KEY-42"},
    }
    answer = FunctionResponse(id=request.id, name=REQUEST_CREDENTIAL_FUNCTION, response=given)
    message = Content(role="user", parts=[Part(function_response=answer)])
    live += [
        e async for e in runner.run_async(user_id="ann", session_id=session.id, new_message=message)
    ]
    key = SessionKey("keys", "ann", SessionId(session.id))
    stored = await runner.store.get_session(key)
    assert stored is not None
    rows = await runner.store.list_interrupts("keys", "ann", status=None)
    timeline = build_timeline(stored, await runner.store.list_invocations(key), rows)

    [answered] = [e for e in timeline.entries if e.kind is EntryKind.ANSWERED]
    assert answered.detail == {
        "interruptId": request.id,
        "answer": {**given, "exchangedAuthCredential": {"authType": "apiKey", "apiKey": MASK}},
    }
    shown = timeline.model_dump_json()
    out = io.StringIO()
    console = Console(file=out, width=400, color_system=None)
    for table in timeline_tables(timeline):
        console.print(table)
    lines = [str(line) for e in live if (line := format_event(e)) is not None]
    for where in (shown, out.getvalue(), "\n".join(lines)):
        assert "SECRET-KEY-42" not in where


def test_a_credential_kept_in_the_state_is_masked_in_the_history() -> None:
    kept: JsonValue = {"authType": "oauth2", "oauth2": {"clientId": "c", "accessToken": "AT-9"}}
    event = Event(author="keep", actions=EventActions(state_delta={"cred": kept, "n": 1}))

    [entry] = describe_event(event)

    assert entry.kind is EntryKind.STATE
    assert entry.detail == {
        "cred": {"authType": "oauth2", "oauth2": {"clientId": "c", "accessToken": MASK}},
        "n": 1,
    }
    assert "AT-9" not in entry.summary
