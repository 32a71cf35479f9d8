"""SQL storage: SQLite (the embedded default) and PostgreSQL through one code path."""

from baton.sessions.sql.store import SqlStore

__all__ = ["SqlStore"]
