"""Rewinding a session to before one of its invocations, as the reference's
`Runner.rewind_async` does, with every refusal made before anything changes.

What lands: one user event (a new invocation id) carrying `rewind_before_invocation_id`
and the state delta that restores the state as it was before that invocation (see
`baton.sessions.rewind`). Nothing is deleted. Beyond the reference, every invocation
the rewind undoes is marked `rewound` under its lease first, which closes its open
questions: a rewound question can no longer be answered, nor a rewound run continued,
and a run executing right now is never rewound under its feet.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import timedelta
from typing import final

from baton.artifacts import BaseArtifactService, rewind_tombstone
from baton.errors import (
    InvocationBusyError,
    InvocationNotFoundError,
    InvocationRewoundError,
    SessionNotFoundError,
    StoreUnavailableError,
)
from baton.events import Event, EventActions
from baton.sessions.artifacts import USER_PREFIX
from baton.sessions.rewind import first_index, live_events, rewind_state_delta
from baton.sessions.store import (
    Invocation,
    InvocationStatus,
    Lease,
    Session,
    SessionKey,
    StepCommit,
    Store,
)
from baton.types import InvocationId

__all__ = ["Rewind", "rewind_session"]


@final
@dataclass(frozen=True)
class Rewind:
    """What a rewind needs: the session, the invocation to go back before, and how to
    name and bound the leases it takes on the invocations it undoes."""

    key: SessionKey
    before: InvocationId
    owner: str
    lease_ttl: timedelta
    artifacts: BaseArtifactService | None = None


async def rewind_session(store: Store, rewind: Rewind) -> Event:
    """Rewind `rewind.key` to before invocation `rewind.before`; the rewind event.

    Raises:
        SessionNotFoundError: no such session.
        InvocationNotFoundError: the invocation has no event in the session.
        InvocationRewoundError: a rewind already undid that invocation.
        InvocationBusyError: a run the rewind would undo is executing (or waits to be
            recovered); nothing changed.
    """
    session = await _load(store, rewind.key)
    start = _start_of(session, rewind.before)
    undone = await _undone(store, session, start)
    leases: list[Lease] = []
    try:
        for invocation in undone:
            leases.append(
                await store.claim(InvocationId(invocation.id), rewind.owner, rewind.lease_ttl)
            )
        # Held: nobody advances them now. Checked again, as one may have run meanwhile.
        current = [await _still_stopped(store, rewind.key, i) for i in undone]
        for invocation, lease in zip(current, leases, strict=True):
            await _mark_rewound(store, rewind.key, invocation, lease)
        event = Event(
            invocation_id=f"e-{uuid.uuid4()}",
            author="user",
            actions=EventActions(
                rewind_before_invocation_id=rewind.before,
                state_delta=rewind_state_delta(session.events, start, session.state),
                artifact_delta=await _restore_artifacts(rewind, session, start),
            ),
        )
        await store.commit_step(
            StepCommit(
                session=rewind.key,
                invocation_id=None,
                expected_version=0,
                events=(event,),
                state_delta=event.actions.state_delta,
            )
        )
        return event
    finally:
        for lease in leases:
            with suppress(StoreUnavailableError):
                await store.release(lease)


async def _restore_artifacts(rewind: Rewind, session: Session, start: int) -> dict[str, int]:
    """Save, as a new version, each session artifact as it was before `events[start]` (a
    tombstone, loading as absent, for one that did not exist then); `user:` artifacts are
    left alone, as in the reference. The artifact delta of the rewind event."""
    service = rewind.artifacts
    if service is None:
        return {}
    then = _versions(session.events[:start])
    delta: dict[str, int] = {}
    for filename, now in _versions(session.events).items():
        version = then.get(filename)
        if filename.startswith(USER_PREFIX) or version == now:
            continue
        part = None
        if version is not None:
            part = await service.load_artifact(
                app_name=session.app_name,
                user_id=session.user_id,
                session_id=session.id,
                filename=filename,
                version=version,
            )
        delta[filename] = await service.save_artifact(
            app_name=session.app_name,
            user_id=session.user_id,
            session_id=session.id,
            filename=filename,
            artifact=part or rewind_tombstone(),
        )
    return delta


def _versions(events: Sequence[Event]) -> dict[str, int]:
    """Each artifact's version after `events`, from their artifact deltas."""
    found: dict[str, int] = {}
    for event in events:
        found.update(event.actions.artifact_delta)
    return found


async def _load(store: Store, key: SessionKey) -> Session:
    session = await store.get_session(key)
    if session is None:
        raise SessionNotFoundError(
            f"session '{key.session_id}' of user '{key.user_id}' does not exist in app "
            f"'{key.app_name}'; nothing was rewound."
        )
    return session


def _start_of(session: Session, invocation_id: str) -> int:
    """Where the invocation's events begin, once it is known to be live."""
    start = first_index(session.events, invocation_id)
    if start is None:
        known = list(dict.fromkeys(e.invocation_id for e in live_events(session.events)))
        listed = ", ".join(f"'{i}'" for i in known[-5:]) or "none"
        raise InvocationNotFoundError(
            f"invocation '{invocation_id}' has no event in session '{session.id}' (its latest "
            f"invocations: {listed}); nothing was rewound. Rewind to one of those."
        )
    first = session.events[start]
    if all(e is not first for e in live_events(session.events)):
        raise InvocationRewoundError(
            f"invocation '{invocation_id}' of session '{session.id}' was already rewound; "
            "nothing was changed. Rewind to an invocation that still counts."
        )
    return start


async def _undone(store: Store, session: Session, start: int) -> list[Invocation]:
    """The runs whose events from `start` on the rewind annuls; refused while one runs."""
    since = {id(e) for e in session.events[start:]}
    ids = dict.fromkeys(e.invocation_id for e in live_events(session.events) if id(e) in since)
    found: list[Invocation] = []
    for invocation_id in ids:
        invocation = await store.load_invocation(session.key, InvocationId(invocation_id))
        if invocation is None or invocation.status is InvocationStatus.REWOUND:
            continue  # a state change outside runs, or a rewind that stopped half-way
        if invocation.status is InvocationStatus.RUNNING:
            raise InvocationBusyError(
                f"invocation '{invocation.id}' of session '{session.id}' is running (or "
                "waits to be continued after its process stopped); nothing was rewound. "
                "Wait until it pauses, completes or fails, then rewind."
            )
        found.append(invocation)
    return found


async def _still_stopped(store: Store, key: SessionKey, invocation: Invocation) -> Invocation:
    current = await store.load_invocation(key, InvocationId(invocation.id))
    if current is None or current.status is InvocationStatus.RUNNING:
        raise InvocationBusyError(
            f"invocation '{invocation.id}' started running while the rewind was checked; "
            "nothing was rewound. Wait until it pauses or ends, then rewind again."
        )
    return current


async def _mark_rewound(store: Store, key: SessionKey, current: Invocation, lease: Lease) -> None:
    """Mark the run rewound under `lease` (fenced: lands only while the lease holds)."""
    await store.commit_step(
        StepCommit(
            session=key,
            invocation_id=InvocationId(current.id),
            expected_version=current.version,
            status=InvocationStatus.REWOUND,
            error=current.error,
            lease=lease,
        )
    )
