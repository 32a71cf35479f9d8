"""The routes the reference's web UI calls besides the API: graph, traces, telemetry.

- `GET /dev/apps/{app}/build_graph`: the app's structure (`graph_view.app_structure`).
- `GET /dev/apps/{app}/build_graph_image?dark_mode=&node=`: Graphviz DOT per level,
  `{path: {"dotSrc": ...}}`, which the UI draws itself.
- `GET /dev/apps/{app}/debug/trace/session/{id}`: the session's spans, kept in
  memory when the server runs with `--trace-to-ui` (see `ui_traces`).
- `GET /config/telemetry`: `{"telemetry": false}`. The UI asks whether it may send
  usage analytics; baton's answer is always no, and there is no route to change it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter, HTTPException, Request
from pydantic import JsonValue

from baton.server.catalog import AppCatalog
from baton.server.graph_view import app_structure, dot_sources
from baton.server.refusals import ERROR_RESPONSES
from baton.server.security import ApiKeys

if TYPE_CHECKING:  # pragma: no cover - the SDK is needed only with --trace-to-ui
    from baton.server.ui_traces import SessionTraces

__all__ = ["dev_routes"]


def dev_routes(catalog: AppCatalog, keys: ApiKeys, traces: SessionTraces | None) -> APIRouter:
    """The routes above, for `catalog`'s apps; `traces` is None unless spans are kept."""
    router = APIRouter(responses=ERROR_RESPONSES)

    @router.get("/config/telemetry")
    async def telemetry() -> dict[str, bool]:  # pyright: ignore[reportUnusedFunction] -- a route
        return {"telemetry": False}

    @router.get("/dev/apps/{app_name}/build_graph")
    async def build_graph(request: Request, app_name: str) -> dict[str, JsonValue]:  # pyright: ignore[reportUnusedFunction] -- a route
        keys.authorize(request, None)
        runner = catalog.runner(app_name)
        return app_structure(runner.app_name, runner.root, None)

    @router.get("/dev/apps/{app_name}/build_graph_image")
    async def build_graph_image(  # pyright: ignore[reportUnusedFunction] -- a route
        request: Request, app_name: str, dark_mode: bool = False, node: str | None = None
    ) -> dict[str, dict[str, str]]:
        keys.authorize(request, None)
        levels = dot_sources(catalog.runner(app_name).root, dark=dark_mode)
        if node is None:
            return levels
        chosen = {p: d for p, d in levels.items() if p == node or p.startswith(f"{node}/")}
        if not chosen:
            drawable = ", ".join(repr(p) for p in levels if p) or "none"
            raise HTTPException(
                404,
                f"app '{app_name}' has no nested workflow or agent '{node}' to draw; "
                f"the drawable ones are: {drawable}. Leave `node` out for the whole app.",
            )
        return chosen

    @router.get("/dev/apps/{app_name}/debug/trace/session/{session_id}")
    async def session_trace(  # pyright: ignore[reportUnusedFunction] -- a route
        request: Request, app_name: str, session_id: str
    ) -> list[dict[str, JsonValue]]:
        keys.authorize(request, None)
        catalog.runner(app_name)
        if traces is None:
            raise HTTPException(
                404,
                "this server keeps no traces; start it with `--trace-to-ui` (needs "
                "`pip install 'baton[otel]'`) to see each session's spans.",
            )
        from baton.server.ui_traces import ui_span  # the SDK is there: traces were kept

        return [
            ui_span(span)
            for user, span in traces.spans_of(app_name, session_id)
            if _may_read(keys, request, user)
        ]

    return router


def _may_read(keys: ApiKeys, request: Request, user: str) -> bool:
    """Whether the request's key may act for `user` (a user's key sees only its sessions)."""
    try:
        keys.authorize(request, user)
    except HTTPException:
        return False
    return True
