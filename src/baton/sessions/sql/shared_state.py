"""The state keys shared by an app's sessions (`app:`) or by one user's (`user:`).

Each app and each (app, user) has one row holding its keys, with their prefixes. A
write adds keys to the row inside the writer's transaction: the row is created when
missing, then locked, read and rewritten, so two sessions of a user writing at once
both land, one after the other. Reads of sessions merge the rows in the statement
that reads the session (see `reads`).
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue
from sqlalchemy import ColumnElement, Table, and_, bindparam, select, update
from sqlalchemy.engine import Connection

from baton.sessions.sql.dialect import SqlDialect
from baton.sessions.sql.schema import app_states, sessions, user_states
from baton.sessions.store import USER_PREFIX, SharedState

__all__ = [
    "SHARED_BY_KEY",
    "SHARED_OF_SESSION",
    "SHARED_STATE",
    "read_user_state",
    "shared_params",
    "write_shared_state",
]

_OF_APP = app_states.c.app_name == bindparam("key_app_name")
_OF_USER = and_(
    user_states.c.app_name == bindparam("key_app_name"),
    user_states.c.user_id == bindparam("key_user_id"),
)
_APP_STATE = select(app_states.c.state).where(_OF_APP)
_USER_STATE = select(user_states.c.state).where(_OF_USER)
SHARED_BY_KEY = (
    _APP_STATE.scalar_subquery().label("app_state"),
    _USER_STATE.scalar_subquery().label("user_state"),
)
"""The app's and the user's shared keys as columns (each NULL when none; bind
`shared_params`): what the INSERT of a new session returns."""
SHARED_STATE = select(*SHARED_BY_KEY)
"""The app's and the user's shared keys (each NULL when none; bind `shared_params`)."""

SHARED_OF_SESSION = (
    select(app_states.c.state)
    .where(app_states.c.app_name == sessions.c.app_name)
    .scalar_subquery()
    .label("app_state"),
    select(user_states.c.state)
    .where(
        user_states.c.app_name == sessions.c.app_name,
        user_states.c.user_id == sessions.c.user_id,
    )
    .scalar_subquery()
    .label("user_state"),
)
"""The app's and the user's shared keys as columns of a statement reading a session's
row (each NULL when none): every read of a session hands code the merged state, read
in the same statement."""


def shared_params(app_name: str, user_id: str) -> dict[str, Any]:
    """What `SHARED_STATE` binds."""
    return {"key_app_name": app_name, "key_user_id": user_id}


def write_shared_state(
    connection: Connection, dialect: SqlDialect, app_name: str, user_id: str, split: SharedState
) -> None:
    """Add `split`'s `app:` and `user:` keys to the app's and the user's rows (the app's
    first: every writer takes the two locks in that order)."""
    if split.app:
        owner = {"app_name": app_name}
        _add(connection, dialect, app_states, owner, _OF_APP, split.app)
    if split.user:
        owner = {"app_name": app_name, "user_id": user_id}
        _add(connection, dialect, user_states, owner, _OF_USER, split.user)


def _add(
    connection: Connection,
    dialect: SqlDialect,
    table: Table,
    owner: dict[str, str],
    of_owner: ColumnElement[bool],
    keys: dict[str, JsonValue],
) -> None:
    # Create the row or, when there is one, lock it: an upsert rewriting the row's key
    # with itself takes the row's write lock at once. (Inserting unless it exists, then
    # locking, deadlocks on MariaDB: a failed insert holds a shared lock on the row, and
    # two writers holding one each wait for each other to upgrade it.)
    params = {f"key_{name}": value for name, value in owner.items()}
    dialect.run(connection, dialect.upsert(table, tuple(owner)[:1]), {**owner, "state": {}})
    locked = dialect.lock_rows(select(table.c.state).where(of_owner), of=table)
    state: dict[str, JsonValue] = connection.execute(locked, params).scalar_one()
    connection.execute(update(table).where(of_owner).values(state={**state, **keys}), params)


def read_user_state(connection: Connection, app_name: str, user_id: str) -> dict[str, JsonValue]:
    """The user's `user:` keys in the app, without the prefix."""
    state: dict[str, JsonValue] | None = connection.scalar(
        _USER_STATE, shared_params(app_name, user_id)
    )
    return {key.removeprefix(USER_PREFIX): value for key, value in (state or {}).items()}
