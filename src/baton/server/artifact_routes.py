"""The reference server's artifact routes, plus a download link for the inbox.

Under `/apps/{app}/users/{user}/sessions/{session}/artifacts`:

- `GET` the names (the session's and the user's `user:` ones); `POST`
  `{filename, artifact, customMetadata}` saves a version and returns its metadata.
- `GET .../{name}` (`?version=n`) or `.../{name}/versions/{n|latest}`: the Part.
- `GET .../{name}/versions`: the version numbers; `.../versions/metadata` and
  `.../versions/{n|latest}/metadata`: what is known of them.
- `DELETE .../{name}`: every version.

`GET /apps/{app}/users/{user}/sessions/{session}/artifact-files/{name}?version=n` sends
the content itself (bytes with their MIME type, or text) as a file to save, which the
inbox links to. Names may hold '/', so the version routes are matched first.

Every route first checks that the session exists (404 otherwise), so nothing is saved
for a session that is not there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Response, params
from pydantic import Field, JsonValue

from baton.artifacts import ArtifactVersion, BaseArtifactService
from baton.errors import ArtifactNotFoundError, InvalidArtifactError, SessionNotFoundError
from baton.server.catalog import AppCatalog
from baton.server.refusals import ERROR_RESPONSES
from baton.sessions.services import GetSessionConfig
from baton.types import Part, WireModel

__all__ = ["SaveArtifactRequest", "artifact_routes"]

_BASE = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/artifacts"
_FILES = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/artifact-files"


class SaveArtifactRequest(WireModel):
    """The body of a save: the name, the Part (bytes base64 in `inlineData`), metadata."""

    filename: str
    artifact: dict[str, Any]
    custom_metadata: dict[str, JsonValue] | None = Field(default=None)


def artifact_routes(catalog: AppCatalog, dependencies: Sequence[params.Depends]) -> APIRouter:
    """The routes above for `catalog`'s apps, behind `dependencies` (keys, ids)."""
    router = APIRouter(dependencies=list(dependencies), responses=ERROR_RESPONSES)
    found = _Finder(catalog)
    # The version routes first: a name may end in '/versions'.
    _add_version_routes(router, found)
    _add_name_routes(router, found)
    return router


def _add_version_routes(router: APIRouter, found: _Finder) -> None:
    @router.get(f"{_BASE}/{{name:path}}/versions/metadata", response_model_exclude_none=True)
    async def list_version_metadata(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str, user_id: str, session_id: str, name: str
    ) -> list[ArtifactVersion]:
        service = await found.service(app_name, user_id, session_id)
        return await service.list_artifact_versions(**_scope(app_name, user_id, session_id, name))

    @router.get(
        f"{_BASE}/{{name:path}}/versions/{{version_id}}/metadata",
        response_model_exclude_none=True,
    )
    async def version_metadata(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str, user_id: str, session_id: str, name: str, version_id: str
    ) -> ArtifactVersion:
        service = await found.service(app_name, user_id, session_id)
        scope = _scope(app_name, user_id, session_id, name)
        info = await service.get_artifact_version(**scope, version=_version(version_id))
        if info is None:
            raise _missing(name, version_id)
        return info

    @router.get(f"{_BASE}/{{name:path}}/versions/{{version_id}}", response_model_exclude_none=True)
    async def load_version(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str, user_id: str, session_id: str, name: str, version_id: str
    ) -> Part:
        service = await found.service(app_name, user_id, session_id)
        return await _load(service, _scope(app_name, user_id, session_id, name), version_id)

    @router.get(f"{_BASE}/{{name:path}}/versions")
    async def list_versions(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str, user_id: str, session_id: str, name: str
    ) -> list[int]:
        service = await found.service(app_name, user_id, session_id)
        return await service.list_versions(**_scope(app_name, user_id, session_id, name))


def _add_name_routes(router: APIRouter, found: _Finder) -> None:
    @router.get(_BASE)
    async def list_names(app_name: str, user_id: str, session_id: str) -> list[str]:  # pyright: ignore[reportUnusedFunction] -- a route
        service = await found.service(app_name, user_id, session_id)
        return await service.list_artifact_keys(
            app_name=app_name, user_id=user_id, session_id=session_id
        )

    @router.post(_BASE, response_model_exclude_none=True)
    async def save(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str, user_id: str, session_id: str, body: SaveArtifactRequest
    ) -> ArtifactVersion:
        service = await found.service(app_name, user_id, session_id)
        scope = _scope(app_name, user_id, session_id, body.filename)
        version = await service.save_artifact(
            **scope, artifact=body.artifact, custom_metadata=body.custom_metadata
        )
        info = await service.get_artifact_version(**scope, version=version)
        if info is None:  # deleted between the save and this read
            raise _missing(body.filename, str(version))
        return info

    @router.get(f"{_BASE}/{{name:path}}", response_model_exclude_none=True)
    async def load(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str,
        user_id: str,
        session_id: str,
        name: str,
        version: int | None = Query(default=None, ge=0),
    ) -> Part:
        service = await found.service(app_name, user_id, session_id)
        scope = _scope(app_name, user_id, session_id, name)
        return await _load(service, scope, "latest" if version is None else str(version))

    @router.delete(f"{_BASE}/{{name:path}}")
    async def delete(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str, user_id: str, session_id: str, name: str
    ) -> None:
        # 200 with a JSON null, as the reference answers: its clients read the body.
        service = await found.service(app_name, user_id, session_id)
        await service.delete_artifact(**_scope(app_name, user_id, session_id, name))

    @router.get(f"{_FILES}/{{name:path}}")
    async def download(  # pyright: ignore[reportUnusedFunction] -- a route
        app_name: str,
        user_id: str,
        session_id: str,
        name: str,
        version: int | None = Query(default=None, ge=0),
    ) -> Response:
        service = await found.service(app_name, user_id, session_id)
        scope = _scope(app_name, user_id, session_id, name)
        part = await _load(service, scope, "latest" if version is None else str(version))
        return _file_response(name, part)


class _Finder:
    """The artifact service of an app, once the session is known to exist."""

    def __init__(self, catalog: AppCatalog) -> None:
        self._catalog = catalog

    async def service(self, app_name: str, user_id: str, session_id: str) -> BaseArtifactService:
        runner = self._catalog.runner(app_name)
        found = await runner.session_service.get_session(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            config=GetSessionConfig(num_recent_events=0),  # only whether it exists
        )
        if found is None:
            raise SessionNotFoundError(
                f"session '{session_id}' of user '{user_id}' does not exist in app "
                f"'{app_name}'; its artifacts cannot be read or saved. List the user's "
                f"sessions with GET /apps/{app_name}/users/{user_id}/sessions."
            )
        if runner.artifact_service is None:
            raise ArtifactNotFoundError(f"app '{app_name}' is served without artifacts.")
        return runner.artifact_service


def _scope(app_name: str, user_id: str, session_id: str, name: str) -> dict[str, str]:
    return {"app_name": app_name, "user_id": user_id, "session_id": session_id, "filename": name}


def _version(version_id: str) -> int | None:
    if version_id == "latest":
        return None
    if not version_id.isdigit():
        raise InvalidArtifactError(
            f"version '{version_id}' is not a version number; give 0, 1, ... or 'latest'."
        )
    return int(version_id)


async def _load(service: BaseArtifactService, scope: dict[str, str], version_id: str) -> Part:
    part = await service.load_artifact(**scope, version=_version(version_id))
    if part is None:
        raise _missing(scope["filename"], version_id)
    return part


def _missing(name: str, version_id: str) -> ArtifactNotFoundError:
    which = "" if version_id == "latest" else f" version {version_id}"
    return ArtifactNotFoundError(
        f"artifact '{name}'{which} does not exist in this session; list the names with GET "
        "the session's /artifacts, and the versions with .../versions."
    )


def _file_response(name: str, part: Part) -> Response:
    filename = name.rsplit("/", 1)[-1]
    headers = {
        "Content-Disposition": f"attachment; filename*=UTF-8''{quote(filename)}",
        # Saved by an agent, so never trusted as a page of this origin: a browser that
        # shows it anyway runs no script of it.
        "Content-Security-Policy": "sandbox",
        "X-Content-Type-Options": "nosniff",
    }
    if part.inline_data is not None:
        media = part.inline_data.mime_type or "application/octet-stream"
        return Response(part.inline_data.data or b"", media_type=media, headers=headers)
    if part.text is not None:
        return Response(part.text, media_type="text/plain; charset=utf-8", headers=headers)
    uri = part.file_data.file_uri if part.file_data else None
    raise InvalidArtifactError(
        f"artifact '{name}' is kept elsewhere ({uri}); fetch it from there (its Part is at "
        "the session's /artifacts route)."
    )
