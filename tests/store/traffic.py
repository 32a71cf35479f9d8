"""Counting what a `SqlStore` sends PostgreSQL: statements through SQLAlchemy's engine and
through the direct asyncpg path (see `sql.postgres`), and transaction commits."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg  # pyright: ignore[reportMissingTypeStubs] -- another process's listener
from sqlalchemy import event as sa_event

from baton.sessions.sql import SqlStore
from baton.sessions.sql.backends import open_dialect
from baton.sessions.sql.listener import ANNOUNCE, MARK_WATCHING, SCOPED_CHANNELS
from baton.sessions.sql.postgres import asyncpg_connect_args

__all__ = ["Traffic", "traffic", "watching"]


@dataclass
class Traffic:
    """The statements (first word) a store sent, in order; how many of them went to
    asyncpg directly; how many bound an array parameter; the transactions it
    committed through the engine; and apart, the NOTIFY statements that announce its
    steps to other processes after they commit (in the background, see `Announcer`),
    each as the number of statements sent before it."""

    statements: list[str] = field(default_factory=list[str])
    direct: int = 0
    with_arrays: int = 0
    commits: int = 0
    announcements: int = 0
    announced_after: list[int] = field(default_factory=list[int])
    announced: asyncio.Event = field(default_factory=asyncio.Event)  # set at each

    def add(self, sql: str) -> None:
        self.statements.append(sql.split(None, 1)[0].upper())
        self.with_arrays += _ARRAY_PARAMETER.search(sql) is not None


_ARRAY_PARAMETER = re.compile(r"\$\d+::[A-Z ]+\[\]")  # $3::VARCHAR[], as asyncpg's SQL casts


@contextmanager
def traffic(store: SqlStore) -> Iterator[Traffic]:
    """Record the store's traffic while inside."""
    executor: Any = store._executor  # pyright: ignore[reportPrivateUsage] -- counting what reaches the database
    target = executor._engine.sync_engine
    seen = Traffic()
    announcing = str(ANNOUNCE.compile(dialect=target.dialect))

    def statement(*args: Any) -> None:
        seen.add(args[2])

    def direct(sql: str) -> None:
        if sql == announcing:
            seen.announcements += 1
            seen.announced_after.append(len(seen.statements))
            seen.announced.set()
            return
        seen.add(sql)
        seen.direct += 1

    def commit(*_args: Any) -> None:
        seen.commits += 1

    listeners = (("before_cursor_execute", statement), ("commit", commit))
    for name, listener in listeners:
        sa_event.listen(target, name, listener)
    try:
        with executor._direct.watching(direct):
            yield seen
    finally:
        for name, listener in listeners:
            sa_event.remove(target, name, listener)


async def watching(url: str) -> tuple[Any, asyncio.Queue[str]]:
    """Another process's connection listening to every channel, named as a store's
    listener is while a stream is live (so stores announce questions to it), and the
    payloads it hears; close it when done."""
    connecting = asyncpg_connect_args(open_dialect(url).url)
    other: Any = await asyncpg.connect(**connecting)  # pyright: ignore[reportUnknownMemberType]
    await other.execute(MARK_WATCHING)
    heard: asyncio.Queue[str] = asyncio.Queue()

    def hear(*notification: object) -> None:  # connection, pid, channel, payload
        heard.put_nowait(str(notification[3]))

    for channel in await other.fetchrow(SCOPED_CHANNELS):
        await other.add_listener(channel, hear)
    return other, heard
