"""Memory services: what an agent may recall from a user's past sessions.

`Runner(memory_service=InMemoryMemoryService())` gives nodes, tools and callbacks the
reference's `search_memory(query)`, `add_session_to_memory()`,
`add_events_to_memory(events=)`, `add_memory(memories=)` and `delete_memory(id)`;
the `load_memory` and `preload_memory` tools (`baton.tools`) let a model use it.

`InMemoryMemoryService` matches words: a memory is found when it shares words with
the query, the ten sharing the most first (ties in the order they were added), as
the reference's keeps it. Adding a session again replaces what that session added
before, so a callback that adds the session after every turn keeps one copy.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, final

from pydantic import Field, JsonValue

from baton.events import Event
from baton.sessions.ids import check_id
from baton.sessions.store import Session
from baton.types import Content, WireModel

__all__ = [
    "BaseMemoryService",
    "InMemoryMemoryService",
    "MemoryEntry",
    "MemoryMethods",
    "MemoryScope",
    "SearchMemoryResponse",
    "check_entries",
    "check_query",
    "check_session",
    "no_memory",
    "words_of",
]

MAX_RESULTS: Final = 10
"""How many memories a search returns at most."""

_LOOSE_SESSION: Final = "__events__"
"""Where `add_events_to_memory` keeps events given without a session."""


class MemoryEntry(WireModel):
    """One memory: what was said, by whom, when (ISO 8601)."""

    content: Content
    custom_metadata: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    id: str | None = None
    author: str | None = None
    timestamp: str | None = None


class SearchMemoryResponse(WireModel):
    """What a memory search found, best first."""

    memories: list[MemoryEntry] = Field(default_factory=list[MemoryEntry])


class BaseMemoryService:
    """The reference's memory service interface; subclass it for another store."""

    async def add_session_to_memory(self, session: Session) -> None:
        """Remember a session's messages (again: replacing what it added before)."""
        raise NotImplementedError

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember these events too (an addition, not the whole session)."""
        raise NotImplementedError

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember these entries as they are."""
        raise NotImplementedError

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The user's memories matching `query`, best first."""
        raise NotImplementedError

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Forget one memory (by its `MemoryEntry.id`), also if its session is added again."""
        raise NotImplementedError


@dataclass
class _UserMemory:
    by_session: dict[str, list[MemoryEntry]] = field(default_factory=dict[str, list[MemoryEntry]])
    forgotten: set[str] = field(default_factory=set[str])

    def entries(self) -> list[MemoryEntry]:
        return [entry for entries in self.by_session.values() for entry in entries]


@final
class InMemoryMemoryService(BaseMemoryService):
    """Memories in this process's memory, found by shared words (see the module)."""

    def __init__(self) -> None:
        self._users: dict[tuple[str, str], _UserMemory] = {}

    def _user(self, app_name: str, user_id: str) -> _UserMemory:
        check_id("app_name", app_name)
        check_id("user_id", user_id)
        return self._users.setdefault((app_name, user_id), _UserMemory())

    async def add_session_to_memory(self, session: Session) -> None:
        """Remember a session's messages, replacing what it added before.

        Raises:
            TypeError: `session` is not a Session.
        """
        check_session(session)
        user = self._user(session.app_name, session.user_id)
        user.by_session[session.id] = _entries(session.events, user.forgotten)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember these events (those with a message) in addition to what is there."""
        user = self._user(app_name, user_id)
        kept = user.by_session.setdefault(session_id or _LOOSE_SESSION, [])
        known = {entry.id for entry in kept}
        kept.extend(e for e in _entries(events, user.forgotten) if e.id not in known)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember these entries as given.

        Raises:
            TypeError: an item is not a MemoryEntry.
        """
        check_entries(memories)
        user = self._user(app_name, user_id)
        user.by_session.setdefault(_LOOSE_SESSION, []).extend(
            m.model_copy(deep=True) for m in memories
        )

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The user's memories sharing words with `query`, most shared words first.

        Raises:
            TypeError: `query` is not a string.
        """
        check_query(query)
        wanted = words_of(query)
        scored = [
            (len(wanted & words_of(_text(e))), e) for e in self._user(app_name, user_id).entries()
        ]
        found = sorted((s for s in scored if s[0] > 0), key=lambda s: -s[0])
        return SearchMemoryResponse(
            memories=[e.model_copy(deep=True) for _, e in found[:MAX_RESULTS]]
        )

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Forget the memory with that id; adding its session again does not bring it back."""
        if not memory_id:
            return
        user = self._user(app_name, user_id)
        user.forgotten.add(memory_id)
        for session_id, entries in user.by_session.items():
            user.by_session[session_id] = [e for e in entries if e.id != memory_id]


def check_session(session: object) -> None:
    """Raises TypeError unless `session` is a Session."""
    if not isinstance(session, Session):
        raise TypeError(
            f"add_session_to_memory takes a Session (from a session service), got "
            f"{type(session).__name__}."
        )


def check_entries(memories: Sequence[object]) -> None:
    """Raises TypeError unless every item is a MemoryEntry (naming the others)."""
    bad = [type(m).__name__ for m in memories if not isinstance(m, MemoryEntry)]
    if bad:
        raise TypeError(f"add_memory takes MemoryEntry items, got {', '.join(bad)}.")


def check_query(query: object) -> None:
    """Raises TypeError unless `query` is a string."""
    if not isinstance(query, str):
        raise TypeError(f"a memory query is a string, got {type(query).__name__}.")


def words_of(text: str) -> set[str]:
    """The lower-cased words of a text (letters, digits and '_', any script)."""
    return {w.lower() for w in re.findall(r"\w+", unicodedata.normalize("NFC", text))}


def _text(entry: MemoryEntry) -> str:
    return " ".join(p.text for p in entry.content.parts or [] if p.text)


def _entries(events: Sequence[Event], forgotten: set[str]) -> list[MemoryEntry]:
    return [
        MemoryEntry(
            id=event.id,
            content=event.content.model_copy(deep=True),
            author=event.author,
            timestamp=datetime.fromtimestamp(event.timestamp, UTC).isoformat(),
        )
        for event in events
        if event.content is not None and event.content.parts and event.id not in forgotten
    ]


@final
class MemoryScope:
    """The memory one node run, tool call or callback reaches: its user's.

    Args:
        service: the Runner's memory service (None: the calls say how to set one).
        app_name: the app.
        user_id: the user.
        session_id: the session.
        load_session: the session with every committed event, for `add_session_to_memory`.
    """

    def __init__(
        self,
        service: BaseMemoryService | None,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        load_session: Callable[[], Awaitable[Session]],
    ) -> None:
        self.service = service
        self.app_name = app_name
        self.user_id = user_id
        self.session_id = session_id
        self.load_session = load_session

    def require(self) -> BaseMemoryService:
        """The service, or the error saying how to set one."""
        if self.service is None:
            raise ValueError(
                "no memory service is set; pass one to the Runner, e.g. "
                "Runner(..., memory_service=InMemoryMemoryService())."
            )
        return self.service


class MemoryMethods:
    """The reference's memory methods of a context, over its `MemoryScope`."""

    @property
    def memory_scope(self) -> MemoryScope:
        """The memory this context reaches (each context class says how)."""
        raise NotImplementedError

    async def search_memory(self, query: str) -> SearchMemoryResponse:
        """The user's memories matching `query`.

        Raises:
            ValueError: the Runner has no memory service.
        """
        scope = self.memory_scope
        return await scope.require().search_memory(
            app_name=scope.app_name, user_id=scope.user_id, query=query
        )

    async def add_session_to_memory(self) -> None:
        """Remember this session as committed so far (replacing what it added before)."""
        scope = self.memory_scope
        service = scope.require()
        await service.add_session_to_memory(await scope.load_session())

    async def add_events_to_memory(
        self, *, events: Sequence[Event], custom_metadata: Mapping[str, object] | None = None
    ) -> None:
        """Remember these events under this session."""
        scope = self.memory_scope
        await scope.require().add_events_to_memory(
            app_name=scope.app_name,
            user_id=scope.user_id,
            session_id=scope.session_id,
            events=events,
            custom_metadata=custom_metadata,
        )

    async def add_memory(
        self,
        *,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember these entries for the user."""
        scope = self.memory_scope
        await scope.require().add_memory(
            app_name=scope.app_name,
            user_id=scope.user_id,
            memories=memories,
            custom_metadata=custom_metadata,
        )

    async def delete_memory(self, memory_id: str | None = None) -> None:
        """Forget one of the user's memories."""
        scope = self.memory_scope
        await scope.require().delete_memory(
            app_name=scope.app_name, user_id=scope.user_id, memory_id=memory_id
        )


def no_memory() -> MemoryScope:
    """The scope of a context built without a runner: every call says how to set one."""

    async def nothing() -> Session:
        raise ValueError("this context belongs to no session.")

    return MemoryScope(None, app_name="", user_id="", session_id="", load_session=nothing)


def __getattr__(name: str) -> object:
    """`SqliteMemoryService`, where the reference's users import it from, read on first
    use: it lives with the SQL store (`baton.database_memory`), which imports this module."""
    if name == "SqliteMemoryService":
        from baton.database_memory import SqliteMemoryService

        return SqliteMemoryService
    raise AttributeError(f"module 'baton.memory' has no attribute {name!r}")
