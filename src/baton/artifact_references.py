"""`artifact://` references: an artifact version whose Part is a file URI naming another
artifact version loads as that version, as in the reference's artifact services.

The URI is the reference's (`artifact_uri` makes one):
`artifact://apps/<app>/users/<user>[/sessions/<session>]/artifacts/<filename>/versions/<n>`.
A reference may name only an artifact of the same app and user, and a session's
artifact only from that session; a save breaking that (or with a URI that is not an
artifact URI) is refused and nothing is saved. Loading follows at most
`MAX_REFERENCE_DEPTH` references, so a reference to itself or a cycle is refused with
its chain instead of looping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from baton.errors import InvalidArtifactError
from baton.sessions.artifacts import USER_PREFIX, USER_SCOPE, ArtifactKey
from baton.types import Part

__all__ = ["MAX_REFERENCE_DEPTH", "ArtifactReference", "follow_reference", "reference_in"]

MAX_REFERENCE_DEPTH: Final = 5
"""How many `artifact://` references one load follows at most (the reference's limit)."""

_SCHEME = "artifact://"
_URI = re.compile(
    r"artifact://apps/(?P<app>.+?)/users/(?P<user>.+?)(?:/sessions/(?P<session>.+?))?"
    r"/artifacts/(?P<filename>.+)/versions/(?P<version>\d+)"
)


@dataclass(frozen=True)
class ArtifactReference:
    """The artifact version a reference names."""

    key: ArtifactKey
    version: int


def reference_in(part: Part) -> str | None:
    """The `artifact://` URI a Part holds as its file URI, or None (not a reference)."""
    data = part.file_data
    uri = data.file_uri if data is not None else None
    return uri if uri is not None and uri.startswith(_SCHEME) else None


def follow_reference(
    uri: str, *, app_name: str, user_id: str, session_id: str
) -> ArtifactReference:
    """The version `uri` names, seen from an artifact of that app, user and session
    (`session_id` '' for a user's artifact).

    Raises:
        InvalidArtifactError: `uri` is not an artifact URI, or names an artifact of
            another app, user or session.
    """
    found = _URI.fullmatch(uri)
    if found is None:
        raise InvalidArtifactError(
            f"{uri!r} is not an artifact URI; a reference reads "
            "'artifact://apps/<app>/users/<user>/sessions/<session>/artifacts/<filename>/"
            "versions/<n>' (without 'sessions/<session>/' for a user's artifact)."
        )
    app, user, session = found["app"], found["user"], found["session"] or USER_SCOPE
    if (app, user) != (app_name, user_id):
        raise InvalidArtifactError(
            f"the reference {uri!r} names an artifact of app '{app}', user '{user}'; an "
            f"artifact of app '{app_name}', user '{user_id}' may reference only their own."
        )
    if session != USER_SCOPE and session != session_id:
        raise InvalidArtifactError(
            f"the reference {uri!r} names an artifact of session '{session}'; one of "
            f"{_where(session_id)} may reference only its own session's artifacts and the "
            f"user's ('{USER_PREFIX}' names)."
        )
    filename = found["filename"]
    if (session == USER_SCOPE) != filename.startswith(USER_PREFIX):
        raise InvalidArtifactError(
            f"the reference {uri!r} names '{filename}' "
            f"{'without' if session == USER_SCOPE else 'with'} a session; a user's artifact "
            f"('{USER_PREFIX}' name) has no 'sessions/<session>/' part, a session's has one."
        )
    return ArtifactReference(ArtifactKey(app, user, session, filename), int(found["version"]))


def _where(session_id: str) -> str:
    return f"session '{session_id}'" if session_id else "the user's scope"
