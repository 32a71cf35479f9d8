"""Forking a session at a checkpoint: a new session holding its history up to there.

The fork gets the live events before the checkpoint, the state as it was there (the
delta a rewind to that point would apply, see `baton.sessions.rewind`), and each run
as it stood then under a new invocation id: one that had paused at the checkpoint's
question waits there again, from the checkpoint kept when it asked, so the question can
be answered differently; the source session is not changed. Everything is checked
(`plan_fork`) before the first write; a write that fails removes the half-made fork.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import suppress

from pydantic import JsonValue

from baton.errors import BatonError, CheckpointUnavailableError, SessionNotFoundError
from baton.events import Event
from baton.sessions.checkpoints import ForkPlan, RunAtPoint, SessionHistory, plan_fork
from baton.sessions.rewind import SHARED_STATE_PREFIXES, rewind_state_delta
from baton.sessions.store import Session, SessionKey, StepCommit, Store
from baton.types import InvocationId, SessionId

__all__ = ["StepCheckpoint", "fork_session", "read_history"]


async def read_history(store: Store, key: SessionKey) -> tuple[Session, SessionHistory]:
    """The session and what its checkpoints are read from.

    Raises:
        SessionNotFoundError: no such session.
    """
    session = await store.get_session(key)
    if session is None:
        raise SessionNotFoundError(
            f"session '{key.session_id}' of user '{key.user_id}' does not exist in app "
            f"'{key.app_name}'; list that user's sessions first."
        )
    history = SessionHistory(
        events=session.events,
        invocations=await store.list_invocations(key),
        interrupts=await store.list_interrupts(
            key.app_name, key.user_id, session_id=key.session_id, status=None
        ),
        asked_at=await store.list_question_checkpoints(key),
    )
    return session, history


StepCheckpoint = Callable[[JsonValue, list[Event]], JsonValue]
"""Derives a run's checkpoint at a step from its latest checkpoint and its events up to
that step (`baton.workflow.fork_state.forked_checkpoint` for the app's root)."""


async def fork_session(
    store: Store,
    key: SessionKey,
    checkpoint_id: str,
    new_session_id: str | None = None,
    *,
    at_step: StepCheckpoint | None = None,
) -> Session:
    """A new session of the same user holding `key`'s history up to the checkpoint; at a
    `step` checkpoint, the run forked there restarts from the checkpoint `at_step` derives
    (it is left to continue: `running`, with no lease).

    Raises:
        SessionNotFoundError, CheckpointNotFoundError, CheckpointUnavailableError,
        SessionExistsError (`new_session_id` is taken): before anything was written.
    """
    session, history = await read_history(store, key)
    plan = plan_fork(history, checkpoint_id)
    if plan.checkpoint.kind == "step":
        _derive_step(plan, at_step)
    forked = await store.create_session(
        key.app_name,
        key.user_id,
        session_id=SessionId(new_session_id) if new_session_id else None,
        state=_state_at(session, plan),
    )
    try:
        await _copy(store, forked.key, plan)
    except (BatonError, OSError):
        with suppress(BatonError, OSError):
            await store.delete_session(forked.key)
        raise
    found = await store.get_session(forked.key, with_events=False)
    assert found is not None  # just written
    return found


def _derive_step(plan: ForkPlan, at_step: StepCheckpoint | None) -> None:
    """Give the run forked at a step its checkpoint there."""
    chosen = plan.checkpoint
    run = plan.runs[chosen.invocation_id]
    if at_step is None:
        raise CheckpointUnavailableError(
            f"checkpoint '{chosen.id}' is a step of a run; fork there through the Runner "
            "of its app (Runner.fork), which knows the run's workflow."
        )
    events = [e for e in plan.events if e.invocation_id == chosen.invocation_id]
    run.checkpoint = at_step(run.invocation.checkpoint, events)


def _state_at(session: Session, plan: ForkPlan) -> dict[str, JsonValue]:
    """The session's state as it was at the checkpoint (shared keys left out): what a
    rewind to the first live event after it would restore."""
    events = session.events
    following = plan.following
    before = next((i for i, e in enumerate(events) if e is following), len(events))
    delta = rewind_state_delta(events, before, session.state)
    state = {**session.state, **delta}
    # Keys written only after the point are left out (a rewind sets them to None).
    removed = {k for k, v in delta.items() if v is None}
    return {
        k: v
        for k, v in state.items()
        if k not in removed and not k.startswith(SHARED_STATE_PREFIXES)
    }


async def _copy(store: Store, key: SessionKey, plan: ForkPlan) -> None:
    """Write the plan's events in order, each run created with its state at the point,
    then each run's questions (with the checkpoint each was asked at) and its checkpoint."""
    new_ids = {old: InvocationId(f"e-{uuid.uuid4()}") for old in plan.runs}
    versions: dict[str, int] = {}
    for group in _groups(plan.events):
        old = group[0].invocation_id
        run = plan.runs.get(old)
        events = tuple(e.model_copy(update={"invocation_id": new_ids.get(old, old)}) for e in group)
        if run is None:
            await store.commit_step(StepCommit(key, None, 0, events=events))
            continue
        await _commit_run(store, key, new_ids[old], run, versions, events)
    for old, run in plan.runs.items():
        await _commit_questions(store, key, new_ids[old], run, versions)


def _groups(events: list[Event]) -> list[list[Event]]:
    """Consecutive events of one invocation, in order."""
    groups: list[list[Event]] = []
    for event in events:
        if groups and groups[-1][0].invocation_id == event.invocation_id:
            groups[-1].append(event)
        else:
            groups.append([event])
    return groups


async def _commit_run(
    store: Store,
    key: SessionKey,
    new_id: InvocationId,
    run: RunAtPoint,
    versions: dict[str, int],
    events: tuple[Event, ...],
) -> None:
    version = versions.get(new_id, 0)
    commit = StepCommit(key, new_id, version, events=events, copied=True)
    if version == 0:
        commit.status = run.status
        commit.fingerprint = run.invocation.fingerprint
        commit.checkpoint = run.checkpoint
        commit.error = run.error
    versions[new_id] = await store.commit_step(commit)


async def _commit_questions(
    store: Store, key: SessionKey, new_id: InvocationId, run: RunAtPoint, versions: dict[str, int]
) -> None:
    """The run's questions, each with the checkpoint it was asked at, then its own."""
    if not run.questions:
        return
    asked_at = run.asked_at
    for row in run.questions:
        copied = row.model_copy(update={"invocation_id": new_id, "session_id": key.session_id})
        commit = StepCommit(key, new_id, versions[new_id], opened=(copied,))
        commit.checkpoint = asked_at.get(row.interrupt_id)
        versions[new_id] = await store.commit_step(commit)
    final = StepCommit(key, new_id, versions[new_id], checkpoint=run.checkpoint)
    versions[new_id] = await store.commit_step(final)
