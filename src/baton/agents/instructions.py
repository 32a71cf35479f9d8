"""Instructions: `{key}` templates filled from the session state, and the static
instruction (`LlmAgent.static_instruction`, sent as it is, the templated one then going
in the conversation)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from baton.errors import BatonError
from baton.types import Content, Part

__all__ = [
    "MissingArtifactError",
    "MissingStateKeyError",
    "StaticInstruction",
    "artifact_placeholders",
    "as_instruction_turn",
    "fill_instruction",
    "static_paragraphs",
    "with_turn_before_users",
]

# A run of opening braces, anything but braces, a run of closing ones, not right after `$`,
# `\\` or another brace; what is inside, stripped, names an artifact or a state key. This is
# the reference's grammar: `{ key }` and `{{key}}` are filled as `{key}` is.
_BRACED: Final = re.compile(r"(?<![$\\{])\{+(?P<inside>[^{}]*)\}+")
_STATE_PREFIXES: Final = ("app", "user", "temp")


@dataclass(frozen=True)
class _Placeholder:
    """What one braced name asks for: an artifact's text or a state value."""

    name: str
    is_artifact: bool
    is_optional: bool


def _placeholder(inside: str) -> _Placeholder | None:
    """The placeholder `{inside}` is, or None for braces around something else (a JSON
    example, `{a.b}`, `{x:key}`), which stay as they are."""
    name = inside.strip()
    is_optional = name.endswith("?")
    name = name.removesuffix("?")
    if name.startswith("artifact."):
        return _Placeholder(name.removeprefix("artifact."), True, is_optional)
    return _Placeholder(name, False, is_optional) if _is_state_name(name) else None


def _is_state_name(name: str) -> bool:
    """An identifier, or `app:`, `user:` or `temp:` before one."""
    prefix, colon, key = name.rpartition(":")
    if not colon:
        return key.isidentifier()
    return prefix in _STATE_PREFIXES and key.isidentifier()


class MissingStateKeyError(BatonError, KeyError):
    """An instruction names a state key the session state does not have (a KeyError, as
    the reference raises)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""  # not KeyError's quoted repr


class MissingArtifactError(BatonError, KeyError):
    """An instruction names an artifact (`{artifact.name}`) the session does not have (a
    KeyError, as the reference raises)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""  # not KeyError's quoted repr


def artifact_placeholders(template: str) -> set[str]:
    """The names of the artifacts `template` names (`{artifact.name}`, `{artifact.name?}`)."""
    found = (_placeholder(m["inside"]) for m in _BRACED.finditer(template))
    return {p.name for p in found if p is not None and p.is_artifact}


def fill_instruction(
    template: str,
    state: Mapping[str, Any],
    *,
    agent: str,
    artifacts: Mapping[str, str | None] | None = None,
) -> str:
    """Replace each `{key}` with `state[key]` (`{key?}`: empty when missing), and each
    `{artifact.name}` with the artifact's text (`{artifact.name?}`: empty when missing).

    The placeholders are the reference's: inside braces (one or more on each side, not
    after `$`, `\\` or a brace), spaces around it allowed, an identifier, `app:`, `user:`
    or `temp:` before one, or `artifact.` before a name; anything else in braces (JSON
    examples, `{a.b}`) is left alone. One pass: a value's own braces are not filled in
    turn.

    Args:
        template: the instruction.
        state: the session state.
        agent: the agent's name, for the error message.
        artifacts: the text of each artifact the template names (see
            `artifact_placeholders`), None for one the session does not have.

    Returns:
        The instruction with the values filled in as the reference fills them: each
        value's `str()` (`True`, `{'a': 1}`), None as nothing.

    Raises:
        MissingStateKeyError: a `{key}` without `?` is not in the state.
        MissingArtifactError: an `{artifact.name}` without `?` is not in the session.
    """

    def value_of(match: re.Match[str]) -> str:
        found = _placeholder(match["inside"])
        if found is None:
            return match[0]
        name = found.name
        if found.is_artifact:
            text = (artifacts or {}).get(name)
            if text is None and not found.is_optional:
                raise MissingArtifactError(
                    f"Artifact '{name}' not found in agent '{agent}'. Save it before the agent "
                    f"runs (save_artifact), or write {{artifact.{name}?}} to allow it to be "
                    "missing."
                )
            return text or ""
        key = name
        if key not in state:
            if found.is_optional:
                return ""
            known = ", ".join(sorted(state)) or "none"
            raise MissingStateKeyError(
                f"the instruction of agent '{agent}' uses {{{key}}}, but session state has no "
                f"key '{key}' (keys: {known}). Set it before the agent runs (state_delta, or an "
                f"earlier agent's output_key), or write {{{key}?}} to allow it to be missing."
            )
        value = state[key]
        return "" if value is None else str(value)

    return _BRACED.sub(value_of, template) if "{" in template else template


StaticInstruction = str | Content | Part | list[str | Part]
"""An `LlmAgent.static_instruction`: text, or the reference's content shapes holding text."""

INSTRUCTION_BEGIN: Final = "<<<BEGIN_SYSTEM_INSTRUCTION>>>"
INSTRUCTION_END: Final = "<<<END_SYSTEM_INSTRUCTION>>>"
_ELIDED: Final = "<<<ELIDED_MARKER>>>"
_PREAMBLE: Final = (
    f"The text between {INSTRUCTION_BEGIN} and {INSTRUCTION_END} below is your own system "
    "instruction for this turn and carries the current session state. It is addressed to "
    "you. Nothing between those two markers was said by the user, so do not answer it or "
    "continue it as though it were their turn. Anything the user actually said appears "
    "outside the markers, and a real user turn may follow immediately after the end marker."
)


def static_paragraphs(static: StaticInstruction | None, *, agent: str) -> list[str]:
    """The paragraphs of a static instruction, as they are (nothing is filled in).

    Raises:
        ValueError: a part holds something other than text (an image, a file, a call):
            a chat-completions system message is text.
    """
    if static is None:
        return []
    if isinstance(static, str):
        return [static] if static else []
    items = static.parts or [] if isinstance(static, Content) else static
    items = [items] if isinstance(items, Part) else items
    paragraphs: list[str] = []
    for item in items:
        if isinstance(item, str):
            paragraphs.append(item)
        elif item.text is not None and not _has_payload(item):
            paragraphs.append(item.text)
        else:
            raise ValueError(
                f"LlmAgent '{agent}' has a static_instruction part that is not text "
                f"({_kind(item)}); baton sends the system instruction as text. Put the "
                "media in the conversation (a user message or an artifact) instead."
            )
    return [p for p in paragraphs if p]


def _has_payload(part: Part) -> bool:
    return any(
        x is not None
        for x in (part.inline_data, part.file_data, part.function_call, part.function_response)
    )


def _kind(part: Part) -> str:
    if part.inline_data is not None:
        return f"inline_data {part.inline_data.mime_type}"
    if part.file_data is not None:
        return f"file_data {part.file_data.file_uri}"
    return "a function call or response" if _has_payload(part) else "an empty part"


def as_instruction_turn(instruction: str) -> Content:
    """The agent's `instruction` as a user turn (when it has a static one, as the reference
    places it), between markers that say it is the system's, not the user's; markers in
    the text are replaced so filled-in state cannot end the block early."""
    fenced = instruction.replace(INSTRUCTION_BEGIN, _ELIDED).replace(INSTRUCTION_END, _ELIDED)
    text = f"{_PREAMBLE}\n{INSTRUCTION_BEGIN}\n{fenced}\n{INSTRUCTION_END}"
    return Content(role="user", parts=[Part(text=text)])


def with_turn_before_users(contents: list[Content], turn: Content) -> list[Content]:
    """`turn` put before the latest run of the user's messages (after a call's results,
    when the model continues a turn of calls), where the reference puts a transient turn."""
    at = len(contents)
    for i in range(len(contents) - 1, -1, -1):
        content = contents[i]
        if content.role != "user" or content.function_responses:
            break
        at = i
    return [*contents[:at], turn, *contents[at:]]
