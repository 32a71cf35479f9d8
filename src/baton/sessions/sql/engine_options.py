"""SQLAlchemy engine options a caller may give a SQL store (`DatabaseSessionService(db_url,
**options)`, as the reference hands them to `create_async_engine`): checked once when the
store is built, then laid over baton's own options when its engine is made."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from baton.errors import EngineOptionsError

__all__ = ["check_engine_options", "merged_connect_args", "with_engine_options"]

HONOURED: Final = frozenset(
    {
        "connect_args",
        "echo",
        "echo_pool",
        "hide_parameters",
        "logging_name",
        "max_overflow",
        "pool_logging_name",
        "pool_pre_ping",
        "pool_recycle",
        "pool_size",
        "pool_timeout",
        "pool_use_lifo",
    }
)
"""Options that mean on baton's engine what they mean on any: logging and the pool."""

_BATONS_OWN: Final = {
    "isolation_level": "baton's reads and claims rely on the isolation levels it sets",
    "execution_options": "baton's reads and claims rely on the isolation levels it sets",
    "json_serializer": "baton encodes JSON itself, the same way on every backend",
    "json_deserializer": "baton decodes JSON itself, the same way on every backend",
    "poolclass": "baton's pool checks connections a server restart closed",
    "pool": "baton's pool checks connections a server restart closed",
    "creator": "baton opens its connections itself (SQLite's WAL and pragmas, PostgreSQL's "
    "own step connections)",
    "async_creator": "baton opens its connections itself (SQLite's WAL and pragmas, "
    "PostgreSQL's own step connections)",
}


_GUARANTEES = "a committed step must be durable and baton's claims rely on the isolation it sets"
_CONNECT_ARGS_REFUSED: Final = {
    "autocommit": _GUARANTEES,  # MySQL's drivers; Python's sqlite3
    "isolation_level": _GUARANTEES,  # Python's sqlite3
}
"""Driver connect arguments that would change how baton's transactions commit."""

_SERVER_SETTINGS_REFUSED: Final = frozenset(
    {
        "synchronous_commit",
        "default_transaction_isolation",
        "transaction_isolation",
        "default_transaction_read_only",
    }
)
"""PostgreSQL settings (asyncpg's `server_settings`) that would change how baton's
transactions commit or what they see."""


def check_engine_options(given: Mapping[str, object]) -> dict[str, Any]:
    """The options as given, when baton can honour every one.

    Raises:
        EngineOptionsError: some cannot be honoured (baton sets them itself, or they are
            not engine options baton knows), each named with why.
    """
    refused = sorted(set(given) - HONOURED)
    if not refused:
        connect_args = given.get("connect_args", {})
        if not isinstance(connect_args, Mapping):
            raise EngineOptionsError(
                f"DatabaseSessionService: connect_args must be a dict of the driver's "
                f"connect arguments, not {type(connect_args).__name__}."
            )
        _check_connect_args(cast(Mapping[str, object], connect_args))
        return dict(given)
    reasons = [f"{name} ({_BATONS_OWN.get(name, 'not an option baton knows')})" for name in refused]
    raise EngineOptionsError(
        f"DatabaseSessionService: engine options {', '.join(reasons)} cannot be honoured; "
        f"leave them out. Options baton applies: {', '.join(sorted(HONOURED))}."
    )


def _check_connect_args(connect_args: Mapping[str, object]) -> None:
    refused = [
        f"{name} ({why})" for name, why in _CONNECT_ARGS_REFUSED.items() if name in connect_args
    ]
    settings = connect_args.get("server_settings", {})
    if isinstance(settings, Mapping):
        named = sorted(_SERVER_SETTINGS_REFUSED & set(cast(Mapping[str, object], settings)))
        refused += [f"server_settings {name} ({_GUARANTEES})" for name in named]
    if refused:
        raise EngineOptionsError(
            f"DatabaseSessionService: connect_args {', '.join(refused)} cannot be honoured; "
            f"leave them out."
        )


def with_engine_options(own: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """baton's engine options with the caller's laid over them; `connect_args` merged
    (the caller's win), so baton's own connection settings stay unless replaced."""
    merged = {**own, **given}
    if "connect_args" in given:
        merged["connect_args"] = merged_connect_args(own.get("connect_args", {}), given)
    return merged


def merged_connect_args(own: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """baton's connect arguments with the caller's `connect_args` (from `given`, the engine
    options) laid over them, a dict in both merged too (asyncpg's `server_settings`
    keeps the URL's `search_path` beside the caller's settings)."""
    merged = dict(own)
    for name, value in dict(given.get("connect_args", {})).items():
        mine: object = merged.get(name)
        if isinstance(mine, Mapping) and isinstance(value, Mapping):
            value = {**cast(Mapping[str, Any], mine), **cast(Mapping[str, Any], value)}
        merged[name] = value
    return merged
