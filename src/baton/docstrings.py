"""Reading a function's docstring: its description and a description per parameter.

Google style ("Args:" with indented "name (type): text" entries) and numpy style
("Parameters" underlined with dashes, "name : type" then indented text).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["Docstring", "parse_docstring"]

_GOOGLE_PARAMS = {"args", "arguments", "parameters", "params", "keyword args", "kwargs"}
_GOOGLE_SECTION = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_GOOGLE_ENTRY = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_NUMPY_ENTRY = re.compile(r"^(\*{0,2}\w+)\s*(:.*)?$")


@dataclass(frozen=True)
class Docstring:
    """What a docstring says: the description, and each parameter's description."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict[str, str])


def parse_docstring(doc: str | None) -> Docstring:
    """Split a docstring into its description and its parameter descriptions.

    Args:
        doc: the raw docstring (None for none).

    Returns:
        The description (the text before the first section) and the parameters.
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    sections = _sections(lines)
    description = "\n".join(sections.pop("", [])).strip()
    for name, body in sections.items():
        if name in _GOOGLE_PARAMS:
            return Docstring(description, _entries(body, _GOOGLE_ENTRY, inline=True))
        if name.endswith("-numpy") and name.removesuffix("-numpy") in _GOOGLE_PARAMS:
            return Docstring(description, _entries(body, _NUMPY_ENTRY, inline=False))
    return Docstring(description)


def _sections(lines: list[str]) -> dict[str, list[str]]:
    """Lines by section name ("" before the first section; numpy names get "-numpy")."""
    sections: dict[str, list[str]] = {"": []}
    current = ""
    index = 0
    while index < len(lines):
        line = lines[index]
        following = lines[index + 1] if index + 1 < len(lines) else ""
        google = _GOOGLE_SECTION.match(line)
        if line.strip() and _NUMPY_UNDERLINE.match(following):
            current = line.strip().lower() + "-numpy"
            index += 1
        elif google and not line.startswith(" "):
            current = google.group(1).strip().lower()
        else:
            sections.setdefault(current, []).append(line)
        sections.setdefault(current, [])
        index += 1
    return sections


def _entries(body: list[str], entry: re.Pattern[str], *, inline: bool) -> dict[str, str]:
    """Parameter descriptions: an entry line starts at the section's least indentation."""
    indents = [len(line) - len(line.lstrip()) for line in body if line.strip()]
    base = min(indents, default=0)
    params: dict[str, list[str]] = {}
    name: str | None = None
    for line in body:
        match = entry.match(line[base:]) if line.strip() and not line[base].isspace() else None
        if match:
            name = str(match.group(1)).lstrip("*")
            params[name] = [match.group(3)] if inline else []
        elif name is not None and line.strip():
            params[name].append(line.strip())
    return {key: " ".join(part for part in text if part).strip() for key, text in params.items()}
