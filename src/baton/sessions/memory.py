"""The in-memory store: a real backend for one process (tests, demos, notebooks).

Every method runs without awaiting in between its reads and writes, so each call
is atomic on the event loop. Callers never share mutable state with the store:
events and checkpoints are kept as their JSON text and parsed on the way out, and
records are copied out, which keeps a commit as cheap as a real store's would be.
"""

from __future__ import annotations

import copy
import functools
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from types import UnionType
from typing import Final, TypeVar, Union, cast, final, get_args, get_origin

from pydantic import BaseModel, JsonValue
from pydantic_core import SchemaSerializer, from_json, to_json

from baton.errors import (
    InvocationNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
    StaleVersionError,
)
from baton.events import Event, assemble
from baton.sessions.artifacts import ArtifactKey, ArtifactSave, StoredArtifact
from baton.sessions.memory_artifacts import MemoryArtifacts
from baton.sessions.memory_outbox import MemoryOutbox
from baton.sessions.notifications import may_notify, notifications_of
from baton.sessions.paging import Position
from baton.sessions.store import (
    USER_PREFIX,
    AnswerClaim,
    Answering,
    Claimed,
    Clock,
    Delivery,
    Interrupt,
    InterruptStatus,
    Invocation,
    InvocationStatus,
    Lease,
    Pruning,
    Session,
    SessionActivity,
    SessionKey,
    StepCommit,
    Subscription,
    answerable,
    busy_error,
    lost_error,
    merge_shared_state,
    opens_deadline,
    split_state,
    stale_session_error,
)
from baton.sessions.wakeups import Wakeups
from baton.types import InterruptId, InvocationId, SessionId

__all__ = ["MemoryStore"]

_T = TypeVar("_T")
# Read on every step: globals, not class attributes (a lookup on an Enum or a pydantic
# model class passes through its metaclass's __getattr__ hook, ~1k instructions apiece).
# Each event class's serializer, found on its first commit: Event's is built on first use
# (see WireModel's defer_build), so it cannot be read when this module loads.
_SERIALIZERS: Final[dict[type[Event], SchemaSerializer]] = {}
_REWOUND: Final = InvocationStatus.REWOUND
_M = TypeVar("_M", bound=BaseModel)


def _serializer_of(cls: type[Event]) -> SchemaSerializer:
    """`cls`'s serializer, built now if it was not yet, and kept in `_SERIALIZERS`."""
    if not cls.__pydantic_complete__:
        cls.model_rebuild()
    serializer = _SERIALIZERS[cls] = cls.__pydantic_serializer__
    return serializer


@dataclass(slots=True)
class _InvocationRow:
    """An invocation as stored: the fields every step changes are kept outside the model."""

    invocation: Invocation  # version, updated_at and checkpoint are stale here
    version: int
    updated_at: float
    checkpoint: bytes | None = None  # JSON
    lease: Lease | None = None  # the live or lapsed lease; None once released
    token: int = 0  # grows with every claim (fencing)


@dataclass
class _SessionData:
    session: Session  # last_update_time is stale here
    last_update_time: float
    events: list[bytes] = field(default_factory=list)  # JSON
    # The same events by invocation id (`list_events` reads one invocation's, not all).
    events_of: dict[str, list[bytes]] = field(default_factory=dict[str, list[bytes]])
    invocations: dict[str, _InvocationRow] = field(default_factory=dict[str, _InvocationRow])
    # (invocation id, interrupt id) -> row
    interrupts: dict[tuple[str, str], Interrupt] = field(
        default_factory=dict[tuple[str, str], Interrupt]
    )
    # (invocation id, interrupt id) -> the checkpoint (JSON) the question was asked at
    question_checkpoints: dict[tuple[str, str], bytes] = field(
        default_factory=dict[tuple[str, str], bytes]
    )


@final
class MemoryStore:
    """Sessions, checkpoints, interrupts and leases in process memory."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._clock = clock
        self._sessions: dict[SessionKey, _SessionData] = {}
        # The session `_require` found last, by the key object it was given: a run passes
        # the same key to every step, and the dict lookup costs two calls of the key's
        # generated __hash__ and __eq__ (its copy is another object). Cleared on delete.
        self._last_found: tuple[SessionKey, _SessionData] | None = None
        self._wakeups = Wakeups()
        # Every session's invocation rows by id, for lease calls that name only the id.
        self._rows: dict[str, _InvocationRow] = {}
        self._artifacts = MemoryArtifacts(clock)
        self._outbox = MemoryOutbox()
        # The `app:` keys of each app, and the `user:` keys of each (app, user): shared by
        # their sessions, and kept when a session is deleted.
        self._app_states: dict[str, dict[str, JsonValue]] = {}
        self._user_states: dict[tuple[str, str], dict[str, JsonValue]] = {}

    async def create_session(
        self,
        app_name: str,
        user_id: str,
        *,
        session_id: SessionId | None = None,
        state: dict[str, JsonValue] | None = None,
    ) -> Session:
        key = SessionKey(app_name, user_id, session_id or SessionId(str(uuid.uuid4())))
        if key in self._sessions:
            raise SessionExistsError(
                f"session '{key.session_id}' already exists for user '{user_id}' in app "
                f"'{app_name}'; pick another id or omit it to get a fresh one."
            )
        split = split_state(state or {})
        session = Session(
            id=key.session_id,
            app_name=app_name,
            user_id=user_id,
            state=split.session,
            last_update_time=self._clock(),
        )
        data = _SessionData(session=session, last_update_time=session.last_update_time)
        self._sessions[key] = data
        self._share(app_name, user_id, split.app, split.user)
        return self._session_out(data)

    async def get_session(
        self,
        key: SessionKey,
        *,
        with_events: bool = True,
        event_limit: int | None = None,
        events_after: float | None = None,
    ) -> Session | None:
        data = self._sessions.get(key)
        if data is None:
            return None
        copy = self._session_out(data)
        if with_events:
            events = data.events if event_limit is None else data.events[-event_limit:]
            copy.events = [Event.model_validate_json(e) for e in events] if event_limit != 0 else []
            if events_after is not None:
                older = [i for i, e in enumerate(copy.events) if e.timestamp < events_after]
                copy.events = copy.events[older[-1] + 1 :] if older else copy.events
        return copy

    async def list_events(self, key: SessionKey, invocation_id: InvocationId) -> list[Event]:
        data = self._sessions.get(key)
        if data is None:
            return []
        return [Event.model_validate_json(e) for e in data.events_of.get(invocation_id, [])]

    async def list_question_checkpoints(self, key: SessionKey) -> dict[tuple[str, str], JsonValue]:
        data = self._sessions.get(key)
        kept = data.question_checkpoints if data else {}
        return {ids: from_json(checkpoint) for ids, checkpoint in kept.items()}

    async def list_sessions(
        self,
        app_name: str,
        user_id: str | None = None,
        *,
        session_id: SessionId | None = None,
        limit: int | None = None,
        after: Position | None = None,
    ) -> list[Session]:
        found = [
            data
            for key, data in self._sessions.items()
            if key.app_name == app_name
            and (user_id is None or key.user_id == user_id)
            and (session_id is None or key.session_id == session_id)
        ]
        shown = _window(found, lambda d: d.session.position, limit, after)
        return [self._session_out(data) for data in shown]

    async def recent_sessions(
        self, app_name: str, user_id: str, *, limit: int
    ) -> list[SessionActivity]:
        mine = [
            data
            for key, data in self._sessions.items()
            if key.app_name == app_name and key.user_id == user_id
        ]
        mine.sort(key=lambda d: d.last_update_time, reverse=True)
        return [SessionActivity(self._session_out(d), _latest_run(d)) for d in mine[:limit]]

    async def delete_session(self, key: SessionKey) -> bool:
        data = self._sessions.pop(key, None)
        if data is None:
            return False
        self._last_found = None
        for invocation_id in data.invocations:
            self._rows.pop(invocation_id, None)
        self._artifacts.drop_session(key)
        return True

    async def delete_old_session(self, key: SessionKey, pruning: Pruning) -> bool:
        data = self._sessions.get(key)
        if data is None or data.last_update_time >= pruning.changed_before:
            return False
        now = self._clock()
        runs = [(row.invocation.status, _is_live(row, now)) for row in data.invocations.values()]
        return pruning.deletes(runs) and await self.delete_session(key)

    async def save_artifact(self, save: ArtifactSave) -> int:
        return self._artifacts.save(save)

    async def load_artifact(self, key: ArtifactKey, version: int | None) -> StoredArtifact | None:
        return self._artifacts.load(key, version)

    async def list_artifact_versions(self, key: ArtifactKey) -> list[StoredArtifact]:
        return self._artifacts.versions(key)

    async def list_artifact_names(
        self, app_name: str, user_id: str, session_id: str | None
    ) -> list[str]:
        return self._artifacts.names(app_name, user_id, session_id)

    async def delete_artifact(self, key: ArtifactKey) -> int:
        return self._artifacts.delete(key)

    async def commit_step(self, commit: StepCommit) -> int:
        data = self._require(commit.session)
        read_at = commit.unchanged_since
        if read_at is not None and data.last_update_time > read_at:
            raise stale_session_error(commit.session, data.last_update_time, read_at)
        # The invocation's row looked up once, for the version check and the write.
        row = None if commit.invocation_id is None else data.invocations.get(commit.invocation_id)
        version = self._check_version(row, commit)
        now = self._clock()
        for event in commit.events:
            # The model's own serializer, as model_dump_json calls it, minus that wrapper's
            # keyword plumbing and the decode to str (bytes parse back just the same).
            # Unset (None) fields left out, as the SQL stores keep events: a third less
            # work, and an event loads back with the same fields set on every backend.
            # Found once, not on the class nor the instance: through either (pydantic's
            # metaclass's and model's __getattr__ hooks) the lookup alone costs 500-1k
            # instructions.
            serializer = _SERIALIZERS.get(type(event)) or _serializer_of(type(event))
            stored = serializer.to_json(event, exclude_none=True)
            data.events.append(stored)
            # Found, not `setdefault(id, [])`: that builds a list to throw away, every event.
            kept = data.events_of.get(event.invocation_id)
            if kept is None:
                kept = data.events_of[event.invocation_id] = []
            kept.append(stored)
        if commit.state_delta:
            split = split_state(commit.state_delta)
            data.session.state.update(split.session)
            self._share(commit.session.app_name, commit.session.user_id, split.app, split.user)
        data.last_update_time = now
        if commit.invocation_id is not None:
            self._write_invocation(data, row, commit, version, now)
            if commit.opened or commit.answered:
                self._write_interrupts(data, commit, now)
                self._wakeups.notify(questions_only=not opens_deadline(commit))
            if commit.status is _REWOUND:
                self._close_rewound(data, commit.invocation_id)
        if may_notify(commit):
            for notification in notifications_of(commit, now):
                self._outbox.record(notification)
        return version

    async def commit_session_events(self, commit: StepCommit) -> float:
        await self.commit_step(commit)  # never suspends: nothing lands in between
        return self._require(commit.session).last_update_time

    async def claim_notifications(
        self, receiver: str, owner: str, *, ttl: timedelta, limit: int
    ) -> Delivery | None:
        now = self._clock()
        return self._outbox.claim(receiver, owner, now + ttl.total_seconds(), now, limit)

    async def accept_notification(
        self, receiver: str, owner: str, seq: int, *, ttl: timedelta
    ) -> None:
        self._outbox.accept(receiver, owner, seq, self._clock() + ttl.total_seconds())

    async def defer_notifications(
        self, receiver: str, owner: str, *, attempts: int, next_at: float
    ) -> None:
        self._outbox.defer(receiver, owner, attempts, next_at)

    async def prune_notifications(self, receivers: Sequence[str]) -> int:
        return self._outbox.prune(receivers)

    async def release_notifications(self, owner: str) -> None:
        self._outbox.release(owner)

    def _require(self, key: SessionKey) -> _SessionData:
        found = self._last_found
        if found is not None and found[0] is key:
            return found[1]
        data = self._sessions.get(key)
        if data is None:
            raise SessionNotFoundError(f"session '{key}' does not exist; create it first.")
        self._last_found = (key, data)
        return data

    def _check_version(self, current: _InvocationRow | None, commit: StepCommit) -> int:
        """The invocation's version once `commit` lands on `current` (its row, if any).

        Raises:
            LeaseLostError: the commit's lease is no longer the row's.
            StaleVersionError: the row moved past the version the commit was computed from.
        """
        if commit.invocation_id is None:
            return 0
        actual = current.version if current else 0
        lease = commit.lease
        if lease is not None and current is not None and current.token != lease.token:
            raise lost_error(lease)
        if actual != commit.expected_version:
            raise StaleVersionError(
                f"invocation '{commit.invocation_id}' is at version {actual}, not "
                f"{commit.expected_version}: another process advanced it; reload and retry.",
                actual=actual,
            )
        return actual + 1

    def _write_invocation(
        self,
        data: _SessionData,
        row: _InvocationRow | None,
        commit: StepCommit,
        version: int,
        now: float,
    ) -> None:
        assert commit.invocation_id is not None  # checked by the caller
        if row is None:
            invocation = Invocation(
                id=commit.invocation_id,
                app_name=commit.session.app_name,
                user_id=commit.session.user_id,
                session_id=commit.session.session_id,
                status=commit.status or InvocationStatus.RUNNING,
                fingerprint=commit.fingerprint or "",
                created_at=now,
            )
            row = data.invocations[commit.invocation_id] = _InvocationRow(invocation, version, now)
            self._rows[commit.invocation_id] = row
            if commit.lease is not None:
                row.lease, row.token = commit.lease, commit.lease.token
        # The row is the store's own (only copies leave it), so it is updated in place.
        row.version = version
        row.updated_at = now
        if commit.checkpoint is not None:
            row.checkpoint = to_json(commit.checkpoint)
        if commit.status is not None:
            row.invocation.status = commit.status
            row.invocation.error = commit.error
        if commit.release:
            row.lease = None

    def _session_out(self, data: _SessionData) -> Session:
        session = data.session
        app = self._app_states.get(session.app_name, {})
        user = self._user_states.get((session.app_name, session.user_id), {})
        update: dict[str, object] = {"last_update_time": data.last_update_time}
        if app or user:
            update["state"] = _own(merge_shared_state(session.state, app, user))
        return _copied(session, update)

    def _share(
        self,
        app_name: str,
        user_id: str,
        app: dict[str, JsonValue],
        user: dict[str, JsonValue],
    ) -> None:
        """Write `app:` and `user:` keys where every session of the app or user reads them."""
        if app:
            self._app_states.setdefault(app_name, {}).update(app)
        if user:
            self._user_states.setdefault((app_name, user_id), {}).update(user)

    async def get_user_state(self, app_name: str, user_id: str) -> dict[str, JsonValue]:
        shared = self._user_states.get((app_name, user_id), {})
        return {k.removeprefix(USER_PREFIX): v for k, v in _own_json(shared).items()}

    @staticmethod
    def _invocation_out(row: _InvocationRow) -> Invocation:
        checkpoint = None if row.checkpoint is None else from_json(row.checkpoint)
        return _copied(
            row.invocation,
            {"version": row.version, "updated_at": row.updated_at, "checkpoint": checkpoint},
        )

    def _write_interrupts(self, data: _SessionData, commit: StepCommit, now: float) -> None:
        """Index the questions the step opens and the answers it gives (called only for a
        step that does either: most steps do neither)."""
        assert commit.invocation_id is not None  # checked by the caller
        # Serialized only for a step that opens questions: most steps open none.
        kept = (
            None if commit.checkpoint is None or not commit.opened else to_json(commit.checkpoint)
        )
        for row in commit.opened:
            expires_at = None if row.timeout is None else now + row.timeout
            stored = _copied(row, {"created_at": now, "expires_at": expires_at})
            data.interrupts[(row.invocation_id, row.interrupt_id)] = stored
            if kept is not None:  # the checkpoint this question is asked at, for forks
                data.question_checkpoints[(row.invocation_id, row.interrupt_id)] = kept
        for interrupt_id, answer in commit.answered:
            row = data.interrupts.get((commit.invocation_id, interrupt_id))
            if row is not None:
                data.interrupts[(commit.invocation_id, interrupt_id)] = _copied(
                    row,
                    {
                        "status": InterruptStatus.ANSWERED,
                        "answered_at": now,
                        "answer": answer,
                        "answered_by": commit.answered_by,
                    },
                )

    @staticmethod
    def _close_rewound(data: _SessionData, invocation_id: str) -> None:
        """A rewound invocation's open questions can no longer be answered."""
        for key, row in data.interrupts.items():
            if key[0] == invocation_id and row.status is InterruptStatus.OPEN:
                data.interrupts[key] = row.model_copy(update={"status": InterruptStatus.REWOUND})

    async def load_invocation(
        self, key: SessionKey, invocation_id: InvocationId
    ) -> Invocation | None:
        data = self._sessions.get(key)
        found = data.invocations.get(invocation_id) if data else None
        return self._invocation_out(found) if found else None

    async def list_invocations(
        self, key: SessionKey, *, limit: int | None = None, after: Position | None = None
    ) -> list[Invocation]:
        data = self._sessions.get(key)
        if data is None:
            return []
        rows = _window(data.invocations.values(), lambda r: r.invocation.position, limit, after)
        return [self._invocation_out(row) for row in rows]

    async def find_interrupts(self, key: SessionKey, interrupt_id: InterruptId) -> list[Interrupt]:
        data = self._sessions.get(key)
        if data is None:
            return []
        return [_copied(row) for (_, iid), row in data.interrupts.items() if iid == interrupt_id]

    async def find_asking(
        self, key: SessionKey, function_name: str
    ) -> tuple[Session | None, list[Interrupt]]:
        session = await self.get_session(key, with_events=False)
        data = self._sessions.get(key)
        rows = data.interrupts.values() if data is not None else ()
        asking = [
            _copied(row)
            for row in rows
            if row.function_name == function_name and row.status is InterruptStatus.OPEN
        ]
        return session, sorted(asking, key=lambda row: (row.created_at, row.invocation_id))

    async def claim_answering(self, key: SessionKey, claim: AnswerClaim) -> Answering:
        session = await self.get_session(key, with_events=False)
        rows = await self.find_interrupts(key, claim.interrupt_id)
        now = self._clock()
        invocation_id = answerable(rows, claim, now) if session is not None else None
        row = None if invocation_id is None else self._invocation_row(invocation_id)
        if row is None or _is_held(row, claim.owner, now):
            return Answering(session, rows)
        lease = await self.claim(InvocationId(row.invocation.id), claim.owner, claim.ttl)
        return Answering(session, rows, (lease, self._invocation_out(row)))

    async def list_interrupts(
        self,
        app_name: str,
        user_id: str | None = None,
        *,
        session_id: SessionId | None = None,
        invocation_id: InvocationId | None = None,
        status: InterruptStatus | None = InterruptStatus.OPEN,
        assignee: str | None = None,
        include_assigned: bool = False,
        limit: int | None = None,
        after: Position | None = None,
    ) -> list[Interrupt]:
        def is_users(row: Interrupt) -> bool:
            return (
                user_id is None
                or row.user_id == user_id
                or (include_assigned and row.assignee == user_id)
            )

        rows = [
            row
            for key, data in self._sessions.items()
            if key.app_name == app_name and (session_id is None or key.session_id == session_id)
            for row in data.interrupts.values()
            if is_users(row)
            and (invocation_id is None or row.invocation_id == invocation_id)
            and (status is None or row.status == status)
            and (assignee is None or row.assignee == assignee)
        ]
        shown = _window(rows, lambda r: r.position, limit, after)
        return [_copied(r) for r in shown]

    def lease_new(self, invocation_id: InvocationId, owner: str, ttl: timedelta) -> Lease:
        return Lease(invocation_id, owner, self._clock() + ttl.total_seconds(), 1)

    async def claim(self, invocation_id: InvocationId, owner: str, ttl: timedelta) -> Lease:
        now = self._clock()
        row = self._invocation_row(invocation_id)
        if row is None:
            raise InvocationNotFoundError(
                f"invocation '{invocation_id}' does not exist, so it cannot be claimed."
            )
        held = row.lease
        if held is not None and _is_held(row, owner, now):
            raise busy_error(invocation_id, held.owner, held.expires_at, now)
        row.token += 1
        row.lease = Lease(invocation_id, owner, now + ttl.total_seconds(), row.token)
        return row.lease

    async def claim_loaded(
        self, key: SessionKey, invocation_id: InvocationId, owner: str, ttl: timedelta
    ) -> tuple[Lease, Invocation]:
        data = self._sessions.get(key)
        if data is None or invocation_id not in data.invocations:
            raise InvocationNotFoundError(
                f"invocation '{invocation_id}' does not exist, so it cannot be claimed."
            )
        lease = await self.claim(invocation_id, owner, ttl)
        return lease, self._invocation_out(data.invocations[invocation_id])

    async def renew(self, lease: Lease, ttl: timedelta) -> Lease:
        row = self._invocation_row(lease.invocation_id)
        if row is None or row.lease is None or row.token != lease.token:
            raise lost_error(lease)
        row.lease = Lease(
            lease.invocation_id, lease.owner, self._clock() + ttl.total_seconds(), lease.token
        )
        return row.lease

    async def release(self, lease: Lease) -> None:
        row = self._invocation_row(lease.invocation_id)
        if row is None or row.lease is None or row.token != lease.token:
            return
        row.lease = None
        if row.invocation.status is InvocationStatus.RUNNING:
            self._wakeups.notify()

    async def holder(self, invocation_id: InvocationId) -> Lease | None:
        row = self._invocation_row(invocation_id)
        if row is None or not _is_live(row, self._clock()):
            return None
        return row.lease

    async def claim_orphans(
        self,
        app_names: Sequence[str],
        owner: str,
        ttl: timedelta,
        *,
        limit: int,
        worker: str | None = None,
        spare: str | None = None,
        skip: Sequence[str] = (),
    ) -> list[Claimed]:
        now = self._clock()
        mine = None if worker is None else f"{worker}/"

        def restarted(owner: str) -> bool:
            return (
                mine is not None
                and owner.startswith(mine)
                and not (spare is not None and owner.startswith(spare))
            )

        found = [
            (key, row)
            for key, data in self._sessions.items()
            if key.app_name in app_names
            for row in data.invocations.values()
            if row.invocation.status is InvocationStatus.RUNNING
            and (row.lease is None or row.lease.expires_at <= now or restarted(row.lease.owner))
            and row.invocation.id not in skip
        ]
        found.sort(key=lambda pair: (pair[1].lease.expires_at if pair[1].lease else 0.0))
        claimed: list[Claimed] = []
        for key, row in found[: max(0, limit)]:
            row.token += 1
            row.lease = Lease(
                InvocationId(row.invocation.id), owner, now + ttl.total_seconds(), row.token
            )
            claimed.append(Claimed(key, row.lease))
        return claimed

    async def due_interrupts(
        self, app_names: Sequence[str], *, limit: int, skip: Sequence[str] = ()
    ) -> list[Interrupt]:
        now = self._clock()
        due = [
            row
            for row in self._open_interrupts(app_names)
            if row.expires_at is not None
            and row.expires_at <= now
            and row.invocation_id not in skip
            and self._of_live_invocation(row)
        ]
        due.sort(key=lambda row: row.expires_at or 0.0)
        return [_copied(row) for row in due[: max(0, limit)]]

    async def next_due(self, app_names: Sequence[str], *, skip: Sequence[str] = ()) -> float | None:
        deadlines = [
            row.expires_at
            for row in self._open_interrupts(app_names)
            if row.expires_at is not None
            and row.invocation_id not in skip
            and self._of_live_invocation(row)
        ]
        lapses = [
            row.lease.expires_at if row.lease else 0.0
            for key, data in self._sessions.items()
            if key.app_name in app_names
            for row in data.invocations.values()
            if row.invocation.status is InvocationStatus.RUNNING
        ]
        return min([*deadlines, *lapses], default=None)

    def subscribe(self, *, questions: bool = True) -> Subscription:
        return self._wakeups.subscribe(questions=questions)

    @property
    def wakes_other_processes(self) -> bool:
        return True  # no other process can share a memory store

    def _open_interrupts(self, app_names: Sequence[str]) -> list[Interrupt]:
        return [
            row
            for key, data in self._sessions.items()
            if key.app_name in app_names
            for row in data.interrupts.values()
            if row.status is InterruptStatus.OPEN
        ]

    def _of_live_invocation(self, row: Interrupt) -> bool:
        """Its invocation runs or is paused: the deadlines of ended ones are not due."""
        held = self._rows.get(row.invocation_id)
        return held is not None and held.invocation.status in (
            InvocationStatus.RUNNING,
            InvocationStatus.PAUSED,
        )

    def _invocation_row(self, invocation_id: str) -> _InvocationRow | None:
        return self._rows.get(invocation_id)

    async def close(self) -> None:
        return None


def _is_held(row: _InvocationRow, owner: str, now: float) -> bool:
    """Whether someone other than `owner` holds an unexpired lease on the invocation."""
    held = row.lease
    return held is not None and held.owner != owner and held.expires_at > now


def _is_live(row: _InvocationRow, now: float) -> bool:
    """Whether anyone holds an unexpired lease on the invocation."""
    return row.lease is not None and row.lease.expires_at > now


def _latest_run(data: _SessionData) -> InvocationStatus | None:
    """How the session's latest run stands, or None before its first."""
    runs = data.invocations.values()
    latest = max(runs, key=lambda r: r.invocation.position, default=None)
    return None if latest is None else latest.invocation.status


def _window(
    rows: Iterable[_T],
    position: Callable[[_T], Position],
    limit: int | None,
    after: Position | None,
) -> list[_T]:
    """`rows` in the order of their positions, those after `after`, at most `limit`."""
    ordered = sorted(rows, key=position)
    if after is not None:
        ordered = [row for row in ordered if position(row) > after]
    return ordered if limit is None else ordered[:limit]


def _copied(record: _M, update: dict[str, object] | None = None) -> _M:
    """`record` (with `update`) as a copy whose lists and dicts are its own, so a caller
    changing one changes nothing in the store: `model_copy(deep=True)`, copying only the
    fields that can hold containers, and assembled as `model_copy` would leave it (the
    store's records have neither extra fields nor private attributes). Their other values
    are strings, numbers and enums, which nobody can change: `copy.deepcopy` visited (and
    memoized) each, and pydantic's copy makes three more copies, most of a memory store's
    work in a resume."""
    fields = record.__dict__.copy()
    for name in _container_fields(type(record)):
        fields[name] = _own(fields[name])
    fields_set = set(record.__pydantic_fields_set__)
    if update:
        fields.update(update)
        fields_set.update(update)
    return assemble(type(record), fields, fields_set)


_IMMUTABLE: Final = (str, int, float, bool, type(None))


# Cached per class: a model's fields and their types are fixed once it is defined.
@functools.cache
def _container_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of `model` typed as anything but strings, numbers, booleans, enums or None
    (JSON, lists, dicts): those a copy must copy."""
    return tuple(
        name for name, info in model.model_fields.items() if not _holds_immutable(info.annotation)
    )


def _holds_immutable(annotation: object) -> bool:
    union = get_origin(annotation) in (Union, UnionType)
    for part in get_args(annotation) if union else (annotation,):
        if part not in _IMMUTABLE and not (isinstance(part, type) and issubclass(part, Enum)):
            return False
    return True


def _own_json(state: dict[str, JsonValue]) -> dict[str, JsonValue]:
    return cast(dict[str, JsonValue], _own(state))


def _own(value: object) -> object:
    """`value` with fresh copies of its lists and dicts (anything but JSON deep-copied)."""
    kind = type(value)
    if kind is dict:
        return {key: _own(item) for key, item in cast(dict[str, object], value).items()}
    if kind is list:
        return [_own(item) for item in cast(list[object], value)]
    return value if kind in _IMMUTABLE else copy.deepcopy(value)
