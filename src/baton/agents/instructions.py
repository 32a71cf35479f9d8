"""Instruction templates: `{key}` is replaced by the session state's value for `key`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from baton.errors import BatonError

__all__ = ["MissingStateKeyError", "fill_instruction"]

_PLACEHOLDER: Final = re.compile(r"\{((?:app:|user:|temp:)?[A-Za-z_][A-Za-z0-9_]*)(\?)?\}")


class MissingStateKeyError(BatonError, KeyError):
    """An instruction names a state key the session state does not have (a KeyError, as
    the reference raises)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""  # not KeyError's quoted repr


def fill_instruction(template: str, state: Mapping[str, Any], *, agent: str) -> str:
    """Replace each `{key}` with `state[key]` (`{key?}`: empty when missing).

    Braces around anything that is not a key name (JSON examples) are left alone.

    Args:
        template: the instruction.
        state: the session state.
        agent: the agent's name, for the error message.

    Returns:
        The instruction with the values filled in as the reference fills them: each
        value's `str()` (`True`, `{'a': 1}`), None as nothing.

    Raises:
        MissingStateKeyError: a `{key}` without `?` is not in the state.
    """

    def value_of(match: re.Match[str]) -> str:
        key, optional = match.group(1), match.group(2)
        if key not in state:
            if optional:
                return ""
            known = ", ".join(sorted(state)) or "none"
            raise MissingStateKeyError(
                f"the instruction of agent '{agent}' uses {{{key}}}, but session state has no "
                f"key '{key}' (keys: {known}). Set it before the agent runs (state_delta, or an "
                f"earlier agent's output_key), or write {{{key}?}} to allow it to be missing."
            )
        value = state[key]
        return "" if value is None else str(value)

    return _PLACEHOLDER.sub(value_of, template)
