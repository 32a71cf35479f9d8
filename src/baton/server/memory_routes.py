"""The reference server's memory route: `PATCH /apps/{app}/users/{user}/memory` with
`{"sessionId": ...}` adds that session (as committed) to the app's memory service, so
later runs of the user recall it (`search_memory`, the `load_memory` tool)."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, params

from baton.errors import SessionNotFoundError
from baton.server.catalog import AppCatalog
from baton.server.refusals import ERROR_RESPONSES
from baton.types import WireModel

__all__ = ["UpdateMemoryRequest", "memory_routes"]


class UpdateMemoryRequest(WireModel):
    """The session to add to memory."""

    session_id: str


def memory_routes(catalog: AppCatalog, dependencies: Sequence[params.Depends]) -> APIRouter:
    """The route above for `catalog`'s apps, behind `dependencies` (keys, ids)."""
    router = APIRouter(dependencies=list(dependencies), responses=ERROR_RESPONSES)

    @router.patch("/apps/{app_name}/users/{user_id}/memory")
    async def add_session(app_name: str, user_id: str, body: UpdateMemoryRequest) -> None:  # pyright: ignore[reportUnusedFunction] -- a route
        runner = catalog.runner(app_name)
        session = await runner.session_service.get_session(
            app_name=app_name, user_id=user_id, session_id=body.session_id
        )
        if session is None:
            raise SessionNotFoundError(
                f"session '{body.session_id}' of user '{user_id}' does not exist in app "
                f"'{app_name}'; nothing was added to memory."
            )
        if runner.memory_service is not None:
            await runner.memory_service.add_session_to_memory(session)

    return router
