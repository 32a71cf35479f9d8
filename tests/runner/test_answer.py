"""Runner.answer, the one door for answers, and Runner.pending, on every backend."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from baton import RequestInput, Workflow
from baton.errors import InvalidMessageError, InvalidResponseError, UnknownInterruptError
from baton.events import REQUEST_INPUT_FUNCTION
from baton.sessions.store import InterruptStatus
from baton.types import Content, FunctionResponse, Part
from tests.harness import MakeHarness


class Decision(BaseModel):
    approved: bool


def ask(node_input: Any) -> RequestInput:
    return RequestInput(interrupt_id="ok", message="OK?", response_schema=Decision)


def done(node_input: Any) -> str:
    return f"approved={node_input['approved']}"


async def test_answer_by_id_resumes_and_records_who(make_harness: MakeHarness) -> None:
    h = await make_harness(Workflow(name="wf", edges=[("START", ask, done)]))
    await h.start("go")
    runner = h.runner
    [row] = await runner.pending(user_id=h.user_id, session_id=h.session_id)
    assert (row.interrupt_id, row.message) == ("ok", "OK?")

    async def answer(answers: dict[str, Any]) -> list[Any]:
        events = runner.answer(
            user_id=h.user_id, session_id=h.session_id, answers=answers, answered_by="boss"
        )
        return [e async for e in events]

    # Refused before anything changes: no answer, an unknown id, a value off the schema.
    with pytest.raises(InvalidMessageError, match="at least one question"):
        await answer({})
    with pytest.raises(UnknownInterruptError):
        await answer({"nope": True})
    with pytest.raises(InvalidResponseError, match="'approved' is a required property"):
        await answer({"ok": {}})
    assert [r.interrupt_id for r in await runner.pending(user_id=h.user_id)] == ["ok"]

    events = await answer({"ok": {"approved": True}})
    assert events[-1].output == "approved=True"
    assert await runner.pending(user_id=h.user_id) == []
    [answered] = await runner.pending(user_id=h.user_id, status=InterruptStatus.ANSWERED)
    assert (answered.answer, answered.answered_by) == ({"approved": True}, "boss")
    runs = await runner.invocations(user_id=h.user_id, session_id=h.session_id)
    assert [r.status.value for r in runs] == ["completed"]


async def test_an_answer_without_a_function_name_is_named_after_its_question(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(Workflow(name="wf", edges=[("START", ask, done)]))
    await h.start("go")
    response = FunctionResponse(id="ok", response={"result": {"approved": True}})
    message = Content(role="user", parts=[Part(function_response=response)])

    events = [
        e
        async for e in h.runner.run_async(
            user_id=h.user_id,
            session_id=h.session_id,
            new_message=message,
            yield_user_message=True,
        )
    ]

    [sent] = events[0].content.function_responses if events[0].content else []
    assert (sent.id, sent.name) == ("ok", REQUEST_INPUT_FUNCTION)
    assert response.name is None  # the caller's message is left as it was
    assert events[-1].output == "approved=True"


class Amount(BaseModel):
    amount: int


def ask_amount(node_input: Any) -> RequestInput:
    return RequestInput(interrupt_id="ok", message="How much?", response_schema=Amount)


async def test_an_answer_is_checked_against_the_schema_its_question_has_now(
    make_harness: MakeHarness,
) -> None:
    # The same question id asks for a Decision, then (a new version of the workflow) for
    # an Amount: an answer that fitted the first schema is refused by the second.
    first = await make_harness(Workflow(name="wf", edges=[("START", ask, done)]))
    await first.start("go")
    events = await first.answer(("ok", {"approved": True}))
    assert events[-1].output == "approved=True"

    def shown(node_input: Any) -> str:
        return f"amount={node_input['amount']}"

    second = await make_harness(Workflow(name="wf", edges=[("START", ask_amount, shown)]))
    await second.start("go")
    with pytest.raises(InvalidResponseError, match="'amount' is a required property"):
        await second.answer(("ok", {"approved": True}))
    [row] = await second.runner.pending(user_id=second.user_id, session_id=second.session_id)
    assert (row.interrupt_id, row.message, row.answer) == ("ok", "How much?", None)

    events = await second.answer(("ok", {"amount": 7}))
    assert events[-1].output == "amount=7"
    await first.start("again")  # the first schema is asked again, after the second
    with pytest.raises(InvalidResponseError, match="'approved' is a required property"):
        await first.answer(("ok", {"amount": 7}))
