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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, final

from pydantic import Field, JsonValue

from baton.events import Event
from baton.sessions.ids import check_id
from baton.sessions.store import Session
from baton.types import Content, WireModel

__all__ = [
    "MAX_RESULTS",
    "BaseMemoryService",
    "InMemoryMemoryService",
    "MemoryEntry",
    "SearchMemoryResponse",
    "check_entries",
    "check_events",
    "check_query",
    "check_session",
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
        """Remember these events (those with a message) in addition to what is there.

        Raises:
            TypeError: an item is not an Event.
        """
        check_events(events)
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


def check_events(events: Sequence[object]) -> None:
    """Raises TypeError unless every item is an Event (naming the others)."""
    bad = [type(e).__name__ for e in events if not isinstance(e, Event)]
    if bad:
        raise TypeError(f"add_events_to_memory takes Event items, got {', '.join(bad)}.")


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
