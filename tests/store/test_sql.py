"""What only the SQL stores promise: durability across processes, migrations, URLs."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import threading
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from sqlalchemy import Engine, create_mock_engine, func, inspect, select, text
from sqlalchemy import event as sql_events
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import CreateIndex, CreateTable

from baton import types
from baton.artifacts import SqliteArtifactService
from baton.database_memory import SqliteMemoryService
from baton.errors import ExtraNotInstalledError, InvocationBusyError
from baton.sessions.artifacts import ArtifactKey, ArtifactSave
from baton.sessions.services import (
    BaseSessionService,
    DatabaseSessionService,
    SqliteSessionService,
)
from baton.sessions.sql import SqlStore, executors, reads, schema
from baton.sessions.sql.backends import open_dialect
from baton.sessions.sql.dialect import EncodedJson, SqlDialect
from baton.sessions.sql.executors import Executor
from baton.sessions.sql.migrations import LATEST_VERSION, MIGRATIONS, migrate, read_version
from baton.sessions.store import InvocationStatus
from baton.types import InterruptId, InvocationId, SessionId
from tests.conftest import FakeClock, sqlite_url
from tests.store.builders import APP, USER, event, key, question, snapshot, step, texts

T = TypeVar("T")
ALL_STEPS = [m.number for m in MIGRATIONS]
MIGRATORS = 4
PROCESSES = 2  # each child imports baton (about a second), so few
WITHIN = 30.0  # seconds any awaited outcome may take on a loaded machine


@dataclass(frozen=True)
class _Database:
    """A database's strategy and an executor on it, as a store holds them."""

    dialect: SqlDialect
    executor: Executor

    async def transact(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        return await self.executor.transact(fn, write=write)


@asynccontextmanager
async def _database(url: str) -> AsyncIterator[_Database]:
    dialect = open_dialect(url)
    database = _Database(dialect, dialect.open_executor())
    try:
        yield database
    finally:
        await database.executor.close()


async def _migrate(database: _Database, *, up_to: int = LATEST_VERSION) -> list[int]:
    return await database.executor.transact(
        partial(migrate, up_to=up_to), database.dialect, write=True
    )


async def _scalar(database: _Database, sql: str) -> Any:
    def scalar(connection: Connection) -> Any:
        return connection.scalar(text(sql))

    return await database.transact(scalar, write=False)


async def test_second_store_on_the_same_database_sees_everything(
    emptied_store_url: str, clock: FakeClock
) -> None:
    first = SqlStore(emptied_store_url, clock=clock)
    await first.create_session(APP, USER, session_id=SessionId("s1"), state={"a": 1})
    await first.commit_step(
        step(
            key(),
            "inv-1",
            0,
            events=(event("asked", invocation_id="inv-1"),),
            checkpoint={"at": "ask"},
            opened=(question(key(), "inv-1", "q1"),),
        )
    )
    await first.claim(InvocationId("inv-1"), "worker-1", timedelta(minutes=5))
    written = await snapshot(first, key())
    await first.close()

    second = SqlStore(emptied_store_url, clock=clock)
    try:
        assert await snapshot(second, key()) == written
        with pytest.raises(InvocationBusyError, match="'worker-1'"):
            await second.claim(InvocationId("inv-1"), "worker-2", timedelta(minutes=5))
    finally:
        await second.close()


async def test_migrations_run_once_and_are_idempotent(store_url: str) -> None:
    async with _database(store_url) as database:
        assert await _migrate(database) == ALL_STEPS
        assert await _migrate(database) == []
        assert await database.transact(read_version, write=False) == LATEST_VERSION


async def test_a_database_of_step_1_migrates_to_exactly_todays_schema(store_url: str) -> None:
    """Frozen steps: a database made by the first release, with data in it, ends up with
    the tables, columns and indexes that `schema` declares, and its rows survive."""
    async with _database(store_url) as database:
        assert await _migrate(database, up_to=1) == [1]
        await database.transact(_seed_version_1, write=True)
        assert await _migrate(database) == ALL_STEPS[1:]
        shape = await database.transact(_schema_shape, write=False)
        kept = await _scalar(database, "SELECT count(*) FROM baton_invocations")

    assert shape == _declared_shape(store_url)
    assert kept == 1
    store = SqlStore(store_url)
    try:  # the running invocation of the old database lapsed: recovery may claim it
        claimed = await store.claim_orphans([APP], "w/1", timedelta(seconds=5), limit=5)
        old = await store.load_invocation(key(), InvocationId("inv-old"))
    finally:
        await store.close()
    assert [c.lease.invocation_id for c in claimed] == ["inv-old"]
    # its fingerprint moved to its own table (step 4) and still reads back
    assert old is not None
    assert old.fingerprint == "fp"


async def test_migration_9_sets_each_sessions_last_update_to_its_latest_step(
    store_url: str,
) -> None:
    """Steps used to leave `updated_at` alone (reads took the latest invocation's): the
    upgrade writes that time into the session row, which steps keep current since."""
    async with _database(store_url) as database:
        await _migrate(database, up_to=8)
        await database.transact(_seed_version_8, write=True)
        assert await _migrate(database, up_to=9) == [9]
        moved = await _scalar(database, "SELECT updated_at FROM baton_sessions")
    assert moved == 5.0


async def test_migration_10_keeps_the_outbox_and_never_reuses_a_number(store_url: str) -> None:
    """Undelivered notifications survive the move to per-receiver places (a receiver gets
    them), and once they were delivered and deleted the next one is numbered after them."""
    async with _database(store_url) as database:
        await _migrate(database, up_to=9)
        await database.transact(_seed_outbox_9, write=True)
        assert await _migrate(database, up_to=10) == [10]
    store = SqlStore(store_url)
    ttl = timedelta(seconds=5)
    try:
        claimed = await store.claim_notifications("http://r", "s", ttl=ttl, limit=5)
        assert claimed is not None
        assert [(n.id, n.seq, n.kind) for n in claimed.notifications] == [
            ("n1", 1, "run.completed")
        ]
        await store.accept_notification("http://r", "s", 1, ttl=ttl)
        assert await store.prune_notifications(["http://r"]) == 1
        await store.create_session(APP, USER, session_id=SessionId("s2"))
        await store.commit_step(step(key("s2"), "inv-2", 0, status=InvocationStatus.COMPLETED))
        after = await store.claim_notifications("http://r", "s", ttl=ttl, limit=5)
    finally:
        await store.close()
    assert after is not None
    assert [(n.seq, n.kind) for n in after.notifications] == [(2, "run.completed")]


async def test_migration_14_keeps_every_sessions_events_in_order_and_its_runs_resumable(
    store_url: str,
) -> None:
    """On PostgreSQL the events' key becomes (session, seq), standing in for the
    (session, seq) index; a database of step 13 with two sessions' events interleaved
    reads each session's events in order after it, newest first with a limit too, and
    its lapsed run is claimed and continues, its next event after the old ones."""
    async with _database(store_url) as database:
        await _migrate(database, up_to=13)
        await database.transact(_seed_events_13, write=True)
        assert await _migrate(database, up_to=14) == [14]
        keyed, indexes = await database.transact(_events_key_and_indexes, write=False)
    on_postgresql = store_url.startswith("postgresql")
    assert keyed == (["session_pk", "seq"] if on_postgresql else ["seq"])
    assert ("ix_baton_events_session_seq" in indexes) is not on_postgresql
    store = SqlStore(store_url)
    try:
        newest = await store.get_session(key(), event_limit=1)
        other = await store.get_session(key("s2"))
        (claimed,) = await store.claim_orphans([APP], "w/1", timedelta(seconds=5), limit=5)
        events = (event("e2", invocation_id="inv-1"),)
        commit = replace(step(key(), "inv-1", 2, events=events), lease=claimed.lease)
        assert await store.commit_step(commit) == 3
        resumed = await store.get_session(key())
        run = await store.list_events(key(), InvocationId("inv-1"))
    finally:
        await store.close()
    assert newest is not None
    assert texts(newest.events) == ["e1"]
    assert other is not None
    assert texts(other.events) == ["x0", "x1"]
    assert resumed is not None
    assert texts(resumed.events) == ["e0", "e1", "e2"]
    assert texts(run) == ["e0", "e1", "e2"]


def _seed_events_13(connection: Connection) -> None:
    """Sessions s1 (with invocation inv-1 at version 2, its lease lapsed) and s2, whose
    events were appended in turns."""
    for session_id in ("s1", "s2"):
        connection.execute(
            schema.sessions.insert().values(
                app_name=APP, user_id=USER, session_id=session_id, state={}, updated_at=1.0
            )
        )
    pks = dict(connection.execute(select(schema.sessions.c.session_id, schema.sessions.c.pk)).all())
    connection.execute(
        schema.invocations.insert().values(
            id="inv-1",
            session_pk=pks["s1"],
            status=InvocationStatus.RUNNING.value,
            checkpoint={"at": "b"},
            version=2,
            created_at=1.0,
            updated_at=1.0,
        )
    )
    for i in range(2):
        for session_id, text_, invocation_id in (("s1", f"e{i}", "inv-1"), ("s2", f"x{i}", "")):
            written = event(text_, invocation_id=invocation_id)
            connection.execute(
                schema.events.insert().values(
                    session_pk=pks[session_id],
                    invocation_id=invocation_id,
                    author=written.author,
                    timestamp=written.timestamp,
                    event=EncodedJson(schema.stored_event(written)),
                )
            )


def _events_key_and_indexes(connection: Connection) -> tuple[list[str], list[str]]:
    found = inspect(connection)
    keyed = [str(c) for c in found.get_pk_constraint("baton_events")["constrained_columns"]]
    return keyed, [str(i["name"]) for i in found.get_indexes("baton_events")]


def _seed_outbox_9(connection: Connection) -> None:
    body = '{"id": "n1", "type": "run.completed"}'
    connection.execute(
        text(
            "INSERT INTO baton_notifications (id, body, created_at, attempts, next_at, "
            "delivered_to, claimed_by, claimed_until) "
            f"VALUES ('n1', '{body}', 1.0, 2, 3.0, '[\"http://x\"]', NULL, 0.0)"
        )
    )


async def test_session_rows_keep_a_foreign_key_to_their_session_except_on_postgresql(
    store_url: str,
) -> None:
    """PostgreSQL checks a foreign key with triggers every step pays for: its events,
    invocations, questions and question checkpoints have none (migrations 11 and 15), as
    `schema` declares; the others keep theirs."""
    async with _database(store_url) as database:
        await _migrate(database)
        found = await database.transact(_session_keys, write=False)
    expected = [] if store_url.startswith("postgresql") else ["baton_sessions"]
    assert found == {t.name: (expected, bool(expected)) for t in _SESSION_TABLES[1:]}


def _session_keys(connection: Connection) -> dict[str, tuple[list[str], bool]]:
    """Each child table of sessions: the tables its foreign keys refer to, and whether
    `schema` declares one for this database."""
    found = inspect(connection)
    return {
        table.name: (
            [str(k["referred_table"]) for k in found.get_foreign_keys(table.name)],
            "FOREIGN KEY" in str(CreateTable(table).compile(dialect=connection.dialect)),
        )
        for table in _SESSION_TABLES[1:]
    }


async def test_migration_15_drops_postgresqls_keys_to_sessions_and_deletes_still_cascade(
    store_url: str,
) -> None:
    """A database of step 14 with two sessions' rows ends with the keys and indexes a
    fresh one has; deleting a session still deletes its rows, and only its."""
    async with _database(store_url) as database:
        await _migrate(database, up_to=14)
        await database.transact(_seed_events_13, write=True)
        await database.transact(_seed_question_14, write=True)
        assert await _migrate(database) == ALL_STEPS[14:]
        keys = await database.transact(_session_keys, write=False)
        shape = await database.transact(_schema_shape, write=False)
    expected = [] if store_url.startswith("postgresql") else ["baton_sessions"]
    assert keys == {t.name: (expected, bool(expected)) for t in _SESSION_TABLES[1:]}
    assert shape == _declared_shape(store_url)
    store = SqlStore(store_url)
    try:
        assert await store.delete_session(key()) is True
    finally:
        await store.close()
    async with _database(store_url) as database:
        counts = await database.transact(_rows_per_session, write=False)
    assert counts == {"s2": [1, 2, 0, 0, 0]}


async def test_migration_16_leaves_half_of_each_page_of_steps_rows_on_postgresql(
    store_url: str,
) -> None:
    """A database of step 15 ends with the shape a fresh one has, its rows kept, and on
    PostgreSQL with fillfactor 50 on the two tables every step updates."""
    async with _database(store_url) as database:
        await _migrate(database, up_to=15)
        await database.transact(_seed_version_8, write=True)
        assert await _migrate(database) == ALL_STEPS[15:]
        shape = await database.transact(_schema_shape, write=False)
        kept = await _scalar(database, "SELECT count(*) FROM baton_invocations")
        options = await database.transact(_fillfactors, write=False)
    assert shape == _declared_shape(store_url)
    assert kept == 1
    if store_url.startswith("postgresql"):
        assert options == {"baton_sessions": 50, "baton_invocations": 50}


def _fillfactors(connection: Connection) -> dict[str, int]:
    """PostgreSQL's fillfactor of each baton table that sets one (none elsewhere)."""
    if connection.dialect.name != "postgresql":
        return {}
    rows = connection.execute(
        text(
            "SELECT relname, option_value FROM pg_class, pg_options_to_table(reloptions) "
            "WHERE relnamespace = current_schema()::regnamespace AND relname LIKE 'baton%' "
            "AND option_name = 'fillfactor'"
        )
    )
    return {str(name): int(value) for name, value in rows}


async def test_migration_17_shares_prefixed_keys_from_then_on_and_keeps_earlier_state(
    store_url: str,
) -> None:
    """A database of step 16 whose session holds a `user:` key in its own state (as
    stores kept them before) ends with today's tables; the session keeps its key, new
    `app:` and `user:` keys reach the user's other sessions, and the earlier key gives
    way to the shared one when both exist."""
    async with _database(store_url) as database:
        await _migrate(database, up_to=16)
        await database.transact(_seed_prefixed_state_16, write=True)
        assert await _migrate(database) == ALL_STEPS[16:]
        shape = await database.transact(_schema_shape, write=False)
    assert shape == _declared_shape(store_url)
    store = SqlStore(store_url)
    try:
        old = await store.get_session(key())
        assert old is not None
        assert old.state == {"user:name": "old", "n": 1}
        await store.commit_step(step(key(), None, 0, state={"app:k": 1}))
        other = await store.create_session(APP, USER, state={"user:name": "new"})
        again = await store.get_session(key(), with_events=False)
    finally:
        await store.close()
    assert other.state == {"app:k": 1, "user:name": "new"}
    assert again is not None
    assert again.state == {"user:name": "new", "n": 1, "app:k": 1}


async def test_migration_18_moves_prefixed_keys_kept_in_sessions_to_the_shared_rows(
    store_url: str,
) -> None:
    """Sessions of step 17 holding `app:` and `user:` keys in their own state (written
    before step 17) give them to the app's and the user's rows: where sessions disagree,
    the most recently updated one's value wins, and a key the shared row already held
    (written since step 17) stays. The sessions keep only their own keys; what code
    reads of each session's state is the shared value."""
    async with _database(store_url) as database:
        await _migrate(database, up_to=17)
        await database.transact(_seed_prefixed_state_17, write=True)
        assert await _migrate(database) == ALL_STEPS[17:]
        shape = await database.transact(_schema_shape, write=False)
        rows = await database.transact(_state_rows, write=False)
    assert shape == _declared_shape(store_url)
    assert rows == (
        {
            "s1": {"n": 1},
            "s2": {},
            "s3": {"m": 2},
            "s4": {"note": 'say "app:k"', "user": "user:name"},
            "s5": {"plain": 1},
            "s6": {},
        },
        {APP: {"app:k": "since 17", "app:j": "j2"}},
        {(APP, USER): {"user:name": "newer"}, (APP, "u2"): {"user:name": "x"}},
    )
    store = SqlStore(store_url)
    try:
        s1 = await store.get_session(key(), with_events=False)
    finally:
        await store.close()
    assert s1 is not None
    assert s1.state == {"n": 1, "app:k": "since 17", "app:j": "j2", "user:name": "newer"}


async def test_migration_19_leaves_no_notify_inside_a_step_and_other_processes_still_wake(
    store_url: str,
) -> None:
    """A database of step 18 loses PostgreSQL's NOTIFY trigger on the interrupts table (a
    NOTIFY inside a durable commit holds a database-wide lock through its WAL flush, so
    every process's notifying commits waited for each other); on every backend the step
    leaves today's tables, and on PostgreSQL a question a step opens still wakes another
    process, now told after the commit."""
    async with _database(store_url) as database:
        await _migrate(database, up_to=18)
        assert await _migrate(database) == ALL_STEPS[18:]
        shape = await database.transact(_schema_shape, write=False)
        triggers = await database.transact(_interrupt_triggers, write=False)
    assert shape == _declared_shape(store_url)
    assert triggers == []
    writer, watcher = SqlStore(store_url), SqlStore(store_url)
    subscription = watcher.subscribe()
    try:
        await writer.create_session(APP, USER, session_id=SessionId("s1"))
        listens = watcher.wakes_other_processes
        await subscription.wait(5.0 if listens else 0.01)  # the listener's first look
        await writer.commit_step(step(key(), "inv-1", 0, opened=(question(key(), "inv-1", "q1"),)))
        woken = await subscription.wait(5.0 if listens else 0.01)
    finally:
        subscription.close()
        await writer.close()
        await watcher.close()
    assert woken is listens


async def test_migration_20_keeps_leases_and_unneeded_keys_out_of_the_indexes(
    store_url: str, clock: FakeClock
) -> None:
    """A database of step 19 ends with today's shape: on PostgreSQL no index of
    invocations holds a lease's column (a claim changes no indexed column: a HOT update)
    and the assignee's and the deadline's indexes hold only rows that have one; outside
    SQLite notification ids carry no unique index. Its lapsed run, a question
    with an assignee and a deadline, and the outbox still read back through them."""
    async with _database(store_url) as database:
        await _migrate(database, up_to=19)
        await database.transact(_seed_version_8, write=True)
        assert await _migrate(database) == ALL_STEPS[19:]
        shape = await database.transact(_schema_shape, write=False)
        indexes = await database.transact(_index_definitions, write=False)
        unique = await database.transact(_notification_uniques, write=False)
    assert shape == _declared_shape(store_url)
    dialect = open_dialect(store_url).name
    if dialect == "postgresql":
        assert "lease" not in " ".join(indexes["baton_invocations"].values())
        partial = indexes["baton_interrupts"]
        assert "WHERE (assignee IS NOT NULL)" in partial["ix_baton_interrupts_assignee_listing"]
        assert "WHERE (expires_at IS NOT NULL)" in partial["ix_baton_interrupts_status_expires"]
    assert unique == ([["id"]] if dialect == "sqlite" else [])

    store = SqlStore(store_url, clock=clock)
    try:
        asked = question(key(), "inv-1", "q1").model_copy(
            update={"assignee": "bob", "timeout": 1.0}
        )
        await store.commit_step(step(key(), "inv-1", 0, opened=(asked,)))
        clock.advance(2)
        orphans = await store.claim_orphans([APP], "w/1", timedelta(seconds=5), limit=5)
        assigned = await store.list_interrupts(APP, assignee="bob")
        due = await store.due_interrupts([APP], limit=5)
        delivery = await store.claim_notifications(
            "http://receiver", "w/1", ttl=timedelta(seconds=5), limit=5
        )
    finally:
        await store.close()
    assert {c.lease.invocation_id for c in orphans} == {"inv-old", "inv-1"}
    assert [q.interrupt_id for q in assigned] == [q.interrupt_id for q in due] == ["q1"]
    assert delivery is not None
    assert [n.body["type"] for n in delivery.notifications] == ["question.opened"]


async def test_an_outbox_row_holds_its_id_and_time_once_and_delivers_the_whole_body(
    store_url: str,
) -> None:
    """A notification's id and time are columns of its row, not repeated in its stored
    body; the body claimed is the whole one, its keys in their documented order."""
    store = SqlStore(store_url)
    try:
        await store.create_session(APP, USER, session_id=SessionId("s1"))
        await store.commit_step(step(key(), "inv-1", 0, opened=(question(key(), "inv-1", "q1"),)))
        delivery = await store.claim_notifications(
            "http://receiver", "w/1", ttl=timedelta(seconds=5), limit=5
        )
    finally:
        await store.close()
    async with _database(store_url) as database:
        stored = await database.transact(_stored_bodies, write=False)
    assert delivery is not None
    [sent] = delivery.notifications
    assert list(sent.body)[:4] == ["id", "type", "createdAt", "appName"]
    assert (sent.body["id"], sent.body["createdAt"]) == (sent.id, sent.created_at)
    assert stored == [{k: v for k, v in sent.body.items() if k not in ("id", "createdAt")}]


def _stored_bodies(connection: Connection) -> list[Any]:
    bodies = connection.scalars(select(schema.notifications.c.body).order_by("seq"))
    return list(bodies)


async def test_migration_22_undoes_21_and_recovery_finds_only_the_running_run(
    store_url: str, clock: FakeClock
) -> None:
    """A database of step 20 with a lapsed running run, a paused one and a finished one:
    step 21 computes which are unfinished (on PostgreSQL, indexed instead of the status);
    step 22 takes that out again, leaving today's shape (on PostgreSQL the status index),
    and recovery claims the running run alone."""
    async with _database(store_url) as database:
        await _migrate(database, up_to=20)
        await database.transact(_seed_version_20, write=True)
        assert await _migrate(database, up_to=21) == [21]
        unfinished = await database.transact(_unfinished_runs, write=False)
        at_21 = await database.transact(_index_definitions, write=False)
        assert await _migrate(database, up_to=22) == [22]
        shape = await database.transact(_schema_shape, write=False)
        indexes = await database.transact(_index_definitions, write=False)
    assert unfinished == {"inv-old": True, "inv-paused": True, "inv-done": False}
    assert shape == _declared_shape(store_url)
    if open_dialect(store_url).name == "postgresql":
        assert "ix_baton_invocations_unfinished" in at_21["baton_invocations"]
        assert "ix_baton_invocations_status" not in at_21["baton_invocations"]
        held = indexes["baton_invocations"]
        assert held["ix_baton_invocations_status"].endswith("USING btree (status)")
        assert "unfinished" not in " ".join(held.values())

    store = SqlStore(store_url, clock=clock)
    try:
        orphans = await store.claim_orphans([APP], "w/1", timedelta(seconds=5), limit=5)
        due = await store.next_due([APP])
    finally:
        await store.close()
    assert [c.lease.invocation_id for c in orphans] == ["inv-old"]
    assert due is not None
    assert abs(due - (clock() + 5)) < 0.1  # the lease it just took


def _seed_version_20(connection: Connection) -> None:
    """A lapsed running run (`_seed_version_8`), a paused one and a finished one."""
    _seed_version_8(connection)
    for ident, status in (("inv-paused", "paused"), ("inv-done", "completed")):
        connection.execute(
            text(
                "INSERT INTO baton_invocations (id, session_pk, status, fingerprint_digest, "
                f"version, created_at, updated_at) SELECT '{ident}', pk, '{status}', 'fp', 1, "
                "2.0, 2.0 FROM baton_sessions"
            )
        )


def _unfinished_runs(connection: Connection) -> dict[str, bool]:
    """Step 21's computed column, by run (it is gone from `schema` since step 22)."""
    rows = connection.execute(text("SELECT id, unfinished FROM baton_invocations"))
    return {str(ident): bool(unfinished) for ident, unfinished in rows}


async def test_migration_23_tells_ids_apart_by_their_trailing_spaces(
    store_url: str, clock: FakeClock
) -> None:
    """A database of step 22 holding session 'trail ' (an older baton's): after step 23
    session 'trail' can be created beside it (MySQL's unique key took them for one), and
    each session and its artifacts are found under exactly its id."""
    async with _database(store_url) as database:
        await _migrate(database, up_to=22)
        await database.transact(_seed_padded_session, write=True)
        assert await _migrate(database) == [23]
        shape = await database.transact(_schema_shape, write=False)
    store = SqlStore(store_url, clock=clock)
    try:
        await _save_artifact(store, "trail ", "old.txt")
        await store.create_session(APP, USER, session_id=SessionId("trail"), state={"n": 2})
        await _save_artifact(store, "trail", "new.txt")
        for session, n, name in (("trail", 2, "new.txt"), ("trail ", 1, "old.txt")):
            found = await store.get_session(key(session))
            assert found is not None
            assert (found.id, found.state) == (session, {"n": n})
            assert await store.list_artifact_names(APP, USER, session) == [name]
        await store.delete_session(key("trail"))
        assert await store.get_session(key("trail")) is None
        assert [s.id for s in await store.list_sessions(APP, USER)] == ["trail "]
    finally:
        await store.close()
    assert shape == _declared_shape(store_url)


def _seed_padded_session(connection: Connection) -> None:
    connection.execute(
        text(
            "INSERT INTO baton_sessions (app_name, user_id, session_id, state, updated_at) "
            f"VALUES ('{APP}', '{USER}', 'trail ', '{{\"n\": 1}}', 1.0)"
        )
    )


async def _save_artifact(store: SqlStore, session: str, filename: str) -> None:
    name = ArtifactKey(APP, USER, session, filename)
    await store.save_artifact(ArtifactSave(name, b'{"text": "x"}', "text/plain"))


_RUNNING = 20
_PAUSED = 2_000


async def test_recovery_on_postgresql_reads_the_running_runs_not_the_paused_ones(
    postgres_url: str, clock: FakeClock
) -> None:
    """Every worker reads the lapsed leases and the next lapse about once a lease TTL;
    paused runs wait for people, for weeks, and can be many. Neither read may visit them:
    its plan reads the running runs' rows (and their index entries) alone, and a bounded
    number of buffers. (Step 21's index of unfinished runs walked every paused one: 1,490
    buffers and 28-53 ms a claim at 50,000.)"""
    store = SqlStore(postgres_url, clock=clock)
    try:
        await store.create_session(APP, USER, session_id=SessionId("s1"))
        async with _database(postgres_url) as database:
            await database.transact(_seed_paused_and_running, write=True)
        with _recorded_selects() as selects:
            orphans = await store.claim_orphans([APP], "w/1", timedelta(seconds=5), limit=5)
            due = await store.next_due([APP])
    finally:
        await store.close()
    assert len(orphans) == 5
    assert due is not None
    recovery = [(sql, p) for sql, p in selects if "baton_invocations.status" in sql]
    assert len(recovery) == 2  # the orphans' claim and the next lapse's read

    def explain(connection: Connection) -> list[Any]:
        analyze = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)"
        return [connection.exec_driver_sql(f"{analyze} {sql}", p).scalar() for sql, p in recovery]

    async with _database(postgres_url) as database:
        plans = await database.transact(explain, write=True)
    for plan in plans:
        top = plan[0]["Plan"]
        # An index entry and its row both count: twice the running runs at most.
        assert _invocation_rows_read(top) <= 2 * _RUNNING, json.dumps(plan, indent=1)
        # A few buffers a running run: its row, its index entry, its session's app.
        assert top["Shared Hit Blocks"] + top["Shared Read Blocks"] < 4 * _RUNNING, plan


def _seed_paused_and_running(connection: Connection) -> None:
    """`_PAUSED` paused runs of session s1 with `_RUNNING` lapsed running ones among
    them, and the planner's statistics of them (as autovacuum keeps)."""
    every = (_PAUSED + _RUNNING) // _RUNNING
    connection.execute(
        text(
            "INSERT INTO baton_invocations (id, session_pk, status, fingerprint_digest, "
            "version, created_at, updated_at) SELECT 'inv-' || n, pk, CASE WHEN n % :every = 0 "
            "THEN 'running' ELSE 'paused' END, 'fp', 1, n, n "
            "FROM baton_sessions, generate_series(1, :count) AS n"
        ),
        {"every": every, "count": _PAUSED + _RUNNING},
    )
    connection.exec_driver_sql("ANALYZE baton_invocations")


def _invocation_rows_read(node: dict[str, Any]) -> float:
    """The rows and index entries of invocations a plan's node and those below it read:
    each scan's rows out and those its filters removed, over all its loops."""
    read = 0.0
    name = node.get("Relation Name") or node.get("Index Name", "")
    if name.startswith(("baton_invocations", "ix_baton_invocations")):
        kept = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
        read += (kept + node.get("Rows Removed by Index Recheck", 0)) * node["Actual Loops"]
    return read + sum(_invocation_rows_read(child) for child in node.get("Plans", ()))


def _index_definitions(connection: Connection) -> dict[str, dict[str, str]]:
    """Each baton table's indexes by name: PostgreSQL's definition (with a partial
    index's WHERE), elsewhere the columns."""
    if connection.dialect.name == "postgresql":
        rows = connection.execute(
            text(
                "SELECT tablename, indexname, indexdef FROM pg_indexes "
                "WHERE schemaname = current_schema() AND tablename LIKE 'baton%'"
            )
        )
        found: dict[str, dict[str, str]] = {}
        for table, name, definition in rows:
            found.setdefault(str(table), {})[str(name)] = str(definition)
        return found
    inspector = inspect(connection)
    return {
        table: {
            str(i["name"]): " ".join(map(str, i["column_names"]))
            for i in inspector.get_indexes(table)
        }
        for table in inspector.get_table_names()
        if table.startswith("baton")
    }


def _notification_uniques(connection: Connection) -> list[list[str]]:
    """The columns of each unique constraint or index on the outbox, but its key."""
    inspector = inspect(connection)
    constraints = inspector.get_unique_constraints("baton_notifications")
    uniques = [[str(c) for c in u["column_names"]] for u in constraints]
    # PostgreSQL and MySQL list a UNIQUE constraint as an index too
    indexes = [
        [str(c) for c in i["column_names"]]
        for i in inspector.get_indexes("baton_notifications")
        if i["unique"]
    ]
    return uniques + [columns for columns in indexes if columns not in uniques]


def _interrupt_triggers(connection: Connection) -> list[str]:
    """The names of PostgreSQL's triggers of our own on the interrupts table (none elsewhere)."""
    if connection.dialect.name != "postgresql":
        return []
    rows = connection.execute(
        text(
            "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal "
            "AND tgrelid = 'baton_interrupts'::regclass"
        )
    )
    return [str(name) for (name,) in rows]


def _seed_prefixed_state_17(connection: Connection) -> None:
    """Sessions (s2 of the same user updated after s1, s3 of another user, s4 and s5
    with no shared key, s6 with only an app: key) and the app's row written since step 17."""
    seeded = [
        ("s1", USER, 1.0, {"app:k": "a1", "app:j": "j1", "user:name": "old", "n": 1}),
        ("s3", "u2", 3.0, {"user:name": "x", "m": 2}),
        ("s2", USER, 2.0, {"app:k": "a2", "app:j": "j2", "user:name": "newer"}),
        # Its text names "app: only inside a value: read, and left as it is.
        ("s4", USER, 4.0, {"note": 'say "app:k"', "user": "user:name"}),
        ("s5", USER, 5.0, {"plain": 1}),
        ("s6", "u3", 0.5, {"app:j": "j0"}),  # only an app: key, the oldest
    ]
    for session_id, user_id, updated_at, state in seeded:
        connection.execute(
            schema.sessions.insert().values(
                app_name=APP,
                user_id=user_id,
                session_id=session_id,
                state=state,
                updated_at=updated_at,
            )
        )
    connection.execute(schema.app_states.insert().values(app_name=APP, state={"app:k": "since 17"}))


def _state_rows(
    connection: Connection,
) -> tuple[dict[str, Any], dict[str, Any], dict[tuple[str, str], Any]]:
    """Each session's own state, the app rows and the user rows."""
    sessions = schema.sessions.c
    users = schema.user_states.c
    own = connection.execute(select(sessions.session_id, sessions.state))
    apps = connection.execute(select(schema.app_states.c.app_name, schema.app_states.c.state))
    shared = connection.execute(select(users.app_name, users.user_id, users.state))
    return (
        {str(sid): state for sid, state in own},
        {str(app): state for app, state in apps},
        {(str(app), str(user)): state for app, user, state in shared},
    )


def _seed_prefixed_state_16(connection: Connection) -> None:
    connection.execute(
        schema.sessions.insert().values(
            app_name=APP,
            user_id=USER,
            session_id="s1",
            state={"user:name": "old", "n": 1},
            updated_at=1.0,
        )
    )


def _seed_question_14(connection: Connection) -> None:
    """An open question of s1's inv-1 (see `_seed_events_13`), with its checkpoint."""
    pk = connection.scalar(select(schema.sessions.c.pk).where(schema.sessions.c.session_id == "s1"))
    asked = question(key(), "inv-1", "q1")
    connection.execute(
        schema.interrupts.insert().values(
            invocation_id="inv-1",
            interrupt_id="q1",
            session_pk=pk,
            app_name=APP,
            user_id=USER,
            session_id="s1",
            node_path=asked.node_path,
            function_name=asked.function_name,
            status=asked.status.value,
            created_at=1.0,
        )
    )
    connection.execute(
        schema.question_checkpoints.insert().values(
            invocation_id="inv-1", interrupt_id="q1", session_pk=pk, checkpoint={"at": "b"}
        )
    )


def _seed_version_8(connection: Connection) -> None:
    """A session created at 1.0 whose invocation last stepped at 5.0."""
    _seed_session(connection, stepped_at=5.0, fingerprint="fingerprint_digest")


def _seed_session(
    connection: Connection, *, stepped_at: float, fingerprint: str = "fingerprint"
) -> None:
    connection.execute(
        text(
            "INSERT INTO baton_sessions (app_name, user_id, session_id, state, updated_at) "
            f"VALUES ('{APP}', '{USER}', 's1', '{{}}', 1.0)"
        )
    )
    connection.execute(
        text(
            f"INSERT INTO baton_invocations (id, session_pk, status, {fingerprint}, version, "
            f"created_at, updated_at) SELECT 'inv-old', pk, 'running', 'fp', 3, 1.0, {stepped_at} "
            "FROM baton_sessions"
        )
    )


def _seed_version_1(connection: Connection) -> None:
    _seed_session(connection, stepped_at=1.0)
    connection.execute(
        text(
            "INSERT INTO baton_leases (invocation_id, owner, expires_at) "
            "VALUES ('inv-old', 'w', 9e9)"
        )
    )


Shape = dict[str, tuple[list[tuple[str, bool]], list[tuple[str, tuple[str, ...]]]]]


def _schema_shape(connection: Connection) -> Shape:
    """Each baton table's columns (name, nullable) and indexes (name, columns), sorted."""
    found = inspect(connection)
    names = [n for n in found.get_table_names() if n.startswith("baton_")]
    unique = {n: {str(u["name"]) for u in found.get_unique_constraints(n)} for n in names}
    return {
        name: (
            sorted((c["name"], bool(c["nullable"])) for c in found.get_columns(name)),
            sorted(
                (str(i["name"]), tuple(str(c) for c in i["column_names"]))
                for i in found.get_indexes(name)
                # PostgreSQL and MySQL list a UNIQUE constraint as an index too
                if not i.get("duplicates_constraint") and str(i["name"]) not in unique[name]
            ),
        )
        for name in names
    }


def _declared_shape(url: str) -> Shape:
    """The shape `schema` declares on that URL's database (some indexes exist on some
    databases only: see `schema.events`)."""
    created: list[Any] = []

    def record(ddl: Any, *_args: Any, **_kwargs: Any) -> None:
        created.append(ddl)

    declaring = create_mock_engine(f"{open_dialect(url).url.drivername}://", record)
    schema.metadata.create_all(declaring, checkfirst=False)
    indexes = {ddl.element for ddl in created if isinstance(ddl, CreateIndex)}
    return {
        table.name: (
            sorted((c.name, bool(c.nullable)) for c in table.columns),
            sorted(
                (str(i.name), tuple(c.name for c in i.columns))
                for i in table.indexes
                if i in indexes
            ),
        )
        for table in schema.metadata.sorted_tables
    }


async def test_a_migration_waits_for_no_other_database_on_the_server(
    two_server_urls: tuple[str, str],
) -> None:
    """Each database's migration lock is its own: while a migration of one database holds
    its lock, another database on the same server (another app's, another test's)
    migrates. It waited for the other: up to 60 s on MySQL, for ever on PostgreSQL."""
    first, second = two_server_urls
    holding, release = threading.Event(), threading.Event()

    def hold_lock(connection: Connection) -> None:
        with open_dialect(first).migration_lock(connection):
            holding.set()
            release.wait(WITHIN)

    async def migrating_first() -> None:
        async with _database(first) as database:
            await database.transact(hold_lock, write=True)

    holder = threading.Thread(target=asyncio.run, args=(migrating_first(),))
    holder.start()
    try:
        assert await asyncio.to_thread(holding.wait, WITHIN)
        async with _database(second) as database, asyncio.timeout(WITHIN):
            assert await _migrate(database) == ALL_STEPS
    finally:
        release.set()
        await asyncio.to_thread(holder.join)


async def test_concurrent_migrations_apply_each_step_once(store_url: str) -> None:
    async with (
        _database(store_url) as a,
        _database(store_url) as b,
        _database(store_url) as c,
        _database(store_url) as d,
    ):
        applied = await asyncio.gather(*(_migrate(e) for e in (a, b, c, d)))

    assert sorted(applied) == [[]] * (MIGRATORS - 1) + [ALL_STEPS]


_MIGRATE_AND_PRINT = """
import asyncio, sys
from baton.sessions.sql.backends import open_dialect
from baton.sessions.sql.migrations import migrate

async def main() -> None:
    dialect = open_dialect(sys.argv[1])
    database = dialect.open_executor()
    try:
        print(await database.transact(migrate, dialect, write=True))
    finally:
        await database.close()

asyncio.run(main())
"""


@pytest.mark.slow
async def test_processes_starting_at_once_apply_each_step_once(store_url: str) -> None:
    children = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", _MIGRATE_AND_PRINT, store_url, stdout=PIPE, stderr=PIPE
        )
        for _ in range(PROCESSES)
    ]
    outputs = await asyncio.gather(*(child.communicate() for child in children))

    assert [child.returncode for child in children] == [0] * PROCESSES, outputs
    assert sorted(out.decode().strip() for out, _ in outputs) == [str(ALL_STEPS)] + ["[]"] * (
        PROCESSES - 1
    )


async def test_a_newer_schema_is_refused(emptied_store_url: str) -> None:
    def set_version_99(connection: Connection) -> None:
        connection.execute(schema.schema_version.update().values(version=99))

    async with _database(emptied_store_url) as database:
        await _migrate(database)
        await database.transact(set_version_99, write=True)

        with pytest.raises(RuntimeError, match=r"schema version 99.*upgrade baton"):
            await _migrate(database)


async def test_deleting_a_session_leaves_no_rows_behind(emptied_store_url: str) -> None:
    """Its invocations, questions, their checkpoints and events go with it, by a
    foreign key's cascade or (PostgreSQL, which has none) by the delete itself; another
    session's rows stay."""
    store = SqlStore(emptied_store_url)
    for session_id, invocation_id in (("s1", "inv-1"), ("s2", "inv-2")):
        await store.create_session(APP, USER, session_id=SessionId(session_id))
        await store.commit_step(
            step(
                key(session_id),
                invocation_id,
                0,
                events=(event("a"), event("b")),
                checkpoint={"at": "ask"},
                opened=(question(key(session_id), invocation_id, "q1"),),
            )
        )
    await store.claim(InvocationId("inv-1"), "worker-1", timedelta(minutes=5))
    await store.delete_session(key())
    await store.close()

    async with _database(emptied_store_url) as database:
        counts = await database.transact(_rows_per_session, write=False)
    assert counts == {"s2": [1, 2, 1, 1, 1]}


_SESSION_TABLES = (
    schema.sessions,
    schema.events,
    schema.invocations,
    schema.interrupts,
    schema.question_checkpoints,
)


def _rows_per_session(connection: Connection) -> dict[str, list[int]]:
    """For each session id found in any table: its rows in each of `_SESSION_TABLES`."""
    counts: dict[str, list[int]] = {}
    session_ids = select(schema.sessions.c.pk, schema.sessions.c.session_id)
    names = dict(connection.execute(session_ids).all())
    for i, table in enumerate(_SESSION_TABLES):
        pk = table.c.pk if table is schema.sessions else table.c.session_pk
        for session_pk, count in connection.execute(select(pk, func.count()).group_by(pk)):
            found = counts.setdefault(names.get(session_pk, f"gone {session_pk}"), [0] * 5)
            found[i] = count
    return counts


async def test_an_events_row_holds_its_invocation_author_and_time_once(
    emptied_store_url: str,
) -> None:
    """The row's columns hold them and its JSON the rest; a row written whole, as they
    were before, reads back the same."""
    old = event("before", invocation_id="inv-1")
    new = event("after", invocation_id="inv-1")
    store = SqlStore(emptied_store_url)
    try:
        await store.create_session(APP, USER, session_id=SessionId("s1"))
        await store.commit_step(step(key(), "inv-1", 0, checkpoint={"at": 1}))

        def append_whole(connection: Connection) -> None:
            row = {
                "session_pk": connection.scalar(select(schema.sessions.c.pk)),
                "invocation_id": old.invocation_id,
                "author": old.author,
                "timestamp": old.timestamp,
                "event": old.to_wire(),
            }
            connection.execute(schema.events.insert(), row)

        async with _database(emptied_store_url) as database:
            await database.transact(append_whole, write=True)
        await store.commit_step(step(key(), "inv-1", 1, events=(new,), checkpoint={"at": 2}))
        session = await store.get_session(key())
        async with _database(emptied_store_url) as database:
            stored = await database.transact(_stored_events, write=False)
    finally:
        await store.close()
    assert session is not None
    assert session.events == [old, new]
    assert stored[0] == old.to_wire()
    assert stored[1] == {k: v for k, v in new.to_wire().items() if k not in _IN_COLUMNS}


_IN_COLUMNS = ("invocationId", "author", "timestamp")


def _stored_events(connection: Connection) -> list[Any]:
    order = schema.events.c.seq
    return list(connection.scalars(select(schema.events.c.event).order_by(order)))


async def test_lookups_use_indexes_and_event_limit_uses_sql_limit(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    store = SqlStore(url)
    await store.create_session(APP, USER, session_id=SessionId("s1"))
    opened = (question(key(), "inv-1", "q1"),)
    events = tuple(event(f"e{i}") for i in range(5))
    await store.commit_step(step(key(), "inv-1", 0, events=events, opened=opened))
    try:
        with _recorded_selects() as selects:
            await store.find_interrupts(key(), InterruptId("q1"))
            await store.load_invocation(key(), InvocationId("inv-1"))
            await store.list_interrupts(APP, USER)
            await store.get_session(key(), event_limit=2)
    finally:
        await store.close()

    def explain(connection: Connection) -> list[str]:
        return [
            row.detail
            for sql, parameters in selects
            for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters)
        ]

    async with _database(url) as database:
        plans = await database.transact(explain, write=False)
    assert [p for p in plans if p.startswith("SCAN")] == []
    assert [sql for sql, _ in selects if "FROM baton_events" in sql and "LIMIT" not in sql] == []


async def test_an_invocations_events_are_read_off_their_index(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    store = SqlStore(url)
    await store.create_session(APP, USER, session_id=SessionId("s1"))
    events = tuple(event(f"e{i}", invocation_id="inv-1") for i in range(5))
    await store.commit_step(step(key(), "inv-1", 0, events=events))
    await store.close()
    params = {"key_invocation_id": "inv-1", **schema.session_params(key())}

    def explain(connection: Connection) -> list[str]:
        statement = reads.INVOCATION_EVENTS.params(params)
        sql = str(statement.compile(connection, compile_kwargs={"literal_binds": True}))
        return [row.detail for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")]

    async with _database(url) as database:
        plans = await database.transact(explain, write=False)
    assert [p for p in plans if p.startswith("SCAN")] == []
    assert any("ix_baton_events_session_invocation" in p for p in plans), plans
    assert [p for p in plans if "TEMP B-TREE" in p] == []  # in order: the rowid is seq


@contextmanager
def _recorded_selects() -> Iterator[list[tuple[str, Any]]]:
    """Every SELECT any engine sends while the block runs, with its parameters."""
    selects: list[tuple[str, Any]] = []

    def record(*args: Any) -> None:
        sql, parameters = args[2], args[3]
        if sql.lstrip().upper().startswith("SELECT"):
            selects.append((sql, parameters))

    sql_events.listen(Engine, "before_cursor_execute", record)
    try:
        yield selects
    finally:
        sql_events.remove(Engine, "before_cursor_execute", record)


_SQLITE_SERVICES: dict[str, Callable[[Any], Any]] = {
    "Session": SqliteSessionService,
    "Artifact": SqliteArtifactService,
    "Memory": SqliteMemoryService,
}


@pytest.mark.parametrize("kind", _SQLITE_SERVICES)
@pytest.mark.parametrize("db_path", ["postgresql://x/y", "mysql+asyncmy://root@h/db", ""])
def test_sqlite_services_refuse_other_databases_and_empty_paths(kind: str, db_path: str) -> None:
    # The artifact and memory services took any URL (a PostgreSQL one opened PostgreSQL
    # under a SQLite name) and '' (an in-memory database lost at exit).
    with pytest.raises(ValueError, match=rf"Sqlite{kind}Service takes a file path") as refused:
        _SQLITE_SERVICES[kind](db_path)
    if db_path:
        assert f"use Database{kind}Service for other databases" in str(refused.value)


@pytest.mark.parametrize("kind", _SQLITE_SERVICES)
async def test_sqlite_services_take_a_path_object_as_the_file(kind: str, tmp_path: Path) -> None:
    # They raised TypeError ("argument of type 'PosixPath' is not iterable").
    service = _SQLITE_SERVICES[kind](tmp_path / "kept.db")
    sessions = BaseSessionService(cast(SqlStore, service.store))
    await sessions.create_session(app_name=APP, user_id=USER, session_id="s1")
    again = SqliteSessionService(f"sqlite:///{tmp_path / 'kept.db'}")
    assert await again.get_session(app_name=APP, user_id=USER, session_id="s1") is not None


async def test_sqlite_foreign_keys_and_wal_are_on(tmp_path: Path) -> None:
    async with _database(f"sqlite:///{tmp_path / 'x.db'}") as database:
        assert await _scalar(database, "PRAGMA foreign_keys") == 1
        assert await _scalar(database, "PRAGMA journal_mode") == "wal"


@pytest.mark.parametrize(("query", "level"), [("", 1), ("?synchronous=full", 2)])
async def test_sqlite_synchronous_is_normal_unless_the_url_asks_for_full(
    tmp_path: Path, query: str, level: int
) -> None:
    async with _database(f"sqlite:///{tmp_path / 'x.db'}{query}") as database:
        assert await _scalar(database, "PRAGMA synchronous") == level


def test_unknown_sqlite_synchronous_level_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="synchronous level 'sometimes'.*NORMAL, FULL"):
        SqlStore(f"sqlite:///{tmp_path / 'x.db'}?synchronous=sometimes")


@pytest.mark.parametrize("scheme", ["sqlite", "sqlite+pysqlite", "sqlite+aiosqlite"])
async def test_every_sqlite_url_names_the_same_file_through_pysqlite(
    tmp_path: Path, scheme: str
) -> None:
    path = tmp_path / "plain.db"
    store = SqlStore(f"{scheme}:///{path}")
    try:
        await store.create_session(APP, USER, session_id=SessionId("s1"))
        assert store.url == f"sqlite+pysqlite:///{path}"
    finally:
        await store.close()
    assert path.exists()


@pytest.mark.parametrize(
    "url",
    ["mssql://root@localhost/db", "oracle://x", "sqlite+pysqlcipher:///x", "mysql+mysqldb://x"],
)
def test_unsupported_url_raises_naming_it(url: str) -> None:
    with pytest.raises(ValueError, match=r"unsupported database URL .*; use 'sqlite:///path'"):
        SqlStore(url)


@pytest.mark.parametrize("scheme", ["mysql", "mariadb", "mysql+asyncmy", "mariadb+asyncmy"])
def test_every_mysql_url_uses_asyncmy(scheme: str) -> None:
    store = SqlStore(f"{scheme}://root@127.0.0.1:3306/test")
    assert store.url == "mysql+asyncmy://root@127.0.0.1:3306/test"


def test_mysql_without_asyncmy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "asyncmy", None)  # what a missing package looks like

    with pytest.raises(ExtraNotInstalledError, match=r"pip install 'baton\[mysql\]'"):
        SqlStore("mysql://root@127.0.0.1/test")


def test_postgres_without_asyncpg_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "asyncpg", None)  # what a missing package looks like

    with pytest.raises(ExtraNotInstalledError, match=r"pip install 'baton\[postgres\]'"):
        SqlStore("postgresql://postgres@127.0.0.1/test")


async def test_sqlite_session_service_persists_in_a_plain_path(tmp_path: Path) -> None:
    path = str(tmp_path / "sessions.db")
    writer = SqliteSessionService(path)
    created = await writer.create_session(app_name=APP, user_id=USER, state={"k": "v"})
    await writer.close()

    reader = SqliteSessionService(f"sqlite:///{path}")
    try:
        found = await reader.get_session(app_name=APP, user_id=USER, session_id=created.id)
    finally:
        await reader.close()
    assert found == created


async def test_database_session_service_works_on_each_database(store_url: str) -> None:
    service = DatabaseSessionService(store_url)
    hello = event("hello")
    try:
        created = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
        await service.append_event(created, hello)
        listed = await service.list_sessions(app_name=APP, user_id=USER)
        found = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    finally:
        await service.close()
    assert [s.id for s in listed.sessions] == ["s1"]
    assert found is not None
    assert found.events == [hello]


async def test_sqlite_waits_for_another_writer_off_the_event_loop(tmp_path: Path) -> None:
    """While another process holds the write lock, a commit waits on the worker thread:
    the event loop keeps running, and the commit lands once the lock is released."""
    path = tmp_path / "locked.db"
    store = SqlStore(f"sqlite:///{path}")
    try:
        await store.create_session(APP, USER, session_id=SessionId("s1"))
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        commit = asyncio.create_task(
            store.commit_step(step(key(), "inv-1", 0, events=(event("hi"),)))
        )
        ticks = 0
        for _ in range(20):
            await asyncio.sleep(0.01)
            ticks += 1
        assert ticks == 20  # the loop ran while the commit waited
        assert not commit.done()
        read = asyncio.create_task(store.get_session(key()))  # queued behind the waiting commit
        other.execute("COMMIT")
        other.close()
        assert await commit == 1
        session = await read
        assert session is not None
        assert texts(session.events) == ["hi"]
    finally:
        await store.close()


async def test_sqlite_transactions_run_inline_again_once_the_worker_is_done(
    tmp_path: Path,
) -> None:
    """Transactions arriving while one waits out another process's write lock wait for
    it, then run on the event loop's thread, though more keep arriving: none goes to a
    thread, a hop each, for as long as the load lasts."""
    path = tmp_path / "convoy.db"

    def thread(connection: Connection) -> int:
        return threading.get_ident()

    async with _database(f"sqlite:///{path}") as database:
        await database.transact(thread, write=False)  # the file is in WAL mode
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        waiting = asyncio.create_task(database.transact(thread, write=True))
        after: list[int] = []  # threads of the transactions begun once it was done

        async def client() -> None:
            for _ in range(30):
                done = waiting.done()
                ran_on = await database.transact(thread, write=True)
                if done:
                    after.append(ran_on)

        clients = [asyncio.create_task(client()) for _ in range(8)]
        await asyncio.sleep(0.01)
        assert not waiting.done()
        other.execute("COMMIT")
        other.close()
        assert await waiting == threading.get_ident()  # it waited on the loop
        await asyncio.gather(*clients)
    assert len(after) > 8 * 25
    assert set(after) == {threading.get_ident()}


_HOLD_THE_WRITE_LOCK = """
import sqlite3, sys
other = sqlite3.connect(sys.argv[1], isolation_level=None)
other.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
sys.stdin.readline()
other.execute("COMMIT")
"""


@asynccontextmanager
async def _holding_the_write_lock(path: Path) -> AsyncIterator[Callable[[], Any]]:
    """Another real process holds the file's write lock until the yielded `release()`
    is awaited (or the block ends)."""
    other = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOLD_THE_WRITE_LOCK, str(path), stdin=PIPE, stdout=PIPE
    )
    assert other.stdin is not None
    assert other.stdout is not None
    stdin = other.stdin

    async def release() -> None:
        stdin.write(b"release\n")
        await stdin.drain()

    try:
        assert await other.stdout.readline() == b"holding\n"
        yield release
    finally:
        stdin.close()
        assert await other.wait() == 0


async def test_sqlite_waits_for_another_process_lock_on_the_event_loop(tmp_path: Path) -> None:
    """A commit finding another server process holding the write lock is tried again on
    the event loop's thread, which keeps serving meanwhile: no thread, whose every try
    waited for the busy loop to hand over the GIL (up to 5 ms each)."""
    path = tmp_path / "two.db"

    def thread(connection: Connection) -> int:
        connection.execute(text("CREATE TABLE IF NOT EXISTS t (x INTEGER)"))
        return threading.get_ident()

    async with _database(f"sqlite:///{path}") as database:
        await database.transact(thread, write=True)  # the file is in WAL mode
        async with _holding_the_write_lock(path) as release:
            waiting = asyncio.create_task(database.transact(thread, write=True))
            for _ in range(5):
                await asyncio.sleep(0.005)  # the loop runs while the commit waits
            assert not waiting.done()
            await release()
            assert await waiting == threading.get_ident()


async def test_sqlite_close_lets_a_commit_waiting_for_another_process_lock_end_first(
    tmp_path: Path,
) -> None:
    """Closing while a commit waits out another process's write lock: the commit ends
    (here it lands, the lock being released meanwhile) before `close` returns, and
    nothing of the closed store touches the file afterwards."""
    path = tmp_path / "closing.db"

    def insert(connection: Connection) -> None:
        connection.execute(text("CREATE TABLE IF NOT EXISTS t (x INTEGER)"))
        connection.execute(text("INSERT INTO t VALUES (1)"))

    executor = open_dialect(f"sqlite:///{path}").open_executor()
    await executor.transact(insert, write=True)  # the file is in WAL mode
    async with _holding_the_write_lock(path) as release:
        waiting = asyncio.create_task(executor.transact(insert, write=True))
        await asyncio.sleep(0)  # it met the lock and waits
        store_closed = asyncio.create_task(executor.close())
        await asyncio.sleep(0)
        await release()
        await store_closed
        ended_before_close = waiting.done()
        await waiting
    assert ended_before_close
    with closing(sqlite3.connect(path)) as reader:
        assert reader.execute("SELECT count(*) FROM t").fetchone() == (2,)


async def test_sqlite_takes_the_write_lock_within_a_millisecond_of_its_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transaction waiting out another process's write lock begins as soon as it is
    released, not at SQLite's busy handler's next try (1, 2, 5, 10, 15, 20, 25 ms ...
    apart: a lock held 40 ms was taken 13 ms after its release), while every other
    transaction of the store waits for it.

    Shown by the waiter's own pauses, not by a stopwatch (a loaded machine's scheduler
    adds its own milliseconds to any): it retries while the lock is held, never pausing
    more than a millisecond, and begins at its first try after the release."""
    path = tmp_path / "turns.db"
    pauses: list[tuple[float, bool]] = []  # each pause between tries; after the release?
    tried, released = threading.Event(), threading.Event()

    async def pause(seconds: float) -> None:
        pauses.append((seconds, released.is_set()))
        tried.set()
        await asyncio.sleep(seconds)

    monkeypatch.setattr(executors, "_pause", pause)
    async with _database(f"sqlite:///{path}") as database:
        await database.transact(_nothing, write=False)  # the file is in WAL mode
        other = sqlite3.connect(path, isolation_level=None)
        for held in (0.021, 0.034, 0.047):
            pauses.clear()
            tried.clear()
            released.clear()
            other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
            waiting = asyncio.create_task(database.transact(_nothing, write=True))
            found_held = await asyncio.to_thread(tried.wait, 10)
            assert found_held, "it waited inside SQLite's busy handler, not by its own tries"
            await asyncio.sleep(held)  # more tries while the lock stays held
            assert not waiting.done()
            other.execute("COMMIT")
            released.set()
            await waiting
            assert max(seconds for seconds, _ in pauses) <= 0.001, pauses
            # A try after the release finds the lock free: no pause begins after it, but
            # one after a try that failed just before it.
            assert sum(after for _, after in pauses) <= 1, pauses
        other.close()


async def test_sqlite_lock_held_past_the_busy_timeout_is_an_outage_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "held.db"
    monkeypatch.setattr(executors, "BUSY_TIMEOUT_MS", 50)

    def write(connection: Connection) -> None:
        connection.execute(text("CREATE TABLE t (x INTEGER)"))

    async with _database(f"sqlite:///{path}") as database:
        await database.transact(_nothing, write=False)  # the file is in WAL mode
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(DBAPIError, match="database is locked") as refused:
            await database.transact(write, write=True)
        other.execute("COMMIT")
        other.close()
        assert database.dialect.is_unavailable(refused.value)
        tables = await database.transact(_tables, write=False)
    assert "t" not in tables


def _nothing(connection: Connection) -> None:
    return None


def _tables(connection: Connection) -> list[str]:
    return inspect(connection).get_table_names()


async def test_sqlite_wal_is_checkpointed_while_steps_commit_inline(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    store = SqlStore(f"sqlite:///{path}")
    try:
        await store.create_session(APP, USER, session_id=SessionId("s1"))
        payload = "x" * 3000  # about a page per event
        for version in range(2000):
            await store.commit_step(
                step(key(), "inv-1", version, events=(event(payload, invocation_id="inv-1"),))
            )
            await asyncio.sleep(0)  # let a finished checkpoint report back
        # 2,000 commits of about six pages each: without checkpoints the WAL passes
        # 45 MB; checkpointed every 500 commits, it restarts and stays near 12 MB.
        assert Path(f"{path}-wal").stat().st_size < 16_000_000
    finally:
        await store.close()


async def test_code_parts_stored_as_dicts_read_as_the_references_classes(tmp_path: Path) -> None:
    """Before `ExecutableCode` and `CodeExecutionResult` were classes, a part's code and its
    result were stored as the dicts they came as (keys in either case, an enum value in
    any case): a session holding them reads back with the classes."""
    path = tmp_path / "old.db"
    store = SqlStore(f"sqlite:///{path}")
    try:
        await store.create_session(APP, USER, session_id=SessionId("s1"))
        await store.commit_step(step(key(), "inv-1", 0, events=(event("placeholder"),)))
        stored_before = {
            "content": {
                "role": "model",
                "parts": [
                    {"executableCode": {"code": "print(1)", "language": "python"}},
                    {"code_execution_result": {"outcome": "OUTCOME_OK", "output": "1"}},
                ],
            }
        }
        with closing(sqlite3.connect(path)) as other, other:
            other.execute("UPDATE baton_events SET event = ?", (json.dumps(stored_before),))
        found = await store.get_session(key())
    finally:
        await store.close()
    assert found is not None
    [read] = found.events
    assert read.content is not None
    [code, ran] = read.content.parts or []
    assert code.executable_code == types.ExecutableCode(
        code="print(1)", language=types.Language.PYTHON
    )
    assert ran.code_execution_result is not None
    assert ran.code_execution_result.output == "1"
    assert not read.is_final_response()  # the model reads the result next
