"""Plain steps (a running invocation, no state change, no interrupt opened or answered).

PostgreSQL lands these in one statement without BEGIN/COMMIT (see `sql.step`): the
same guarantees as any step commit, checked on every backend.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import sys
import uuid
from asyncio.subprocess import PIPE
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue
from sqlalchemy import Pool, make_url, text
from sqlalchemy import event as sql_events
from sqlalchemy.ext.asyncio import create_async_engine

from baton.errors import SessionNotFoundError, StaleVersionError
from baton.sessions.sql import SqlStore
from baton.sessions.sql.postgres import has_unread_input
from baton.sessions.store import InvocationStatus, Store
from baton.types import InvocationId, SessionId
from tests.conftest import POSTGRES_URL, FakeClock, StoreFactory, sqlite_url
from tests.store.builders import APP, USER, event, key, race_one_winner, snapshot, step, texts
from tests.store.traffic import traffic

RACERS = 6


async def _running(store: Store, invocation_id: str = "inv-1", session_id: str = "s1") -> None:
    """Invocation `invocation_id` at version 2 in the session (created when missing)."""
    if await store.get_session(key(session_id), with_events=False) is None:
        await store.create_session(APP, USER, session_id=SessionId(session_id), state={"n": 0})
    await store.commit_step(step(key(session_id), invocation_id, 0, checkpoint={"at": 0}))
    await store.commit_step(step(key(session_id), invocation_id, 1, events=(event("one"),)))


@contextmanager
def sqlite_statements() -> Iterator[list[str]]:
    """The first word of every statement SQLite connections opened meanwhile run."""
    sent: list[str] = []

    def trace(connection: sqlite3.Connection, _record: object) -> None:
        connection.set_trace_callback(lambda sql: sent.append(sql.split(None, 1)[0].upper()))

    sql_events.listen(Pool, "connect", trace)
    try:
        yield sent
    finally:
        sql_events.remove(Pool, "connect", trace)


@pytest.mark.parametrize("expected", [1, 3, 9])
@pytest.mark.parametrize("appended", [("late",), ("late", "later")])
async def test_stale_plain_step_lands_nothing(
    store: Store, clock: FakeClock, expected: int, appended: tuple[str, ...]
) -> None:
    await _running(store)
    before = await snapshot(store, key())
    clock.advance(5)  # a landed write would move the session's last update

    with pytest.raises(StaleVersionError, match=rf"'inv-1' is at version 2, not {expected}"):
        await store.commit_step(
            step(
                key(),
                "inv-1",
                expected,
                events=tuple(event(text) for text in appended),
                checkpoint={"at": "elsewhere"},
                status=InvocationStatus.COMPLETED,
            )
        )

    assert await snapshot(store, key()) == before


async def test_plain_step_to_a_missing_session_raises_and_lands_nothing(store: Store) -> None:
    await _running(store)
    before = await snapshot(store, key())

    with pytest.raises(SessionNotFoundError, match="app/u/nope"):
        await store.commit_step(step(key("nope"), "inv-1", 2, events=(event("x"),)))
    await store.create_session(APP, USER, session_id=SessionId("s2"))
    # The invocation belongs to another session: it does not advance from this one.
    with pytest.raises(StaleVersionError, match=r"'inv-1' is at version \d, not 2"):
        await store.commit_step(step(key("s2"), "inv-1", 2, events=(event("x"),)))

    assert await snapshot(store, key()) == before
    assert (await snapshot(store, key("s2"))).invocations == []


async def test_plain_step_lands_its_events_in_order_and_moves_the_update_time(
    store: Store, clock: FakeClock
) -> None:
    await _running(store)
    clock.advance(7)

    new = (event("a"), event("b"), event("c"))
    assert await store.commit_step(step(key(), "inv-1", 2, events=new)) == 3
    assert await store.commit_step(step(key(), "inv-1", 3)) == 4  # no events at all
    assert (
        await store.commit_step(
            step(key(), "inv-1", 4, checkpoint={"at": 5}, status=InvocationStatus.COMPLETED)
        )
        == 5
    )

    found = await store.get_session(key())
    invocation = await store.load_invocation(key(), InvocationId("inv-1"))
    assert found is not None
    assert invocation is not None
    assert texts(found.events) == ["one", "a", "b", "c"]
    assert [e.id for e in found.events[1:]] == [e.id for e in new]
    assert found.last_update_time == clock.now == invocation.updated_at
    assert (invocation.version, invocation.status, invocation.checkpoint) == (
        5,
        InvocationStatus.COMPLETED,
        {"at": 5},
    )


@pytest.mark.parametrize("count", [2, 4, 5, 9])
async def test_a_step_lands_each_of_its_events_as_given_in_order(store: Store, count: int) -> None:
    # PostgreSQL binds up to four events as plain values, more as JSON texts (`sql.step`).
    await _running(store)
    new = tuple(event(f"e{i}\u0000'\"{i}") for i in range(count))

    assert await store.commit_step(step(key(), "inv-1", 2, events=new)) == 3

    found = await store.get_session(key())
    assert found is not None
    assert found.events[1:] == list(new)


async def test_a_step_binds_a_few_events_as_values_on_postgres(emptied_postgres_url: str) -> None:
    # Two events (a resume's first step: the answer and the answered node's end) travel
    # as plain values, not as JSON texts the server expands and zips; many still do.
    store = SqlStore(emptied_postgres_url)
    sent: list[str] = []
    await _running(store)
    executor: Any = store._executor  # pyright: ignore[reportPrivateUsage] -- the SQL sent
    with executor._direct.watching(sent.append):
        await store.commit_step(step(key(), "inv-1", 2, events=(event("x"), event("y"))))
        many = tuple(event(f"m{i}") for i in range(5))
        await store.commit_step(step(key(), "inv-1", 3, events=many))
    found = await store.get_session(key())
    await store.close()

    few_sql, many_sql = sent
    assert "json_array_elements" not in few_sql
    assert "json_array_elements" in many_sql
    assert found is not None
    assert texts(found.events) == ["one", "x", "y", *(f"m{i}" for i in range(5))]


async def test_a_step_finds_its_session_deleted_and_created_again_by_another_store(
    stores: StoreFactory, clock: FakeClock
) -> None:
    mine, other = stores.open(), stores.open()
    await _running(mine)  # `mine` has stepped in the session: it knows its row
    await other.delete_session(key())
    # Another session takes the place (and, on SQLite, the primary key) of the deleted one.
    await other.create_session(APP, USER, session_id=SessionId("s2"))
    before = await snapshot(other, key("s2"))
    clock.advance(5)  # a step landing in it would move its last update

    with pytest.raises(SessionNotFoundError, match="app/u/s1"):
        await mine.commit_step(step(key(), "inv-1", 2, events=(event("lost"),)))
    assert await snapshot(other, key("s2")) == before
    await _running(other)  # the session again, under its old key, in a new row

    assert await mine.commit_step(step(key(), "inv-1", 2, events=(event("again"),))) == 3
    found = await other.get_session(key())
    assert found is not None
    assert texts(found.events) == ["one", "again"]
    assert await snapshot(other, key("s2")) == before


async def test_concurrent_plain_steps_with_one_version_exactly_one_wins(
    stores: StoreFactory,
) -> None:
    await _running(stores.open())
    racers = [stores.open() for _ in range(RACERS)]

    winner = await race_one_winner(
        racers, lambda i: step(key(), "inv-1", 2, events=(event(f"racer-{i}"),))
    )
    found = await racers[0].get_session(key())
    assert found is not None
    assert texts(found.events) == ["one", f"racer-{winner}"]


async def test_concurrent_invocations_in_one_session_keep_every_state_key(
    stores: StoreFactory,
) -> None:
    """Plain steps and state-changing steps of several invocations interleave in one
    session: every state key and every event lands, each invocation's in its order."""
    invocations = [f"inv-{i}" for i in range(RACERS)]
    first = stores.open()
    for invocation_id in invocations:
        await _running(first, invocation_id)

    async def run(store: Store, invocation_id: str) -> None:
        version = 2
        for n in range(6):
            # odd steps change the state (a transaction), even ones are plain
            state: dict[str, JsonValue] = {f"{invocation_id}-{n}": n} if n % 2 else {}
            events = (event(f"{invocation_id}/{n}"),)
            commit = step(key(), invocation_id, version, events=events, state=state)
            version = await store.commit_step(commit)

    await asyncio.gather(*(run(stores.open(), i) for i in invocations))

    found = await first.get_session(key())
    assert found is not None
    assert found.state == {"n": 0} | {f"{i}-{n}": n for i in invocations for n in (1, 3, 5)}
    seen = texts(found.events)
    for invocation_id in invocations:
        mine = [t for t in seen if t.startswith(f"{invocation_id}/")]
        assert mine == [f"{invocation_id}/{n}" for n in range(6)]


async def test_a_plain_step_is_one_statement_on_postgres(emptied_postgres_url: str) -> None:
    store = SqlStore(emptied_postgres_url)
    await _running(store)

    with traffic(store) as seen:
        await store.commit_step(step(key(), "inv-1", 2, events=(event("x"), event("y"))))
        with pytest.raises(StaleVersionError):
            await store.commit_step(step(key(), "inv-1", 2, events=(event("z"),)))

    await store.close()
    # the step; the stale one, then the version read for its message: all straight to asyncpg
    assert seen.statements == ["WITH", "WITH", "SELECT"]
    assert seen.direct == 3
    assert seen.commits == 0


async def test_a_plain_step_on_sqlite_reads_nothing_back(
    tmp_path: Path,
) -> None:
    with sqlite_statements() as sent:
        store = SqlStore(sqlite_url(tmp_path))
        try:
            await _running(store)
            before = len(sent)
            assert await store.commit_step(step(key(), "inv-1", 2, events=(event("x"),))) == 3
            landed = sent[before:]
            with pytest.raises(StaleVersionError, match="'inv-1' is at version 3, not 2"):
                await store.commit_step(step(key(), "inv-1", 2, events=(event("late"),)))
        finally:
            await store.close()

    # The session's update, by the primary key its earlier steps read; the invocation's
    # update, whose count says it advanced (its new version is known); the event.
    assert landed == ["BEGIN", "UPDATE", "UPDATE", "INSERT", "COMMIT"]


_CREATE_AND_RUN = """
import asyncio, sys
from baton.sessions.sql import SqlStore
from baton.sessions.sql.postgres import has_unread_input
from tests.store.builders import APP, USER, event, key, step

async def main():
    store = SqlStore(sys.argv[1])
    try:
        await store.create_session(APP, USER, session_id="s1")
        await store.commit_step(step(key(), "inv-1", 0, checkpoint={"at": 0}))
        await store.commit_step(step(key(), "inv-1", 1, events=(event("one"),)))
    finally:
        await store.close()

asyncio.run(main())
"""


async def test_a_step_after_reading_a_session_another_process_made_reads_nothing_back(
    tmp_path: Path,
) -> None:
    # Two server processes share a SQLite file; requests go to them in turn: one
    # creates the session and starts the run, the other reads it and steps it on.
    url = sqlite_url(tmp_path)
    other = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CREATE_AND_RUN, url, stdout=PIPE, stderr=PIPE
    )
    _, errors = await other.communicate()
    assert other.returncode == 0, errors.decode()
    with sqlite_statements() as sent:
        store = SqlStore(url)
        try:
            assert await store.get_session(key(), with_events=False) is not None
            before = len(sent)
            assert await store.commit_step(step(key(), "inv-1", 2, events=(event("x"),))) == 3
            landed = sent[before:]
            found = await store.get_session(key())
        finally:
            await store.close()

    # The session's row read told its primary key: the step reads nothing back.
    assert landed == ["BEGIN", "UPDATE", "UPDATE", "INSERT", "COMMIT"]
    assert found is not None
    assert texts(found.events) == ["one", "x"]


async def test_the_first_step_in_a_session_this_store_created_reads_nothing_back(
    tmp_path: Path,
) -> None:
    with sqlite_statements() as sent:
        store = SqlStore(sqlite_url(tmp_path))
        try:
            await store.create_session(APP, USER, session_id=SessionId("s1"))
            before = len(sent)
            await store.commit_step(step(key(), "inv-1", 0, checkpoint={"at": 0}))
            landed = sent[before:]
        finally:
            await store.close()

    # The new row's key came back with its insert: the session is touched by it.
    assert "SELECT" not in landed, landed


async def test_a_pooled_postgres_connection_the_server_closed_is_replaced(
    emptied_postgres_url: str,
) -> None:
    name = f"baton-closed-{uuid.uuid4().hex[:8]}"  # ends this store's connections, no one else's
    options = {"connect_args": {"server_settings": {"application_name": name}}}
    store = SqlStore(emptied_postgres_url, engine_options=options)
    await _running(store)
    # What a server restart or an idle-connection timeout does to the pooled connections.
    ended = await _terminate(f"application_name = '{name}' AND state = 'idle'")
    assert ended, "the store kept no idle connection to end"
    await _gone(f"application_name = '{name}'")  # their sockets are closed, as after a restart

    await store.commit_step(step(key(), "inv-1", 2, events=(event("after"),)))  # one statement
    session = await store.get_session(key())  # a read transaction
    await store.close()

    assert session is not None
    assert texts(session.events) == ["one", "after"]


async def test_a_step_connection_the_server_ended_while_idle_is_replaced(
    emptied_postgres_url: str,
) -> None:
    # The server's goodbye (an ErrorResponse, FATAL) reaches an idle step connection and
    # is read, but its end of stream is not there yet: the connection looks open, and
    # asyncpg, reading a message while idle, refuses the next statement ("cannot switch
    # to state 12; another operation (2) is in progress") without sending it.
    async with _Relay() as relay:
        url = make_url(emptied_postgres_url).set(port=relay.port)
        store = SqlStore(url.render_as_string(hide_password=False))
        try:
            await _running(store)
            idle = _idle_step_connections(store)
            assert idle, "the store kept no step connection"
            ended = await _terminate(f"pid = ANY(ARRAY{[c.get_server_pid() for c in idle]})")
            await relay.ends_held(ended)
            for connection in idle:  # the goodbye read, as the event loop reads it
                socket = connection._transport.get_extra_info("socket")
                while has_unread_input(socket.fileno()):  # noqa: ASYNC110 - a socket, not an event
                    await asyncio.sleep(0)

            await store.commit_step(step(key(), "inv-1", 2, events=(event("after"),)))
            session = await store.get_session(key())
        finally:
            relay.release()
            await store.close()

    assert session is not None
    assert texts(session.events) == ["one", "after"]


def _idle_step_connections(store: SqlStore) -> list[Any]:
    executor: Any = store._executor  # pyright: ignore[reportPrivateUsage] -- its asyncpg connections
    return [connection for connection, _ in executor._direct._idle]


async def _terminate(which: str) -> int:
    """End the server processes of the connections `which` (SQL on pg_stat_activity)
    picks; return how many."""
    admin = create_async_engine(POSTGRES_URL)
    try:
        async with admin.connect() as connection:
            query = f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE {which}"
            return await connection.scalar(text(query)) or 0
    finally:
        await admin.dispose()


async def _gone(which: str) -> None:
    """Wait until no server process `which` picks is left: each closes its socket as it
    ends, so the client's end of stream is on its way (a loaded machine takes its time)."""
    admin = create_async_engine(POSTGRES_URL)
    try:
        async with admin.connect() as connection, asyncio.timeout(30):
            query = text(f"SELECT count(*) FROM pg_stat_activity WHERE {which}")
            while await connection.scalar(query):
                await connection.rollback()  # a new snapshot of pg_stat_activity
                await asyncio.sleep(0.01)
    finally:
        await admin.dispose()


class _Relay:
    """A TCP relay to the local PostgreSQL passing every byte on at once both ways, but
    holding each server's end of stream from its client until `release`."""

    def __init__(self) -> None:
        self._ends = 0
        self._ended = asyncio.Condition()
        self._released = asyncio.Event()
        self._streams: list[asyncio.StreamWriter] = []
        self._handlers: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> _Relay:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port: int = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        self.release()
        self._server.close()
        for stream in self._streams:
            stream.close()
        await asyncio.gather(*self._handlers)

    async def ends_held(self, count: int) -> None:
        """Wait until `count` servers have ended their streams (their last bytes passed on)."""
        async with self._ended:
            await self._ended.wait_for(lambda: self._ends >= count)

    def release(self) -> None:
        self._released.set()

    async def _serve(
        self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter
    ) -> None:
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        server = make_url(POSTGRES_URL)
        server_in, server_out = await asyncio.open_connection(server.host, server.port)
        self._streams += [client_out, server_out]
        upward = asyncio.create_task(_pass_on(client_in, server_out))
        await _pass_on(server_in, client_out)
        async with self._ended:
            self._ends += 1
            self._ended.notify_all()
        await self._released.wait()
        client_out.close()
        await upward
        server_out.close()


async def _pass_on(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy `source` to `sink` until `source` ends or either is closed."""
    with contextlib.suppress(ConnectionError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
