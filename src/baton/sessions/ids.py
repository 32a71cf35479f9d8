"""What an id, a text or a JSON value may hold, checked before any store sees it.

Every backend stores ids in columns of at most `MAX_ID_LENGTH` characters,
PostgreSQL cannot store a NUL character in text at all, and JSON nested deeper
than the stores' readers parse would be written but never read back. Checking here, the same
way for every backend, turns what would be a database error (or, on SQLite, an id
PostgreSQL would later refuse) into a refusal that names the field and the rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

from baton.errors import InvalidIdError, InvalidMessageError
from baton.events import Event
from baton.sessions.store import SessionKey

__all__ = [
    "MAX_ID_LENGTH",
    "MAX_JSON_DEPTH",
    "check_depth",
    "check_event",
    "check_id",
    "check_key",
    "check_stored_id",
    "check_stored_key",
    "check_text",
    "is_padded",
]

MAX_ID_LENGTH: Final = 255
"""The longest app name, user id, session id, invocation id or interrupt id, in characters."""

MAX_JSON_DEPTH: Final = 100
"""How deep a JSON value (a state delta, an answer) may nest arrays and objects.

Well inside the depth the stores' JSON readers parse (about 200), since what is
stored wraps a value in a few more levels (an event, its content, a checkpoint).
"""

# C0 controls (NUL, tab, newline, ...), DEL and C1 controls.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def check_id(field: str, value: str) -> None:
    """Refuse an id that is too long, holds a control character or starts or ends with a
    space.

    Raises:
        InvalidIdError: naming `field`, the rule broken and where.
    """
    check_stored_id(field, value)
    # MySQL before 8.0.17 compares text ignoring trailing spaces ("s1 " finds "s1") and
    # the reference strips ids on some backends: a padded id would name a different
    # session depending on where it is stored.
    if value != value.strip(" "):
        raise InvalidIdError(
            f"{field} {_shown(value)} starts or ends with a space; ids may not, since not "
            f"every database tells 's1 ' from 's1'. Remove the spaces from {field}."
        )


def check_stored_id(field: str, value: str) -> None:
    """Refuse an id that is too long or holds a control character: the rules ids stored
    by any baton obey (an older one stored ids starting or ending with a space).

    Raises:
        InvalidIdError: naming `field`, the rule broken and where.
    """
    if len(value) > MAX_ID_LENGTH:
        raise InvalidIdError(
            f"{field} {_shown(value)} is {len(value)} characters long; ids are at most "
            f"{MAX_ID_LENGTH} characters. Use a shorter {field}."
        )
    found = _CONTROL.search(value)
    if found is not None:
        raise InvalidIdError(
            f"{field} {_shown(value)} holds the control character U+{ord(found.group()):04X} "
            f"at position {found.start()}; ids may not hold control characters (NUL, tab, "
            f"newline, ...). Use printable characters only in {field}."
        )


def check_key(key: SessionKey) -> None:
    """`check_id` on the three names of a session.

    Raises:
        InvalidIdError: one of them breaks a rule.
    """
    check_id("app_name", key.app_name)
    check_id("user_id", key.user_id)
    check_id("session_id", key.session_id)


def is_padded(key: SessionKey) -> bool:
    """Whether one of the session's names starts or ends with a space: refused for new
    sessions (see `check_id`), but an older baton (before 69baf3c) stored such names."""
    return any(name != name.strip(" ") for name in (key.app_name, key.user_id, key.session_id))


def check_stored_key(key: SessionKey) -> None:
    """`check_stored_id` on the three names of a session.

    Raises:
        InvalidIdError: one of them breaks a rule.
    """
    check_stored_id("app_name", key.app_name)
    check_stored_id("user_id", key.user_id)
    check_stored_id("session_id", key.session_id)


def check_text(field: str, text: str) -> None:
    """Refuse text holding NUL, which PostgreSQL cannot store (other characters are fine).

    Raises:
        InvalidMessageError: naming `field` and the NUL's position.
    """
    position = text.find("\x00")
    if position >= 0:
        raise InvalidMessageError(
            f"{field} holds a NUL character (U+0000) at position {position}; text may not "
            "hold NUL, since not every database can store it. Remove it and send again."
        )


def check_event(event: Event) -> None:
    """Refuse an event appended outside a run whose invocation id or author breaks
    `check_id`, or that nests JSON too deep.

    Raises:
        InvalidIdError, InvalidMessageError: naming the field.
    """
    check_id("invocation_id", event.invocation_id)
    check_id("author", event.author)
    check_depth("event", event.model_dump(exclude_none=True))


def check_depth(field: str, value: object) -> None:
    """Refuse a JSON value nesting arrays and objects deeper than `MAX_JSON_DEPTH`.

    Raises:
        InvalidMessageError: naming `field` and the limit.
    """
    # Level by level, holding only the arrays and objects of the next one: no (item,
    # depth) pair for every value, nor a list of each container's children. Every call
    # that answers or writes state checks its values: a one-key answer 3.5 -> 1.8 us,
    # an empty delta 2.5 -> 1.5 (timeit, in turn with the pair-per-value walk).
    level: list[Any] = [value] if isinstance(value, _CONTAINERS) else []
    depth = 1
    while level:
        if depth > MAX_JSON_DEPTH:
            raise InvalidMessageError(
                f"{field} nests JSON deeper than {MAX_JSON_DEPTH} levels (arrays and objects "
                "inside each other), deeper than stores read back; send a flatter value."
            )
        inner: list[Any] = []
        for item in level:
            children: Iterable[Any] = item.values() if isinstance(item, dict) else item  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType] -- any JSON object or array
            inner += [child for child in children if isinstance(child, _CONTAINERS)]
        level = inner
        depth += 1


_CONTAINERS: Final = (dict, list, tuple)


def _shown(value: str) -> str:
    """The value for a message: quoted, escaped, and cut short when long."""
    return repr(value) if len(value) <= 40 else f"{value[:40]!r}..."
