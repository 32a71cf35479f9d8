"""Artifact versions in process memory, for the memory store.

Each name keeps its versions in a list (version n at index n), with the save key
each was saved under, so a repeated save of a re-executed step finds its version.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import final

from baton.sessions.artifacts import USER_SCOPE, ArtifactKey, ArtifactSave, StoredArtifact
from baton.sessions.store import Clock, SessionKey

__all__ = ["MemoryArtifacts"]


@dataclass(frozen=True)
class _Version:
    stored: StoredArtifact
    save_key: str | None


@final
class MemoryArtifacts:
    """The memory store's artifacts: every method is atomic (it never awaits)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._versions: dict[ArtifactKey, list[_Version]] = {}

    def save(self, save: ArtifactSave) -> int:
        """Add a version (or, for a save key already used, replace that version's content)."""
        versions = self._versions.setdefault(save.key, [])
        stored = StoredArtifact(
            version=len(versions),
            mime_type=save.mime_type,
            custom_metadata=dict(save.custom_metadata),
            create_time=self._clock(),
            part=save.part,
        )
        if save.save_key is not None:
            for index, earlier in enumerate(versions):
                if earlier.save_key == save.save_key:
                    versions[index] = _Version(replace(stored, version=index), save.save_key)
                    return index
        versions.append(_Version(stored, save.save_key))
        return stored.version

    def load(self, key: ArtifactKey, version: int | None) -> StoredArtifact | None:
        """A version with its content (the latest when `version` is None), or None."""
        versions = self._versions.get(key, [])
        if version is None:
            return versions[-1].stored if versions else None
        return versions[version].stored if 0 <= version < len(versions) else None

    def versions(self, key: ArtifactKey) -> list[StoredArtifact]:
        """Every version's metadata, oldest first."""
        return [replace(v.stored, part=None) for v in self._versions.get(key, [])]

    def names(self, app_name: str, user_id: str, session_id: str | None) -> list[str]:
        """Names in the session (when given) and the user's `user:` names, sorted."""
        scopes = {USER_SCOPE} if session_id is None else {USER_SCOPE, session_id}
        return sorted(
            key.filename
            for key, versions in self._versions.items()
            if versions
            and key.app_name == app_name
            and key.user_id == user_id
            and key.session_id in scopes
        )

    def delete(self, key: ArtifactKey) -> int:
        """Drop every version of the name; how many there were."""
        return len(self._versions.pop(key, []))

    def drop_session(self, session: SessionKey) -> None:
        """Forget the session-scoped artifacts of a deleted session."""
        doomed = [
            key
            for key in self._versions
            if (key.app_name, key.user_id, key.session_id)
            == (session.app_name, session.user_id, session.session_id)
        ]
        for key in doomed:
            del self._versions[key]
