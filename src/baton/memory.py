"""Memory: the services an agent recalls a user's past sessions from, and the memory
methods of the contexts nodes, tools and callbacks see.

The services live in `baton.memory_services` (`SqliteMemoryService` and
`DatabaseMemoryService` in `baton.database_memory`) and are read here too, where the
reference's users import them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import final

from baton.database_memory import SqliteMemoryService
from baton.events import Event
from baton.memory_services import (
    BaseMemoryService,
    InMemoryMemoryService,
    MemoryEntry,
    SearchMemoryResponse,
)
from baton.sessions.store import Session

__all__ = [
    "BaseMemoryService",
    "InMemoryMemoryService",
    "MemoryEntry",
    "MemoryMethods",
    "MemoryScope",
    "SearchMemoryResponse",
    "SqliteMemoryService",
    "no_memory",
]


@final
class MemoryScope:
    """The memory one node run, tool call or callback reaches: its user's.

    Args:
        service: the Runner's memory service (None: the calls say how to set one).
        app_name: the app.
        user_id: the user.
        session_id: the session.
        load_session: the session with every committed event, for `add_session_to_memory`.
    """

    def __init__(
        self,
        service: BaseMemoryService | None,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        load_session: Callable[[], Awaitable[Session]],
    ) -> None:
        self.service = service
        self.app_name = app_name
        self.user_id = user_id
        self.session_id = session_id
        self.load_session = load_session

    def require(self) -> BaseMemoryService:
        """The service, or the error saying how to set one."""
        if self.service is None:
            raise ValueError(
                "no memory service is set; pass one to the Runner, e.g. "
                "Runner(..., memory_service=InMemoryMemoryService())."
            )
        return self.service


class MemoryMethods:
    """The reference's memory methods of a context, over its `MemoryScope`."""

    @property
    def memory_scope(self) -> MemoryScope:
        """The memory this context reaches (each context class says how)."""
        raise NotImplementedError

    async def search_memory(self, query: str) -> SearchMemoryResponse:
        """The user's memories matching `query`.

        Raises:
            ValueError: the Runner has no memory service.
        """
        scope = self.memory_scope
        return await scope.require().search_memory(
            app_name=scope.app_name, user_id=scope.user_id, query=query
        )

    async def add_session_to_memory(self) -> None:
        """Remember this session as committed so far (replacing what it added before)."""
        scope = self.memory_scope
        service = scope.require()
        await service.add_session_to_memory(await scope.load_session())

    async def add_events_to_memory(
        self, *, events: Sequence[Event], custom_metadata: Mapping[str, object] | None = None
    ) -> None:
        """Remember these events under this session."""
        scope = self.memory_scope
        await scope.require().add_events_to_memory(
            app_name=scope.app_name,
            user_id=scope.user_id,
            session_id=scope.session_id,
            events=events,
            custom_metadata=custom_metadata,
        )

    async def add_memory(
        self,
        *,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember these entries for the user."""
        scope = self.memory_scope
        await scope.require().add_memory(
            app_name=scope.app_name,
            user_id=scope.user_id,
            memories=memories,
            custom_metadata=custom_metadata,
        )

    async def delete_memory(self, memory_id: str | None = None) -> None:
        """Forget one of the user's memories."""
        scope = self.memory_scope
        await scope.require().delete_memory(
            app_name=scope.app_name, user_id=scope.user_id, memory_id=memory_id
        )


def no_memory() -> MemoryScope:
    """The scope of a context built without a runner: every call says how to set one."""

    async def nothing() -> Session:
        raise ValueError("this context belongs to no session.")

    return MemoryScope(None, app_name="", user_id="", session_id="", load_session=nothing)
