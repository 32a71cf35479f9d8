"""Numbered schema steps and the version row that records how far a database got.

`migrate` runs on a store's first use, in one writing transaction. It holds a
cross-process lock for the whole transaction (BEGIN IMMEDIATE on SQLite, an advisory
lock on PostgreSQL), reads the version row, applies the missing steps and writes the
new version, so two processes starting at once apply each step exactly once, and a
finished database is left alone.

Every step is frozen: it holds its DDL as it was written, never derived from today's
tables in `schema`, so a database created by any release reaches the same schema as
a fresh one (a test migrates from step 1 and compares). A new step is appended with
the next number and never edits an earlier one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import JsonValue
from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    cast,
    or_,
    select,
    text,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection
from sqlalchemy.schema import DDL, CreateIndex, CreateTable, ExecutableDDLElement

from baton.sessions.sql import schema
from baton.sessions.sql.dialect import SqlDialect
from baton.sessions.sql.schema import Json, binary_text

__all__ = ["LATEST_VERSION", "MIGRATIONS", "Migration", "migrate", "read_version"]

_VERSION_ROW_ID = 1

DataChange = Callable[[Connection], None]
"""A step's change to the rows themselves, run between its DDL statements."""

Statements = Callable[[str], Sequence[ExecutableDDLElement | DataChange]]
"""A step's DDL (and data changes) for the dialect of that name ("sqlite", "postgresql",
"mysql")."""


@dataclass(frozen=True)
class Migration:
    """One schema step: its number, what it does, and its DDL statements per dialect."""

    number: int
    summary: str
    statements: Statements


# Step 1: the schema as first released, written out as it was. MySQL came later: its
# tables get utf8mb4 with binary collation, so ids compare exactly as on the others.
_v1 = MetaData()
_V1_SERIAL = BigInteger().with_variant(Integer(), "sqlite")

_V1_TABLES = (
    Table(
        "baton_sessions",
        _v1,
        Column("pk", _V1_SERIAL, primary_key=True, autoincrement=True),
        Column("app_name", String(255), nullable=False),
        Column("user_id", String(255), nullable=False),
        Column("session_id", String(255), nullable=False),
        Column("state", Json, nullable=False),
        Column("updated_at", Double, nullable=False),
        UniqueConstraint("app_name", "user_id", "session_id", name="uq_baton_sessions_key"),
    ),
    Table(
        "baton_events",
        _v1,
        Column("seq", _V1_SERIAL, primary_key=True, autoincrement=True),
        Column(
            "session_pk",
            _V1_SERIAL,
            ForeignKey("baton_sessions.pk", ondelete="CASCADE"),
            nullable=False,
        ),
        Column("invocation_id", String(255), nullable=False),
        Column("author", String(255), nullable=False),
        Column("timestamp", Double, nullable=False),
        Column("event", Json, nullable=False),
        Index("ix_baton_events_session_seq", "session_pk", "seq"),
    ),
    Table(
        "baton_invocations",
        _v1,
        Column("id", String(255), primary_key=True),
        Column(
            "session_pk",
            _V1_SERIAL,
            ForeignKey("baton_sessions.pk", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        Column("status", String(32), nullable=False),
        Column("fingerprint", Text, nullable=False),
        Column("checkpoint", Json(none_as_null=True), nullable=True),
        Column("version", Integer, nullable=False),
        Column("created_at", Double, nullable=False),
        Column("updated_at", Double, nullable=False),
        Column("error", Text, nullable=True),
    ),
    Table(
        "baton_interrupts",
        _v1,
        Column("invocation_id", String(255), primary_key=True),
        Column("interrupt_id", String(255), primary_key=True),
        Column(
            "session_pk",
            _V1_SERIAL,
            ForeignKey("baton_sessions.pk", ondelete="CASCADE"),
            nullable=False,
        ),
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
        Index("ix_baton_interrupts_owner_status", "app_name", "user_id", "status"),
        Index("ix_baton_interrupts_session_interrupt", "session_pk", "interrupt_id"),
    ),
    Table(
        "baton_leases",
        _v1,
        Column("invocation_id", String(255), primary_key=True),
        Column("owner", String(255), nullable=False),
        Column("expires_at", Double, nullable=False),
    ),
)


def _v1_statements(_dialect: str) -> Sequence[ExecutableDDLElement]:
    created: list[ExecutableDDLElement] = [CreateTable(binary_text(t)) for t in _V1_TABLES]
    created += [
        CreateIndex(i) for t in _V1_TABLES for i in sorted(t.indexes, key=lambda i: str(i.name))
    ]
    return created


def _v2_statements(dialect: str) -> Sequence[ExecutableDDLElement]:
    server = dialect != "sqlite"  # PostgreSQL's types are MySQL's too
    double = "DOUBLE PRECISION" if server else "FLOAT"
    big = "BIGINT" if server else "INTEGER"
    boolean_false = "BOOLEAN DEFAULT false" if server else "BOOLEAN DEFAULT 0"
    json = "LONGTEXT" if dialect == "mysql" else "JSON"  # see `schema.Json`
    ddl = [
        "ALTER TABLE baton_invocations ADD COLUMN lease_owner VARCHAR(255)",
        f"ALTER TABLE baton_invocations ADD COLUMN lease_expires_at {double} DEFAULT 0 NOT NULL",
        f"ALTER TABLE baton_invocations ADD COLUMN lease_token {big} DEFAULT 0 NOT NULL",
        "CREATE INDEX ix_baton_invocations_status_lease "
        "ON baton_invocations (status, lease_expires_at)",
        f"ALTER TABLE baton_interrupts ADD COLUMN timeout {double}",
        f"ALTER TABLE baton_interrupts ADD COLUMN expires_at {double}",
        f"ALTER TABLE baton_interrupts ADD COLUMN on_timeout {json}",
        f"ALTER TABLE baton_interrupts ADD COLUMN answers_on_timeout {boolean_false} NOT NULL",
        "CREATE INDEX ix_baton_interrupts_status_expires ON baton_interrupts (status, expires_at)",
        # Leases moved onto their invocations; a lease held at the upgrade lapses, so
        # recovery continues that run.
        "DROP TABLE baton_leases",
    ]
    if dialect == "postgresql":
        ddl += _V2_POSTGRES_NOTIFY
    return [_ddl(statement) for statement in ddl]


# Every change to an interrupt row (opened, answered, deadline set) tells listening
# baton processes, on commit, which app it concerns (see `notify`).
_V2_POSTGRES_NOTIFY = [
    "CREATE FUNCTION baton_notify_interrupt() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN PERFORM pg_notify('baton', NEW.app_name); RETURN NULL; END $$",
    "CREATE TRIGGER baton_interrupts_notify AFTER INSERT OR UPDATE ON baton_interrupts "
    "FOR EACH ROW EXECUTE FUNCTION baton_notify_interrupt()",
]


def _v3_statements(_dialect: str) -> Sequence[ExecutableDDLElement]:
    ddl = [
        "ALTER TABLE baton_interrupts ADD COLUMN assignee VARCHAR(255)",
        "CREATE INDEX ix_baton_interrupts_assignee_status "
        "ON baton_interrupts (app_name, assignee, status)",
    ]
    return [_ddl(statement) for statement in ddl]


def _ddl(statement: str) -> ExecutableDDLElement:
    return DDL(statement)


def _v4_statements(_dialect: str) -> Sequence[ExecutableDDLElement | DataChange]:
    return [
        _ddl(
            "CREATE TABLE baton_fingerprints (digest VARCHAR(64) NOT NULL PRIMARY KEY, "
            "fingerprint TEXT NOT NULL)"
        ),
        _ddl(
            "ALTER TABLE baton_invocations "
            "ADD COLUMN fingerprint_digest VARCHAR(64) DEFAULT '' NOT NULL"
        ),
        _v4_move_fingerprints,
        _ddl("ALTER TABLE baton_invocations DROP COLUMN fingerprint"),
    ]


def _v4_move_fingerprints(connection: Connection) -> None:
    """Each distinct fingerprint once in baton_fingerprints, under its SHA-256 (hex);
    each invocation keeps only that digest."""
    found = connection.execute(text("SELECT DISTINCT fingerprint FROM baton_invocations"))
    for fingerprint in found.scalars().all():
        digest = hashlib.sha256(fingerprint.encode()).hexdigest()
        values = {"digest": digest, "fingerprint": fingerprint}
        connection.execute(
            text(
                "INSERT INTO baton_fingerprints (digest, fingerprint) "
                + "VALUES (:digest, :fingerprint)"
            ),
            values,
        )
        connection.execute(
            text(
                "UPDATE baton_invocations SET fingerprint_digest = :digest "
                "WHERE fingerprint = :fingerprint"
            ),
            values,
        )


# Step 5: artifacts, as first released.
_v5 = MetaData()
_V5_ARTIFACTS = Table(
    "baton_artifacts",
    _v5,
    Column("pk", _V1_SERIAL, primary_key=True, autoincrement=True),
    Column("artifact_key", String(64), nullable=False),
    Column("app_name", String(255), nullable=False),
    Column("user_id", String(255), nullable=False),
    Column("session_id", String(255), nullable=False),
    Column("filename", String(1024), nullable=False),
    Column("version", Integer, nullable=False),
    Column("mime_type", String(255), nullable=True),
    Column("custom_metadata", Json(none_as_null=True), nullable=True),
    Column("part", Text().with_variant(mysql.LONGTEXT(), "mysql"), nullable=False),
    Column("save_key", String(64), nullable=True),
    Column("created_at", Double, nullable=False),
    UniqueConstraint("artifact_key", "version", name="uq_baton_artifacts_version"),
    UniqueConstraint("artifact_key", "save_key", name="uq_baton_artifacts_save"),
    Index("ix_baton_artifacts_scope", "app_name", "user_id", "session_id"),
)


def _v5_statements(_dialect: str) -> Sequence[ExecutableDDLElement]:
    created = CreateTable(binary_text(_V5_ARTIFACTS))
    return [created, *(CreateIndex(i) for i in _V5_ARTIFACTS.indexes)]


def _v9_statements(_dialect: str) -> Sequence[ExecutableDDLElement]:
    # Steps inside an invocation used to leave the session's updated_at alone on SQLite
    # and in PostgreSQL's one-statement steps (reads took the latest invocation's
    # instead); every step sets it now, so set it once here to what those reads said.
    return [
        _ddl(
            "UPDATE baton_sessions SET updated_at = (SELECT MAX(i.updated_at) "
            "FROM baton_invocations i WHERE i.session_pk = baton_sessions.pk) "
            "WHERE EXISTS (SELECT 1 FROM baton_invocations i "
            "WHERE i.session_pk = baton_sessions.pk AND i.updated_at > baton_sessions.updated_at)"
        )
    ]


# Step 6: each question's checkpoint, frozen as written (with the sessions table as far
# as its foreign key needs it).
_v6 = MetaData()
_V6_SERIAL = BigInteger().with_variant(Integer(), "sqlite")
Table("baton_sessions", _v6, Column("pk", _V6_SERIAL, primary_key=True))
_V6_QUESTION_CHECKPOINTS = Table(
    "baton_question_checkpoints",
    _v6,
    Column("invocation_id", String(255), primary_key=True),
    Column("interrupt_id", String(255), primary_key=True),
    Column(
        "session_pk",
        _V6_SERIAL,
        ForeignKey("baton_sessions.pk", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("checkpoint", Json(none_as_null=True), nullable=True),
)


def _v6_statements(_dialect: str) -> Sequence[ExecutableDDLElement]:
    table = _V6_QUESTION_CHECKPOINTS
    return [CreateTable(binary_text(table)), *(CreateIndex(i) for i in table.indexes)]


# Step 7: the notification outbox, written out as it was.
_v7 = MetaData()
_V7_NOTIFICATIONS = Table(
    "baton_notifications",
    _v7,
    Column("seq", _V1_SERIAL, primary_key=True, autoincrement=True),
    Column("id", String(64), nullable=False, unique=True),
    Column("body", Json, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_at", Double, nullable=False),
    Column("delivered_to", Json, nullable=False),
    Column("claimed_by", String(255), nullable=True),
    Column("claimed_until", Double, nullable=False),
)


def _v7_statements(_dialect: str) -> Sequence[ExecutableDDLElement | DataChange]:
    return [CreateTable(binary_text(_V7_NOTIFICATIONS))]


def _v8_statements(dialect: str) -> Sequence[ExecutableDDLElement]:
    ddl = [
        _drop_index(dialect, "ix_baton_interrupts_owner_status", "baton_interrupts"),
        _drop_index(dialect, "ix_baton_interrupts_assignee_status", "baton_interrupts"),
        "CREATE INDEX ix_baton_interrupts_owner_listing "
        "ON baton_interrupts (app_name, user_id, status, created_at)",
        "CREATE INDEX ix_baton_interrupts_assignee_listing "
        "ON baton_interrupts (app_name, assignee, status, created_at)",
        "CREATE INDEX ix_baton_interrupts_app_listing "
        "ON baton_interrupts (app_name, status, created_at)",
        "CREATE INDEX ix_baton_invocations_session_created "
        "ON baton_invocations (session_pk, created_at)",
        _drop_index(dialect, "ix_baton_invocations_session_pk", "baton_invocations"),
    ]
    return [_ddl(statement) for statement in ddl]


def _drop_index(dialect: str, index: str, table: str) -> str:
    # MySQL names an index within its table; SQLite and PostgreSQL within the schema.
    if dialect in ("mysql", "mariadb"):
        return f"DROP INDEX {index} ON {table}"
    return f"DROP INDEX {index}"


# Step 10: each webhook receiver's place in the outbox (what it accepted, its failed
# rounds, its sender's claim), so one that is down holds back only its own
# notifications; the per-notification delivery columns go.
_v10 = MetaData()
_V10_RECEIVERS = Table(
    "baton_notification_receivers",
    _v10,
    Column("receiver", String(64), primary_key=True),
    Column("url", Text, nullable=False),
    Column("accepted_seq", BigInteger, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_at", Double, nullable=False),
    Column("claimed_by", String(255), nullable=True),
    Column("claimed_until", Double, nullable=False),
)
_V10_DROPPED = ("attempts", "next_at", "delivered_to", "claimed_by", "claimed_until")
# Delivered notifications are deleted now, and SQLite numbers a plain INTEGER PRIMARY KEY
# after the highest row left: an emptied outbox would reuse numbers receivers accepted
# already. AUTOINCREMENT never reuses one, so SQLite rebuilds the table with it.
_V10_SQLITE_NOTIFICATIONS = Table(
    "baton_notifications_v10",
    _v10,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", String(64), nullable=False, unique=True),
    Column("body", Json, nullable=False),
    Column("created_at", Double, nullable=False),
    sqlite_autoincrement=True,
)


def _v10_statements(dialect: str) -> Sequence[ExecutableDDLElement]:
    receivers = CreateTable(binary_text(_V10_RECEIVERS))
    if dialect != "sqlite":
        table = "baton_notifications"
        return [receivers, *(_ddl(f"ALTER TABLE {table} DROP COLUMN {c}") for c in _V10_DROPPED)]
    return [
        receivers,
        CreateTable(_V10_SQLITE_NOTIFICATIONS),
        _ddl(
            "INSERT INTO baton_notifications_v10 (seq, id, body, created_at) "
            "SELECT seq, id, body, created_at FROM baton_notifications"
        ),
        _ddl("DROP TABLE baton_notifications"),
        _ddl("ALTER TABLE baton_notifications_v10 RENAME TO baton_notifications"),
    ]


def _v11_statements(dialect: str) -> Sequence[ExecutableDDLElement]:
    # PostgreSQL checked this key with a query per event a step inserts; see
    # `schema.events` for why the events keep their integrity without it.
    if dialect != "postgresql":
        return []
    return [_ddl("ALTER TABLE baton_events DROP CONSTRAINT baton_events_session_pk_fkey")]


# Step 12: memories, their words and the forgotten ids, written out as they were.
_v12 = MetaData()
_V12_SERIAL = BigInteger().with_variant(Integer(), "sqlite")
_V12_TABLES = (
    Table(
        "baton_memories",
        _v12,
        Column("pk", _V12_SERIAL, primary_key=True, autoincrement=True),
        Column("app_name", String(255), nullable=False),
        Column("user_id", String(255), nullable=False),
        Column("session_id", String(255), nullable=False),
        Column("memory_id", String(255), nullable=True),
        Column("entry", Json, nullable=False),
        Index("ix_baton_memories_owner", "app_name", "user_id", "session_id"),
    ),
    Table(
        "baton_memory_words",
        _v12,
        Column(
            "memory_pk",
            _V12_SERIAL,
            ForeignKey("baton_memories.pk", ondelete="CASCADE"),
            primary_key=True,
        ),
        Column("word", String(255), primary_key=True),
        Column("app_name", String(255), nullable=False),
        Column("user_id", String(255), nullable=False),
        Index("ix_baton_memory_words_search", "app_name", "user_id", "word"),
    ),
    Table(
        "baton_forgotten_memories",
        _v12,
        Column("app_name", String(255), primary_key=True),
        Column("user_id", String(255), primary_key=True),
        Column("memory_id", String(255), primary_key=True),
    ),
)


def _v12_statements(_dialect: str) -> Sequence[ExecutableDDLElement]:
    return [
        statement
        for table in _V12_TABLES
        for statement in (CreateTable(binary_text(table)), *map(CreateIndex, table.indexes))
    ]


def _v13_statements(_dialect: str) -> Sequence[ExecutableDDLElement]:
    return [
        _ddl(
            "CREATE INDEX ix_baton_events_session_invocation "
            "ON baton_events (session_pk, invocation_id)"
        )
    ]


def _v14_statements(dialect: str) -> Sequence[ExecutableDDLElement]:
    # See `schema.events`: on PostgreSQL the primary key leads with the session and
    # stands in for the (session, seq) index.
    if dialect != "postgresql":
        return []
    ddl = [
        "ALTER TABLE baton_events DROP CONSTRAINT baton_events_pkey, "
        "ADD PRIMARY KEY (session_pk, seq)",
        _drop_index(dialect, "ix_baton_events_session_seq", "baton_events"),
    ]
    return [_ddl(statement) for statement in ddl]


def _v15_statements(dialect: str) -> Sequence[ExecutableDDLElement]:
    # See `schema._session_key`: PostgreSQL keeps no foreign key to sessions, and
    # `writes.delete_session` deletes a session's rows itself.
    if dialect != "postgresql":
        return []
    tables = ("baton_invocations", "baton_interrupts", "baton_question_checkpoints")
    return [_ddl(f"ALTER TABLE {t} DROP CONSTRAINT {t}_session_pk_fkey") for t in tables]


def _v16_statements(dialect: str) -> Sequence[ExecutableDDLElement]:
    # See `schema.sessions`: every step rewrites its session's and its invocation's row,
    # and PostgreSQL keeps half of each page of them for the new copies.
    if dialect != "postgresql":
        return []
    tables = ("baton_sessions", "baton_invocations")
    return [_ddl(f"ALTER TABLE {t} SET (fillfactor = 50)") for t in tables]


_v17 = MetaData()
_V17_TABLES = (
    Table(
        "baton_app_states",
        _v17,
        Column("app_name", String(255), primary_key=True),
        Column("state", Json, nullable=False),
    ),
    Table(
        "baton_user_states",
        _v17,
        Column("app_name", String(255), primary_key=True),
        Column("user_id", String(255), primary_key=True),
        Column("state", Json, nullable=False),
    ),
)


def _v17_statements(_dialect: str) -> Sequence[ExecutableDDLElement]:
    return [CreateTable(binary_text(table)) for table in _V17_TABLES]


# Step 18 reads and writes sessions' state through this frozen view of their table.
_V18_SESSIONS = Table(
    "baton_sessions",
    MetaData(),
    Column("pk", _V1_SERIAL, primary_key=True),
    Column("app_name", String(255)),
    Column("user_id", String(255)),
    Column("state", Json),
    Column("updated_at", Double),
)
_V18_APP_PREFIX = "app:"
_V18_USER_PREFIX = "user:"


def _v18_statements(_dialect: str) -> Sequence[DataChange]:
    return [_v18_share_prefixed_keys]


def _v18_share_prefixed_keys(connection: Connection) -> None:
    """Move the `app:` and `user:` keys sessions kept in their own state before step 17
    into the app's and the user's shared rows, and out of the sessions.

    When sessions disagree on a key, the most recently updated session's value wins
    (sessions are read oldest first, each overwriting); a key the shared row already
    holds was written since step 17, later than any session's own copy, and stays.
    Only sessions whose state's text names such a key are read (a superset, checked
    key by key below), so a large database's other sessions are neither sent nor held.
    """
    apps: dict[str, dict[str, JsonValue]] = {}
    users: dict[tuple[str, str], dict[str, JsonValue]] = {}
    state_text = cast(_V18_SESSIONS.c.state, Text)
    rows = connection.execute(
        select(
            _V18_SESSIONS.c.pk,
            _V18_SESSIONS.c.app_name,
            _V18_SESSIONS.c.user_id,
            _V18_SESSIONS.c.state,
        )
        .where(
            or_(
                state_text.like(f'%"{_V18_APP_PREFIX}%'),
                state_text.like(f'%"{_V18_USER_PREFIX}%'),
            )
        )
        .order_by(_V18_SESSIONS.c.updated_at, _V18_SESSIONS.c.pk)
    ).all()
    for pk, app_name, user_id, found in rows:
        state: dict[str, JsonValue] = found or {}
        own = {k: v for k, v in state.items() if not _v18_is_shared(k)}
        if len(own) == len(state):
            continue
        for name, value in state.items():
            if name.startswith(_V18_APP_PREFIX):
                apps.setdefault(app_name, {})[name] = value
            elif name.startswith(_V18_USER_PREFIX):
                users.setdefault((app_name, user_id), {})[name] = value
        connection.execute(_V18_SESSIONS.update().where(_V18_SESSIONS.c.pk == pk).values(state=own))
    app_table, user_table = _V17_TABLES
    for app_name, keys in apps.items():
        _v18_share(connection, app_table, {"app_name": app_name}, keys)
    for (app_name, user_id), keys in users.items():
        _v18_share(connection, user_table, {"app_name": app_name, "user_id": user_id}, keys)


def _v18_is_shared(name: str) -> bool:
    return name.startswith((_V18_APP_PREFIX, _V18_USER_PREFIX))


def _v18_share(
    connection: Connection, table: Table, owner: dict[str, str], keys: dict[str, JsonValue]
) -> None:
    """`keys` added to the owner's shared row, under the keys it already holds."""
    where = [table.c[name] == value for name, value in owner.items()]
    held = connection.scalar(select(table.c.state).where(*where))
    if held is None:
        connection.execute(table.insert().values(**owner, state=keys))
    else:
        connection.execute(table.update().where(*where).values(state={**keys, **held}))


def _v19_statements(dialect: str) -> Sequence[ExecutableDDLElement]:
    if dialect != "postgresql":
        return []
    # Steps announce their questions after they commit (see `listener.Announcer`): a
    # NOTIFY inside a durable commit held a database-wide lock through its WAL flush.
    return [
        _ddl("DROP TRIGGER baton_interrupts_notify ON baton_interrupts"),
        _ddl("DROP FUNCTION baton_notify_interrupt()"),
    ]


def _v20_statements(dialect: str) -> Sequence[ExecutableDDLElement]:
    # See `schema.invocations`, `schema.interrupts` and `schema.notifications`: fewer index
    # entries written per run, and on PostgreSQL a lease taken or renewed rewrites its row
    # in place (a HOT update, no index touched).
    ddl: list[str] = []
    if dialect == "postgresql":
        ddl += [
            _drop_index(dialect, "ix_baton_invocations_status_lease", "baton_invocations"),
            "CREATE INDEX ix_baton_invocations_status ON baton_invocations (status)",
            _drop_index(dialect, "ix_baton_interrupts_assignee_listing", "baton_interrupts"),
            "CREATE INDEX ix_baton_interrupts_assignee_listing "
            "ON baton_interrupts (app_name, assignee, status, created_at) "
            "WHERE assignee IS NOT NULL",
            _drop_index(dialect, "ix_baton_interrupts_status_expires", "baton_interrupts"),
            "CREATE INDEX ix_baton_interrupts_status_expires "
            "ON baton_interrupts (status, expires_at) WHERE expires_at IS NOT NULL",
            "ALTER TABLE baton_notifications DROP CONSTRAINT baton_notifications_id_key",
        ]
    elif dialect == "mysql":
        ddl.append("ALTER TABLE baton_notifications DROP INDEX id")
    return [_ddl(statement) for statement in ddl]


def _v21_statements(dialect: str) -> Sequence[ExecutableDDLElement]:
    # See `schema.invocations`: PostgreSQL's recovery index holds the unfinished runs, not
    # their status, so a run that pauses or is resumed by an answer changes no indexed
    # column (a HOT update). Adding a stored column rewrites the table on PostgreSQL (under
    # its exclusive lock); SQLite and MySQL compute theirs when read (no index uses it).
    unfinished = "status IN ('running', 'paused')"
    if dialect == "postgresql":
        ddl = [
            "ALTER TABLE baton_invocations ADD COLUMN unfinished BOOLEAN "
            f"GENERATED ALWAYS AS ({unfinished}) STORED",
            "CREATE INDEX ix_baton_invocations_unfinished "
            "ON baton_invocations (created_at) WHERE unfinished",
            _drop_index(dialect, "ix_baton_invocations_status", "baton_invocations"),
        ]
    else:
        ddl = [
            "ALTER TABLE baton_invocations ADD COLUMN unfinished BOOLEAN "
            f"GENERATED ALWAYS AS ({unfinished}) VIRTUAL"
        ]
    return [_ddl(statement) for statement in ddl]


def _v22_statements(dialect: str) -> Sequence[ExecutableDDLElement]:
    # Step 21 undone (see `schema.invocations`): PostgreSQL's recovery index holds the
    # status again, so recovery's two reads find the running runs without walking the
    # paused ones, which wait for people and can be many. Dropping a column does not
    # rewrite the table on PostgreSQL; SQLite's and MySQL's column was computed when read.
    ddl: list[str] = []
    if dialect == "postgresql":
        ddl += [
            "CREATE INDEX ix_baton_invocations_status ON baton_invocations (status)",
            _drop_index(dialect, "ix_baton_invocations_unfinished", "baton_invocations"),
        ]
    ddl.append("ALTER TABLE baton_invocations DROP COLUMN unfinished")
    return [_ddl(statement) for statement in ddl]


# Every baton table at step 22.
_V23_TABLES = (
    "baton_sessions",
    "baton_events",
    "baton_invocations",
    "baton_fingerprints",
    "baton_interrupts",
    "baton_artifacts",
    "baton_question_checkpoints",
    "baton_notifications",
    "baton_notification_receivers",
    "baton_memories",
    "baton_memory_words",
    "baton_forgotten_memories",
    "baton_app_states",
    "baton_user_states",
    "baton_schema_version",
)

# The binary collations that compare trailing spaces: MariaDB's, then MySQL 8.0.17's.
_V23_NO_PAD = ("utf8mb4_nopad_bin", "utf8mb4_0900_bin")


def _v23_statements(dialect: str) -> Sequence[DataChange]:
    # utf8mb4_bin is a PAD SPACE collation: 'trail' equals 'trail ', which an older baton
    # stored (ids may not end with a space since 69baf3c). A unique key took the two for
    # one session, and every lookup by id read either. A NO PAD binary collation compares
    # ids exactly, as SQLite and PostgreSQL do, with no cost to a query: it reads the
    # same index. Converting rewrites each table, once.
    return [_v23_compare_trailing_spaces] if dialect == "mysql" else []


def _v23_compare_trailing_spaces(connection: Connection) -> None:
    names = ", ".join(f"'{name}'" for name in _V23_NO_PAD)
    query = "SELECT collation_name FROM information_schema.collations WHERE collation_name IN "
    offered = set(connection.scalars(text(f"{query}({names})")))
    found = [name for name in _V23_NO_PAD if name in offered]
    if not found:  # MySQL before 8.0.17: trailing spaces stay ignored
        return
    for table in _V23_TABLES:
        connection.execute(
            text(f"ALTER TABLE {table} CONVERT TO CHARACTER SET utf8mb4 COLLATE {found[0]}")
        )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "sessions, events, invocations, interrupts and leases", _v1_statements),
    Migration(2, "leases on invocations with fencing tokens; interrupt deadlines", _v2_statements),
    Migration(3, "interrupt assignees", _v3_statements),
    Migration(
        4,
        "workflow fingerprints stored once each, not in every invocation's row",
        _v4_statements,
    ),
    Migration(5, "artifacts: versioned files per session or user", _v5_statements),
    Migration(6, "each question's checkpoint, for forks", _v6_statements),
    Migration(7, "notification outbox", _v7_statements),
    Migration(8, "indexes that read pages of listings in their order", _v8_statements),
    Migration(9, "sessions.updated_at is the session's last change again", _v9_statements),
    Migration(10, "each webhook receiver's place in the notification outbox", _v10_statements),
    Migration(11, "no foreign key from events to sessions on PostgreSQL", _v11_statements),
    Migration(12, "memories kept in the sessions' database, with their words", _v12_statements),
    Migration(13, "an index reading one invocation's events in order", _v13_statements),
    Migration(14, "events keyed by (session, seq) on PostgreSQL: one index fewer", _v14_statements),
    Migration(15, "no foreign keys to sessions on PostgreSQL", _v15_statements),
    Migration(
        16,
        "half of each page of sessions and invocations for updates on PostgreSQL",
        _v16_statements,
    ),
    Migration(17, "app: and user: state keys shared by the sessions", _v17_statements),
    Migration(
        18,
        "app: and user: keys kept in sessions before step 17 moved to the shared rows",
        _v18_statements,
    ),
    Migration(19, "steps NOTIFY after their commit on PostgreSQL, not inside it", _v19_statements),
    Migration(
        20,
        "fewer index entries per run on PostgreSQL (and no unique notification ids on MySQL)",
        _v20_statements,
    ),
    Migration(
        21,
        "runs that pause or resume rewrite their row in place on PostgreSQL",
        _v21_statements,
    ),
    Migration(
        22,
        "recovery finds running runs by their status again on PostgreSQL (step 21 undone)",
        _v22_statements,
    ),
    Migration(
        23,
        "ids that differ only in trailing spaces are different ids on MySQL",
        _v23_statements,
    ),
)

LATEST_VERSION = MIGRATIONS[-1].number
"""The schema version this code writes and expects."""


def migrate(
    connection: Connection, dialect: SqlDialect, *, up_to: int = LATEST_VERSION
) -> list[int]:
    """Bring the database up to `up_to` (the latest by default); return the steps applied now.

    Runs in the caller's transaction, which must be a writing one (see `executors`),
    under the dialect's migration lock (on SQLite the transaction's BEGIN IMMEDIATE).
    Each step's number is recorded as it completes: where DDL commits by itself
    (MySQL), a step that fails midway leaves the steps before it recorded. `up_to`
    exists for tests that build an old database.

    Raises:
        RuntimeError: the database was written by a newer baton (its version is ahead).
    """
    with dialect.migration_lock(connection):
        schema.schema_version.create(connection, checkfirst=True)
        current = read_version(connection)
        _refuse_newer(connection, current)
        pending = [m for m in MIGRATIONS if current < m.number <= up_to]
        for migration in pending:
            _apply(connection, migration.statements(dialect.name))
            _write_version(connection, dialect, migration.number)
    return [m.number for m in pending]


def _apply(connection: Connection, statements: Sequence[ExecutableDDLElement | DataChange]) -> None:
    for statement in statements:
        if isinstance(statement, ExecutableDDLElement):
            connection.execute(statement)
        else:
            statement(connection)


def read_version(connection: Connection) -> int:
    """The schema version recorded in the database (0 before the first step)."""
    found = connection.scalar(
        select(schema.schema_version.c.version).where(schema.schema_version.c.id == _VERSION_ROW_ID)
    )
    return int(found or 0)


def _write_version(connection: Connection, dialect: SqlDialect, version: int) -> None:
    statement = dialect.upsert(schema.schema_version, ("version",))
    connection.execute(statement, {"id": _VERSION_ROW_ID, "version": version})


def _refuse_newer(connection: Connection, current: int) -> None:
    if current > LATEST_VERSION:
        url = connection.engine.url.render_as_string(hide_password=True)
        raise RuntimeError(
            f"database '{url}' has baton schema version {current}, but this baton knows "
            f"only up to {LATEST_VERSION}; upgrade baton to use this database."
        )
