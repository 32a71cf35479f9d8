"""Webhooks against a real receiver on 127.0.0.1, on every backend.

Notifications arrive signed (the signature verifies; another secret, a changed body or
an old timestamp do not), in the order things happened, after the receiver's 500s and
after it was down; an expired question is notified by the worker's expiry.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import httpx
import pytest

from baton import App, RequestInput, ResumabilityConfig, Runner, Workflow
from baton.notifier import (
    ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    Notifier,
    NotifySettings,
    sign,
    verify,
)
from baton.sessions.services import BaseSessionService
from baton.sessions.store import Store
from baton.types import Content, Part
from baton.worker import Worker
from tests.receiver import Delivery, Receiver, held_port

SECRET = "s3cret"


def ask(node_input: Any) -> RequestInput:
    return RequestInput(interrupt_id="ok", message="OK?", response_schema=bool, assignee="bob")


def ask_briefly(node_input: Any) -> RequestInput:
    return RequestInput(interrupt_id="ok", message="OK?", response_schema=bool, timeout=0.3)


def done(node_input: Any) -> str:
    return f"ok={node_input}"


def _runner(store: Store, asking: Callable[[Any], RequestInput] = ask) -> Runner:
    app = App(
        name="app",
        root_agent=Workflow(name="wf", edges=[("START", asking, done)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )
    return Runner(app=app, session_service=BaseSessionService(store))


def _settings(*urls: str) -> NotifySettings:
    # A minute per delivery: one that timed out under load would be sent again, and the
    # receiver (which counts what it got) would see it twice.
    return NotifySettings(urls, SECRET, timeout=60, first_retry=0.05, longest_retry=0.2)


@asynccontextmanager
async def _notifying(store: Store, settings: NotifySettings) -> AsyncIterator[Notifier]:
    notifier = Notifier(store, settings, poll=0.05)
    task = asyncio.create_task(notifier.run())
    try:
        yield notifier
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    started = Receiver()
    yield started
    await started.stop()


async def _ask_and_answer(runner: Runner) -> str:
    session = await runner.session_service.create_session(app_name="app", user_id="ann")
    events = runner.run_async(user_id="ann", session_id=session.id, new_message=_go())
    _ = [e async for e in events]
    answered = runner.answer(
        user_id="ann", session_id=session.id, answers={"ok": True}, answered_by="bob"
    )
    _ = [e async for e in answered]
    return session.id


def _go() -> Content:
    return Content(role="user", parts=[Part(text="go")])


def _types(deliveries: list[Delivery]) -> list[str]:
    return [d.json["type"] for d in deliveries]


async def test_notifications_arrive_signed_in_order_after_500s(
    live_store: Store, receiver: Receiver
) -> None:
    receiver.failures = 2
    url = await receiver.start()
    async with _notifying(live_store, _settings(url)):
        session_id = await _ask_and_answer(_runner(live_store))
        accepted = await receiver.wait_for(3)
    assert _types(accepted) == ["question.opened", "question.answered", "run.completed"]
    # The first notification was refused twice and sent again, the same one each time.
    refused = [d for d in receiver.deliveries if d.status == 500]
    assert [d.json["id"] for d in refused] == [accepted[0].json["id"]] * 2
    assert len({d.json["id"] for d in accepted}) == 3
    for delivery in accepted:
        headers = httpx.Headers(delivery.headers)
        assert verify(SECRET, headers, delivery.body)
        assert headers[ID_HEADER] == delivery.json["id"]
        assert headers["content-type"] == "application/json"
        assert delivery.json["sessionId"] == session_id
    first = accepted[0]
    headers = httpx.Headers(first.headers)
    assert not verify("another secret", headers, first.body)
    assert not verify(SECRET, headers, first.body.replace(b"OK?", b"OK!"))
    assert not verify(SECRET, headers, first.body, now=time.time() + 301)
    stamp = int(headers[TIMESTAMP_HEADER])
    assert headers[SIGNATURE_HEADER] == sign(SECRET, stamp, first.body)
    assert first.json["question"]["assignee"] == "bob"
    assert accepted[1].json["question"]["answeredBy"] == "bob"


async def test_a_receiver_that_is_down_holds_back_only_its_own_notifications(
    live_store: Store, receiver: Receiver
) -> None:
    other = Receiver()
    up = await other.start()
    held = held_port()  # nothing listens there until the receiver starts on it
    down = f"http://127.0.0.1:{held.getsockname()[1]}/hook"
    expected = ["question.opened", "question.answered", "run.completed"]
    try:
        async with _notifying(live_store, _settings(up, down)):
            await _ask_and_answer(_runner(live_store))
            # The live receiver gets all of them while the other one is down.
            assert _types(await other.wait_for(3)) == expected
            # Kept for the one that is down, and nothing else is: a receiver added now
            # (its place starts before everything kept) would get exactly these three.
            assert len(await _held(live_store)) == 3
            await receiver.start(held)
            accepted = await receiver.wait_for(3)
            await _until_empty(live_store)
    finally:
        if receiver.task is None:  # it never started on the port: nothing closes it
            held.close()
        await other.stop()
    assert _types(accepted) == expected
    # The live receiver got each once: what it accepted is not sent to it again.
    assert len(other.deliveries) == 3


async def _held(store: Store) -> list[str]:
    """The ids the outbox still holds, as a receiver that never claimed would see them."""
    probe = f"http://probe-{time.monotonic_ns()}/hook"
    claimed = await store.claim_notifications(probe, "probe", ttl=timedelta(seconds=1), limit=50)
    await store.release_notifications("probe")
    return [] if claimed is None else [n.id for n in claimed.notifications]


async def _until_empty(store: Store) -> None:
    """Wait until every notification was deleted (all receivers accepted them)."""
    async with asyncio.timeout(10):
        while await _held(store):  # noqa: ASYNC110 - deletions raise no event to wait on
            await asyncio.sleep(0.05)


async def test_an_expired_question_is_notified_by_the_worker(
    live_store: Store, receiver: Receiver
) -> None:
    url = await receiver.start()
    runner = _runner(live_store, ask_briefly)
    worker = Worker([runner], poll=0.1)
    async with _notifying(live_store, _settings(url)):
        working = asyncio.create_task(worker.run())
        try:
            session = await runner.session_service.create_session(app_name="app", user_id="ann")
            events = runner.run_async(user_id="ann", session_id=session.id, new_message=_go())
            _ = [e async for e in events]
            accepted = await receiver.wait_for(3)
        finally:
            worker.drain(0)
            await working
    assert _types(accepted) == ["question.opened", "question.expired", "run.failed"]
    assert accepted[1].json["question"] == {"interruptId": "ok", "answeredBy": "system:timeout"}
    assert "no on_timeout answer" in accepted[2].json["run"]["error"]


@pytest.mark.parametrize(
    ("urls", "secret", "names"),
    [
        ((), SECRET, "at least one receiver"),
        (("ftp://x/hook",), SECRET, r"not an http\(s\) URL"),
        (("http:///hook",), SECRET, r"not an http\(s\) URL"),
        (("http://x/hook",), "", "give a secret"),
    ],
)
def test_bad_settings_are_refused(urls: tuple[str, ...], secret: str, names: str) -> None:
    with pytest.raises(ValueError, match=names):
        NotifySettings(urls, secret)


@pytest.mark.parametrize("timeout", [0.0, -1.0, float("inf"), float("nan")])
def test_a_timeout_that_is_not_a_finite_positive_number_is_refused(timeout: float) -> None:
    # An endless POST timeout would hold a dead sender's claim on its receiver for ever.
    with pytest.raises(ValueError, match="must be a finite number of seconds above 0"):
        NotifySettings(("http://x/hook",), SECRET, timeout=timeout)
