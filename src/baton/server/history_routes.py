"""Routes about a session's history: rewinding it, its checkpoints, forks, its graph.

- `GET .../sessions/{id}/graph?invocation=`: the picture of a run (the latest by
  default): the app's graph laid out, each node's state in that run (`run_graph`).
- `GET .../sessions/{id}/checkpoints`: the points a run can be taken back to
  (`Runner.checkpoints`): before each run, at each question, after each ended run.
- `POST .../sessions/{id}/fork` `{"checkpointId": ..., "newSessionId"?: ...}`: a new
  session holding the history up to that checkpoint (`Runner.fork`); the reply is it.
- `POST .../sessions/{id}/rewind` `{"rewindBeforeInvocationId": ...}`: the reference's
  `Runner.rewind_async` over HTTP (the reference serves no route for it); the reply is
  the rewind event.

Every route checks the caller like the session routes, calls the Runner, and wakes
the live streams so open pages show the change at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fastapi import APIRouter, params

from baton.errors import InvocationNotFoundError, SessionNotFoundError
from baton.events import Event
from baton.server.bodies import ForkRequest, RewindRequest
from baton.server.catalog import AppCatalog
from baton.server.refusals import ERROR_RESPONSES
from baton.server.run_graph import RunGraph, build_run_graph
from baton.sessions.checkpoints import Checkpoint
from baton.sessions.rewind import live_events
from baton.sessions.store import InvocationStatus, Session, SessionKey
from baton.types import SessionId

__all__ = ["history_routes"]


def history_routes(
    catalog: AppCatalog, dependencies: Sequence[params.Depends], changed: Callable[[], None]
) -> APIRouter:
    """The routes above; `dependencies` check the caller, `changed` wakes the streams."""
    router = APIRouter(
        prefix="/apps/{app_name}/users/{user_id}/sessions/{session_id}",
        dependencies=list(dependencies),
        responses=ERROR_RESPONSES,
    )

    @router.get("/graph", response_model=RunGraph)
    async def graph(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str, user_id: str, session_id: str, invocation: str | None = None
    ) -> RunGraph:
        """The app's graph with each node's state in the run `invocation` (default: the
        latest not rewound): done, running, waiting, failed or idle. 404 for an unknown
        run."""
        return await _run_graph(
            catalog, SessionKey(app_name, user_id, SessionId(session_id)), invocation
        )

    @router.get("/checkpoints", response_model=list[Checkpoint])
    async def checkpoints(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str, user_id: str, session_id: str
    ) -> list[Checkpoint]:
        """The session's checkpoints, oldest first (rewound history has none)."""
        runner = catalog.runner(app_name)
        return await runner.checkpoints(user_id=user_id, session_id=session_id)

    @router.post("/fork", response_model=Session, response_model_exclude_none=True)
    async def fork(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str, user_id: str, session_id: str, body: ForkRequest
    ) -> Session:
        """A new session holding this one's history up to the checkpoint; a run waiting
        at its question waits there again. 404 for an unknown checkpoint, 409 when the
        new id is taken or a run was executing there; nothing is written then."""
        forked = await catalog.runner(app_name).fork(
            user_id=user_id,
            session_id=session_id,
            checkpoint_id=body.checkpoint_id,
            new_session_id=body.new_session_id,
        )
        changed()
        return forked

    @router.post("/rewind", response_model=Event, response_model_exclude_none=True)
    async def rewind(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str, user_id: str, session_id: str, body: RewindRequest
    ) -> Event:
        """Rewind the session to before an invocation: its state as it was then, that run
        and every later one undone (nothing deleted). 404 for an unknown invocation, 409
        for one already rewound or a run still executing; nothing changes then."""
        event = await catalog.runner(app_name).rewind_async(
            user_id=user_id,
            session_id=session_id,
            rewind_before_invocation_id=body.rewind_before_invocation_id,
        )
        changed()
        return event

    return router


async def _run_graph(catalog: AppCatalog, key: SessionKey, invocation_id: str | None) -> RunGraph:
    runner = catalog.runner(key.app_name)
    session = await runner.session_service.get_session(
        app_name=key.app_name, user_id=key.user_id, session_id=key.session_id
    )
    if session is None:
        raise SessionNotFoundError(
            f"session '{key.session_id}' of user '{key.user_id}' does not exist in app "
            f"'{key.app_name}'; list that user's sessions first."
        )
    runs = await runner.invocations(user_id=key.user_id, session_id=key.session_id)
    live_runs = [r for r in runs if r.status is not InvocationStatus.REWOUND]
    chosen = live_runs[-1] if live_runs and invocation_id is None else None
    if invocation_id is not None:
        chosen = next((r for r in runs if r.id == invocation_id), None)
        if chosen is None:
            listed = ", ".join(f"'{r.id}'" for r in runs[-5:]) or "none"
            raise InvocationNotFoundError(
                f"session '{key.session_id}' has no run '{invocation_id}' (its latest runs: "
                f"{listed}); leave `invocation` out for the latest."
            )
    asked = (
        await runner.pending(
            user_id=key.user_id, session_id=key.session_id, invocation_id=chosen.id, status=None
        )
        if chosen
        else []
    )
    # A rewound run, asked for by id, is drawn from its own (annulled) events.
    rewound = chosen is not None and chosen.status is InvocationStatus.REWOUND
    events = session.events if rewound else live_events(session.events)
    return build_run_graph(runner.app_name, runner.root, chosen, events, asked)
