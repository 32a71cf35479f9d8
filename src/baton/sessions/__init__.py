"""Where sessions are kept: the `Store` protocol, its memory and SQL backends, and the
session services users construct (`baton.sessions.services`).

The reference's `google.adk.sessions` names are read here too (`from baton.sessions
import InMemorySessionService, Session, State`). They are looked up on first use: the
services pull in SQLAlchemy, and `State` lives with the contexts, which import this
package.
"""

from importlib import import_module
from typing import Any

_HOMES = {
    "BaseSessionService": "baton.sessions.services",
    "DatabaseSessionService": "baton.sessions.services",
    "GetSessionConfig": "baton.sessions.services",
    "InMemorySessionService": "baton.sessions.services",
    "ListSessionsResponse": "baton.sessions.services",
    "SqliteSessionService": "baton.sessions.services",
    "Session": "baton.sessions.store",
    "State": "baton.context",
    "StateSchemaError": "baton.errors",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'baton.sessions' has no attribute {name!r}")
    return getattr(import_module(home), name)
