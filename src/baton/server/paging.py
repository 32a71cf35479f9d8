"""Pages of pending questions: a limit, and an opaque cursor that names the last row seen.

The cursor holds the last row's sort key (created, session, invocation, interrupt), so
a page starts right after it even when earlier questions were answered meanwhile.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence

from fastapi import HTTPException

from baton.sessions.store import Interrupt

__all__ = ["NEXT_CURSOR_HEADER", "page"]

NEXT_CURSOR_HEADER = "X-Next-Cursor"
"""The response header holding the cursor of the next page (absent on the last page)."""

_Key = tuple[float, str, str, str]


def page(
    rows: Sequence[Interrupt], *, limit: int | None, cursor: str | None
) -> tuple[list[Interrupt], str | None]:
    """The rows after `cursor`, at most `limit` of them, and the next page's cursor.

    Raises:
        HTTPException: 400 for a cursor this server did not give.
    """
    ordered = sorted(rows, key=_key)
    if cursor is not None:
        after = _decode(cursor)
        ordered = [row for row in ordered if _key(row) > after]
    if limit is None or len(ordered) <= limit:
        return ordered, None
    shown = ordered[:limit]
    return shown, _encode(_key(shown[-1]))


def _key(row: Interrupt) -> _Key:
    return (row.created_at, row.session_id, row.invocation_id, row.interrupt_id)


def _encode(key: _Key) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode()


def _decode(cursor: str) -> _Key:
    try:
        created, session, invocation, interrupt = json.loads(base64.urlsafe_b64decode(cursor))
        return (float(created), str(session), str(invocation), str(interrupt))
    except (binascii.Error, ValueError, TypeError) as exc:
        raise HTTPException(
            400,
            f"cursor '{cursor[:40]}' is not one this server gave; pass the "
            f"{NEXT_CURSOR_HEADER} header of the previous page, or start without cursor=.",
        ) from exc
