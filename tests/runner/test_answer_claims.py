"""An answer's checks claim the run they let through as they read (`Store.claim_answering`);
on every backend a refused answer raises its own error, changes nothing and leaves no
claim behind: refused by the rows it claims nothing, refused by a later check (a schema,
a second answer) it gives the claim back."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel, JsonValue

from baton import RequestInput, Workflow, types
from baton.errors import (
    AlreadyAnsweredError,
    BatonError,
    InvalidResponseError,
    InvocationBusyError,
    InvocationNotFoundError,
    UnknownInterruptError,
)
from baton.events import REQUEST_INPUT_FUNCTION
from baton.sessions.store import InvocationStatus, Lease, Store
from baton.types import InvocationId
from tests.harness import Harness, MakeHarness, asked, outputs
from tests.store.builders import claimed_since, snapshot

TTL = timedelta(seconds=30)
GOOD: dict[str, JsonValue] = {"amount": 12}


class Amount(BaseModel):
    amount: int


def _approval() -> Workflow:
    def ask(node_input: str) -> RequestInput:
        return RequestInput(interrupt_id="approve", message="How much?", response_schema=Amount)

    def book(node_input: dict[str, Any]) -> str:
        return f"booked {node_input['amount']}"

    return Workflow(name="expenses", edges=[("START", ask, book)])


def _answers(*answers: tuple[str, JsonValue]) -> types.Content:
    parts = [
        types.Part(
            function_response=types.FunctionResponse(
                id=iid, name=REQUEST_INPUT_FUNCTION, response={"result": value}
            )
        )
        for iid, value in answers
    ]
    return types.Content(role="user", parts=parts)


async def _paused(make_harness: MakeHarness) -> tuple[Harness, InvocationId]:
    h = await make_harness(_approval())
    assert asked(await h.start("trip")) == ["approve"]
    return h, InvocationId((await h.invocation()).id)


async def _probe_lease(store: Store, invocation_id: InvocationId) -> Lease:
    """A lease claimed and given back at once: `claimed_since` it tells whether anything
    claimed the run after it."""
    lease = await store.claim(invocation_id, "probe", TTL)
    await store.release(lease)
    return lease


@pytest.mark.parametrize(
    ("call", "error", "claimed"),
    [
        ({"new_message": _answers(("approve-2", GOOD))}, UnknownInterruptError, False),
        (
            {"new_message": _answers(("approve", GOOD)), "occurrences": {"approve": "0" * 16}},
            AlreadyAnsweredError,
            False,
        ),
        (
            {"new_message": _answers(("approve", GOOD)), "invocation_id": "other-inv"},
            InvocationNotFoundError,
            False,
        ),
        # Refused after the read claimed the run: the claim is given back.
        ({"new_message": _answers(("approve", {"amount": "lots"}))}, InvalidResponseError, True),
        (
            {"new_message": _answers(("approve", GOOD), ("approve-2", GOOD))},
            UnknownInterruptError,
            True,
        ),
    ],
    ids=["unknown id", "stale occurrence", "other invocation", "bad answer", "second unknown"],
)
async def test_a_refused_answer_changes_nothing_and_leaves_no_claim(
    make_harness: MakeHarness, call: dict[str, Any], error: type[BatonError], claimed: bool
) -> None:
    h, invocation_id = await _paused(make_harness)
    store = h.service.store
    probe = await _probe_lease(store, invocation_id)
    before = await snapshot(store, h.key)

    with pytest.raises(error):
        await h.collect(**call)

    assert await snapshot(store, h.key) == before
    assert await store.holder(invocation_id) is None
    # Refused by what the read found, nothing was claimed even for a moment.
    assert await claimed_since(store, h.key, probe) is claimed
    done = await h.collect(new_message=_answers(("approve", GOOD)))
    assert outputs(done)[-1] == ("book", "booked 12")


async def test_runner_answer_gives_back_the_claim_of_an_answer_it_refuses(
    make_harness: MakeHarness,
) -> None:
    h, invocation_id = await _paused(make_harness)
    before = await snapshot(h.service.store, h.key)

    events = h.runner.answer(
        user_id="u", session_id=h.session_id, answers={"approve": {"amount": "lots"}}
    )
    with pytest.raises(InvalidResponseError, match="amount"):
        await anext(events)

    assert await snapshot(h.service.store, h.key) == before
    assert await h.service.store.holder(invocation_id) is None


async def test_an_answer_to_a_finished_run_is_refused_and_claims_nothing(
    make_harness: MakeHarness,
) -> None:
    h, invocation_id = await _paused(make_harness)
    await h.collect(new_message=_answers(("approve", GOOD)))
    assert (await h.invocation()).status is InvocationStatus.COMPLETED
    store = h.service.store
    probe = await _probe_lease(store, invocation_id)
    before = await snapshot(store, h.key)

    with pytest.raises(AlreadyAnsweredError, match="already answered"):
        await h.collect(new_message=_answers(("approve", {"amount": 99})))

    assert await snapshot(store, h.key) == before
    assert not await claimed_since(store, h.key, probe)


async def test_an_answer_to_a_run_another_worker_holds_is_refused_busy(
    make_harness: MakeHarness,
) -> None:
    h, invocation_id = await _paused(make_harness)
    store = h.service.store
    held = await store.claim(invocation_id, "worker-x/1", TTL)
    before = await snapshot(store, h.key)

    with pytest.raises(InvocationBusyError, match="is being run by 'worker-x/1'"):
        await h.collect(new_message=_answers(("approve", GOOD)))

    assert await snapshot(store, h.key) == before
    assert await store.holder(invocation_id) == held
    await store.release(held)
    done = await h.collect(new_message=_answers(("approve", GOOD)))
    assert outputs(done)[-1] == ("book", "booked 12")
