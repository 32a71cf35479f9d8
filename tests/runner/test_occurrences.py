"""An answer answers the asking of the question it was sent for, never a later one."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from baton import Context, Event, RequestInput, Workflow, types
from baton.errors import AlreadyAnsweredError
from tests.harness import MakeHarness, asked


async def review(ctx: Context, node_input: Any):
    answer = ctx.resume_inputs.get("review")
    if answer is None:
        yield RequestInput(interrupt_id="review", message=f"pass {ctx.run_id}?")
        return
    passes = ctx.state.get("passes", 0) + 1
    yield Event(output=answer, route="done" if passes == 3 else "again", state={"passes": passes})


def finish(node_input: Any) -> str:
    return f"finished with {node_input}"


def looping() -> Workflow:
    return Workflow(
        name="wf", edges=[("START", review), (review, {"again": review, "done": finish})]
    )


async def test_an_answer_for_an_earlier_pass_never_answers_the_open_one(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(looping())
    assert asked(await h.start()) == ["review"]
    store = h.service.store
    (first,) = await store.list_interrupts("app", "u", session_id=h.key.session_id)
    events = await h.collect(
        new_message=_answer("review", "ok"), occurrences={"review": first.occurrence}
    )
    assert asked(events) == ["review"]  # pass 2 asks the same id again
    (second,) = await store.list_interrupts("app", "u", session_id=h.key.session_id)
    assert second.occurrence != first.occurrence

    with pytest.raises(AlreadyAnsweredError, match=first.occurrence):
        await h.collect(
            new_message=_answer("review", "late"), occurrences={"review": first.occurrence}
        )
    (still,) = await store.list_interrupts("app", "u", session_id=h.key.session_id)
    assert still.occurrence == second.occurrence  # the refused answer changed nothing

    await h.collect(new_message=_answer("review", "ok"), occurrences={"review": second.occurrence})
    (third,) = await store.list_interrupts("app", "u", session_id=h.key.session_id)
    events = await h.collect(
        new_message=_answer("review", "fine"), occurrences={"review": third.occurrence}
    )
    assert events[-1].output == "finished with fine"


def _answer(iid: str, value: JsonValue) -> types.Content:
    response = types.FunctionResponse(id=iid, name="adk_request_input", response={"result": value})
    return types.Content(role="user", parts=[types.Part(function_response=response)])
