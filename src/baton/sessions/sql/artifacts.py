"""Artifact versions in SQL: one function per store call, each run in one transaction.

A save numbers its version `max + 1` inside its transaction; two saves of one name
racing in two processes both try the same number, the unique key refuses the second,
and `SqlStore` runs that transaction again (it then sees the first one's row).
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue
from sqlalchemy import and_, delete, func, select, update
from sqlalchemy.engine import Connection, Row

from baton.sessions.artifacts import USER_SCOPE, ArtifactKey, ArtifactSave, StoredArtifact
from baton.sessions.sql.schema import artifacts
from baton.sessions.store import SessionKey

__all__ = [
    "delete_artifact",
    "delete_session_artifacts",
    "list_artifact_names",
    "list_artifact_versions",
    "load_artifact",
    "save_artifact",
]

_METADATA = (
    artifacts.c.version,
    artifacts.c.mime_type,
    artifacts.c.custom_metadata,
    artifacts.c.created_at,
)


def save_artifact(connection: Connection, save: ArtifactSave, now: float) -> int:
    """Add the version (or refill the one saved before under `save.save_key`)."""
    digest = save.key.digest
    content = {
        "part": save.part.decode(),
        "mime_type": save.mime_type,
        "custom_metadata": save.custom_metadata or None,
        "created_at": now,
    }
    if save.save_key is not None:
        earlier = connection.scalar(
            select(artifacts.c.version).where(
                artifacts.c.artifact_key == digest, artifacts.c.save_key == save.save_key
            )
        )
        if earlier is not None:
            connection.execute(
                update(artifacts)
                .where(artifacts.c.artifact_key == digest, artifacts.c.version == earlier)
                .values(content)
            )
            return int(earlier)
    latest = connection.scalar(
        select(func.max(artifacts.c.version)).where(artifacts.c.artifact_key == digest)
    )
    version = 0 if latest is None else int(latest) + 1
    key = save.key
    connection.execute(
        artifacts.insert().values(
            artifact_key=digest,
            app_name=key.app_name,
            user_id=key.user_id,
            session_id=key.session_id,
            filename=key.filename,
            version=version,
            save_key=save.save_key,
            **content,
        )
    )
    return version


def load_artifact(
    connection: Connection, key: ArtifactKey, version: int | None
) -> StoredArtifact | None:
    """That version with its content (the latest when `version` is None), or None."""
    query = select(*_METADATA, artifacts.c.part).where(artifacts.c.artifact_key == key.digest)
    if version is None:
        query = query.order_by(artifacts.c.version.desc()).limit(1)
    else:
        query = query.where(artifacts.c.version == version)
    row = connection.execute(query).first()
    if row is None:
        return None
    stored = _stored(row)
    return StoredArtifact(
        stored.version,
        stored.mime_type,
        stored.custom_metadata,
        stored.create_time,
        str(row.part).encode(),
    )


def list_artifact_versions(connection: Connection, key: ArtifactKey) -> list[StoredArtifact]:
    """Every version's metadata, oldest first."""
    rows = connection.execute(
        select(*_METADATA)
        .where(artifacts.c.artifact_key == key.digest)
        .order_by(artifacts.c.version)
    )
    return [_stored(row) for row in rows]


def list_artifact_names(
    connection: Connection, app_name: str, user_id: str, session_id: str | None
) -> list[str]:
    """Names in the session (when given) and the user's `user:` names, sorted."""
    scopes = [USER_SCOPE] if session_id is None else [USER_SCOPE, session_id]
    rows = connection.scalars(
        select(artifacts.c.filename)
        .where(
            artifacts.c.app_name == app_name,
            artifacts.c.user_id == user_id,
            artifacts.c.session_id.in_(scopes),
        )
        .distinct()
    )
    return sorted(rows)


def delete_artifact(connection: Connection, key: ArtifactKey) -> int:
    """Delete every version of the name; how many there were."""
    result = connection.execute(delete(artifacts).where(artifacts.c.artifact_key == key.digest))
    return result.rowcount


def delete_session_artifacts(connection: Connection, key: SessionKey) -> None:
    """Delete a session's own artifacts (with the session, in its transaction)."""
    connection.execute(
        delete(artifacts).where(
            and_(
                artifacts.c.app_name == key.app_name,
                artifacts.c.user_id == key.user_id,
                artifacts.c.session_id == key.session_id,
            )
        )
    )


def _stored(row: Row[Any, *tuple[Any, ...]]) -> StoredArtifact:
    metadata: dict[str, JsonValue] = row.custom_metadata or {}
    return StoredArtifact(
        version=int(row.version),
        mime_type=row.mime_type,
        custom_metadata=metadata,
        create_time=float(row.created_at),
    )
