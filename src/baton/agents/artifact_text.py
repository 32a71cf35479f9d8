"""Artifacts as the text an instruction's `{artifact.name}` placeholders are filled with,
as google-adk 2.13.0 renders them: a text part's text, text-like bytes decoded, and
other bytes described by a line naming the artifact, its type and its size."""

from __future__ import annotations

from collections.abc import Iterable

from baton.artifacts import BaseArtifactService
from baton.tools.load_artifacts_tool import blob_as_text
from baton.types import Part

__all__ = ["artifact_texts"]


async def artifact_texts(
    service: BaseArtifactService | None,
    names: Iterable[str],
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    agent: str,
) -> dict[str, str | None]:
    """The text of each named artifact of the session (a `user:` name: of the user), None
    for one it does not have.

    Raises:
        ValueError: the Runner has no artifact service.
    """
    wanted = sorted(names)
    if service is None:
        raise ValueError(
            f"the instruction of agent '{agent}' names artifacts ({', '.join(wanted)}), but "
            "the Runner has no artifact_service; pass Runner(artifact_service=...)."
        )
    texts: dict[str, str | None] = {}
    for name in wanted:
        part = await service.load_artifact(
            app_name=app_name, user_id=user_id, session_id=session_id, filename=name
        )
        texts[name] = None if part is None else _as_text(part, name)
    return texts


def _as_text(part: Part, name: str) -> str:
    blob = part.inline_data
    if blob is None:
        if part.text is not None:
            return part.text
        uri = part.file_data.file_uri if part.file_data else None
        return f"[Artifact: {name}, file: {uri}.]"
    return blob_as_text(blob, name)
