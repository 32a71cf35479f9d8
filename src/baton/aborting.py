"""A caller's abort signal: the run stops where it is and is sealed, resumable by its id.

`Runner.run_async(abort_signal=...)` reads the run's events until the signal is set; the
run is then stopped as a closed stream stops it (a node under way is cancelled, and runs
again on resume, as after a crash), and `InvocationRun.seal_aborted` lands its seal.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Final

from baton.events import Event

__all__ = ["ABORTED_CODE", "ABORTED_MESSAGE", "until_aborted"]

ABORTED_CODE: Final = "INVOCATION_ABORTED"
"""The `error_code` of the event that seals an aborted invocation (the reference's)."""

ABORTED_MESSAGE: Final = (
    "the invocation was aborted by its caller (abort_signal); continue it with "
    "run_async(invocation_id=...) to run the interrupted node again."
)


async def until_aborted(
    events: AsyncIterator[Event], signal: asyncio.Event
) -> AsyncGenerator[Event, None]:
    """`events` until they end or `signal` is set, whichever comes first.

    Both waits are tasks of this generator's own, cancelled and awaited before it ends.
    """
    aborted = asyncio.ensure_future(signal.wait())
    try:
        while not signal.is_set():
            step = asyncio.ensure_future(anext(events))
            await asyncio.wait((step, aborted), return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                step.cancel()
                await asyncio.gather(step, return_exceptions=True)
                return
            try:
                event = step.result()
            except StopAsyncIteration:
                return
            yield event
    finally:
        aborted.cancel()
        await asyncio.gather(aborted, return_exceptions=True)
