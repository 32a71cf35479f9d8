"""baton's tables, as SQLAlchemy Core objects shared by SQLite and PostgreSQL.

This is today's schema, the one every query is written against; `migrations` holds
the frozen steps that build it, and a test checks that they build exactly this.

Sessions get an integer surrogate key (`pk`) that every child row references. On
SQLite and MySQL the reference is a foreign key with ON DELETE CASCADE, so deleting a
session removes its invocations, interrupts and events in one statement; PostgreSQL
keeps no foreign key to sessions (see `_unless_on_postgresql`) and
`writes.delete_session` deletes them itself. Timestamps are seconds since the epoch
(float).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    ColumnElement,
    Double,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    and_,
    bindparam,
    false,
    select,
    text,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import SchemaItem
from sqlalchemy.sql.compiler import DDLCompiler
from sqlalchemy.sql.ddl import BaseDDLElement

from baton.events import Event
from baton.sessions.store import SessionKey

__all__ = [
    "IS_SESSION",
    "Json",
    "app_states",
    "artifacts",
    "binary_text",
    "event_from_row",
    "events",
    "fingerprint_digest",
    "fingerprints",
    "forgotten_memories",
    "interrupts",
    "invocations",
    "memories",
    "memory_words",
    "metadata",
    "notification_receivers",
    "notifications",
    "question_checkpoints",
    "schema_version",
    "session_in_apps",
    "session_params",
    "sessions",
    "stored_event",
    "user_states",
]

metadata = MetaData()


class Json(JSON):
    """JSON, kept on MySQL as LONGTEXT: MariaDB's JSON type checks `json_valid`, which
    refuses nesting deeper than 32 levels, and baton accepts 100."""

    cache_ok = True


@compiles(Json, "mysql")
def _json_on_mysql(_type: Json, _compiler: Any, **_options: Any) -> str:  # pyright: ignore[reportUnusedFunction] -- registered with SQLAlchemy
    return "LONGTEXT"


# SQLite only autoincrements an INTEGER PRIMARY KEY; PostgreSQL wants 64 bits.
_SERIAL = BigInteger().with_variant(Integer(), "sqlite")

# Every step updates its session's row and its invocation's. PostgreSQL writes each
# update as a new copy of the row on the same page (a HOT update), chained from the
# copy before, and a step's lookup walks that chain to the live copy; the page is
# pruned of dead copies only once its free space falls below the table's reserve
# (fillfactor). With fillfactor 50 (migration 16) pruning comes twice as early, the
# chains are half as long: 273k -> 266k server instructions a chain step (callgrind of
# the backend). New rows fill half a page, so these two tables take twice the pages.
sessions = Table(
    "baton_sessions",
    metadata,
    Column("pk", _SERIAL, primary_key=True, autoincrement=True),
    Column("app_name", String(255), nullable=False),
    Column("user_id", String(255), nullable=False),
    Column("session_id", String(255), nullable=False),
    Column("state", Json, nullable=False),
    Column("updated_at", Double, nullable=False),
    UniqueConstraint("app_name", "user_id", "session_id", name="uq_baton_sessions_key"),
)


def _unless_on_postgresql(
    ddl: BaseDDLElement,
    target: SchemaItem | str,
    bind: Connection | None,
    tables: list[Table] | None = None,
    state: Any | None = None,
    *,
    dialect: Dialect,
    compiler: DDLCompiler | None = None,
    checkfirst: bool = False,
) -> bool:
    """Create the DDL element on every database but PostgreSQL (see `events`, `_session_key`)."""
    del ddl, target, bind, tables, state, compiler, checkfirst
    return dialect.name != "postgresql"


def _session_key() -> ForeignKeyConstraint:
    """A child table's key to its session, deleted with it, except on PostgreSQL.

    PostgreSQL checks a foreign key with triggers, whose cost every step pays: an insert
    runs a query per row, and each row update of either table goes through the trigger
    machinery (copying the table's triggers, queueing an after-row event, comparing the
    keys) even when the key did not change. A step updates its session's row and its
    invocation's: the keys from invocations, interrupts and question checkpoints cost
    8.5k of a plain step's 289k server instructions (callgrind of the backend). There no
    table keeps one: every row of them is inserted by a step, under the lock the step
    takes on its session's row first (see `step`), so the session exists, and
    `writes.delete_session` deletes the rows itself. SQLite and MySQL check a key with
    an index probe and keep theirs, with its cascade.
    """
    key = ForeignKeyConstraint(["session_pk"], [sessions.c.pk], ondelete="CASCADE")
    return key.ddl_if(callable_=_unless_on_postgresql)


events = Table(
    "baton_events",
    metadata,
    Column("seq", _SERIAL, primary_key=True, autoincrement=True),
    Column("session_pk", _SERIAL, nullable=False),
    Column("invocation_id", String(255), nullable=False),
    Column("author", String(255), nullable=False),
    Column("timestamp", Double, nullable=False),
    Column("event", Json, nullable=False),
    # Loading the newest N events walks this index backwards. On PostgreSQL the primary
    # key is (session_pk, seq) (migration 14) and is this index: every step's event goes
    # into one B-tree fewer (a WAL record and an index page fewer per step, and the
    # 20 bytes an event's entry takes). SQLite numbers its rows by `seq` alone, and
    # MySQL needs an index leading with an AUTO_INCREMENT column: both keep it.
    Index("ix_baton_events_session_seq", "session_pk", "seq").ddl_if(
        callable_=_unless_on_postgresql
    ),
    # Every step inserts an event, and PostgreSQL checks a foreign key by running a
    # query per inserted row: about a fifth of a step's time on the server (migration 11).
    _session_key(),
    # An agent resuming reads its invocation's events only. Without `seq` in the key,
    # PostgreSQL keeps an invocation's entries as one deduplicated key (about 13 bytes
    # an event, not 127) and sorts the run's rows; SQLite's and InnoDB's entries end
    # with the row's key, `seq`, so they come in order.
    Index("ix_baton_events_session_invocation", "session_pk", "invocation_id"),
)

invocations = Table(
    "baton_invocations",
    metadata,
    Column("id", String(255), primary_key=True),
    Column("session_pk", _SERIAL, nullable=False),
    _session_key(),  # not on PostgreSQL (migration 15)
    Column("status", String(32), nullable=False),
    Column("checkpoint", Json(none_as_null=True), nullable=True),
    Column("version", Integer, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("updated_at", Double, nullable=False),
    Column("error", Text, nullable=True),
    # The lease lives on its invocation's row: one statement claims it, and every step's
    # UPDATE checks its token (fencing) with no second table to consult.
    Column("lease_owner", String(255), nullable=True),
    Column("lease_expires_at", Double, nullable=False, server_default="0"),
    Column("lease_token", BigInteger, nullable=False, server_default="0"),
    # The workflow's fingerprint, in `fingerprints` under this digest: a step rewrites
    # the row (PostgreSQL writes a new copy per UPDATE), so the graph is not in it.
    Column("fingerprint_digest", String(64), nullable=False, server_default=""),
    # Recovery looks for running invocations whose lease expired. On PostgreSQL by status
    # alone (few rows, filtered and sorted by their lease once found; a locking read locks
    # only the rows it returns): the lease's columns stay out of every index, so taking,
    # renewing or releasing a lease changes no indexed column and PostgreSQL rewrites the
    # row in place (a HOT update) instead of adding an entry to each of the table's three
    # indexes (migration 20: a HITL run's claim, 3 index entries and ~230 bytes of WAL
    # fewer). The status stays in it although a run that pauses or is resumed changes it
    # (no HOT update then): an index of the unfinished runs instead (migration 21, undone
    # by 22) made both recovery reads walk every paused run, and they can be many.
    # MySQL's locking read locks every row it reads before sorting them, so two workers
    # recovering at once would not share the runs: it reads them in lease order.
    Index("ix_baton_invocations_status", "status").ddl_if(dialect="postgresql"),
    Index("ix_baton_invocations_status_lease", "status", "lease_expires_at").ddl_if(
        callable_=_unless_on_postgresql
    ),
    # A session's runs, oldest first, a page at a time.
    Index("ix_baton_invocations_session_created", "session_pk", "created_at"),
)

fingerprints = Table(
    "baton_fingerprints",
    metadata,
    Column("digest", String(64), primary_key=True),  # see `fingerprint_digest`
    Column("fingerprint", Text, nullable=False),  # the graph as JSON: any length
)

interrupts = Table(
    "baton_interrupts",
    metadata,
    Column("invocation_id", String(255), primary_key=True),
    Column("interrupt_id", String(255), primary_key=True),
    Column("session_pk", _SERIAL, nullable=False),
    _session_key(),  # not on PostgreSQL (migration 15)
    # Copied from the session so pending-input listings need no join.
    Column("app_name", String(255), nullable=False),
    Column("user_id", String(255), nullable=False),
    Column("session_id", String(255), nullable=False),
    Column("node_path", Text, nullable=False),
    Column("function_name", String(255), nullable=False),
    Column("message", Text, nullable=True),
    Column("payload", Json(none_as_null=True), nullable=True),
    Column("response_schema", Json(none_as_null=True), nullable=True),
    Column("status", String(32), nullable=False),
    Column("created_at", Double, nullable=False),
    Column("answered_at", Double, nullable=True),
    Column("answer", Json(none_as_null=True), nullable=True),
    Column("answered_by", String(255), nullable=True),
    Column("timeout", Double, nullable=True),
    Column("expires_at", Double, nullable=True),
    Column("on_timeout", Json(none_as_null=True), nullable=True),
    Column("answers_on_timeout", Boolean, nullable=False, server_default=false()),
    Column("assignee", String(255), nullable=True),
    # Pending questions of a user, assigned to a person, or of everyone, in an app,
    # oldest first, a page at a time: a page seeks to its cursor on these instead of
    # sorting every open question.
    Index("ix_baton_interrupts_owner_listing", "app_name", "user_id", "status", "created_at"),
    # On PostgreSQL the assignee's and the deadline's indexes hold only the rows that have
    # one (migration 20): every query using them compares that column, and a question
    # without an assignee or a deadline, asked and then answered, adds no entry to either
    # (4 index entries and ~350 bytes of WAL fewer a HITL run).
    Index(
        "ix_baton_interrupts_assignee_listing",
        "app_name",
        "assignee",
        "status",
        "created_at",
        postgresql_where=text("assignee IS NOT NULL"),
    ),
    Index("ix_baton_interrupts_app_listing", "app_name", "status", "created_at"),
    # Workers look for open interrupts whose deadline passed.
    Index(
        "ix_baton_interrupts_status_expires",
        "status",
        "expires_at",
        postgresql_where=text("expires_at IS NOT NULL"),
    ),
    Index("ix_baton_interrupts_session_interrupt", "session_pk", "interrupt_id"),
)

# An artifact's content is its Part's wire JSON (bytes as base64): any size, so MySQL's
# 64 KB TEXT is widened to LONGTEXT.
_LONG_TEXT = Text().with_variant(mysql.LONGTEXT(), "mysql")

artifacts = Table(
    "baton_artifacts",
    metadata,
    Column("pk", _SERIAL, primary_key=True, autoincrement=True),
    # sha256 of app, user, session and filename: the four together are wider than
    # MySQL lets an index be, and a fixed-width key keeps the indexes small.
    Column("artifact_key", String(64), nullable=False),
    Column("app_name", String(255), nullable=False),
    Column("user_id", String(255), nullable=False),
    Column("session_id", String(255), nullable=False),  # '' for a `user:` name
    Column("filename", String(1024), nullable=False),
    Column("version", Integer, nullable=False),
    Column("mime_type", String(255), nullable=True),
    Column("custom_metadata", Json(none_as_null=True), nullable=True),
    Column("part", _LONG_TEXT, nullable=False),
    # The save within a node run or tool call (a digest); see `ArtifactSave.save_key`.
    Column("save_key", String(64), nullable=True),
    Column("created_at", Double, nullable=False),
    UniqueConstraint("artifact_key", "version", name="uq_baton_artifacts_version"),
    UniqueConstraint("artifact_key", "save_key", name="uq_baton_artifacts_save"),
    Index("ix_baton_artifacts_scope", "app_name", "user_id", "session_id"),
)

# The invocation's checkpoint as it was when each question was (last) asked: a fork
# at that question (`Runner.fork`) starts from it, to answer differently.
question_checkpoints = Table(
    "baton_question_checkpoints",
    metadata,
    Column("invocation_id", String(255), primary_key=True),
    Column("interrupt_id", String(255), primary_key=True),
    Column("session_pk", _SERIAL, nullable=False, index=True),
    _session_key(),  # not on PostgreSQL (migration 15)
    Column("checkpoint", Json(none_as_null=True), nullable=True),
)

# The outbox: notifications recorded by the step that caused them, until delivered (see
# `baton.sessions.notifications`). No foreign key to the session: a notification about a
# session deleted since is still delivered.
notifications = Table(
    "baton_notifications",
    metadata,
    Column("seq", _SERIAL, primary_key=True, autoincrement=True),
    # 32 random hex digits (see `notifications._notification`); no query looks a row up by
    # it. Only SQLite keeps it unique: on PostgreSQL and MySQL the unique index went with
    # migration 20 (every notification a B-tree entry at a random place: ~130 bytes of WAL
    # each, three a HITL run), and SQLite would have to rebuild the table to drop it.
    Column("id", String(64), nullable=False),
    Column("body", Json, nullable=False),
    Column("created_at", Double, nullable=False),
    UniqueConstraint("id").ddl_if(dialect="sqlite"),
    # A number is never reused, even once every row was deleted (see migration 10).
    sqlite_autoincrement=True,
)

# Each webhook receiver's place in the outbox, by the SHA-256 of its URL: the last
# notification it accepted, its failed rounds in a row (not tried before `next_at`), and
# the sender delivering to it now. A notification every receiver accepted is deleted.
notification_receivers = Table(
    "baton_notification_receivers",
    metadata,
    Column("receiver", String(64), primary_key=True),
    Column("url", Text, nullable=False),
    Column("accepted_seq", BigInteger, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_at", Double, nullable=False),
    Column("claimed_by", String(255), nullable=True),
    Column("claimed_until", Double, nullable=False),
)

# A user's memories (see `baton.sessions.sql.memories`): each entry as wire JSON, its
# words for search, and the ids the user had forgotten. No foreign key to a session:
# memories outlive the sessions they came from, as in the reference.
memories = Table(
    "baton_memories",
    metadata,
    Column("pk", _SERIAL, primary_key=True, autoincrement=True),
    Column("app_name", String(255), nullable=False),
    Column("user_id", String(255), nullable=False),
    Column("session_id", String(255), nullable=False),  # '' for entries without one
    Column("memory_id", String(255), nullable=True),
    Column("entry", Json, nullable=False),
    Index("ix_baton_memories_owner", "app_name", "user_id", "session_id"),
)

memory_words = Table(
    "baton_memory_words",
    metadata,
    Column(
        "memory_pk",
        _SERIAL,
        ForeignKey("baton_memories.pk", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("word", String(255), primary_key=True),
    Column("app_name", String(255), nullable=False),
    Column("user_id", String(255), nullable=False),
    Index("ix_baton_memory_words_search", "app_name", "user_id", "word"),
)

forgotten_memories = Table(
    "baton_forgotten_memories",
    metadata,
    Column("app_name", String(255), primary_key=True),
    Column("user_id", String(255), primary_key=True),
    Column("memory_id", String(255), primary_key=True),
)

# The `app:` state keys of each app and the `user:` keys of each of its users (with their
# prefixes), which every session of the app or user reads: a row each, outliving the
# sessions (migration 17). A step writing them locks the row (see
# `shared_state.write_shared_state`).
app_states = Table(
    "baton_app_states",
    metadata,
    Column("app_name", String(255), primary_key=True),
    Column("state", Json, nullable=False),
)

user_states = Table(
    "baton_user_states",
    metadata,
    Column("app_name", String(255), primary_key=True),
    Column("user_id", String(255), primary_key=True),
    Column("state", Json, nullable=False),
)

schema_version = Table(
    "baton_schema_version",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("version", Integer, nullable=False),
)


IS_SESSION: ColumnElement[bool] = and_(
    sessions.c.app_name == bindparam("key_app_name"),
    sessions.c.user_id == bindparam("key_user_id"),
    sessions.c.session_id == bindparam("key_session_id"),
)
"""The WHERE clause picking one session's row out of `sessions`; bind `session_params`.

Statements built once with bound parameters skip SQLAlchemy's per-statement
construction and cache-key work, which costs more than SQLite running them.
"""


_IN_COLUMNS = {"invocation_id", "author", "timestamp"}


def stored_event(event: Event) -> str:
    """What an event's row keeps in its `event` column: the event's wire JSON without
    the fields the row has columns for (its invocation id, author and timestamp), which
    would be a quarter of the row again."""
    # The model's own serializer, as `model_dump_json` calls it, without that wrapper's
    # argument plumbing: about a quarter of the call, on every step.
    json = event.__pydantic_serializer__.to_json(
        event, by_alias=True, exclude_none=True, exclude=_IN_COLUMNS
    )
    return json.decode()


def event_from_row(invocation_id: str, author: str, timestamp: float, stored: Any) -> Event:
    """The event an `events` row holds (see `stored_event`); rows written before it
    hold the whole wire JSON, the same values."""
    return Event.from_wire(
        {"invocationId": invocation_id, "author": author, "timestamp": timestamp, **stored}
    )


def fingerprint_digest(fingerprint: str) -> str:
    """The key of a workflow fingerprint in `fingerprints`: its SHA-256, in hex."""
    return hashlib.sha256(fingerprint.encode()).hexdigest()


def session_in_apps(
    session_pk: ColumnElement[Any], app_names: Sequence[str]
) -> ColumnElement[bool]:
    """The row's session (`session_pk`) is one of `app_names`'s: its app looked up by
    primary key for each row (a correlated subquery), which no plan turns around.

    Joined with the sessions, or as `session_pk IN (the apps' sessions)`, a worker's
    look for lapsed leases got PostgreSQL's plan wrong whenever the tables' statistics
    were stale (they are until ANALYZE): every session of the apps, and for each every
    index entry of running invocations, dead ones included: 0.4-0.5 s a call after
    1,500 finished runs, growing with the square of the runs. Row by row it reads the
    running invocations' entries once (0.3 ms).
    """
    app = select(sessions.c.app_name).where(sessions.c.pk == session_pk).scalar_subquery()
    return app.in_(app_names)


def session_params(key: SessionKey) -> dict[str, str]:
    """The parameters `IS_SESSION` binds for one session."""
    return {
        "key_app_name": key.app_name,
        "key_user_id": key.user_id,
        "key_session_id": key.session_id,
    }


def binary_text(table: Table) -> Table:
    """`table`, stored on MySQL as utf8mb4 with binary collation: ids compare by their
    characters (case and accents count), as on SQLite and PostgreSQL. Migration 23 then
    makes it the NO PAD one, where trailing spaces count too (its name differs between
    MariaDB and MySQL, so steps write this one). Other databases ignore these options."""
    table.dialect_kwargs.update(mysql_charset="utf8mb4", mysql_collate="utf8mb4_bin")
    return table


for _table in metadata.tables.values():
    binary_text(_table)
