"""The Store protocol every backend implements, and the records it reads and writes.

The engine never touches a store: it produces `StepCommit`s and the Runner hands
them to `commit_step`, which lands each one atomically or not at all.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Protocol, TypeAlias

from pydantic import Field, JsonValue, computed_field

from baton.errors import InvocationBusyError, LeaseLostError, StaleSessionError, StateDeleteError
from baton.events import ONE_ANSWER_FUNCTIONS, Event
from baton.sessions.artifacts import ArtifactKey, ArtifactSave, StoredArtifact
from baton.sessions.paging import Position
from baton.types import InterruptId, InvocationId, SessionId, WireModel

__all__ = [
    "APP_PREFIX",
    "TEMP_PREFIX",
    "TIMEOUT_ANSWERER",
    "USER_PREFIX",
    "AnswerClaim",
    "Answering",
    "Claimed",
    "Clock",
    "Delivery",
    "Interrupt",
    "InterruptStatus",
    "Invocation",
    "InvocationStatus",
    "Lease",
    "Notification",
    "Session",
    "SessionActivity",
    "SessionKey",
    "SharedState",
    "StatePrefixes",
    "StepCommit",
    "Store",
    "Subscription",
    "answerable",
    "busy_error",
    "drop_temp_keys",
    "ends_run",
    "has_temp_keys",
    "lost_error",
    "merge_shared_state",
    "opens_deadline",
    "split_state",
    "stale_session_error",
    "strip_temp_state",
]

TIMEOUT_ANSWERER = "system:timeout"
"""Who answered a question whose deadline passed: `Interrupt.answered_by` of such rows."""

Clock: TypeAlias = Callable[[], float]
"""Seconds since the epoch; injected so lease expiry can be tested without sleeping."""


@dataclass(frozen=True)
class SessionKey:
    """The three names that identify a session."""

    app_name: str
    user_id: str
    session_id: SessionId

    def __str__(self) -> str:
        return f"{self.app_name}/{self.user_id}/{self.session_id}"


class Session(WireModel):
    """A conversation: its state and (when loaded) its events."""

    id: str
    app_name: str
    user_id: str
    state: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    events: list[Event] = Field(default_factory=list[Event])
    last_update_time: float = 0.0

    @property
    def key(self) -> SessionKey:
        return SessionKey(self.app_name, self.user_id, SessionId(self.id))

    @property
    def position(self) -> Position:
        """Where it stands in `Store.list_sessions` (by user, then id)."""
        return (self.user_id, self.id)


class InvocationStatus(enum.StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    # Undone by a rewind (`Runner.rewind_async`): its events no longer count, and it can
    # be neither answered nor continued. A step committing this status also closes the
    # invocation's open interrupts (as `InterruptStatus.REWOUND`).
    REWOUND = "rewound"


class Invocation(WireModel):
    """One run of an app in a session, with its checkpoint."""

    id: str
    app_name: str
    user_id: str
    session_id: str
    status: InvocationStatus
    fingerprint: str
    checkpoint: JsonValue = None
    version: int = 1
    created_at: float = 0.0
    updated_at: float = 0.0
    error: str | None = None

    @property
    def session_key(self) -> SessionKey:
        return SessionKey(self.app_name, self.user_id, SessionId(self.session_id))

    @property
    def position(self) -> Position:
        """Where it stands in `Store.list_invocations` (oldest first)."""
        return (self.created_at, self.id)


class InterruptStatus(enum.StrEnum):
    OPEN = "open"
    ANSWERED = "answered"
    REWOUND = "rewound"  # asked by an invocation that was rewound before it was answered


class Interrupt(WireModel):
    """A question a run asked; indexed so a response finds its invocation without a scan."""

    app_name: str
    user_id: str
    session_id: str
    invocation_id: str
    interrupt_id: str
    node_path: str
    function_name: str
    message: str | None = None
    payload: JsonValue = None
    response_schema: dict[str, JsonValue] | None = None
    status: InterruptStatus = InterruptStatus.OPEN
    created_at: float = 0.0
    answered_at: float | None = None
    answer: JsonValue = None
    answered_by: str | None = None
    # A deadline: `timeout` seconds after the question opens (`expires_at`, set by the
    # store), a worker answers it with `on_timeout` when `answers_on_timeout`, or fails
    # the asking node with InputTimeoutError.
    timeout: float | None = None
    expires_at: float | None = None
    on_timeout: JsonValue = None
    answers_on_timeout: bool = False
    # Who must answer (`RequestInput(assignee=)`): listed in their pending inputs too, and
    # only an answer given as them is accepted. None: the session's user answers.
    assignee: str | None = None

    @computed_field
    @property
    def occurrence(self) -> str:
        """This asking of the question: a loop that asks the same id again asks a new
        occurrence. An answer sent with it answers only this one (`Runner.run_async`'s
        `occurrences`, the respond route's `occurrence`)."""
        ident = f"{self.invocation_id}|{self.node_path}|{self.interrupt_id}"
        return hashlib.sha256(ident.encode()).hexdigest()[:16]

    @property
    def position(self) -> Position:
        """Where it stands in `Store.list_interrupts` (oldest first)."""
        return (self.created_at, self.invocation_id, self.interrupt_id)


@dataclass(frozen=True)
class SessionActivity:
    """A session in a list of recent activity: the session (without events, its
    `last_update_time` the time of its latest step) and how its latest run stands
    (None before the first run)."""

    session: Session
    latest_run: InvocationStatus | None


@dataclass(frozen=True)
class Pruning:
    """Which old sessions `Store.delete_old_session` deletes: those unchanged since before
    `changed_before`, no run of which holds a live lease (one executes now), and, unless
    `include_unfinished`, whose runs all completed."""

    changed_before: float
    include_unfinished: bool

    def deletes(self, runs: Sequence[tuple[InvocationStatus, bool]]) -> bool:
        """Whether a session old enough, with these runs (status, lease live), goes."""
        if any(live for _, live in runs):
            return False
        done = InvocationStatus.COMPLETED
        return self.include_unfinished or all(status is done for status, _ in runs)


@dataclass(slots=True)  # not frozen: a frozen init costs a microsecond per step
class StepCommit:
    """Everything one step lands, atomically.

    `expected_version` is the invocation's version the step was computed from; 0
    creates the invocation (with `fingerprint`). A mismatch raises StaleVersionError
    and nothing lands. `invocation_id=None` appends session events outside any run.
    """

    session: SessionKey
    invocation_id: InvocationId | None
    expected_version: int
    events: tuple[Event, ...] = ()
    state_delta: dict[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    checkpoint: JsonValue = None
    status: InvocationStatus | None = None
    fingerprint: str | None = None
    error: str | None = None
    opened: tuple[Interrupt, ...] = ()
    answered: tuple[tuple[InterruptId, JsonValue], ...] = ()
    answered_by: str | None = None
    # The lease the step is computed under. Creating an invocation writes it as its
    # lease; advancing one lands only while its token still holds the lease (fencing),
    # else LeaseLostError and nothing lands. None: an unfenced administrative write.
    lease: Lease | None = None
    # The run's last step gives its lease up as it lands (the invocation is paused or
    # ended): what `release` would do after it, in the same write.
    release: bool = False
    # History copied from another session (a fork): a run landing already ended did
    # not end now, so no run notification is recorded for it.
    copied: bool = False
    # The session's last change as the writer read it: the step lands only if the
    # session has not changed since (checked in the step's transaction, so two writers
    # that read it together cannot both land), else StaleSessionError and nothing lands.
    # For commits outside any run (`invocation_id=None`, `append_event`'s): a run's steps
    # are fenced by its version and lease, and PostgreSQL's one-statement step skips it.
    unchanged_since: float | None = None
    # The answers in `answered` that hold a user's secret (a credential request's): kept
    # in the index as any answer, left out of the notifications the step records.
    private_answers: frozenset[InterruptId] = frozenset()


@dataclass(slots=True)
class Notification:
    """One message for the webhook receivers, as the outbox holds it.

    `body` is the JSON document POSTed (it carries `id`, so a receiver can drop a
    notification it already handled); `seq` is its place in the outbox, in the order
    notifications were recorded (0 until recorded).
    """

    id: str
    body: dict[str, JsonValue]
    created_at: float
    seq: int = 0

    @property
    def kind(self) -> str:
        return str(self.body["type"])


@dataclass(frozen=True)
class Delivery:
    """The notifications one receiver is to be sent next, claimed by one sender: the
    oldest it has not accepted, in order, and how many rounds to it failed in a row."""

    receiver: str
    notifications: list[Notification]
    attempts: int


@dataclass(frozen=True)
class Lease:
    """The right to execute an invocation until `expires_at` (seconds since the epoch).

    Every claim of the invocation takes a new `token`, never one an earlier claim of it
    took: a step commit lands only while its lease's token is the invocation's current
    one, so a holder that stalled past its expiry and was replaced (or whose claim a
    database crash undid) can write nothing more.
    """

    invocation_id: InvocationId
    owner: str
    expires_at: float
    token: int = 1


@dataclass(frozen=True)
class Claimed:
    """An orphaned invocation a recovery claim took over: where it is, and its new lease."""

    key: SessionKey
    lease: Lease


@dataclass(frozen=True)
class AnswerClaim:
    """An answer's first read and the claim it may take (`Store.claim_answering`): the
    interrupt id answered (first), what the caller says of that answer, and who claims
    the invocation it answers, for how long."""

    interrupt_id: InterruptId
    owner: str
    ttl: timedelta
    # The invocation the caller named, the occurrence it saw, who answers, and whether
    # the answer is a progress update (`will_continue`): as `Runner.run_async` takes them.
    invocation_id: InvocationId | None = None
    occurrence: str | None = None
    answered_by: str | None = None
    progress: bool = False
    # Whether the resume reads the claimed invocation's events (an agent's does): a store
    # that can read them with the claim returns them (`Answering.events`).
    with_events: bool = False
    # The workflow fingerprint the resume runs under (the Runner's): when the claimed
    # invocation's is the same, a store may hand this back as its fingerprint instead
    # of reading the stored text (the text is what it then equals, byte for byte).
    fingerprint: str | None = None


@dataclass(frozen=True)
class Answering:
    """What `Store.claim_answering` read: the session (without events; None when there
    is none), its index rows with the interrupt id (as `find_interrupts` gives them),
    the lease and invocation it claimed (None when it claimed nothing), and when the
    claim asked for them (`AnswerClaim.with_events`) and the store read them with it,
    the claimed invocation's events as `list_events` gives them (decoded when called;
    None: not read, `list_events` reads them)."""

    session: Session | None
    interrupts: list[Interrupt]
    claimed: tuple[Lease, Invocation] | None = None
    events: Callable[[], list[Event]] | None = None


class Subscription(Protocol):
    """Wake-ups from the store, in this process or, where the database can say so, in
    another one: work a worker acts on happened (a question with a deadline opened, a
    running invocation's lease was released) or, for a subscription made with
    `questions`, any change to questions (one opened, answered, or closed by a rewind)."""

    async def wait(self, within: float) -> bool:
        """Wait for the next wake-up, at most `within` seconds; False when none came."""
        ...

    def close(self) -> None:
        """Stop receiving wake-ups."""
        ...


class Store(Protocol):
    """Durable storage for sessions, events, checkpoints, interrupts and leases."""

    async def create_session(
        self,
        app_name: str,
        user_id: str,
        *,
        session_id: SessionId | None = None,
        state: dict[str, JsonValue] | None = None,
    ) -> Session:
        """Create a session; raises SessionExistsError when the id is taken."""
        ...

    async def get_session(
        self,
        key: SessionKey,
        *,
        with_events: bool = True,
        event_limit: int | None = None,
        events_after: float | None = None,
    ) -> Session | None:
        """The session (its newest `event_limit` events, or all), or None; with
        `events_after`, of those only the ones after the session's last event stamped
        before that time (the reference's `after_timestamp`)."""
        ...

    async def list_sessions(
        self,
        app_name: str,
        user_id: str | None = None,
        *,
        session_id: SessionId | None = None,
        limit: int | None = None,
        after: Position | None = None,
    ) -> list[Session]:
        """Sessions of an app (optionally of one user, or with one id), without their
        events, ordered by user then id: at most `limit` of them, those after the
        position `after` (a `Session.position`) when given."""
        ...

    async def recent_sessions(
        self, app_name: str, user_id: str, *, limit: int
    ) -> list[SessionActivity]:
        """The user's `limit` sessions of the app updated last, the latest first."""
        ...

    async def get_user_state(self, app_name: str, user_id: str) -> dict[str, JsonValue]:
        """The user's `user:` keys in the app, without their prefix ({} when none): what
        every session of that user reads. Deleting sessions leaves them."""
        ...

    async def list_question_checkpoints(self, key: SessionKey) -> dict[tuple[str, str], JsonValue]:
        """(invocation id, interrupt id) -> the invocation's checkpoint as it was when that
        question was last asked (written with the step that asked it); a fork at the
        question starts from it."""
        ...

    async def delete_session(self, key: SessionKey) -> bool:
        """Delete a session and everything in it; False when there was none."""
        ...

    async def delete_old_session(self, key: SessionKey, pruning: Pruning) -> bool:
        """Delete a session and everything in it if `pruning` still picks it, checked in
        the same transaction (a session changed or claimed meanwhile stays); False when
        it stays or there was none."""
        ...

    async def commit_step(self, commit: StepCommit) -> int:
        """Land a step atomically and return the invocation's new version.

        Raises:
            SessionNotFoundError: the session does not exist.
            StaleVersionError: `expected_version` is not the invocation's version.
        """
        ...

    async def commit_session_events(self, commit: StepCommit) -> float:
        """Land a commit outside any run (`invocation_id=None`) atomically and return the
        time it set as the session's last change: what the writer's `Session` holds next,
        so a change landing after this one is not taken for this writer's own.

        Raises:
            SessionNotFoundError: the session does not exist.
            StaleSessionError: the session changed after `commit.unchanged_since`.
        """
        ...

    async def load_invocation(
        self, key: SessionKey, invocation_id: InvocationId
    ) -> Invocation | None:
        """The invocation with its checkpoint, or None."""
        ...

    async def list_invocations(
        self, key: SessionKey, *, limit: int | None = None, after: Position | None = None
    ) -> list[Invocation]:
        """The session's invocations, oldest first: at most `limit` of them, those after
        the position `after` (an `Invocation.position`) when given."""
        ...

    async def list_events(self, key: SessionKey, invocation_id: InvocationId) -> list[Event]:
        """The events of one invocation of the session, oldest first, read by index: what
        an agent resuming its run reads, however long the session's history."""
        ...

    async def find_interrupts(self, key: SessionKey, interrupt_id: InterruptId) -> list[Interrupt]:
        """Index rows with that id in the session (open or answered), by index, not scan."""
        ...

    async def find_asking(
        self, key: SessionKey, function_name: str
    ) -> tuple[Session | None, list[Interrupt]]:
        """The session (without events; None when there is none) and its open interrupts
        asked with `function_name`, oldest first, read together: a message to an app
        whose task agents may wait for the user's reply learns whether one does in the
        read of its session (see `baton.planning`)."""
        ...

    async def claim_answering(self, key: SessionKey, claim: AnswerClaim) -> Answering:
        """The session and its rows with `claim.interrupt_id`, read together (an answer's
        checks), and, only when those rows let the answer through (`answerable`) and
        nobody else holds an unexpired lease on the invocation it answers, the claim of
        that invocation as `claim_loaded` takes it, in the same write: a resume's checks
        and claim in one round trip. An answer the rows refuse claims nothing; a caller
        whose own checks refuse it after a claim releases the lease.
        """
        ...

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
        """Interrupts matching the filters, oldest first: at most `limit` of them, those
        after the position `after` (an `Interrupt.position`) when given. Read off an
        index from `after` on, so a page costs the same however many come before it.

        `user_id` matches the session's user; with `include_assigned`, also the questions
        assigned to that user in other users' sessions (a person's inbox). `assignee`
        keeps only the questions assigned to that user.
        """
        ...

    def lease_new(self, invocation_id: InvocationId, owner: str, ttl: timedelta) -> Lease:
        """The lease a new invocation starts with (token 1), written by its first step
        (`StepCommit.lease` with `expected_version=0`); nothing is written now."""
        ...

    async def claim(self, invocation_id: InvocationId, owner: str, ttl: timedelta) -> Lease:
        """Take an existing invocation's lease with a new token (no earlier claim's).

        Raises:
            InvocationBusyError: another owner holds an unexpired lease on it.
            InvocationNotFoundError: there is no such invocation.
        """
        ...

    async def claim_loaded(
        self, key: SessionKey, invocation_id: InvocationId, owner: str, ttl: timedelta
    ) -> tuple[Lease, Invocation]:
        """`claim`, and the invocation as `load_invocation` gives it, by the same write:
        a resume claims and reads its checkpoint in one round trip.

        Raises:
            InvocationBusyError: another owner holds an unexpired lease on it.
            InvocationNotFoundError: the session has no such invocation.
        """
        ...

    async def renew(self, lease: Lease, ttl: timedelta) -> Lease:
        """Extend a held lease; LeaseLostError when its token no longer holds it."""
        ...

    async def release(self, lease: Lease) -> None:
        """Give the lease up (nothing happens when it was already taken over). A running
        invocation released this way is at once claimable by `claim_orphans`."""
        ...

    async def holder(self, invocation_id: InvocationId) -> Lease | None:
        """The unexpired lease on the invocation, or None when nobody runs it."""
        ...

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
        """Claim up to `limit` invocations of these apps that are `running` with no live
        lease (their holder died, stalled, lost the database or handed them over) — and,
        when `worker` is given, also those whose lease is held by an owner named
        `worker/...` (that worker restarted), except owners starting with `spare` (this
        very process's own calls). Never the invocations in `skip` (those the caller runs
        already, whose lease may have lapsed while it ran). Each is claimed by exactly one
        caller, even when several processes ask at once. Oldest leases first."""
        ...

    async def due_interrupts(
        self, app_names: Sequence[str], *, limit: int, skip: Sequence[str] = ()
    ) -> list[Interrupt]:
        """Open interrupts of these apps whose deadline has passed, earliest first; none
        of the invocations in `skip` (those the caller handles already or tries later),
        and none of an invocation that is not running or paused (a failed one's deadline
        is due again once a person continues it)."""
        ...

    async def next_due(self, app_names: Sequence[str], *, skip: Sequence[str] = ()) -> float | None:
        """When something of these apps next falls due, or None: the earliest deadline of
        an open interrupt (as `due_interrupts` counts them) or lease expiry of a running
        invocation (a released one is due now). A worker sleeps until then unless woken."""
        ...

    def subscribe(self, *, questions: bool = True) -> Subscription:
        """Wake-ups about work (deadlines, released leases) and, with `questions`, about
        every change to questions (see `Subscription`). A worker asks for work only: on
        PostgreSQL, a process none of whose subscribers asks for questions is not woken
        by the other processes' answers."""
        ...

    async def claim_notifications(
        self, receiver: str, owner: str, *, ttl: timedelta, limit: int
    ) -> Delivery | None:
        """Claim for `owner`, to deliver within `ttl`, the oldest notifications (up to
        `limit`, in the order recorded) that `receiver` (its URL) has not accepted.

        Each receiver has its own place in the outbox: one that is down holds back only
        its own notifications. None while another owner's claim on that receiver runs (one
        sender per receiver, so it gets them in order; a dead sender's claim lapses), while
        its next try is not due (`defer_notifications`), or when it has everything.
        """
        ...

    async def accept_notification(
        self, receiver: str, owner: str, seq: int, *, ttl: timedelta
    ) -> None:
        """Record that `receiver` accepted every notification up to `seq` (only while
        `owner` claims it), and hold the claim `ttl` longer; its failed rounds start
        again from zero."""
        ...

    async def defer_notifications(
        self, receiver: str, owner: str, *, attempts: int, next_at: float
    ) -> None:
        """Record a failed round to `receiver` (`attempts` in a row; nothing is claimed
        for it before `next_at`) and release `owner`'s claim on it."""
        ...

    async def prune_notifications(self, receivers: Sequence[str]) -> int:
        """Delete the notifications every one of `receivers` accepted (all of them, so the
        outbox holds only what some receiver still waits for); how many."""
        ...

    async def release_notifications(self, owner: str) -> None:
        """Give up `owner`'s claims on receivers (a sender stopping)."""
        ...

    @property
    def wakes_other_processes(self) -> bool:
        """True when every process that can share this store is heard by `subscribe`
        (PostgreSQL's NOTIFY; the memory store has no other process); False when other
        processes' changes must be polled for (SQLite)."""
        ...

    async def save_artifact(self, save: ArtifactSave) -> int:
        """Add a version of an artifact (numbered from 0) and return its number; a save
        whose `save_key` was used before for that name replaces that version's content
        and returns its number (see `ArtifactSave`)."""
        ...

    async def load_artifact(self, key: ArtifactKey, version: int | None) -> StoredArtifact | None:
        """That version with its content (the latest when `version` is None), or None."""
        ...

    async def list_artifact_versions(self, key: ArtifactKey) -> list[StoredArtifact]:
        """Every version's metadata (no content), oldest first; [] when there is none."""
        ...

    async def list_artifact_names(
        self, app_name: str, user_id: str, session_id: str | None
    ) -> list[str]:
        """The names saved in the session (when given) and the user's `user:` names, sorted."""
        ...

    async def delete_artifact(self, key: ArtifactKey) -> int:
        """Delete every version of the artifact; how many there were (0: none)."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


def busy_error(
    invocation_id: str, owner: str, expires_at: float, now: float
) -> InvocationBusyError:
    """The refusal of a claim on an invocation that `owner` holds until `expires_at`."""
    left = max(0.0, expires_at - now)
    until = datetime.fromtimestamp(expires_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return InvocationBusyError(
        f"invocation '{invocation_id}' is being run by '{owner}' (its lease runs {left:.0f} s "
        f"more, until {until}, unless renewed); wait for that run to pause or finish, then retry."
    )


def stale_session_error(key: SessionKey, changed_at: float, read_at: float) -> StaleSessionError:
    """The refusal of a step written from a session read at `read_at`, before its last
    change at `changed_at`."""
    return StaleSessionError(
        f"session '{key}' changed at {changed_at} after the Session given to append_event "
        f"was read (its last_update_time is {read_at}); read it again with get_session "
        "and append to that."
    )


def lost_error(lease: Lease) -> LeaseLostError:
    """The refusal of a renewal or step whose lease was taken over."""
    return LeaseLostError(
        f"invocation '{lease.invocation_id}' was taken over by another runner (or a database "
        f"crash undid its claim): the lease of '{lease.owner}' (token {lease.token}) no "
        "longer holds, so nothing more of this run is recorded; whoever holds or claims it "
        "next continues it from the last commit."
    )


def answerable(rows: Sequence[Interrupt], claim: AnswerClaim, now: float) -> InvocationId | None:
    """The invocation an answer may claim, judged from its interrupt's index rows as the
    Runner's checks judge them: the one open row with the id (in `claim.invocation_id`,
    when given), not past its deadline, asked in the occurrence the caller saw, that
    `claim.answered_by` may answer, and (for a progress update) a long-running tool's
    call. None when the checks refuse the answer or must say why (then nothing is
    claimed). A backend that claims in SQL states this same rule there."""
    wanted = claim.invocation_id
    open_rows = [
        row
        for row in rows
        if row.status is InterruptStatus.OPEN and (wanted is None or row.invocation_id == wanted)
    ]
    if len(open_rows) != 1:
        return None
    row = open_rows[0]
    refused = (
        (row.expires_at is not None and row.expires_at <= now)
        or (claim.occurrence is not None and claim.occurrence != row.occurrence)
        or (row.assignee is not None and row.assignee != claim.answered_by)
        or (claim.progress and row.function_name in ONE_ANSWER_FUNCTIONS)
    )
    return None if refused else InvocationId(row.invocation_id)


def ends_run(status: InvocationStatus | None, error: str | None) -> bool:
    """Whether a step landing `status` (with `error`) is the one that ends its run. A
    failing run lands FAILED with its root run's failure, and the failure's text with it
    (see `InvocationRun._root_finished`); a failure whose text no run recorded lands
    FAILED once more with it, which ends the run."""
    if status is InvocationStatus.FAILED:
        return error is not None
    return status is InvocationStatus.COMPLETED


def opens_deadline(commit: StepCommit) -> bool:
    """Whether a step opens a question with a deadline: work for a worker, which must
    expire it in time, where other changes to questions concern only their watchers."""
    return any(row.timeout is not None for row in commit.opened)


def strip_temp_state(delta: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """Drop `temp:` keys, which live only for the current invocation and are never stored."""
    return {k: v for k, v in delta.items() if not k.startswith(TEMP_PREFIX)}


def has_temp_keys(delta: dict[str, JsonValue]) -> bool:
    """Whether `delta` writes a `temp:` key."""
    return any(key.startswith(TEMP_PREFIX) for key in delta)


def drop_temp_keys(events: Iterable[Event]) -> None:
    """Take `temp:` keys out of the events' state deltas before they are stored and
    handed over, as the reference's session service does: they live in the invocation's
    state only, never in a stored event."""
    for event in events:
        delta = event.actions.state_delta
        if delta and has_temp_keys(delta):
            event.actions.state_delta = strip_temp_state(delta)


APP_PREFIX = "app:"
"""State keys shared by every session of the app (kept when sessions are deleted)."""
USER_PREFIX = "user:"
"""State keys shared by every session of the same user in the app."""
TEMP_PREFIX = "temp:"
"""State keys that live only for the current invocation and are never stored."""


class StatePrefixes:
    """The state key prefixes as class constants of a state view, where the reference's
    users read them (`State.TEMP_PREFIX`)."""

    APP_PREFIX: ClassVar[str] = APP_PREFIX
    USER_PREFIX: ClassVar[str] = USER_PREFIX
    TEMP_PREFIX: ClassVar[str] = TEMP_PREFIX


class UndeletableKeys:
    """State keys are set, never deleted: every way a mapping deletes raises
    `StateDeleteError` (an `AttributeError`, as the reference's `State`, which has no way
    to delete, raises, whether the key is there or not). Put first among a state view's
    bases, before `MutableMapping`, whose `pop`, `popitem` and `clear` it replaces."""

    def __delitem__(self, key: str) -> None:
        raise StateDeleteError(f"state key '{key}' cannot be deleted; set it to None instead.")

    def pop(self, key: str, default: Any = None) -> Any:
        raise StateDeleteError(f"state key '{key}' cannot be deleted; set it to None instead.")

    def popitem(self) -> tuple[str, Any]:
        raise StateDeleteError("state keys cannot be deleted; set a key to None instead.")

    def clear(self) -> None:
        raise StateDeleteError("state keys cannot be deleted; set a key to None instead.")


@dataclass(frozen=True)
class SharedState:
    """A state (or state delta) split by who shares each key: `session` (the session's
    own keys), `app` (`app:` keys, shared by every session of the app) and `user`
    (`user:` keys, shared by every session of the same user in the app). Keys keep their
    prefixes; `temp:` keys are dropped."""

    session: dict[str, JsonValue]
    app: dict[str, JsonValue]
    user: dict[str, JsonValue]


def split_state(state: dict[str, JsonValue]) -> SharedState:
    """`state` split by who shares each key (see `SharedState`)."""
    split = SharedState({}, {}, {})
    for key, value in state.items():
        if key.startswith(APP_PREFIX):
            split.app[key] = value
        elif key.startswith(USER_PREFIX):
            split.user[key] = value
        elif not key.startswith("temp:"):
            split.session[key] = value
    return split


def merge_shared_state(
    state: dict[str, JsonValue], app: dict[str, JsonValue], user: dict[str, JsonValue]
) -> dict[str, JsonValue]:
    """The state code sees: the session's own keys, then the app's, then the user's."""
    return {**state, **app, **user} if app or user else state
