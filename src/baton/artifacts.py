"""Artifact services: versioned files kept in the same store as the sessions.

`InMemoryArtifactService()`, `SqliteArtifactService(path)` and
`DatabaseArtifactService(url)` are the reference's artifact service API over a
baton store; `BaseArtifactService(session_service.store)` shares the session
service's store (one pool, and a session's artifacts are deleted with it). Hand
one to `Runner(artifact_service=...)` and nodes, tools and callbacks reach it
through `ctx.save_artifact` / `load_artifact` / `list_artifacts`.

A save made by a node run or a tool call carries a key naming it within that run
(the run, the filename, and how many saves of that name the run made before); when
the run executes again after a crash, its saves land on the versions the first
execution got, so each step's artifacts exist once however often it is executed.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from typing import Any, cast, final

from pydantic import Field, JsonValue, ValidationError

from baton.artifact_references import MAX_REFERENCE_DEPTH, follow_reference, reference_in
from baton.errors import InvalidArtifactError
from baton.events import to_json_value
from baton.sessions.artifacts import (
    USER_PREFIX,
    USER_SCOPE,
    ArtifactKey,
    ArtifactSave,
    StoredArtifact,
)
from baton.sessions.ids import check_depth, check_id
from baton.sessions.memory import MemoryStore
from baton.sessions.opening import sql_store, sqlite_url
from baton.sessions.store import Store
from baton.types import Part, WireModel

__all__ = [
    "ArtifactMethods",
    "ArtifactScope",
    "ArtifactVersion",
    "BaseArtifactService",
    "DatabaseArtifactService",
    "InMemoryArtifactService",
    "SqliteArtifactService",
    "artifact_key",
    "artifact_uri",
    "rewind_tombstone",
]


def rewind_tombstone() -> Part:
    """What a rewind saves as the newest version of an artifact that did not exist at the
    point it rewinds to: the versions saved after that point stay in its history, and
    this one loads as absent. The reference's marker (empty octet-stream bytes), so an
    artifact saved with exactly that content loads as absent too, as it does there."""
    return Part.from_bytes(data=b"", mime_type="application/octet-stream")


MAX_FILENAME_LENGTH = 1024
"""The longest artifact filename, in characters (the stores' column width)."""


class ArtifactVersion(WireModel):
    """What is known of one version of an artifact besides its content."""

    version: int
    canonical_uri: str
    custom_metadata: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    create_time: float = 0.0
    mime_type: str | None = None


def artifact_uri(key: ArtifactKey, version: int) -> str:
    """The reference's `artifact://` URI of a version."""
    scope = f"sessions/{key.session_id}/" if key.session_id else ""
    return (
        f"artifact://apps/{key.app_name}/users/{key.user_id}/{scope}"
        f"artifacts/{key.filename}/versions/{version}"
    )


class BaseArtifactService:
    """The reference's artifact service over a baton `Store`.

    Args:
        store: where versions are kept (a session service's `.store` to share it).
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: Part | dict[str, Any],
        session_id: str | None = None,
        custom_metadata: dict[str, Any] | None = None,
        save_key: str | None = None,
    ) -> int:
        """Save a new version of an artifact and return its number (the first is 0).

        Args:
            app_name: the app.
            user_id: the user.
            filename: the name; one starting with `user:` is the user's, seen from
                every session of theirs.
            artifact: a Part holding bytes (`inline_data`), text or a file URI, or its
                wire form as a dict (camelCase or snake_case keys).
            session_id: the session (needed unless the name starts with `user:`).
            custom_metadata: JSON metadata kept with this version.
            save_key: names this save within a node run or tool call; saving again
                with it replaces that version instead of adding one (baton's contexts
                set it, see the module docstring).

        Raises:
            InvalidArtifactError: the name, the content, the metadata or the scope is
                refused (nothing is saved).
            InvalidIdError: an id is too long or holds control characters.
        """
        key = artifact_key(app_name, user_id, filename, session_id)
        part = _part_of(artifact)
        metadata = _metadata_of(custom_metadata)
        uri = reference_in(part)
        if uri is not None:  # checked now, so what is stored can be followed
            follow_reference(uri, app_name=app_name, user_id=user_id, session_id=session_id or "")
        save = ArtifactSave(
            key=key,
            part=part.to_json().encode(),
            # A reference's type is its target's, known when it is loaded.
            mime_type=None if uri is not None else _mime_type(part),
            custom_metadata=metadata,
            save_key=save_key,
        )
        return await self.store.save_artifact(save)

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> Part | None:
        """That version of the artifact (the latest when `version` is None), or None
        (also for a version a rewind saved to remove it, see `rewind_tombstone`). A
        version holding an `artifact://` reference loads as the version it names
        (see `baton.artifact_references`).

        Raises:
            InvalidArtifactError: the name or scope is refused, `version` is not an int,
                or references lead out of this app, user or session, or on for more
                than `MAX_REFERENCE_DEPTH` hops.
        """
        key = artifact_key(app_name, user_id, filename, session_id)
        wanted = _version_of(version)
        chain: list[str] = []
        while len(chain) <= MAX_REFERENCE_DEPTH:
            stored = await self.store.load_artifact(key, wanted)
            if stored is None or stored.part is None:
                return None
            part = Part.from_wire(stored.part)
            uri = reference_in(part)
            if uri is None:
                return None if part == rewind_tombstone() else part
            chain.append(uri)
            target = follow_reference(
                uri, app_name=app_name, user_id=user_id, session_id=session_id or ""
            )
            key, wanted = target.key, target.version
        raise InvalidArtifactError(
            f"artifact '{filename}' leads through more than {MAX_REFERENCE_DEPTH} artifact:// "
            f"references ({' -> '.join(chain)}); a reference must end at an artifact with "
            "content: save one there."
        )

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str | None = None
    ) -> list[str]:
        """The names saved in the session (when given) and the user's `user:` names, sorted.

        Raises:
            InvalidIdError: an id is too long or holds control characters.
        """
        check_id("app_name", app_name)
        check_id("user_id", user_id)
        if session_id is not None:
            check_id("session_id", session_id)
        return await self.store.list_artifact_names(app_name, user_id, session_id)

    async def delete_artifact(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> None:
        """Delete every version of the artifact (nothing happens when there is none).

        Raises:
            InvalidArtifactError: the name or scope is refused.
        """
        await self.store.delete_artifact(artifact_key(app_name, user_id, filename, session_id))

    async def list_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[int]:
        """The artifact's version numbers, oldest first ([] when there is none)."""
        versions = await self.list_artifact_versions(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
        )
        return [v.version for v in versions]

    async def list_artifact_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[ArtifactVersion]:
        """Every version's metadata, oldest first ([] when there is none)."""
        key = artifact_key(app_name, user_id, filename, session_id)
        return [_version_info(key, s) for s in await self.store.list_artifact_versions(key)]

    async def get_artifact_version(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> ArtifactVersion | None:
        """One version's metadata (the latest when `version` is None), or None."""
        key = artifact_key(app_name, user_id, filename, session_id)
        wanted = _version_of(version)
        versions = await self.store.list_artifact_versions(key)
        if wanted is None:
            return _version_info(key, versions[-1]) if versions else None
        found = [s for s in versions if s.version == wanted]
        return _version_info(key, found[0]) if found else None

    async def close(self) -> None:
        """Release the store's connections."""
        await self.store.close()


@final
class InMemoryArtifactService(BaseArtifactService):
    """Artifacts in this process's memory (gone when it exits)."""

    def __init__(self) -> None:
        super().__init__(MemoryStore())


@final
class SqliteArtifactService(BaseArtifactService):
    """Artifacts in a SQLite file (the same file as `SqliteSessionService`'s is fine).

    Args:
        db_path: a file path (str or Path) or a `sqlite:///path` URL.

    Raises:
        ValueError: `db_path` is empty or another database's URL (use DatabaseArtifactService).
    """

    def __init__(self, db_path: str | os.PathLike[str]) -> None:
        super().__init__(sql_store(sqlite_url("SqliteArtifactService", db_path)))


@final
class DatabaseArtifactService(BaseArtifactService):
    """Artifacts in the database a URL names (PostgreSQL, or SQLite).

    Args:
        db_url: the same kind of URL `DatabaseSessionService` takes.
    """

    def __init__(self, db_url: str) -> None:
        super().__init__(sql_store(db_url))


@final
class ArtifactScope:
    """The artifacts one node run, tool call or callback reaches, and what it saved.

    Args:
        service: the Runner's artifact service (None: the calls say how to set one).
        app_name: the app.
        user_id: the user.
        session_id: the session.
        saver: names the run or call (stable when it executes again), for save keys.
        delta: where saved versions are recorded (an `EventActions.artifact_delta`);
            a fresh dict by default, emptied by `take_delta`.
    """

    def __init__(
        self,
        service: BaseArtifactService | None,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        saver: str,
        delta: dict[str, int] | None = None,
    ) -> None:
        self.service = service
        self.app_name = app_name
        self.user_id = user_id
        self.session_id = session_id
        self.saver = saver
        self.delta: dict[str, int] = {} if delta is None else delta  # filename -> version
        self._saves: Counter[str] = Counter()

    def _require(self) -> BaseArtifactService:
        if self.service is None:
            raise ValueError(
                "no artifact service is set, so artifacts cannot be saved or loaded; "
                "pass one to the Runner, e.g. Runner(..., artifact_service="
                "InMemoryArtifactService())."
            )
        return self.service

    async def save(
        self, filename: str, artifact: Part | dict[str, Any], custom_metadata: dict[str, Any] | None
    ) -> int:
        """Save a version under this run's next save key for `filename`."""
        service = self._require()
        self._saves[filename] += 1
        ident = f"{self.saver}\x00{filename}\x00{self._saves[filename]}"
        version = await service.save_artifact(
            app_name=self.app_name,
            user_id=self.user_id,
            session_id=self.session_id,
            filename=filename,
            artifact=artifact,
            custom_metadata=custom_metadata,
            save_key=hashlib.sha256(ident.encode()).hexdigest(),
        )
        self.delta[filename] = version
        return version

    def take_delta(self) -> dict[str, int]:
        """The versions saved since the last call (they go on the next event)."""
        delta, self.delta = self.delta, {}
        return delta

    async def load(self, filename: str, version: int | None) -> Part | None:
        """`load_artifact` in this session."""
        return await self._require().load_artifact(
            app_name=self.app_name,
            user_id=self.user_id,
            session_id=self.session_id,
            filename=filename,
            version=version,
        )

    async def names(self) -> list[str]:
        """`list_artifact_keys` of this session (with the user's `user:` names)."""
        return await self._require().list_artifact_keys(
            app_name=self.app_name, user_id=self.user_id, session_id=self.session_id
        )

    async def version(self, filename: str, version: int | None) -> ArtifactVersion | None:
        """`get_artifact_version` in this session."""
        return await self._require().get_artifact_version(
            app_name=self.app_name,
            user_id=self.user_id,
            session_id=self.session_id,
            filename=filename,
            version=version,
        )


class ArtifactMethods:
    """The reference's artifact methods of a context, over its `ArtifactScope`."""

    @property
    def artifact_scope(self) -> ArtifactScope:
        """The artifacts this context reaches (each context class says which)."""
        raise NotImplementedError

    async def save_artifact(
        self,
        filename: str,
        artifact: Part | dict[str, Any],
        custom_metadata: dict[str, Any] | None = None,
    ) -> int:
        """Save a new version of an artifact of this session (a `user:` name: of the user).

        Saved once per run: when this run executes again after a crash, the same save
        returns the version the first execution got. The version is recorded in the
        `artifact_delta` of the next event.

        Returns:
            The version number (0 for the first).

        Raises:
            ValueError: the Runner has no artifact service.
            InvalidArtifactError: the name, content or metadata is refused.
        """
        return await self.artifact_scope.save(filename, artifact, custom_metadata)

    async def load_artifact(self, filename: str, version: int | None = None) -> Part | None:
        """An artifact of this session or user (the latest version by default), or None."""
        return await self.artifact_scope.load(filename, version)

    async def list_artifacts(self) -> list[str]:
        """The names of this session's artifacts and the user's `user:` ones, sorted."""
        return await self.artifact_scope.names()

    async def get_artifact_version(
        self, filename: str, version: int | None = None
    ) -> ArtifactVersion | None:
        """One version's metadata (the latest by default), or None."""
        return await self.artifact_scope.version(filename, version)


def artifact_key(app_name: str, user_id: str, filename: str, session_id: str | None) -> ArtifactKey:
    """The key of an artifact, once its names are checked.

    Raises:
        InvalidArtifactError: the filename is refused, or a session-scoped name has
            no session.
        InvalidIdError: an id is too long or holds control characters.
    """
    check_id("app_name", app_name)
    check_id("user_id", user_id)
    _check_filename(filename)
    if filename.startswith(USER_PREFIX):
        return ArtifactKey(app_name, user_id, USER_SCOPE, filename)
    if session_id is None or session_id == "":
        raise InvalidArtifactError(
            f"artifact '{filename}' is kept per session, and no session_id was given; pass "
            f"session_id=, or name it '{USER_PREFIX}{filename}' to keep it for the user."
        )
    check_id("session_id", session_id)
    return ArtifactKey(app_name, user_id, session_id, filename)


def _check_filename(filename: object) -> None:
    if not isinstance(filename, str):
        raise InvalidArtifactError(
            f"an artifact filename is a string, got {type(filename).__name__} {filename!r}."
        )
    if not filename.strip() or filename == USER_PREFIX:
        raise InvalidArtifactError(
            f"artifact filename {filename!r} is empty; name the artifact, e.g. 'report.pdf'."
        )
    if len(filename) > MAX_FILENAME_LENGTH:
        raise InvalidArtifactError(
            f"artifact filename '{filename[:40]}...' is {len(filename)} characters long; "
            f"filenames are at most {MAX_FILENAME_LENGTH} characters."
        )
    bad = next((c for c in filename if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F), None)
    if bad is not None:
        raise InvalidArtifactError(
            f"artifact filename {filename!r} holds the control character U+{ord(bad):04X}; "
            "use printable characters only."
        )


def _part_of(artifact: object) -> Part:
    if isinstance(artifact, dict):
        try:
            artifact = Part.from_wire(artifact)  # pyright: ignore[reportUnknownArgumentType] -- checked by validation
        except ValidationError as error:
            raise InvalidArtifactError(
                f"the artifact is not a Part: {_first_problem(error)}; send "
                "{'inlineData': {'mimeType': ..., 'data': <base64>}} or {'text': ...}."
            ) from error
    if not isinstance(artifact, Part):
        raise InvalidArtifactError(
            f"an artifact is a types.Part (or its wire form as a dict), got "
            f"{type(artifact).__name__}; wrap bytes with types.Part.from_bytes(data=..., "
            "mime_type=...) or text with types.Part.from_text(text=...)."
        )
    if artifact.inline_data is None and artifact.text is None and artifact.file_data is None:
        raise InvalidArtifactError(
            "the artifact holds no content: a Part with inline_data (bytes and a MIME type), "
            "text or file_data is needed (function calls and responses are not artifacts)."
        )
    if artifact.inline_data is not None and artifact.inline_data.data is None:
        raise InvalidArtifactError("the artifact's inline_data has no data; give its bytes.")
    return artifact


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(p) for p in problem["loc"]) or "the value"
    return f"{where}: {problem['msg']}"


def _metadata_of(custom_metadata: object) -> dict[str, JsonValue]:
    if custom_metadata is None:
        return {}
    if not isinstance(custom_metadata, dict):
        raise InvalidArtifactError(
            f"custom_metadata is a dict of JSON values, got {type(custom_metadata).__name__}."
        )
    try:
        converted = to_json_value(cast(object, custom_metadata), what="custom_metadata")
    except TypeError as error:
        raise InvalidArtifactError(str(error)) from error
    check_depth("custom_metadata", converted)
    assert isinstance(converted, dict)  # a dict converts to a dict
    return converted


def _mime_type(part: Part) -> str | None:
    if part.inline_data is not None:
        return part.inline_data.mime_type
    if part.text is not None:
        return "text/plain"
    return part.file_data.mime_type if part.file_data is not None else None


def _version_of(version: object) -> int | None:
    if version is None:
        return None
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidArtifactError(
            f"an artifact version is an int (0 for the first) or None for the latest, "
            f"got {version!r}."
        )
    return version


def _version_info(key: ArtifactKey, stored: StoredArtifact) -> ArtifactVersion:
    return ArtifactVersion(
        version=stored.version,
        canonical_uri=artifact_uri(key, stored.version),
        custom_metadata=dict(stored.custom_metadata),
        create_time=stored.create_time,
        mime_type=stored.mime_type,
    )
