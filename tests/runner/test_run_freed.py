"""A call's run is freed by reference counting as soon as the call ends: it leaves no
reference cycles for the garbage collector to find (see `InvocationRun._let_go`)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from baton import RequestInput, Workflow, types
from baton.context import StepParts
from baton.invocation import InvocationRun
from baton.sessions.services import BaseSessionService
from tests.conftest import StoreFactory
from tests.harness import build_harness


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[weakref.ref[InvocationRun]]]:
    """Weak references to every InvocationRun made meanwhile, with the garbage collector
    off: what is freed is freed by reference counting."""
    made: list[weakref.ref[InvocationRun]] = []
    init = InvocationRun.__init__

    def recording(self: InvocationRun, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # pyright: ignore[reportArgumentType]
        made.append(weakref.ref(self))

    monkeypatch.setattr(InvocationRun, "__init__", recording)
    gc.collect()
    gc.disable()
    try:
        yield made
    finally:
        gc.enable()


def _go() -> types.Content:
    return types.Content(role="user", parts=[types.Part(text="go")])


def ask(node_input: str) -> RequestInput:
    return RequestInput(interrupt_id="ok", message="ok?", response_schema=bool)


def after(node_input: bool) -> str:
    return f"after:{node_input}"


async def first(node_input: str):  # a generator node: the engine moves to a task of its own
    yield "one"


def after_go(node_input: object) -> str:
    return "one"


def second(node_input: str) -> str:
    return "two"


async def test_a_paused_run_and_its_answer_are_freed_without_the_collector(
    stores: StoreFactory, runs: list[weakref.ref[InvocationRun]]
) -> None:
    root = Workflow(name="wf", edges=[("START", ask, after)])
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=True)
    async for _ in h.runner.run_async(user_id="u", session_id=h.session_id, new_message=_go()):
        pass
    async for _ in h.runner.answer(user_id="u", session_id=h.session_id, answers={"ok": True}):
        pass
    assert len(runs) == 2
    assert [run() for run in runs] == [None, None]


async def test_a_run_in_a_task_of_its_own_is_freed(
    stores: StoreFactory, runs: list[weakref.ref[InvocationRun]]
) -> None:
    root = Workflow(name="wf", edges=[("START", first, second)])
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=True)
    outputs = [
        e.output
        async for e in h.runner.run_async(user_id="u", session_id=h.session_id, new_message=_go())
        if e.output is not None
    ]
    assert outputs == ["one", "two"]
    assert len(runs) == 1
    assert runs[0]() is None


@pytest.mark.parametrize("own_task", [False, True], ids=["callers_task", "own_task"])
async def test_a_run_its_caller_leaves_early_is_freed(
    stores: StoreFactory, runs: list[weakref.ref[InvocationRun]], own_task: bool
) -> None:
    """Stopped at a step: the cancellation thrown into its engine is no cycle either."""
    root = Workflow(name="wf", edges=[("START", first if own_task else after_go, second)])
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=True)
    stream = h.runner.run_async(user_id="u", session_id=h.session_id, new_message=_go())
    async for _ in stream:
        break  # the caller stops reading: the run stops at that step
    await stream.aclose()
    del stream
    await asyncio.sleep(0)
    assert len(runs) == 1
    assert runs[0]() is None


async def test_an_ended_runs_context_still_reads_and_refuses_to_commit(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept: list[InvocationRun] = []
    init = InvocationRun.__init__

    def keeping(self: InvocationRun, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # pyright: ignore[reportArgumentType]
        kept.append(self)

    monkeypatch.setattr(InvocationRun, "__init__", keeping)
    root = Workflow(name="wf", edges=[("START", after_go, second)])
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=True)
    async for _ in h.runner.run_async(user_id="u", session_id=h.session_id, new_message=_go()):
        pass
    [run] = kept
    ctx = run.invocation
    history = await ctx.load_history()
    assert [e.output for e in history if e.output is not None] == ["one", "two"]
    assert await ctx.load_invocation_events() == history
    assert await ctx.load_recent_events(1) == history[-1:]
    with pytest.raises(RuntimeError, match="run has ended"):
        await ctx.commit(StepParts(), lambda: None)
