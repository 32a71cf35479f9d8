"""Opening a SQL store from what a service's constructor was given.

Every SQL-backed service (sessions, artifacts, memories) opens its store here, so a
file path means the same to each, another database's URL is refused the same way by
each `Sqlite...Service`, and SQLAlchemy with baton's SQL store is read only when a SQL
store is made: it is a third of `import baton`'s instructions, which a program keeping
everything in memory never needs (tests/test_startup.py).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from baton.sessions.sql import SqlStore

__all__ = ["sql_store", "sqlite_url"]

_SQLITE_SCHEMES = ("sqlite://", "sqlite+pysqlite://", "sqlite+aiosqlite://")


def sqlite_url(service: str, db_path: str | os.PathLike[str]) -> str:
    """The SQLite URL of a `Sqlite...Service`'s `db_path`: a file path (str or Path)
    becomes `sqlite:///path`; a SQLite URL is kept.

    Raises:
        ValueError: `db_path` is another database's URL, or not a path at all.
    """
    if isinstance(db_path, os.PathLike):
        db_path = os.fspath(db_path)
    if not isinstance(db_path, str) or not db_path:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"{service} takes a file path or a sqlite:/// URL, not {db_path!r}.")
    if "://" not in db_path:
        return f"sqlite:///{db_path}"
    if not db_path.startswith(_SQLITE_SCHEMES):
        database = service.removeprefix("Sqlite")
        raise ValueError(
            f"{service} takes a file path or a sqlite:/// URL, not '{db_path}'; "
            f"use Database{database} for other databases."
        )
    return db_path


def sql_store(url: str, engine_options: dict[str, object] | None = None) -> SqlStore:
    """A SqlStore on `url`, its module read now rather than at `import baton`."""
    from baton.sessions.sql import SqlStore

    return SqlStore(url, engine_options=engine_options)
