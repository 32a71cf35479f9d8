"""Where sessions are kept: the `Store` protocol, its memory and SQL backends, and the
session services users construct (`baton.sessions.services`).

The reference's `google.adk.sessions` names are read here too (`from baton.sessions
import InMemorySessionService, Session, State`).
"""

from baton.errors import StateSchemaError
from baton.sessions.services import (
    BaseSessionService,
    DatabaseSessionService,
    GetSessionConfig,
    InMemorySessionService,
    ListSessionsResponse,
    SqliteSessionService,
)
from baton.sessions.state import State
from baton.sessions.store import Session

__all__ = [
    "BaseSessionService",
    "DatabaseSessionService",
    "GetSessionConfig",
    "InMemorySessionService",
    "ListSessionsResponse",
    "Session",
    "SqliteSessionService",
    "State",
    "StateSchemaError",
]
