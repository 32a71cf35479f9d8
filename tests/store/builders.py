"""Short ways to build the records the store suite commits, and to snapshot a store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import JsonValue

from baton.errors import LeaseLostError, StaleVersionError
from baton.events import Event
from baton.sessions.store import (
    Interrupt,
    Invocation,
    InvocationStatus,
    Lease,
    Session,
    SessionKey,
    StepCommit,
    Store,
)
from baton.types import InterruptId, InvocationId, SessionId

APP = "app"
USER = "u"


def key(session_id: str = "s1", *, app: str = APP, user: str = USER) -> SessionKey:
    """A session key in the suite's app."""
    return SessionKey(app, user, SessionId(session_id))


def event(text: str, *, invocation_id: str = "") -> Event:
    """A model text event."""
    return Event(invocation_id=invocation_id, author="agent", message=text)


def texts(events: list[Event]) -> list[str]:
    """The text parts of `events`, in order."""
    return [p.text for e in events if e.content for p in e.content.parts or () if p.text]


def question(
    session: SessionKey, invocation_id: str, interrupt_id: str, *, message: str = "Approve?"
) -> Interrupt:
    """An open interrupt row asked by node 'wf/ask'."""
    return Interrupt(
        app_name=session.app_name,
        user_id=session.user_id,
        session_id=session.session_id,
        invocation_id=invocation_id,
        interrupt_id=interrupt_id,
        node_path="wf/ask",
        function_name="adk_request_input",
        message=message,
        payload={"amount": 12},
        response_schema={"type": "object"},
    )


def step(
    session: SessionKey,
    invocation_id: str | None,
    expected_version: int,
    *,
    events: tuple[Event, ...] = (),
    state: dict[str, JsonValue] | None = None,
    checkpoint: JsonValue = None,
    status: InvocationStatus | None = None,
    opened: tuple[Interrupt, ...] = (),
    answered: dict[str, JsonValue] | None = None,
) -> StepCommit:
    """A step commit; a fresh invocation (version 0) gets fingerprint 'fp'."""
    return StepCommit(
        session=session,
        invocation_id=InvocationId(invocation_id) if invocation_id is not None else None,
        expected_version=expected_version,
        events=events,
        state_delta=state or {},
        checkpoint=checkpoint,
        status=status,
        fingerprint="fp" if expected_version == 0 else None,
        opened=opened,
        answered=tuple((InterruptId(k), v) for k, v in (answered or {}).items()),
        answered_by="alice" if answered else None,
    )


@dataclass(frozen=True)
class Snapshot:
    """Everything a store holds about one session, for whole-value comparisons."""

    session: Session | None
    invocations: list[Invocation]
    interrupts: list[Interrupt]


async def claimed_since(store: Store, session: SessionKey, lease: Lease) -> bool:
    """Whether the invocation was claimed since `lease` was its lease (a claim's token is
    not predictable): an empty step fenced by `lease` lands (a new version) when it was not."""
    invocation = await store.load_invocation(session, lease.invocation_id)
    assert invocation is not None
    probe = StepCommit(session, lease.invocation_id, invocation.version, lease=lease)
    try:
        await store.commit_step(probe)
    except LeaseLostError:
        return True
    return False


async def snapshot(store: Store, session: SessionKey) -> Snapshot:
    """Read everything the store holds about `session`."""
    return Snapshot(
        session=await store.get_session(session),
        invocations=await store.list_invocations(session),
        interrupts=await store.list_interrupts(
            session.app_name, session.user_id, session_id=session.session_id, status=None
        ),
    )


async def race_one_winner(racers: list[Store], commit_of: Callable[[int], StepCommit]) -> int:
    """Commit `commit_of(i)` through racer i, all at once; exactly one may land.

    Returns:
        The winner's index (the others must have raised StaleVersionError).
    """
    results = await asyncio.gather(
        *(racer.commit_step(commit_of(i)) for i, racer in enumerate(racers)),
        return_exceptions=True,
    )
    winners = [i for i, r in enumerate(results) if isinstance(r, int)]
    assert len(winners) == 1, results
    assert all(isinstance(r, StaleVersionError) for r in results if not isinstance(r, int))
    return winners[0]
