"""A user's memories in SQL: one function per memory-service call, each run in one
transaction.

A memory is a row of `baton_memories` (its entry as the wire JSON the service reads
back) with one row per distinct word in `baton_memory_words`. A search counts, per
memory, how many of the query's words it has, using the words' index on every
backend alike; the best are read back in that order (ties in the order they were
stored). A forgotten memory's id stays in `baton_forgotten_memories`, so adding its
session again does not bring it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pydantic import JsonValue
from sqlalchemy import delete, func, insert, select
from sqlalchemy.engine import Connection

from baton.sessions.sql.dialect import SqlDialect
from baton.sessions.sql.schema import forgotten_memories, memories, memory_words

__all__ = [
    "WORD_LENGTH",
    "MemoryOwner",
    "MemoryRow",
    "add_memories",
    "forget_memory",
    "replace_session_memories",
    "search_memories",
]

WORD_LENGTH: Final = 255
"""Words are kept (and matched) up to this many characters."""


@dataclass(frozen=True)
class MemoryRow:
    """One memory to store: its id (None: an entry given without one), its entry as wire
    JSON, and its words (lower-cased, at most `WORD_LENGTH` characters)."""

    memory_id: str | None
    entry: JsonValue
    words: frozenset[str]


@dataclass(frozen=True)
class MemoryOwner:
    """Whose memories: an app's user's, under one session ('' for entries without one)."""

    app_name: str
    user_id: str
    session_id: str


def replace_session_memories(
    connection: Connection, owner: MemoryOwner, rows: Sequence[MemoryRow]
) -> None:
    """Make `rows` the memories of the owner's session, replacing what it had."""
    connection.execute(
        delete(memories).where(
            memories.c.app_name == owner.app_name,
            memories.c.user_id == owner.user_id,
            memories.c.session_id == owner.session_id,
        )
    )
    _insert(connection, owner, rows)


def add_memories(
    connection: Connection, owner: MemoryOwner, rows: Sequence[MemoryRow], *, skip_known: bool
) -> None:
    """Add `rows` to the owner's session's memories; with `skip_known`, leave out those
    whose id the session has already (or an earlier row of `rows` has)."""
    if skip_known:
        known = set(
            connection.scalars(
                select(memories.c.memory_id).where(
                    memories.c.app_name == owner.app_name,
                    memories.c.user_id == owner.user_id,
                    memories.c.session_id == owner.session_id,
                )
            )
        )
        fresh: list[MemoryRow] = []
        for row in rows:
            if row.memory_id is None or row.memory_id not in known:
                fresh.append(row)
                known.add(row.memory_id)
        rows = fresh
    _insert(connection, owner, rows)


def _insert(connection: Connection, owner: MemoryOwner, rows: Sequence[MemoryRow]) -> None:
    forgotten = set(
        connection.scalars(
            select(forgotten_memories.c.memory_id).where(
                forgotten_memories.c.app_name == owner.app_name,
                forgotten_memories.c.user_id == owner.user_id,
            )
        )
    )
    for row in rows:
        if row.memory_id is not None and row.memory_id in forgotten:
            continue
        inserted = connection.execute(
            insert(memories).values(
                app_name=owner.app_name,
                user_id=owner.user_id,
                session_id=owner.session_id,
                memory_id=row.memory_id,
                entry=row.entry,
            )
        )
        key = inserted.inserted_primary_key
        assert key is not None  # an INSERT of one row
        pk: int = key[0]
        if row.words:
            connection.execute(
                insert(memory_words),
                [
                    {
                        "memory_pk": pk,
                        "app_name": owner.app_name,
                        "user_id": owner.user_id,
                        "word": word,
                    }
                    for word in sorted(row.words)
                ],
            )


def search_memories(
    connection: Connection, app_name: str, user_id: str, words: frozenset[str], limit: int
) -> list[JsonValue]:
    """The entries of the user's memories sharing the most of `words`, best first."""
    if not words:
        return []
    shared = func.count().label("shared")
    best = connection.execute(
        select(memory_words.c.memory_pk, shared)
        .where(
            memory_words.c.app_name == app_name,
            memory_words.c.user_id == user_id,
            memory_words.c.word.in_(sorted(words)),
        )
        .group_by(memory_words.c.memory_pk)
        .order_by(shared.desc(), memory_words.c.memory_pk)
        .limit(limit)
    ).all()
    order = [pk for pk, _ in best]
    if not order:
        return []
    rows = connection.execute(
        select(memories.c.pk, memories.c.entry).where(memories.c.pk.in_(order))
    ).all()
    entries: dict[int, JsonValue] = {pk: entry for pk, entry in rows}
    return [entries[pk] for pk in order if pk in entries]


def forget_memory(
    connection: Connection, dialect: SqlDialect, app_name: str, user_id: str, memory_id: str
) -> None:
    """Delete the user's memory with that id, and keep it from coming back."""
    dialect.insert_new(
        connection,
        forgotten_memories,
        {"app_name": app_name, "user_id": user_id, "memory_id": memory_id},
    )
    connection.execute(
        delete(memories).where(
            memories.c.app_name == app_name,
            memories.c.user_id == user_id,
            memories.c.memory_id == memory_id,
        )
    )
