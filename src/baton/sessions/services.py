"""The session services users construct: the reference API over a Store.

`InMemorySessionService()`, `SqliteSessionService(path)` and
`DatabaseSessionService(url)` differ only in the store they wrap; the Runner
reads `.store` and talks to it directly.
"""

from __future__ import annotations

import os
import time
from collections.abc import Coroutine
from datetime import timedelta
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from baton.errors import InvalidIdError
from baton.events import Event
from baton.sessions.ids import (
    check_depth,
    check_event,
    check_id,
    check_key,
    check_stored_key,
    is_padded,
)
from baton.sessions.memory import MemoryStore
from baton.sessions.opening import sql_store, sqlite_url
from baton.sessions.store import (
    Clock,
    Pruning,
    Session,
    SessionKey,
    StepCommit,
    Store,
    drop_temp_keys,
)
from baton.types import InvocationId, SessionId

__all__ = [
    "BaseSessionService",
    "DatabaseSessionService",
    "GetSessionConfig",
    "InMemorySessionService",
    "ListSessionsResponse",
    "SqliteSessionService",
]


class GetSessionConfig(BaseModel):
    """How much of a session's history `get_session` loads: the newest
    `num_recent_events` (0: none), and of those only the ones from `after_timestamp` on
    (the reference's filter: what follows the last event older than it)."""

    model_config = ConfigDict(defer_build=True)  # see WireModel

    num_recent_events: int | None = None
    after_timestamp: float | None = None

    @field_validator("num_recent_events")
    @classmethod
    def _not_negative(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError(f"num_recent_events must be 0 or more (none), not {value}")
        return value


class ListSessionsResponse(BaseModel):
    """The result of `list_sessions`."""

    model_config = ConfigDict(defer_build=True)  # see WireModel

    sessions: list[Session] = Field(default_factory=list[Session])


class BaseSessionService:
    """Session CRUD in the reference system's shape, over any `Store`."""

    # `append_event` refuses a `Session` read before the session's last change.
    _requires_fresh = True

    def __init__(self, store: Store, *, clock: Clock = time.time) -> None:
        self.store = store
        self.clock = clock  # the store's notion of now: session ages are measured with it

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, JsonValue] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Create a session (a fresh UUID when `session_id` is omitted).

        Raises:
            SessionExistsError: the id is taken.
            InvalidIdError: an id is too long or holds control characters.
            InvalidMessageError: the state nests JSON too deep.
        """
        _check_owner(app_name, user_id)
        if session_id:
            check_id("session_id", session_id)
        check_depth("state", state)
        return await self.store.create_session(
            app_name, user_id, session_id=SessionId(session_id) if session_id else None, state=state
        )

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with its events (the newest N with `config`), or None.

        Raises:
            InvalidIdError: an id is too long or holds control characters.
        """
        limit = config.num_recent_events if config else None
        key = SessionKey(app_name, user_id, SessionId(session_id))
        after = config.after_timestamp if config else None
        if is_padded(key):
            return await self._stored_padded(key, event_limit=limit, events_after=after)
        check_key(key)
        return await self.store.get_session(key, event_limit=limit, events_after=after)

    async def _stored_padded(
        self, key: SessionKey, *, event_limit: int | None = 0, events_after: float | None = None
    ) -> Session:
        """The session an older baton stored under names starting or ending with a space
        (refused since 69baf3c), found under exactly those names: it stays readable and
        deletable. MySQL before 8.0.17 ignores trailing spaces, so a session found
        under other names is not it.

        Raises:
            InvalidIdError: no session is stored under exactly these names (the rule
                about spaces, as for any name), or a name breaks another rule.
        """
        check_stored_key(key)
        found = await self.store.get_session(
            key, event_limit=event_limit, events_after=events_after
        )
        if found is None or found.key != key:
            raise InvalidIdError(
                f"session '{key}' starts or ends with a space in a name, and no session is "
                "stored under exactly it; ids may not start or end with a space (sessions "
                "an older baton stored so stay readable and deletable under their names). "
                "Remove the spaces."
            )
        return found

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """Sessions of an app (of one user when given), without events, the least
        recently updated first (then by user and id), as the reference's stored
        services list them.

        Raises:
            InvalidIdError: an id is too long or holds control characters.
        """
        _check_owner(app_name, user_id)
        sessions = await self.store.list_sessions(app_name, user_id)
        sessions.sort(key=_by_update)
        return ListSessionsResponse(sessions=sessions)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, JsonValue]:
        """The user's `user:` state keys in the app, without the prefix ({} when none):
        what every session of that user sees, readable before any session exists.

        Raises:
            InvalidIdError: an id is too long or holds control characters.
        """
        _check_owner(app_name, user_id)
        return await self.store.get_user_state(app_name, user_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete a session with its events, invocations and interrupts.

        Raises:
            InvalidIdError: an id is too long or holds control characters.
        """
        key = SessionKey(app_name, user_id, SessionId(session_id))
        if is_padded(key):
            await self._stored_padded(key)  # an older baton's session, or refused
        else:
            check_key(key)
        await self.store.delete_session(key)

    async def prune_sessions(
        self,
        *,
        app_name: str,
        older_than: timedelta,
        user_id: str | None = None,
        include_unfinished: bool = False,
        dry_run: bool = False,
    ) -> list[Session]:
        """Delete the sessions of an app untouched for longer than `older_than`.

        A session whose runs have not all completed (one waits for an answer, failed,
        or was cut off) is kept unless `include_unfinished`: someone may still answer
        or resume it. A session one of whose runs executes now (holds its lease) is
        always kept. Each delete checks its session again in the transaction that deletes
        it: one changed or claimed since it was listed is kept (and not returned).

        Args:
            app_name: the app whose sessions to prune.
            older_than: how long since a session's last change makes it old.
            user_id: only this user's sessions.
            include_unfinished: delete old sessions with unfinished runs too (not one
                executing now).
            dry_run: delete nothing; return what would be deleted.

        Returns:
            The sessions deleted (or, with `dry_run`, that would be), without events.

        Raises:
            ValueError: `older_than` is not positive.
            InvalidIdError: an id is too long or holds control characters.
        """
        _check_owner(app_name, user_id)
        if older_than <= timedelta(0):
            raise ValueError(
                f"older_than must be positive, got {older_than}; pass how long a session "
                "must have been untouched, e.g. timedelta(days=30)."
            )
        pruning = Pruning(self.clock() - older_than.total_seconds(), include_unfinished)
        doomed: list[Session] = []
        for session in await self.store.list_sessions(app_name, user_id):
            if session.last_update_time >= pruning.changed_before:
                continue
            if not await self._would_delete(pruning, session):
                continue
            # Checked again as it is deleted: it may have changed or been claimed since.
            if dry_run or await self.store.delete_old_session(session.key, pruning):
                doomed.append(session)
        return doomed

    async def _would_delete(self, pruning: Pruning, session: Session) -> bool:
        runs = [
            (i.status, await self.store.holder(InvocationId(i.id)) is not None)
            for i in await self.store.list_invocations(session.key)
        ]
        return pruning.deletes(runs)

    async def append_event(self, session: Session, event: Event) -> Event:
        """Append an event outside any run (partial events are skipped).

        The event's `temp:` state writes reach `session.state` but are taken out of the
        event before it is stored, as in the reference.

        `session` must be as fresh as the stored session (its `last_update_time` not
        older), as the reference's database services require; the in-memory service
        takes any, as the reference's does. The event and its state delta are added
        to `session`, whose `last_update_time` becomes the stored one.

        Raises:
            SessionNotFoundError: the session does not exist.
            StaleSessionError: the session changed since `session` was read.
            InvalidIdError: the session's ids, the event's invocation id or author are too
                long or hold control characters.
            InvalidMessageError: the event nests JSON too deep.
        """
        if event.partial:
            return event
        check_key(session.key)
        check_event(event)
        # `session` sees the event's `temp:` writes, the stored event does not: as in the
        # reference, they live only as long as the caller's Session object.
        written = dict(event.actions.state_delta)
        drop_temp_keys((event,))
        written_at = await self.store.commit_session_events(
            StepCommit(
                session=session.key,
                invocation_id=None,
                expected_version=0,
                events=(event,),
                state_delta=dict(event.actions.state_delta),
                unchanged_since=session.last_update_time if self._requires_fresh else None,
            )
        )
        session.events.append(event)
        session.state.update(written)
        # The time this write set, not a re-read's: a change landing in between would
        # pass for ours, and our next append on a stale Session would not be refused.
        session.last_update_time = written_at
        return event

    async def flush(self) -> None:
        """Nothing to do: the reference's hook for services that buffer events. Every
        event and state change is committed before the call that makes it returns."""

    async def close(self) -> None:
        """Release the store's connections."""
        await self.store.close()


def _check_owner(app_name: str, user_id: str | None) -> None:
    check_id("app_name", app_name)
    if user_id is not None:
        check_id("user_id", user_id)


class InMemorySessionService(BaseSessionService):
    """Sessions kept in this process's memory.

    The `*_sync` methods do what their async namesakes do, from code without an event
    loop (or inside one): the memory store never waits, so they finish at once.
    """

    def __init__(self) -> None:
        super().__init__(MemoryStore())

    # Any `Session` may be appended to, as with the reference's in-memory service.
    _requires_fresh = False

    def create_session_sync(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, JsonValue] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """`create_session`, synchronously."""
        return _at_once(
            self.create_session(
                app_name=app_name, user_id=user_id, state=state, session_id=session_id
            )
        )

    def get_session_sync(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """`get_session`, synchronously."""
        return _at_once(
            self.get_session(
                app_name=app_name, user_id=user_id, session_id=session_id, config=config
            )
        )

    def list_sessions_sync(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """`list_sessions`, synchronously."""
        return _at_once(self.list_sessions(app_name=app_name, user_id=user_id))

    def delete_session_sync(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """`delete_session`, synchronously."""
        _at_once(self.delete_session(app_name=app_name, user_id=user_id, session_id=session_id))


_T = TypeVar("_T")


def _at_once(call: Coroutine[object, object, _T]) -> _T:
    """The result of a coroutine that never suspends (the memory store's), run right here."""
    try:
        call.send(None)
    except StopIteration as done:
        result: _T = done.value
        return result
    call.close()
    raise RuntimeError("the in-memory session store suspended; this is a bug in baton.")


class SqliteSessionService(BaseSessionService):
    """Sessions in a SQLite file: the embedded default, durable across restarts.

    Args:
        db_path: a file path (str or Path; created on first use) or a `sqlite:///path` URL.

    Raises:
        ValueError: `db_path` is empty or another database's URL (use DatabaseSessionService).
    """

    def __init__(self, db_path: str | os.PathLike[str]) -> None:
        super().__init__(sql_store(sqlite_url("SqliteSessionService", db_path)))


class DatabaseSessionService(BaseSessionService):
    """Sessions in the database a URL names, for several processes sharing one database.

    Args:
        db_url: `postgresql+asyncpg://user@host/db` (the `postgres` extra) or a SQLite URL.
        **engine_options: SQLAlchemy engine options, as the reference hands them to
            `create_async_engine`: `pool_size`, `max_overflow`, `pool_timeout`,
            `pool_recycle`, `pool_pre_ping`, `pool_use_lifo`, `echo`, `echo_pool`,
            `hide_parameters`, `logging_name`, `pool_logging_name` and `connect_args`
            (merged into baton's; on PostgreSQL its own step connections get them too).
            Those baton sets itself (`isolation_level`, `json_serializer`, `poolclass`,
            `creator`, ...) and unknown ones are refused, by name.

    Raises:
        ValueError: the URL names an unsupported database.
        EngineOptionsError: an engine option baton cannot honour was given.
        ExtraNotInstalledError: a PostgreSQL URL without asyncpg installed.
    """

    def __init__(self, db_url: str, **engine_options: object) -> None:
        super().__init__(sql_store(db_url, engine_options=engine_options))


def _by_update(session: Session) -> tuple[float, str, str]:
    return (session.last_update_time, session.user_id, session.id)
