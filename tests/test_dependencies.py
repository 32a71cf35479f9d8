"""The runtime dependencies pyproject.toml declares admit only versions baton works with."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

_PYPROJECT = Path(__file__).parent.parent / "pyproject.toml"


def _floor(name: str) -> Version:
    """The lowest version of `name` that pyproject.toml's dependencies admit."""
    dependencies: list[str] = tomllib.loads(_PYPROJECT.read_text())["project"]["dependencies"]
    for line in dependencies:
        requirement = Requirement(line)
        if requirement.name == name:
            floors = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
            return max(floors)
    raise AssertionError(f"{name} is not a dependency")


def test_pydantic_is_required_at_a_version_with_the_field_options_baton_uses() -> None:
    """`Field(exclude_if=...)` (baton.events: an event's empty confirmation map stays off
    the wire) came in pydantic 2.12; 2.11 takes it for an unknown extra, warns on import
    and serializes `"requestedToolConfirmations": {}` on every event. The reference asks
    for 2.12 too."""
    assert _floor("pydantic") >= Version("2.12")
