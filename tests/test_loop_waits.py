"""Plain code inside `run_waitable` waits for an awaitable while the loop runs on: its
result, its exception and a cancellation reach the right place, and the coroutine keeps
its task's context variables."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from baton.loop_waits import can_wait, run_waitable, wait

_SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="")


def plain_read(event: asyncio.Event, value: str) -> str:
    """Plain code that needs the loop to set `event` before it can go on."""
    assert can_wait()
    wait(event.wait())
    return value


async def test_plain_code_waits_while_the_loop_runs_other_tasks() -> None:
    event = asyncio.Event()

    async def tool() -> str:
        await asyncio.sleep(0)
        return plain_read(event, "read") + "!"

    async def set_later() -> None:
        await asyncio.sleep(0)
        event.set()

    async with asyncio.TaskGroup() as tasks:
        result = tasks.create_task(run_waitable(tool()))
        tasks.create_task(set_later())

    assert result.result() == "read!"
    assert not can_wait()


async def test_an_awaited_error_is_raised_where_the_plain_code_waits() -> None:
    async def fails() -> None:
        raise LookupError("gone")

    async def tool() -> str:
        try:
            wait(fails())
        except LookupError as error:
            return f"caught {error}"
        return "not raised"

    assert await run_waitable(tool()) == "caught gone"


async def test_a_cancelled_task_cancels_the_wait_and_the_coroutine_sees_it() -> None:
    started, cleaned = asyncio.Event(), asyncio.Event()

    async def tool() -> None:
        try:
            started.set()
            wait(asyncio.Event().wait())  # never set
        finally:
            cleaned.set()

    task = asyncio.create_task(run_waitable(tool()))
    await started.wait()
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned.is_set()


async def test_the_coroutine_keeps_its_task_s_context_variables() -> None:
    _SEEN.set("outer")

    async def tool() -> str:
        before = _SEEN.get()
        _SEEN.set("inner")
        await asyncio.sleep(0)
        return before

    assert await run_waitable(tool()) == "outer"
    assert _SEEN.get() == "inner"  # as if awaited directly


def test_wait_outside_run_waitable_says_to_check_can_wait() -> None:
    coroutine = asyncio.sleep(0)
    with pytest.raises(RuntimeError, match=r"check can_wait\(\) first"):
        wait(coroutine)
    coroutine.close()
