"""RequestInput(assignee=): a question for another person, on every backend.

Ann's run asks her manager Bob: the question is listed for Bob (and still for Ann, who
sees whom it waits on), only an answer given as Bob is accepted, and a refused answer
changes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from baton import LlmAgent, LongRunningFunctionTool, RequestInput, Runner, Workflow
from baton.errors import NotAssigneeError
from baton.models import ScriptedModel
from baton.sessions.store import InterruptStatus
from baton.types import Content, FunctionCall, FunctionResponse, Part
from tests.harness import MakeHarness


class Decision(BaseModel):
    approved: bool


def ask_manager(node_input: Any) -> RequestInput:
    return RequestInput(
        interrupt_id="approve",
        message="Refund 40 EUR?",
        response_schema=Decision,
        assignee="bob",
    )


def done(node_input: Any) -> str:
    return f"approved={node_input['approved']}"


async def _answer(runner: Runner, user: str, session: str, **kwargs: Any) -> list[Any]:
    events = runner.answer(user_id=user, session_id=session, **kwargs)
    return [e async for e in events]


async def test_only_the_assignee_answers_and_both_see_the_question(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(Workflow(name="wf", edges=[("START", ask_manager, done)]))
    await h.start("go")
    runner = h.runner
    [row] = await runner.pending(user_id=h.user_id)
    assert (row.interrupt_id, row.assignee, row.user_id) == ("approve", "bob", h.user_id)
    # Bob's listing: by assignee, and his inbox (his sessions and what is assigned to him).
    assert [r.interrupt_id for r in await runner.pending(assignee="bob")] == ["approve"]
    assert await runner.pending(user_id="bob") == []
    inbox = await runner.pending(user_id="bob", include_assigned=True)
    assert [(r.user_id, r.interrupt_id) for r in inbox] == [(h.user_id, "approve")]
    assert await runner.pending(assignee="carol") == []
    assert await runner.pending(user_id="carol", include_assigned=True) == []

    # Ann (the default answerer), Carol, and a caller naming nobody are refused.
    for who in (None, "carol", h.user_id):
        with pytest.raises(NotAssigneeError, match="assigned to 'bob'") as refused:
            await _answer(
                runner,
                h.user_id,
                h.session_id,
                answers={"approve": {"approved": True}},
                answered_by=who,
            )
        assert f"as '{who or h.user_id}'" in str(refused.value)
    message = Content(
        role="user",
        parts=[
            Part(
                function_response=FunctionResponse(
                    id="approve", name="adk_request_input", response={"approved": True}
                )
            )
        ],
    )
    with pytest.raises(NotAssigneeError, match="without answered_by"):
        await h.collect(new_message=message)
    # Nothing changed: still open, still paused, no answer recorded.
    assert [r.status for r in await runner.pending(assignee="bob")] == [InterruptStatus.OPEN]
    [run] = await runner.invocations(user_id=h.user_id, session_id=h.session_id)
    assert run.status.value == "paused"

    events = await _answer(
        runner,
        h.user_id,
        h.session_id,
        answers={"approve": {"approved": True}},
        answered_by="bob",
    )
    assert events[-1].output == "approved=True"
    [answered] = await runner.pending(assignee="bob", status=InterruptStatus.ANSWERED)
    assert (answered.answered_by, answered.answer) == ("bob", {"approved": True})
    assert await runner.pending(user_id="bob", include_assigned=True) == []


@pytest.mark.parametrize(
    "assignee", ["", "a:b", "tab\there", "x" * 256, 7, ["bob", "carol"]], ids=repr
)
def test_assignee_must_be_a_user_id(assignee: object) -> None:
    with pytest.raises(ValidationError, match="assignee must be a user id") as refused:
        RequestInput(message="?", assignee=assignee)  # pyright: ignore[reportArgumentType] -- a bad value on purpose
    assert repr(assignee)[:40] in str(refused.value)


def test_assignee_travels_with_the_function_call() -> None:
    call = RequestInput(interrupt_id="q", message="?", assignee="bob").to_function_call()
    assert call.args is not None
    assert call.args["assignee"] == "bob"
    plain = RequestInput(interrupt_id="q", message="?").to_function_call()
    assert plain.args is not None
    assert "assignee" not in plain.args


async def test_a_long_running_tool_can_wait_on_another_person(
    make_harness: MakeHarness,
) -> None:
    def refund(amount: int) -> None:
        """Ask the manager to approve a refund."""

    model = ScriptedModel(
        responses=[FunctionCall(id="r1", name="refund", args={"amount": 40}), "refunded"]
    )
    tool = LongRunningFunctionTool(refund, response_schema=Decision, assignee="bob")
    h = await make_harness(LlmAgent(name="agent", model=model, tools=[tool]))
    await h.start("refund please")
    [row] = await h.runner.pending(assignee="bob")
    assert (row.interrupt_id, row.function_name, row.assignee) == ("r1", "refund", "bob")
    with pytest.raises(NotAssigneeError, match="assigned to 'bob'"):
        await _answer(h.runner, h.user_id, h.session_id, answers={"r1": {"approved": True}})
    events = await _answer(
        h.runner,
        h.user_id,
        h.session_id,
        answers={"r1": {"approved": True}},
        answered_by="bob",
    )
    parts: list[Part] = [p for e in events if e.content for p in e.content.parts or list[Part]()]
    texts = [p.text for p in parts if p.text]
    assert texts == ["refunded"]
    [answered] = await h.runner.pending(assignee="bob", status=InterruptStatus.ANSWERED)
    assert (answered.answered_by, answered.answer) == ("bob", {"approved": True})
    with pytest.raises(ValueError, match="assignee must be a user id"):
        LongRunningFunctionTool(refund, assignee="a:b")
