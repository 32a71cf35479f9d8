"""Choosing the database's strategy from its URL, once, when a store is built."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import make_url

from baton.sessions.sql import dialect_mysql, dialect_postgres, dialect_sqlite
from baton.sessions.sql.dialect import SqlDialect

__all__ = ["open_dialect"]

_SUPPORTED = (
    f"'sqlite:///path', '{dialect_postgres.DRIVER}://...' or '{dialect_mysql.DRIVER}://...'"
)


def open_dialect(url: str, engine_options: Mapping[str, Any] | None = None) -> SqlDialect:
    """The strategy for the database `url` names, with the driver baton uses for it.

    SQLite URLs (`sqlite://`, `sqlite+pysqlite://`, `sqlite+aiosqlite://`) use
    pysqlite; PostgreSQL URLs (`postgresql://`, `postgres://`) use asyncpg; MySQL and
    MariaDB URLs (`mysql://`, `mariadb://`, `+asyncmy`) use asyncmy, or aiomysql when
    the URL names it (`mysql+aiomysql://`).

    `engine_options` (checked: see `check_engine_options`) go to its engine.

    Raises:
        ValueError: the URL names a database or driver baton does not support, or
            carries a bad option.
        ExtraNotInstalledError: the database's driver is not installed.
    """
    parsed = make_url(url)
    options = dict(engine_options or {})
    if parsed.drivername in dialect_sqlite.NAMES:
        return dialect_sqlite.SqliteDialect(parsed, options)
    if parsed.drivername in dialect_postgres.NAMES:
        return dialect_postgres.PostgresDialect(parsed, options)
    if parsed.drivername in dialect_mysql.NAMES:
        return dialect_mysql.MysqlDialect(parsed, options)
    raise ValueError(
        f"unsupported database URL '{parsed.render_as_string(hide_password=True)}' "
        f"(driver '{parsed.drivername}'); use {_SUPPORTED}."
    )
