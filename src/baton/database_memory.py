"""Memory kept in the sessions' database: SQLite, PostgreSQL or MySQL/MariaDB.

`SqlMemoryService(store)` keeps a user's memories in a `SqlStore` (a session
service's `.store`, to share its database), so they survive a restart and every
process serving the app sees the same ones. It finds memories as
`InMemoryMemoryService` does: those sharing words with the query, the ten sharing the
most first; the count runs in SQL over an index of the words. A Runner whose sessions
are in SQL uses one by default (see `memory_in`). `SqliteMemoryService(db_path)` and
`DatabaseMemoryService(db_url)` open a database of their own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast, final

from pydantic import JsonValue

from baton.events import Event
from baton.memory_services import (
    MAX_RESULTS,
    BaseMemoryService,
    MemoryEntry,
    SearchMemoryResponse,
    check_entries,
    check_events,
    check_query,
    check_session,
    words_of,
)
from baton.sessions.ids import check_id
from baton.sessions.opening import sql_store, sqlite_url
from baton.sessions.store import Session, Store

if TYPE_CHECKING:  # read where used at run time: see _SQL_STORE_MODULE
    from baton.sessions.sql import SqlStore
    from baton.sessions.sql.memories import MemoryOwner, MemoryRow

__all__ = ["DatabaseMemoryService", "SqlMemoryService", "SqliteMemoryService", "memory_in"]

_SQL_STORE_MODULE = "baton.sessions.sql.store"
"""SQLAlchemy and baton's SQL store are a third of `import baton`'s instructions, so this
module reads them only where a SQL memory is made or used: a process whose sessions are
in memory never loads them (`memory_in` asks `sys.modules` whether a SqlStore can exist)."""

_LOOSE_SESSION = ""
"""The session of memories added without one (`add_memory`, or events given alone)."""


class SqlMemoryService(BaseMemoryService):
    """Memories in a SQL database, found by shared words (see the module).

    Args:
        store: where they are kept: a session service's `.store` shares its database.

    Raises:
        TypeError: `store` is not a SqlStore.
    """

    def __init__(self, store: SqlStore) -> None:
        from baton.sessions.sql import SqlStore

        if not isinstance(cast(object, store), SqlStore):
            raise TypeError(
                f"SqlMemoryService keeps memories in a SqlStore (a SQL session service's "
                f".store), got {type(store).__name__}; for sessions in memory use "
                "InMemoryMemoryService()."
            )
        self.store = store

    async def add_session_to_memory(self, session: Session) -> None:
        """Remember a session's messages, replacing what it added before.

        Raises:
            TypeError: `session` is not a Session.
            ValueError: its app or user id is not a valid id.
        """
        check_session(session)
        owner = _owner(session.app_name, session.user_id, session.id)
        await self.store.replace_session_memories(owner, _rows(session.events))

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
            ValueError: a bad app or user id.
        """
        check_events(events)
        owner = _owner(app_name, user_id, session_id or _LOOSE_SESSION)
        await self.store.add_memories(owner, _rows(events), skip_known=True)

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
            ValueError: a bad app or user id.
        """
        check_entries(memories)
        owner = _owner(app_name, user_id, _LOOSE_SESSION)
        await self.store.add_memories(owner, [_row(m) for m in memories], skip_known=False)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The user's memories sharing words with `query`, most shared words first.

        Raises:
            TypeError: `query` is not a string.
            ValueError: a bad app or user id.
        """
        check_query(query)
        owner = _owner(app_name, user_id, _LOOSE_SESSION)
        found = await self.store.search_memories(
            owner.app_name, owner.user_id, _words(query), MAX_RESULTS
        )
        return SearchMemoryResponse(memories=[MemoryEntry.model_validate(e) for e in found])

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Forget the memory with that id; adding its session again does not bring it back.

        Raises:
            ValueError: a bad app, user or memory id.
        """
        owner = _owner(app_name, user_id, _LOOSE_SESSION)
        if memory_id:
            check_id("memory_id", memory_id)
            await self.store.forget_memory(owner.app_name, owner.user_id, memory_id)


@final
class SqliteMemoryService(SqlMemoryService):
    """Memories in a SQLite file (the sessions' file is fine).

    Args:
        db_path: a file path (str or Path) or a `sqlite:///path` URL.

    Raises:
        ValueError: `db_path` is empty or another database's URL (use DatabaseMemoryService).
    """

    def __init__(self, db_path: str | os.PathLike[str]) -> None:
        super().__init__(sql_store(sqlite_url("SqliteMemoryService", db_path)))


@final
class DatabaseMemoryService(SqlMemoryService):
    """Memories in the database a URL names (PostgreSQL, MySQL/MariaDB or SQLite).

    Args:
        db_url: the same kind of URL `DatabaseSessionService` takes.
    """

    def __init__(self, db_url: str) -> None:
        super().__init__(sql_store(db_url))


def memory_in(store: Store) -> SqlMemoryService | None:
    """The memory service a Runner uses unless given one: in the sessions' database when
    it is SQL; None for sessions in memory (memory calls then say how to set one)."""
    if _SQL_STORE_MODULE not in sys.modules:  # no SqlStore was ever made in this process
        return None
    from baton.sessions.sql import SqlStore

    return SqlMemoryService(store) if isinstance(store, SqlStore) else None


def _owner(app_name: str, user_id: str, session_id: str) -> MemoryOwner:
    check_id("app_name", app_name)
    check_id("user_id", user_id)
    check_id("session_id", session_id)
    from baton.sessions.sql.memories import MemoryOwner

    return MemoryOwner(app_name, user_id, session_id)


def _words(text: str) -> frozenset[str]:
    from baton.sessions.sql.memories import WORD_LENGTH

    return frozenset(word[:WORD_LENGTH] for word in words_of(text))


def _row(entry: MemoryEntry) -> MemoryRow:
    if entry.id is not None:
        check_id("memory id", entry.id)
    text = " ".join(p.text for p in entry.content.parts or [] if p.text)
    data: JsonValue = entry.model_dump(mode="json", by_alias=True, exclude_none=True)
    from baton.sessions.sql.memories import MemoryRow

    return MemoryRow(memory_id=entry.id, entry=data, words=_words(text))


def _rows(events: Sequence[Event]) -> list[MemoryRow]:
    return [
        _row(
            MemoryEntry(
                id=event.id,
                content=event.content,
                author=event.author,
                timestamp=datetime.fromtimestamp(event.timestamp, UTC).isoformat(),
            )
        )
        for event in events
        if event.content is not None and event.content.parts
    ]
