"""uvicorn's httptools protocol, bounded as the h11 one is: the server's parser when
httptools is installed (the `server` extra brings it), since its C parser costs a fraction
of h11's CPU per request.

See `connections` and `client_bounds` for what the bounds are and why. httptools
reports a request in callbacks (`on_message_begin`, `on_headers_complete`,
`on_message_complete`), so the protocol keeps the request's phase itself: its head
arriving, its body arriving, or none (between requests).
"""

from __future__ import annotations

import re
from typing import Final, cast

from uvicorn.protocols.http import httptools_impl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from baton.server.client_bounds import MAX_HEADER_BYTES, ClientBounds

__all__ = ["BoundedHttpToolsProtocol", "HeaderCheck", "remember_valid_headers"]


class HeaderCheck:
    """uvicorn's check of a response header's name or value (a regex `search` for a
    forbidden byte, whose match refuses the response), remembering the names and
    values it passed: the same answer, without the regex for one seen before.

    Speed: uvicorn runs both regexes on every header of every response, some sixteen
    searches a response (eight headers, four of them `SecurityHeaders`): 1.3% of the
    server's instructions per request on a HITL run (callgrind, `bench/http_profile.py`),
    almost all on names and values it has passed before. Remembered, a search costs a
    set lookup; the server's instructions per request drop ~0.5% in all. It remembers
    at most `REMEMBERED` of them (the first ones: the constant headers come with the
    first response; values that change, such as the date, fill the rest, and are
    checked afresh after).
    """

    REMEMBERED: Final = 512

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern
        self._passed: set[bytes] = set()

    def search(self, value: bytes) -> re.Match[bytes] | None:
        if value in self._passed:
            return None
        found = self.pattern.search(value)
        if found is None and len(self._passed) < self.REMEMBERED:
            self._passed.add(value)
        return found


def remember_valid_headers() -> None:
    """Have uvicorn's httptools protocol check response headers with `HeaderCheck`s
    (once per process; nothing if its uvicorn has no such checks)."""
    for name in ("HEADER_RE", "HEADER_VALUE_RE"):
        pattern = getattr(httptools_impl, name, None)
        if isinstance(pattern, re.Pattern):  # uvicorn's own, not already one of ours
            setattr(httptools_impl, name, HeaderCheck(cast("re.Pattern[bytes]", pattern)))


class _HeadTooLarge(Exception):
    """Raised in a parser callback: httptools then refuses the request as malformed (400)."""


class BoundedHttpToolsProtocol(ClientBounds, HttpToolsProtocol):
    """uvicorn's httptools protocol within `ClientBounds`, and a request's head within
    `MAX_HEADER_BYTES`."""

    _in_head = False  # a request's line and headers are arriving
    _head_bytes = 0  # of them parsed so far
    _head_received = 0  # bytes received while the head stayed incomplete
    _body_done = True  # the last request's body has all arrived (or there was none yet)
    _open = 0  # requests whose head arrived and whose response is not complete

    def data_received(self, data: bytes) -> None:
        if self._drop(data):
            return
        was_in_head = self._in_head
        super().data_received(data)  # a head parsed past the bound fails in a callback: 400
        if was_in_head and self._in_head and not self.transport.is_closing():
            # The head was incomplete before and after: all of `data` is part of it.
            self._head_received += len(data)
            if self._head_received > MAX_HEADER_BYTES:
                self.send_400_response("Request line and headers too large.")
                return
        self._update_deadline()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = self._head_received = 0

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._body_done = False
        self._open += 1
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._body_done = True
        super().on_message_complete()

    def on_response_complete(self) -> None:
        self._open -= 1
        super().on_response_complete()
        self._update_deadline()

    def _count_head(self, size: int) -> None:
        """Add to the parsed head's size; past the bound, stop parsing (a 400 follows)."""
        self._head_bytes += size
        if self._head_bytes > MAX_HEADER_BYTES:
            raise _HeadTooLarge

    def _waits_for_head(self) -> bool:
        return not self._open and self._body_done

    def _is_discarding(self) -> bool:
        return not self._open and not self._body_done

    def _head_begun(self) -> bool:
        return self._in_head
