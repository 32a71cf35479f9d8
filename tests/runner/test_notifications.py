"""The notification outbox, on every backend: what each step records, and the claims.

A question opened, answered, expired and a run's end each record one notification in
the step's own commit; a refused answer records none; senders claim one at a time, in
order, and a sender's claim keeps the others out until it lapses.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from pydantic import JsonValue

from baton import App, RequestInput, ResumabilityConfig, Runner, Workflow
from baton.errors import InvalidResponseError, InvocationNotFoundError
from baton.events import REQUEST_CREDENTIAL_FUNCTION
from baton.sessions.services import BaseSessionService
from baton.sessions.store import Notification, Store
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, outputs
from tests.workflow.test_node_credentials import build as build_credential_flow
from tests.workflow.test_node_credentials import request_of

TTL = timedelta(seconds=30)
RECEIVER = "http://receiver.test/hook"


def ask(node_input: Any) -> RequestInput:
    return RequestInput(
        interrupt_id="ok", message="OK?", response_schema=bool, assignee="bob", timeout=60
    )


def done(node_input: Any) -> str:
    return f"ok={node_input}"


async def _harness(stores: StoreFactory) -> Harness:
    """A runner reading the stores' clock (deadlines are judged by it), and a session."""
    service = BaseSessionService(stores.open())
    app = App(
        name="app",
        root_agent=Workflow(name="wf", edges=[("START", ask, done)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )
    runner = Runner(app=app, session_service=service, clock=stores.clock)
    session = await service.create_session(app_name="app", user_id="u")
    return Harness(runner, service, session.id)


async def _drain(
    store: Store, owner: str = "sender", receiver: str = RECEIVER
) -> list[Notification]:
    """Claim every due notification for `receiver`, oldest first, and say it accepted each."""
    taken: list[Notification] = []
    while claimed := await store.claim_notifications(receiver, owner, ttl=TTL, limit=1):
        taken += claimed.notifications
        await store.accept_notification(receiver, owner, taken[-1].seq, ttl=TTL)
    return taken


def _where(body: dict[str, Any]) -> tuple[Any, ...]:
    return body["appName"], body["userId"], body["sessionId"]


async def test_each_change_records_one_notification_in_order(
    stores: StoreFactory,
) -> None:
    h = await _harness(stores)
    store = h.runner.store
    await h.start("go")
    [opened] = await _drain(store)
    body = opened.body
    assert body["type"] == "question.opened"
    assert body["id"] == opened.id
    assert _where(body) == ("app", h.user_id, h.session_id)
    question = body["question"]
    assert isinstance(question, dict)
    assert (question["interruptId"], question["message"], question["assignee"]) == (
        "ok",
        "OK?",
        "bob",
    )
    assert question["expiresAt"] == pytest.approx(body["createdAt"] + 60)  # pyright: ignore[reportOperatorIssue, reportUnknownMemberType] -- JSON numbers

    # A refused answer changes nothing, so it notifies nobody.
    with pytest.raises(InvalidResponseError):
        await h.runner.answer(
            user_id=h.user_id, session_id=h.session_id, answers={"ok": "x"}, answered_by="bob"
        ).__anext__()
    assert await _drain(store) == []

    events = h.runner.answer(
        user_id=h.user_id, session_id=h.session_id, answers={"ok": True}, answered_by="bob"
    )
    assert [e async for e in events][-1].output == "ok=True"
    answered, completed = await _drain(store)
    assert answered.kind == "question.answered"
    assert answered.body["question"] == {"interruptId": "ok", "answer": True, "answeredBy": "bob"}
    assert completed.kind == "run.completed"
    assert completed.body["run"] == {"status": "completed", "error": None}
    assert answered.body["invocationId"] == completed.body["invocationId"]


async def test_an_expired_question_notifies_expiry_and_failure(
    stores: StoreFactory,
) -> None:
    h = await _harness(stores)
    store = h.runner.store
    await h.start("go")
    await _drain(store)
    stores.clock.advance(61)
    [row] = await h.runner.pending(user_id=h.user_id)
    with pytest.raises(Exception, match="no on_timeout answer"):
        await h.runner.expire(row)
    kinds = [(n.kind, n.body.get("question"), n.body.get("run")) for n in await _drain(store)]
    assert kinds[0] == (
        "question.expired",
        {"interruptId": "ok", "answeredBy": "system:timeout"},
        None,
    )
    assert kinds[1][0] == "run.failed"
    run = kinds[1][2]
    assert isinstance(run, dict)
    assert run["status"] == "failed"
    assert len(kinds) == 2


async def test_one_sender_per_receiver_and_a_lapsed_claim_frees_it(
    stores: StoreFactory,
) -> None:
    h = await _harness(stores)
    await h.start("go")
    events = h.runner.answer(
        user_id=h.user_id, session_id=h.session_id, answers={"ok": False}, answered_by="bob"
    )
    _ = [e async for e in events]
    first = stores.open()  # another engine on the same database, like another process
    second = stores.open()
    head = await first.claim_notifications(RECEIVER, "a", ttl=TTL, limit=1)
    assert head is not None
    assert ([n.kind for n in head.notifications], head.attempts) == (["question.opened"], 0)
    # a is sending to that receiver: b gets nothing for it, but may send to another.
    assert await second.claim_notifications(RECEIVER, "b", ttl=TTL, limit=5) is None
    other = await second.claim_notifications("http://other", "b", ttl=TTL, limit=5)
    assert other is not None
    assert [n.kind for n in other.notifications] == [
        "question.opened",
        "question.answered",
        "run.completed",
    ]
    # a's round failed: the receiver is due again in 10 s, nobody claims it before then.
    await first.defer_notifications(RECEIVER, "a", attempts=1, next_at=stores.clock.now + 10)
    assert await second.claim_notifications(RECEIVER, "b", ttl=TTL, limit=5) is None
    stores.clock.advance(11)
    claimed = await second.claim_notifications(RECEIVER, "b", ttl=TTL, limit=5)
    assert claimed is not None
    assert ([n.id for n in claimed.notifications], claimed.attempts) == (
        [n.id for n in other.notifications],
        1,
    )
    # b dies holding its claims: a waits for them to lapse, then takes over, in order.
    assert await first.claim_notifications(RECEIVER, "a", ttl=TTL, limit=1) is None
    seq = claimed.notifications[0].seq
    await first.accept_notification(RECEIVER, "a", seq, ttl=TTL)  # not a's: nothing happens
    stores.clock.advance(31)
    assert [n.id for n in await _drain(first, "a")] == [n.id for n in claimed.notifications]
    assert await _drain(second, "b") == []


async def test_the_outbox_keeps_only_what_some_receiver_still_waits_for(
    stores: StoreFactory,
) -> None:
    h = await _harness(stores)
    store = h.runner.store
    await h.start("go")
    events = h.runner.answer(
        user_id=h.user_id, session_id=h.session_id, answers={"ok": True}, answered_by="bob"
    )
    _ = [e async for e in events]
    both = (RECEIVER, "http://slow")
    assert await store.prune_notifications(both) == 0  # nobody accepted anything yet
    assert len(await _drain(store)) == 3
    # The slow receiver accepted the first one only: the other two are kept for it.
    slow = await store.claim_notifications("http://slow", "sender", ttl=TTL, limit=1)
    assert slow is not None
    await store.accept_notification("http://slow", "sender", slow.notifications[0].seq, ttl=TTL)
    assert await store.prune_notifications(both) == 1
    assert [n.kind for n in await _drain(store, receiver="http://late")] == [
        "question.answered",
        "run.completed",
    ]
    assert len(await _drain(store, receiver="http://slow")) == 2
    assert await store.prune_notifications(both) == 2
    # Everything both accepted is gone: a receiver added now finds the outbox empty.
    assert await _drain(store, receiver="http://new") == []
    # The next one is numbered after the deleted ones, so the receivers get it.
    [run] = await h.runner.invocations(user_id=h.user_id, session_id=h.session_id)
    await h.runner.rewind_async(
        user_id=h.user_id, session_id=h.session_id, rewind_before_invocation_id=run.id
    )
    assert [n.kind for n in await _drain(store)] == ["session.rewound"]


async def test_a_rewind_notifies_which_runs_it_undid_and_a_refused_one_nothing(
    stores: StoreFactory,
) -> None:
    h = await _harness(stores)
    store = h.runner.store
    await h.start("go")
    [opened] = await _drain(store)
    undone = opened.body["invocationId"]
    assert isinstance(undone, str)
    with pytest.raises(InvocationNotFoundError):
        await h.runner.rewind_async(
            user_id=h.user_id, session_id=h.session_id, rewind_before_invocation_id="e-none"
        )
    assert await _drain(store) == []

    event = await h.runner.rewind_async(
        user_id=h.user_id, session_id=h.session_id, rewind_before_invocation_id=undone
    )
    [rewound] = await _drain(store)
    body = rewound.body
    assert body["type"] == "session.rewound"
    assert _where(body) == ("app", h.user_id, h.session_id)
    assert body["invocationId"] == event.invocation_id
    assert body["rewind"] == {
        "beforeInvocationId": undone,
        "eventId": event.id,
        "stateDelta": event.actions.state_delta,
    }


async def test_a_credential_answer_is_not_in_its_notification(stores: StoreFactory) -> None:
    """The answer to a credential request is the user's secret (an API key, a token):
    its `question.answered` notification says it was answered, by whom, and not with
    what; the run goes on with it."""
    counter = Counter()
    service = BaseSessionService(stores.open())
    app = App(
        name="app",
        root_agent=build_credential_flow(counter),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )
    session = await service.create_session(app_name="app", user_id="u")
    h = Harness(Runner(app=app, session_service=service), service, session.id)
    store = h.runner.store
    request = request_of(await h.start())
    await _drain(store)
    config: dict[str, JsonValue] = dict(request.args or {})["authConfig"]  # type: ignore[assignment]
    answer: dict[str, JsonValue] = {
        **config,
        "exchangedAuthCredential": {"authType": "apiKey", "apiKey": "K7-secret"},
    }

    events = await h.answer(
        ("wf_auth:wf@1/fetch@1", answer), name=REQUEST_CREDENTIAL_FUNCTION, wrap=False
    )

    assert outputs(events) == [("fetch", "fetched with K7-secret")]
    answered, completed = await _drain(store)
    assert answered.body["question"] == {
        "interruptId": "wf_auth:wf@1/fetch@1",
        "answeredBy": None,
    }
    assert completed.kind == "run.completed"
    assert "K7-secret" not in json.dumps([answered.body, completed.body])
