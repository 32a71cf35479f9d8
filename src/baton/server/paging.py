"""Listings a page at a time over HTTP: `limit` and `cursor` in, a page and the
`X-Next-Cursor` header out (see `baton.sessions.paging`).

The body stays the list the route always returned, so clients that never page see the
same shape; the header is absent on the last page.
"""

from __future__ import annotations

from typing import Annotated, Final, TypeVar

from fastapi import Query, Response

from baton.sessions.paging import MAX_PAGE, Page

__all__ = ["NEXT_CURSOR_HEADER", "Cursor", "Limit", "OptionalLimit", "shown"]

NEXT_CURSOR_HEADER: Final = "X-Next-Cursor"
"""The response header holding the cursor of the next page (absent on the last page)."""

Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Rows per page.")]
OptionalLimit = Annotated[
    int | None, Query(ge=1, le=MAX_PAGE, description="Rows per page (default: all).")
]
Cursor = Annotated[
    str | None,
    Query(max_length=2000, description=f"The {NEXT_CURSOR_HEADER} header of the page before."),
]

_T = TypeVar("_T")


def shown(response: Response, page: Page[_T]) -> list[_T]:
    """The page's rows, with the next page's cursor set on `response` when there is one."""
    if page.next_cursor is not None:
        response.headers[NEXT_CURSOR_HEADER] = page.next_cursor
    return page.items
