"""The Store protocol every backend implements, and the records it reads and writes.

The engine never touches a store: it produces `StepCommit`s and the Runner hands
them to `commit_step`, which lands each one atomically or not at all.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeAlias

from pydantic import Field, JsonValue

from baton.errors import InvocationBusyError
from baton.events import Event
from baton.types import InterruptId, InvocationId, SessionId, WireModel

__all__ = [
    "Clock",
    "Interrupt",
    "InterruptStatus",
    "Invocation",
    "InvocationStatus",
    "Lease",
    "Session",
    "SessionKey",
    "StepCommit",
    "Store",
    "busy_error",
    "strip_temp_state",
]

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


class InvocationStatus(enum.StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"


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


class InterruptStatus(enum.StrEnum):
    OPEN = "open"
    ANSWERED = "answered"


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


@dataclass(frozen=True)
class Lease:
    """The right to execute an invocation until `expires_at` (seconds since the epoch)."""

    invocation_id: InvocationId
    owner: str
    expires_at: float


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
        self, key: SessionKey, *, with_events: bool = True, event_limit: int | None = None
    ) -> Session | None:
        """The session (its newest `event_limit` events, or all), or None."""
        ...

    async def list_sessions(self, app_name: str, user_id: str | None = None) -> list[Session]:
        """Sessions of an app (optionally of one user), without their events."""
        ...

    async def delete_session(self, key: SessionKey) -> bool:
        """Delete a session and everything in it; False when there was none."""
        ...

    async def commit_step(self, commit: StepCommit) -> int:
        """Land a step atomically and return the invocation's new version.

        Raises:
            SessionNotFoundError: the session does not exist.
            StaleVersionError: `expected_version` is not the invocation's version.
        """
        ...

    async def load_invocation(
        self, key: SessionKey, invocation_id: InvocationId
    ) -> Invocation | None:
        """The invocation with its checkpoint, or None."""
        ...

    async def list_invocations(self, key: SessionKey) -> list[Invocation]:
        """The session's invocations, oldest first."""
        ...

    async def find_interrupts(self, key: SessionKey, interrupt_id: InterruptId) -> list[Interrupt]:
        """Index rows with that id in the session (open or answered), by index, not scan."""
        ...

    async def list_interrupts(
        self,
        app_name: str,
        user_id: str | None = None,
        *,
        session_id: SessionId | None = None,
        invocation_id: InvocationId | None = None,
        status: InterruptStatus | None = InterruptStatus.OPEN,
    ) -> list[Interrupt]:
        """Interrupts matching the filters, oldest first."""
        ...

    async def claim(self, invocation_id: InvocationId, owner: str, ttl: timedelta) -> Lease:
        """Take the invocation's lease; InvocationBusyError if another live owner has it."""
        ...

    async def renew(self, lease: Lease, ttl: timedelta) -> Lease:
        """Extend a held lease; InvocationBusyError when it was lost."""
        ...

    async def release(self, lease: Lease) -> None:
        """Give the lease up (no error when it already expired or moved on)."""
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


def strip_temp_state(delta: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """Drop `temp:` keys, which live only for the current invocation and are never stored."""
    return {k: v for k, v in delta.items() if not k.startswith("temp:")}
