"""Turns: one holder at a time, first come first served, cancellation-safe."""

from __future__ import annotations

import asyncio

import pytest

from baton.turns import Turns


async def _hold(turns: Turns, name: str, log: list[str], gate: asyncio.Event) -> None:
    waiting = turns.take()
    if waiting is not None:
        await turns.wait(waiting)
    try:
        log.append(f"{name} in")
        await gate.wait()
        log.append(f"{name} out")
    finally:
        turns.give_back()


async def test_holders_take_turns_in_the_order_they_asked() -> None:
    turns, log, gate = Turns(), list[str](), asyncio.Event()
    tasks = [asyncio.create_task(_hold(turns, n, log, gate)) for n in ("a", "b", "c")]
    await asyncio.sleep(0)
    assert log == ["a in"]
    gate.set()
    await asyncio.gather(*tasks)
    assert log == ["a in", "a out", "b in", "b out", "c in", "c out"]
    assert turns.take() is None  # free again


async def test_a_waiter_cancelled_before_or_as_its_turn_comes_does_not_keep_it() -> None:
    turns = Turns()
    assert turns.take() is None  # held
    queued = [turns.take() for _ in range(3)]
    b, c, d = (asyncio.create_task(turns.wait(w)) for w in queued if w is not None)
    await asyncio.sleep(0)
    b.cancel()  # while it waits
    await asyncio.sleep(0)
    turns.give_back()  # c's turn comes (b's wait was cancelled)...
    c.cancel()  # ...as c is cancelled, before it runs: the turn goes on to d
    await d
    for task in (b, c):
        with pytest.raises(asyncio.CancelledError):
            await task
    assert turns.take() is not None  # d holds it
