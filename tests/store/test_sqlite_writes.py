"""SQLite's own writer of plain steps (`sqlite_writes.write_plain_step`) stores exactly
what the shared `step.write_step` stores: the same rows, values, types and bytes."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from sqlalchemy.engine import Connection, make_url

from baton.events import Event
from baton.sessions.sql import SqlStore
from baton.sessions.sql.dialect import SqlDialect
from baton.sessions.sql.dialect_sqlite import SqliteDialect
from baton.sessions.sql.sqlite_writes import write_plain_step
from baton.sessions.sql.step import SessionKeys, write_step
from baton.sessions.store import InvocationStatus, Lease, StepCommit
from baton.types import InvocationId, SessionId
from tests.conftest import FakeClock
from tests.store.builders import APP, USER, event, key, step

Writer = Callable[[Connection, SqlDialect, StepCommit, float, SessionKeys], int]
_NOW = 1_700_000_100.0


def _leased(commit: StepCommit, token: int = 1, *, release: bool = False) -> StepCommit:
    lease = Lease(commit.invocation_id or InvocationId(""), "worker", _NOW + 30, token)
    return dataclasses.replace(commit, lease=lease, release=release)


def _commits() -> list[tuple[StepCommit, float]]:
    """Steps of every shape a plain step takes (and the creations before them), each
    with the time it lands at; the events are made once, so both databases get the
    same ids and times."""
    s1 = key()
    at_five = Event(invocation_id="inv-1", author="agent", message="t", timestamp=5)
    steps = [
        _leased(step(s1, "inv-1", 0, checkpoint={"at": 0})),  # created: not plain
        _leased(step(s1, "inv-1", 1, events=(event("é ☃"),), checkpoint={"a": [1, "ü"]})),
        step(s1, "inv-1", 2, checkpoint="text"),  # no events
        step(s1, "inv-1", 3, events=(at_five,)),  # the checkpoint unchanged
        _leased(
            step(s1, "inv-1", 4, events=(event("end"),), status=InvocationStatus.COMPLETED),
            release=True,
        ),
        step(s1, "inv-2", 0),
        step(s1, "inv-2", 1, events=(event("x"), event("y")), checkpoint=2**70),  # a BLOB
        step(s1, "inv-3", 0),
        step(s1, "inv-3", 1, checkpoint=-1.5),  # a BLOB too
        step(s1, "inv-4", 0),
        dataclasses.replace(
            step(s1, "inv-4", 1, status=InvocationStatus.FAILED, checkpoint=[]), error="boom"
        ),
    ]
    # An int time, as an injected clock may give: stored as the REAL a float is.
    return [(commit, _NOW + n if n % 2 else int(_NOW) + n) for n, commit in enumerate(steps)]


async def _land(path: Path, commits: Sequence[tuple[StepCommit, float]], writer: Writer) -> None:
    store = SqlStore(f"sqlite:///{path}", clock=FakeClock())
    await store.create_session(APP, USER, session_id=SessionId("s1"), state={"n": 0})
    await store.close()
    dialect = SqliteDialect(make_url(f"sqlite:///{path}"))
    executor = dialect.open_executor()
    known = SessionKeys()
    try:
        for commit, now in commits:
            await executor.transact(writer, dialect, commit, now, known, write=True)
    finally:
        await executor.close()


def _tables(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table, each value as SQLite's quote() spells it (its type and
    its bytes: 1.0 and 1, 'x' and X'78' differ)."""
    database = sqlite3.connect(path)
    try:
        tables = database.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        names = [name for (name,) in tables]
        found: dict[str, list[tuple[object, ...]]] = {}
        for name in names:
            columns = [c[1] for c in database.execute(f"PRAGMA table_info({name})")]
            quoted = ", ".join(f'quote("{c}")' for c in columns)
            found[name] = database.execute(f"SELECT {quoted} FROM {name} ORDER BY rowid").fetchall()
        return found | {"baton_notifications": _without_ids(found["baton_notifications"])}
    finally:
        database.close()


def _without_ids(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Notification rows with their random id (column 2, quoted) replaced by 'ID'."""
    return [tuple(str(v).replace(str(row[1]).strip("'"), "ID") for v in row) for row in rows]


async def test_plain_steps_store_the_same_bytes_as_the_shared_writer(tmp_path: Path) -> None:
    commits = _commits()
    await _land(tmp_path / "own.db", commits, write_plain_step)
    await _land(tmp_path / "shared.db", commits, write_step)

    own, shared = _tables(tmp_path / "own.db"), _tables(tmp_path / "shared.db")

    assert own == shared
    assert len(own["baton_events"]) == 5
    assert len(own["baton_notifications"]) == 2  # inv-2 failed, inv-1 completed
