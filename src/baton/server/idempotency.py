"""Idempotency-Key: a retried request gets the first request's reply instead of acting twice.

The replies live in the server process (the newest `capacity` keys); a retry that
reaches another process acts on its own, where the answer's own checks (an
interrupt answered once, its occurrence) still refuse a second answer.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Final, Generic, TypeVar

__all__ = ["IdempotentReplies"]

_Reply = TypeVar("_Reply")
_CAPACITY: Final = 4096


class IdempotentReplies(Generic[_Reply]):
    """The first reply per key; concurrent requests with one key share its one action."""

    def __init__(self, capacity: int = _CAPACITY) -> None:
        self._capacity = capacity
        self._replies: OrderedDict[Hashable, asyncio.Future[_Reply]] = OrderedDict()

    async def once(self, key: Hashable, act: Callable[[], Awaitable[_Reply]]) -> _Reply:
        """`act()`'s reply, computed once per key (a refusal raised by it is kept too)."""
        known = self._replies.get(key)
        if known is not None:
            return await asyncio.shield(known)
        reply: asyncio.Future[_Reply] = asyncio.get_running_loop().create_future()
        self._replies[key] = reply
        while len(self._replies) > self._capacity:
            self._replies.popitem(last=False)
        try:
            reply.set_result(await act())
        except BaseException as error:
            if isinstance(error, asyncio.CancelledError):
                self._replies.pop(key, None)  # nothing happened that a retry must not redo
                reply.cancel()
                raise
            reply.set_exception(error)
        return await asyncio.shield(reply)
