"""load_artifacts: the reference's tool that tells the model which artifacts the session
has and, when the model calls it with some of their names, puts their contents in the
next model request (not in the session)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable

from baton.models.llm import LlmRequest
from baton.tools.next_request import LoadIntoNextRequestTool
from baton.tools.tool_context import ToolContext
from baton.types import Blob, Content, Part

__all__ = [
    "LoadArtifactsTool",
    "ProcessArtifactCallback",
    "as_safe_part_for_llm",
    "blob_as_text",
    "load_artifacts_tool",
]

ProcessArtifactCallback = Callable[[Part, str], Part | None | Awaitable[Part | None]]
"""(artifact, name) -> the part the model is sent instead (None: leave it out)."""

_USER_PREFIX = "user:"
_INLINE_PREFIXES = ("image/", "audio/", "video/")
_NOT_INLINE = frozenset({"image/svg", "image/svg+xml", "image/xml"})
_TEXT_TYPES = frozenset(
    {"application/csv", "application/json", "application/xml", "application/svg+xml"} | _NOT_INLINE
)
_TEXT_SUFFIXES = (".csv", ".txt", ".json", ".xml")
_STATUS = (
    "The contents of these artifacts come with your next request only; call load_artifacts "
    "again to see them later."
)


class LoadArtifactsTool(LoadIntoNextRequestTool):
    """Lists the session's artifacts (and the user's `user:` ones) in the instruction,
    and sends the model those it asks for with the request after its call.

    Args:
        process_artifact: turns an artifact into what the model is sent (sync or async;
            None leaves it out). By default `as_safe_part_for_llm`.
        enable_spreadsheet_parsing: the reference's spreadsheet-to-markdown option, which
            baton does not have; True is refused.

    Raises:
        ValueError: `enable_spreadsheet_parsing=True`.
    """

    def __init__(
        self,
        *,
        process_artifact: ProcessArtifactCallback | None = None,
        enable_spreadsheet_parsing: bool = False,
    ) -> None:
        if enable_spreadsheet_parsing:
            raise ValueError(
                "LoadArtifactsTool(enable_spreadsheet_parsing=True) is not supported by "
                "baton; pass process_artifact= a function that turns a spreadsheet Part "
                "into a text Part."
            )
        super().__init__(
            name="load_artifacts",
            names_key="artifact_names",
            status=_STATUS,
            description=(
                "Puts the artifacts you name into your next request (files kept with this "
                "conversation, such as a user's uploads). Call it when you need what one holds."
            ),
        )
        self.process_artifact = process_artifact

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        """Name the artifacts in the instruction; after the model's call, add the contents
        of those it asked for that exist (an unknown name is left out)."""
        available = await tool_context.list_artifacts()
        if not available:
            return
        llm_request.append_instructions([_instruction(available)])
        for name in list(self.requested(llm_request)):
            content = await self._loaded(tool_context, name, set(available))
            llm_request.contents.extend([content] if content else [])

    async def _loaded(
        self, tool_context: ToolContext, requested: str, available: set[str]
    ) -> Content | None:
        """The user turn showing one artifact the model asked for (None: not there)."""
        name = _listed_name(requested, available)
        artifact = None if name is None else await tool_context.load_artifact(name)
        if artifact is None or name is None:
            return None
        if self.process_artifact is None:
            part: Part | None = as_safe_part_for_llm(artifact, requested)
        else:
            made = self.process_artifact(artifact, name)
            part = await made if inspect.isawaitable(made) else made
        if part is None:
            return None
        return Content(role="user", parts=[Part(text=f"Contents of artifact {requested}:"), part])


def _instruction(names: list[str]) -> str:
    return (
        f"Artifacts you can read: {json.dumps(names)}\nBefore answering anything about one "
        "of them, call `load_artifacts` with its name, every time: an artifact read earlier "
        "may have changed since."
    )


def _listed_name(requested: str, available: set[str]) -> str | None:
    """The listed name the model meant (it may add or drop the `user:` prefix); None for
    a name that was not listed, which is never loaded."""
    if requested in available:
        return requested
    other = (
        requested.removeprefix(_USER_PREFIX)
        if requested.startswith(_USER_PREFIX)
        else _USER_PREFIX + requested
    )
    return other if other in available else None


def as_safe_part_for_llm(artifact: Part, artifact_name: str) -> Part:
    """An artifact as a model can take it: images, audio, video and PDFs as they are, text
    (by MIME type or file name) as text, anything else as a line describing it.

    Args:
        artifact: the artifact's part.
        artifact_name: its name, as the model asked for it.

    Returns:
        The part to send.
    """
    blob = artifact.inline_data
    if blob is None:
        return artifact
    mime = (blob.mime_type or "").split(";", 1)[0].strip().lower()
    if mime not in _NOT_INLINE and (mime.startswith(_INLINE_PREFIXES) or mime == "application/pdf"):
        return artifact
    return Part(text=blob_as_text(blob, artifact_name))


def blob_as_text(blob: Blob, name: str) -> str:
    """An artifact's bytes as a model reads them in text: decoded when they are text (by
    MIME type or file name), else a line describing them.

    Args:
        blob: the artifact's bytes and MIME type.
        name: the artifact's name.

    Returns:
        The text.
    """
    mime = (blob.mime_type or "").split(";", 1)[0].strip().lower() or "application/octet-stream"
    if blob.data is None:
        return f"[{name}: {mime}, no data]"
    if mime.startswith("text/") or mime in _TEXT_TYPES or name.lower().endswith(_TEXT_SUFFIXES):
        return blob.data.decode("utf-8", errors="replace")
    return f"[{name}: {mime}, {len(blob.data) / 1024:.1f} KB of binary data, not shown]"


load_artifacts_tool = LoadArtifactsTool()
"""The tool (`baton.tools.load_artifacts`)."""
