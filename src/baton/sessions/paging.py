"""Pages of a listing: at most `limit` rows after a cursor, and the cursor of the next page.

A cursor names the last row a page showed by its sort key (keyset paging), so the next
page starts right after it even when rows before it were added or removed meanwhile,
and the store seeks to it on an index instead of skipping rows. Cursors are opaque to
callers: base64 of the listing's name and the key, checked on the way back in.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from baton.errors import InvalidCursorError, InvalidLimitError

__all__ = [
    "DEFAULT_PAGE",
    "MAX_PAGE",
    "Page",
    "Position",
    "check_limit",
    "decode_cursor",
    "encode_cursor",
    "read_every_page",
    "read_page",
]

MAX_PAGE: Final = 1000
"""The largest page any listing returns."""

DEFAULT_PAGE: Final = 100
"""The page size when a caller does not name one."""

Position = tuple[float | str, ...]
"""A row's sort key in its listing: where a page after it starts."""

_T = TypeVar("_T")


@dataclass(frozen=True)
class Page(Generic[_T]):
    """One page of a listing.

    Attributes:
        items: the rows, in the listing's order.
        next_cursor: pass it back as `cursor=` for the rows after these; None on the
            last page.
    """

    items: list[_T]
    next_cursor: str | None = None


def check_limit(limit: int) -> int:
    """`limit` when it is a page size a listing accepts.

    Raises:
        InvalidLimitError: it is not an int between 1 and MAX_PAGE.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:  # pyright: ignore[reportUnnecessaryIsInstance] -- callers' code is not typed
        raise InvalidLimitError(
            f"limit {limit!r} is not a page size; pass an int from 1 to {MAX_PAGE}."
        )
    return limit


def encode_cursor(listing: str, position: Position) -> str:
    """The cursor naming `position` in `listing` (e.g. "pending")."""
    text = json.dumps([listing, *position], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(listing: str, cursor: str, kinds: tuple[type, ...]) -> Position:
    """The position a cursor of `listing` names; its parts have the types `kinds`.

    Raises:
        InvalidCursorError: the cursor is garbled, or was given by another listing.
    """
    try:
        parts = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise _refusal(listing, cursor) from exc
    if not isinstance(parts, list) or not parts or parts[0] != listing:
        raise _refusal(listing, cursor)
    values: list[object] = parts[1:]  # pyright: ignore[reportUnknownVariableType] -- checked below
    if len(values) != len(kinds):
        raise _refusal(listing, cursor)
    return tuple(
        _typed(listing, cursor, value, kind) for value, kind in zip(values, kinds, strict=True)
    )


def _typed(listing: str, cursor: str, value: object, kind: type) -> float | str:
    if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind is str and isinstance(value, str):
        return value
    raise _refusal(listing, cursor)


def _refusal(listing: str, cursor: str) -> InvalidCursorError:
    shown = cursor if len(cursor) <= 40 else cursor[:40] + "..."
    return InvalidCursorError(
        f"cursor '{shown}' is not one this {listing} listing gave; pass the next cursor "
        "of its previous page, or start from the first page without a cursor."
    )


async def read_page(
    fetch: Callable[[int, Position | None], Awaitable[list[_T]]],
    position: Callable[[_T], Position],
    *,
    listing: str,
    kinds: tuple[type, ...],
    limit: int,
    cursor: str | None,
) -> Page[_T]:
    """A page of `listing`: `fetch(n, after)` reads up to n rows after a position.

    One more row than the page is read, so the last page says so without a further call.

    Raises:
        InvalidLimitError, InvalidCursorError: before anything is read.
    """
    check_limit(limit)
    after = None if cursor is None else decode_cursor(listing, cursor, kinds)
    rows = await fetch(limit + 1, after)
    if len(rows) <= limit:
        return Page(rows)
    shown = rows[:limit]
    return Page(shown, encode_cursor(listing, position(shown[-1])))


async def read_every_page(read: Callable[[str | None], Awaitable[Page[_T]]]) -> list[_T]:
    """Every row of a listing, `read(cursor)` giving one page after another (a stream
    that shows all of a person's open questions, however many)."""
    found: list[_T] = []
    cursor: str | None = None
    while True:
        page = await read(cursor)
        found += page.items
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor
