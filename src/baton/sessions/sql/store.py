"""`SqlStore`: the Store protocol over SQLite, PostgreSQL or MySQL, one SQLAlchemy Core path.

The database's strategy (`dialect.SqlDialect`, chosen once from the URL by
`backends.open_dialect`) holds whatever differs between databases.

Each method is one transaction: it picks a synchronous function over a `Connection`
(`reads`, `writes`, `step`, `migrations`) and hands it to the database's executor
(inline or on a worker thread on SQLite, asyncpg's `run_sync` on PostgreSQL; see
`executors`). The hot calls (most steps, the lease calls, the reads of a resume) are
one statement: the store binds it and reads its rows itself, and the executor runs
it as a transaction of its own (`Executor.one`), on PostgreSQL straight on asyncpg
without BEGIN and COMMIT: a statement is atomic and sees one snapshot by itself, and
those two round trips are most of a small call's cost.

Concurrency rests on the database, not on this process: a step commit locks its
session row and advances the invocation with `UPDATE ... WHERE version = expected`
(or an INSERT that does nothing on conflict when creating it), and a claim is one
conditional upsert. So two stores in two processes on one database behave like one store.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar, TypeVarTuple, final

from pydantic import JsonValue
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from baton.errors import BatonError, SessionNotFoundError, StoreUnavailableError
from baton.events import Event
from baton.sessions.artifacts import ArtifactKey, ArtifactSave, StoredArtifact
from baton.sessions.paging import Position
from baton.sessions.sql import answering, artifacts, memories, outbox, reads, writes
from baton.sessions.sql.backends import open_dialect
from baton.sessions.sql.engine_options import check_engine_options
from baton.sessions.sql.executors import OneStatement
from baton.sessions.sql.listener import Announcer
from baton.sessions.sql.memories import MemoryOwner, MemoryRow
from baton.sessions.sql.migrations import migrate
from baton.sessions.sql.schema import session_params
from baton.sessions.sql.shared_state import read_user_state, shared_params
from baton.sessions.sql.step import (
    INVOCATION_VERSION,
    SessionKeys,
    is_stale_step,
    stale_error,
)
from baton.sessions.store import (
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
    lost_error,
    merge_shared_state,
    opens_deadline,
    split_state,
)
from baton.sessions.wakeups import Wakeups
from baton.types import InterruptId, InvocationId, SessionId

__all__ = ["SqlStore"]

T = TypeVar("T")

# Saves of one artifact racing in several processes: each retry sees one more winner.
_SAVE_ATTEMPTS = 20
# PostgreSQL answer claims run again after a step landed while they waited (see
# `answering.is_raced`); past this many, the last read stands unclaimed, and the Runner
# claims apart and checks the answer against the claimed checkpoint.
_RACES = 5
# Read on every step: a global, not the enum's attribute (a lookup on an Enum class passes
# through its metaclass's __getattr__ hook, ~1k instructions on Python 3.11).
_REWOUND = InvocationStatus.REWOUND
Ts = TypeVarTuple("Ts")


@final
class SqlStore:
    """Sessions, checkpoints, interrupts and leases in SQLite, PostgreSQL or MySQL/MariaDB.

    Args:
        url: `sqlite:///path` (also `sqlite+pysqlite://` or `sqlite+aiosqlite://`),
            `postgresql+asyncpg://user@host/db` or `mysql+asyncmy://user@host/db`
            (MySQL 8 or MariaDB 10.6+; also `mysql+aiomysql://`); a PostgreSQL URL may end in
            `?search_path=schema` to keep baton's tables in that schema, a SQLite URL in
            `?synchronous=full` to sync every commit to disk.
        clock: seconds since the epoch, for timestamps and lease expiry.

    Raises:
        ValueError: the URL names an unsupported database.
        ExtraNotInstalledError: the database's driver (asyncpg, asyncmy) is not installed.

    The schema is created or upgraded on first use (see `migrations`). Use a store
    from one event loop and `close()` it before that loop ends.
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Clock = time.time,
        engine_options: Mapping[str, object] | None = None,
    ) -> None:
        self._dialect = open_dialect(url, check_engine_options(engine_options or {}))
        self._executor = self._dialect.open_executor()
        self._clock = clock
        self._migrated = False
        self._migrating = asyncio.Lock()
        self._wakeups = Wakeups()
        self._listener = self._dialect.open_listener(self._wakeups)
        # Where other processes listen (PostgreSQL), steps that change questions tell them.
        self._announcer = None
        if self._listener is not None:
            self._announcer = Announcer(partial(self._one, write=True))
        self._session_keys = SessionKeys()  # a step touches a session it knows by key and pk

    @property
    def url(self) -> str:
        """The database URL (with the driver in use), password hidden."""
        return self._dialect.url.render_as_string(hide_password=True)

    async def _read(self, fn: Callable[[Connection, *Ts], T], *args: *Ts) -> T:
        try:
            await self._ready()
            return await self._executor.transact(fn, *args, write=False)
        except Exception as error:
            if self._dialect.is_unavailable(error):
                raise self._unavailable(error) from error
            raise

    async def _one(
        self, statement: OneStatement, params: Mapping[str, Any], *, write: bool
    ) -> list[tuple[Any, ...]]:
        """Run one statement as its own transaction (see `Executor.one`); its rows."""
        try:
            if not self._migrated:  # tested here: a coroutine fewer on every statement
                await self._ready()
            return await self._executor.one(statement, params, write=write)
        except Exception as error:
            if self._dialect.is_unavailable(error):
                raise self._unavailable(error) from error
            raise

    async def _read_once(self, fn: Callable[[Connection, *Ts], T], *args: *Ts) -> T:
        """`_read` for a read of one statement: no BEGIN/COMMIT around it on PostgreSQL."""
        try:
            await self._ready()
            return await self._executor.read_once(fn, *args)
        except Exception as error:
            if self._dialect.is_unavailable(error):
                raise self._unavailable(error) from error
            raise

    async def _write(self, fn: Callable[[Connection, *Ts], T], *args: *Ts) -> T:
        try:
            if not self._migrated:  # tested here: a coroutine fewer on every step
                await self._ready()
            return await self._executor.transact(fn, *args, write=True)
        except Exception as error:
            if self._dialect.is_unavailable(error):
                raise self._unavailable(error) from error
            raise

    def _unavailable(self, error: Exception) -> StoreUnavailableError:
        """The refusal of a call that could not reach the database (it may succeed later)."""
        return StoreUnavailableError(
            f"the database '{self.url}' cannot be reached right now ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else 'no detail'}); nothing was "
            "changed. Retry in a few seconds."
        )

    async def _ready(self) -> None:
        if self._migrated:
            return
        async with self._migrating:
            if not self._migrated:
                await self._executor.transact(migrate, self._dialect, write=True)
                self._migrated = True

    async def create_session(
        self,
        app_name: str,
        user_id: str,
        *,
        session_id: SessionId | None = None,
        state: dict[str, JsonValue] | None = None,
    ) -> Session:
        """Create a session; raises SessionExistsError when the id is taken."""
        split = split_state(state or {})
        session = Session(
            id=session_id or str(uuid.uuid4()),
            app_name=app_name,
            user_id=user_id,
            state=split.session,
            last_update_time=self._clock(),
        )
        statement = self._dialect.new_session_statement
        if statement is None or split.app or split.user:
            shared = await self._write(writes.insert_session, self._dialect, session, split)
        else:
            params = {**writes.session_row(session), **shared_params(app_name, user_id)}
            rows = await self._one(statement, params, write=True)
            if not rows:
                raise writes.session_taken(session)
            # The new row's key: the run's first step touches the session by it.
            self._session_keys.remember(
                SessionKey(app_name, user_id, SessionId(session.id)), rows[0][0]
            )
            shared = rows[0][1:]  # after the new row's key: its app's and user's keys
        app, user = shared
        session.state = merge_shared_state(session.state, app or {}, user or {})
        return session

    async def get_user_state(self, app_name: str, user_id: str) -> dict[str, JsonValue]:
        """The user's `user:` keys in the app, without their prefix."""
        return await self._read_once(read_user_state, app_name, user_id)

    async def get_session(
        self,
        key: SessionKey,
        *,
        with_events: bool = True,
        event_limit: int | None = None,
        events_after: float | None = None,
    ) -> Session | None:
        """The session (its newest `event_limit` events, or all, and of those the ones
        after its last event stamped before `events_after`), or None."""
        if with_events and event_limit != 0:
            # The session and its events: two statements, one snapshot.
            return await self._read(
                reads.get_session, self._dialect, key, True, event_limit, events_after
            )
        rows = await self._one(reads.SESSION, session_params(key), write=False)
        if not rows:
            return None
        # Its key, for the steps that follow (a session another process created or
        # stepped: requests of one run spread over server processes).
        self._session_keys.remember(key, reads.session_pk(rows[0]))
        return reads.session_from(rows[0])

    async def list_question_checkpoints(self, key: SessionKey) -> dict[tuple[str, str], JsonValue]:
        """(invocation id, interrupt id) -> the invocation's checkpoint when it asked that."""
        return await self._read_once(reads.list_question_checkpoints, key)

    async def list_sessions(
        self,
        app_name: str,
        user_id: str | None = None,
        *,
        session_id: SessionId | None = None,
        limit: int | None = None,
        after: Position | None = None,
    ) -> list[Session]:
        """Sessions of an app, by user and id, without their events (see `Store`)."""
        return await self._read_once(
            reads.list_sessions, app_name, user_id, session_id, limit, after
        )

    async def recent_sessions(
        self, app_name: str, user_id: str, *, limit: int
    ) -> list[SessionActivity]:
        """The user's `limit` sessions of the app updated last, the latest first."""
        return await self._read_once(reads.recent_sessions, app_name, user_id, limit)

    async def delete_session(self, key: SessionKey) -> bool:
        """Delete a session and everything in it; False when there was none."""
        return await self._write(writes.delete_session, key)

    async def commit_step(self, commit: StepCommit) -> int:
        """Land a step atomically and return the invocation's new version.

        Raises:
            SessionNotFoundError: the session does not exist.
            StaleVersionError: `expected_version` is not the invocation's version.
        """
        one_statement = self._dialect.one_statement_step(commit, self._clock())
        if self._announcer is not None:
            self._announcer.next_statement()  # an earlier step's, sent while this one waits
        if one_statement is not None:
            # The statement awaited here, as `_one` would, not through coroutines of its
            # own: each level between a step and asyncpg is started, resumed on the reply
            # and finished on every step.
            try:
                if not self._migrated:
                    await self._ready()
                rows = await self._executor.one(*one_statement, write=True)
            except Exception as error:
                if self._dialect.is_unavailable(error):
                    raise self._unavailable(error) from error
                if not is_stale_step(error):
                    raise
                raise await self._stale(commit) from None
            if not rows:
                raise SessionNotFoundError(
                    f"session '{commit.session}' does not exist; create it first."
                )
            version = commit.expected_version + 1
        else:
            version = await self._write(
                self._dialect.write_step, commit, self._clock(), self._session_keys
            )
        if commit.opened or commit.answered or commit.status is _REWOUND:
            work = opens_deadline(commit)
            self._wakeups.notify(questions_only=not work)
            if self._announcer is not None:
                going_on = commit.lease is not None and not commit.release
                self._announcer.announce(commit.session.app_name, work=work, run_goes_on=going_on)
        return version

    async def delete_old_session(self, key: SessionKey, pruning: Pruning) -> bool:
        """Delete a session if `pruning` still picks it (see `Store`)."""
        return await self._write(writes.delete_old_session, key, pruning, self._clock())

    async def commit_session_events(self, commit: StepCommit) -> float:
        """Land a commit outside any run; the time it set as the session's last change."""
        now = self._clock()
        await self._write(self._dialect.write_step, commit, now, self._session_keys)
        return now

    async def _stale(self, commit: StepCommit) -> BatonError:
        """The error of a one-statement step found stale (nothing landed), with the
        invocation's version as it is now."""
        found = await self._one(INVOCATION_VERSION, {"key_id": commit.invocation_id}, write=False)
        return stale_error(commit, found)

    async def load_invocation(
        self, key: SessionKey, invocation_id: InvocationId
    ) -> Invocation | None:
        """The invocation with its checkpoint, or None."""
        params = {"key_id": invocation_id, **session_params(key)}
        rows = await self._one(reads.INVOCATION, params, write=False)
        return reads.invocation_from(key, rows[0]) if rows else None

    async def list_invocations(
        self, key: SessionKey, *, limit: int | None = None, after: Position | None = None
    ) -> list[Invocation]:
        """The session's invocations, oldest first (see `Store`)."""
        return await self._read_once(reads.list_invocations, key, limit, after)

    async def list_events(self, key: SessionKey, invocation_id: InvocationId) -> list[Event]:
        """One invocation's events, oldest first: one statement, by index (see `Store`)."""
        params = {"key_invocation_id": invocation_id, **session_params(key)}
        return reads.events_from(await self._one(reads.INVOCATION_EVENTS, params, write=False))

    async def find_interrupts(self, key: SessionKey, interrupt_id: InterruptId) -> list[Interrupt]:
        """Index rows with that id in the session (open or answered), by index, not scan."""
        params = {"key_interrupt_id": interrupt_id, **session_params(key)}
        return reads.interrupts_from(await self._one(reads.INTERRUPTS_BY_ID, params, write=False))

    async def find_asking(
        self, key: SessionKey, function_name: str
    ) -> tuple[Session | None, list[Interrupt]]:
        """The session and its open interrupts asked with `function_name`: one statement."""
        params = {"key_function_name": function_name, **session_params(key)}
        rows = await self._one(reads.SESSION_ASKING, params, write=False)
        return reads.session_interrupts_from(rows)

    async def claim_answering(self, key: SessionKey, claim: AnswerClaim) -> Answering:
        """An answer's checks read, with the claim it lets through (see `Store`): one
        statement on PostgreSQL, a transaction elsewhere."""
        now = self._clock()
        statement = self._dialect.answering_statement(claim.with_events)
        if statement is None:
            try:
                return await self._write(answering.claim_answering, self._dialect, key, claim, now)
            except answering.Refused as refused:  # its claim was rolled back
                return refused.answering
        rows = await self._one(statement, answering.answering_params(key, claim, now), write=True)
        for _ in range(_RACES):
            if not answering.is_raced(rows):
                break
            rows = await self._one(
                statement, answering.answering_params(key, claim, now), write=True
            )
        return answering.answering_from(key, claim, rows, now)

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
        """Interrupts matching the filters, oldest first (see `Store`)."""
        return await self._read_once(
            reads.list_interrupts,
            app_name,
            user_id,
            session_id,
            invocation_id,
            status,
            assignee,
            include_assigned,
            limit,
            after,
        )

    async def claim_notifications(
        self, receiver: str, owner: str, *, ttl: timedelta, limit: int
    ) -> Delivery | None:
        """A receiver's next notifications, claimed (see `Store.claim_notifications`)."""
        now = self._clock()
        window = (now, now + ttl.total_seconds())
        claim = outbox.claim_notifications
        return await self._write(claim, self._dialect, receiver, owner, window, limit)

    async def accept_notification(
        self, receiver: str, owner: str, seq: int, *, ttl: timedelta
    ) -> None:
        """Record that `receiver` accepted everything up to `seq`; renew the claim."""
        until = self._clock() + ttl.total_seconds()
        await self._write(outbox.accept_notification, receiver, owner, (seq, until))

    async def defer_notifications(
        self, receiver: str, owner: str, *, attempts: int, next_at: float
    ) -> None:
        """Record a failed round to `receiver` and release `owner`'s claim on it."""
        await self._write(outbox.defer_notifications, receiver, owner, (attempts, next_at))

    async def prune_notifications(self, receivers: Sequence[str]) -> int:
        """Delete the notifications every one of `receivers` accepted."""
        return await self._write(outbox.prune_notifications, receivers)

    async def release_notifications(self, owner: str) -> None:
        """Give up `owner`'s claims."""
        await self._write(outbox.release_notifications, owner)

    def lease_new(self, invocation_id: InvocationId, owner: str, ttl: timedelta) -> Lease:
        """The lease a new invocation starts with (token 1), written by its first step."""
        return Lease(invocation_id, owner, self._clock() + ttl.total_seconds(), 1)

    async def claim(self, invocation_id: InvocationId, owner: str, ttl: timedelta) -> Lease:
        """Take an existing invocation's lease with a new token (see `Store.claim`)."""
        now = self._clock()
        wanted = Lease(invocation_id, owner, now + ttl.total_seconds())
        rows = await self._one(writes.CLAIM, writes.claim_params(wanted, now), write=True)
        if rows:
            return Lease(invocation_id, owner, wanted.expires_at, int(rows[0][0]))
        # Refused: who holds it, read after the claim (for the message only).
        held = await self._one(writes.HOLDER, {"key_invocation_id": invocation_id}, write=False)
        raise writes.refusal(invocation_id, held, now)

    async def claim_loaded(
        self, key: SessionKey, invocation_id: InvocationId, owner: str, ttl: timedelta
    ) -> tuple[Lease, Invocation]:
        """`claim`, returning the invocation too (see `Store.claim_loaded`)."""
        now = self._clock()
        wanted = Lease(invocation_id, owner, now + ttl.total_seconds())
        params = {**writes.claim_params(wanted, now), **session_params(key)}
        rows = await self._one(self._dialect.claim_loaded_statement, params, write=True)
        if rows:
            token, *fields = rows[0][: len(writes.CLAIM_LOADED.returning)]
            invocation = reads.invocation_from(key, tuple(fields), writes.CLAIM_LOADED_FIELDS)
            return Lease(invocation_id, owner, wanted.expires_at, int(token)), invocation
        held = await self._one(writes.HOLDER, {"key_invocation_id": invocation_id}, write=False)
        if held and await self.load_invocation(key, invocation_id) is None:
            held = []  # another session's: not found in this one
        raise writes.refusal(invocation_id, held, now)

    async def renew(self, lease: Lease, ttl: timedelta) -> Lease:
        """Extend a held lease; LeaseLostError when its token no longer holds it."""
        expires_at = self._clock() + ttl.total_seconds()
        params = writes.renew_params(lease, expires_at)
        if not await self._one(writes.RENEW_LEASE, params, write=True):
            raise lost_error(lease)
        return Lease(lease.invocation_id, lease.owner, expires_at, lease.token)

    async def release(self, lease: Lease) -> None:
        """Give the lease up; a running invocation released so wakes recovery at once."""
        # Where other processes are told (PostgreSQL), the same statement tells them.
        notifies = self._listener is not None
        statement = self._dialect.release_statement
        rows = await self._one(statement, writes.lease_params(lease), write=True)
        if writes.released_running(rows, notified=notifies):
            self._wakeups.notify()

    async def holder(self, invocation_id: InvocationId) -> Lease | None:
        """The unexpired lease on the invocation, or None when nobody runs it."""
        now = self._clock()
        rows = await self._one(writes.HOLDER, {"key_invocation_id": invocation_id}, write=False)
        return writes.holder_from(invocation_id, rows, now)

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
        """Claim running invocations with no live lease (see `Store.claim_orphans`)."""
        if not app_names or limit < 1:
            return []
        now = self._clock()
        request = writes.OrphanClaim(
            tuple(app_names), owner, now + ttl.total_seconds(), limit, worker, spare, tuple(skip)
        )
        return await self._write(writes.claim_orphans, self._dialect, request, now)

    async def due_interrupts(
        self, app_names: Sequence[str], *, limit: int, skip: Sequence[str] = ()
    ) -> list[Interrupt]:
        """Open interrupts of these apps whose deadline has passed, earliest first (see
        `Store.due_interrupts`)."""
        if not app_names:
            return []
        return await self._read_once(
            reads.due_interrupts, tuple(app_names), self._clock(), limit, tuple(skip)
        )

    async def next_due(self, app_names: Sequence[str], *, skip: Sequence[str] = ()) -> float | None:
        """When something of these apps next falls due (see `Store.next_due`), or None."""
        if not app_names:
            return None
        return await self._read_once(reads.next_due, tuple(app_names), tuple(skip))

    async def save_artifact(self, save: ArtifactSave) -> int:
        """Add a version of an artifact (see `Store.save_artifact`)."""
        for _ in range(_SAVE_ATTEMPTS - 1):
            try:
                return await self._write(artifacts.save_artifact, save, self._clock())
            except IntegrityError as error:
                # Another process took the version number first: number it again.
                if not self._dialect.is_unique_violation(error):
                    raise
        return await self._write(artifacts.save_artifact, save, self._clock())

    async def load_artifact(self, key: ArtifactKey, version: int | None) -> StoredArtifact | None:
        """That version with its content (the latest when `version` is None), or None."""
        return await self._read_once(artifacts.load_artifact, key, version)

    async def list_artifact_versions(self, key: ArtifactKey) -> list[StoredArtifact]:
        """Every version's metadata, oldest first."""
        return await self._read_once(artifacts.list_artifact_versions, key)

    async def list_artifact_names(
        self, app_name: str, user_id: str, session_id: str | None
    ) -> list[str]:
        """Names in the session (when given) and the user's `user:` names, sorted."""
        return await self._read_once(artifacts.list_artifact_names, app_name, user_id, session_id)

    async def delete_artifact(self, key: ArtifactKey) -> int:
        """Delete every version of the artifact; how many there were."""
        return await self._write(artifacts.delete_artifact, key)

    async def replace_session_memories(self, owner: MemoryOwner, rows: Sequence[MemoryRow]) -> None:
        """Make `rows` the memories of the owner's session (see `baton.database_memory`)."""
        await self._write(memories.replace_session_memories, owner, rows)

    async def add_memories(
        self, owner: MemoryOwner, rows: Sequence[MemoryRow], *, skip_known: bool
    ) -> None:
        """Add memories to the owner's session's; `skip_known`: not those it has by id."""
        await self._write(partial(memories.add_memories, skip_known=skip_known), owner, rows)

    async def search_memories(
        self, app_name: str, user_id: str, words: frozenset[str], limit: int
    ) -> list[JsonValue]:
        """The entries of the user's memories sharing the most of `words`, best first."""
        return await self._read(memories.search_memories, app_name, user_id, words, limit)

    async def forget_memory(self, app_name: str, user_id: str, memory_id: str) -> None:
        """Delete the user's memory with that id and keep it from coming back."""
        await self._write(memories.forget_memory, self._dialect, app_name, user_id, memory_id)

    def subscribe(self, *, questions: bool = True) -> Subscription:
        """Wake-ups from this store and, on PostgreSQL, from every process on the database
        (see `Store.subscribe`)."""
        if self._listener is not None:
            self._listener.start()
        return self._wakeups.subscribe(questions=questions)

    @property
    def wakes_other_processes(self) -> bool:
        """True on PostgreSQL (LISTEN/NOTIFY); on SQLite and MySQL other processes' changes
        are found by polling (a worker looks once per lease TTL)."""
        return self._listener is not None

    async def close(self) -> None:
        """Close every pooled connection (and, on SQLite, stop the worker thread)."""
        if self._listener is not None:
            await self._listener.stop()
        if self._announcer is not None:
            await self._announcer.flush()
        await self._executor.close()
