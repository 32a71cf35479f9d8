"""Artifact records: what a store keeps of each saved version of a named file.

An artifact is a file (a `Part`: bytes with a MIME type, text, or a file URI) saved
under a name in a session, or under a `user:` name for all of a user's sessions.
Every save of a name adds a version, numbered from 0. The stores keep versions in
the same database as the sessions (`Store.save_artifact` and its siblings); the
service users call is `baton.artifacts`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Final

from pydantic import JsonValue

__all__ = ["USER_PREFIX", "USER_SCOPE", "ArtifactKey", "ArtifactSave", "StoredArtifact"]

USER_PREFIX: Final = "user:"
"""Filenames starting with it belong to the user, visible from every session of theirs."""

USER_SCOPE: Final = ""
"""The `session_id` a user-scoped artifact is kept under."""


@dataclass(frozen=True)
class ArtifactKey:
    """Which artifact: its owner's app and user, its session ('' for a `user:` name), its name."""

    app_name: str
    user_id: str
    session_id: str
    filename: str

    @property
    def digest(self) -> str:
        """A fixed-length key for indexes (the four names can exceed an index's width)."""
        joined = "\x00".join((self.app_name, self.user_id, self.session_id, self.filename))
        return hashlib.sha256(joined.encode()).hexdigest()

    def __str__(self) -> str:
        scope = self.session_id or "user scope"
        return f"'{self.filename}' of {self.app_name}/{self.user_id} ({scope})"


@dataclass(frozen=True)
class ArtifactSave:
    """One save: the part's wire JSON and its metadata.

    `save_key` names the save within a node run or tool call (a digest): when that
    run executes again after a crash and saves again with the same key, the store
    keeps the version the first save got (with the new content) instead of adding one,
    so a step's artifacts land once however often the step is executed.
    """

    key: ArtifactKey
    part: bytes
    mime_type: str | None
    custom_metadata: dict[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    save_key: str | None = None


@dataclass(frozen=True)
class StoredArtifact:
    """One stored version; `part` (wire JSON) is None when only metadata was read."""

    version: int
    mime_type: str | None
    custom_metadata: dict[str, JsonValue]
    create_time: float
    part: bytes | None = None
