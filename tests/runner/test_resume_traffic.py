"""What a resume sends PostgreSQL: every statement of the answering call goes to asyncpg
directly (see `sql.postgres`), each a transaction of its own, with no BEGIN or COMMIT.

The round trips are counted, not timed: the checks' read, which claims the invocation
and returns its checkpoint when the answer passes them (`Store.claim_answering`), and
one statement per step the engine commits (the last one gives the lease up), none of
them binding an array.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import JsonValue

from baton import App, FunctionNode, RequestInput, ResumabilityConfig, Runner, Workflow, types
from baton.events import REQUEST_INPUT_FUNCTION
from baton.sessions.services import DatabaseSessionService
from baton.sessions.sql import SqlStore, listener
from baton.sessions.store import InvocationStatus
from tests.store.traffic import traffic, watching


def _ask_workflow(last: FunctionNode | None = None) -> Workflow:
    def a(node_input: JsonValue) -> JsonValue:
        return node_input

    def ask(node_input: JsonValue) -> RequestInput:
        return RequestInput(interrupt_id="ask", message="ok?", response_schema=bool)

    def b(node_input: JsonValue) -> JsonValue:
        return node_input

    nodes = [FunctionNode(f) for f in (a, ask)] + [last or FunctionNode(b)]
    return Workflow(name="resume", edges=[("START", *nodes)])


def _answer() -> types.Content:
    response = types.FunctionResponse(
        id="ask", name=REQUEST_INPUT_FUNCTION, response={"result": True}
    )
    return types.Content(role="user", parts=[types.Part(function_response=response)])


async def _drain(runner: Runner, session_id: str, message: types.Content) -> None:
    async for _ in runner.run_async(user_id="u", session_id=session_id, new_message=message):
        pass


async def _paused(
    emptied_postgres_url: str, last: FunctionNode | None = None
) -> tuple[Runner, str, SqlStore]:
    """A runner on PostgreSQL and a session whose run waits at `ask` (then runs `last`)."""
    service = DatabaseSessionService(emptied_postgres_url)
    app = App(
        name="app",
        root_agent=_ask_workflow(last),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )
    runner = Runner(app=app, session_service=service)
    session = await service.create_session(app_name="app", user_id="u")
    await _drain(runner, session.id, types.Content(role="user", parts=[types.Part(text="go")]))
    store = service.store
    assert isinstance(store, SqlStore)
    announcer = store._announcer  # pyright: ignore[reportPrivateUsage] -- the pause's own, sent first
    assert announcer is not None
    await announcer.flush()
    return runner, session.id, store


async def _status(runner: Runner, session_id: str) -> InvocationStatus:
    [invocation] = await runner.invocations(user_id="u", session_id=session_id)
    await runner.close()
    return invocation.status


async def test_a_resume_is_single_statements_straight_to_asyncpg(
    emptied_postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listener, "_ANNOUNCE_WITHIN", 3600.0)  # only the next step sends it
    other, _ = await watching(emptied_postgres_url)  # a process with a live stream
    runner, session_id, store = await _paused(emptied_postgres_url)

    with traffic(store) as seen:
        await _drain(runner, session_id, _answer())

    assert await _status(runner, session_id) is InvocationStatus.COMPLETED
    # the session with the answered interrupt (the call's checks) and the claim returning
    # the checkpoint; two steps: the answer with ask's output (it completes from the
    # answer), b's output with the run's status and the lease given up
    assert seen.statements == ["WITH", "WITH", "WITH"]
    assert seen.direct == len(seen.statements)
    assert seen.commits == 0
    # the answer's step appends two events, answers and notifies in JSON texts: asyncpg
    # encodes an array parameter checking each element in Python (see `sql.step`)
    assert seen.with_arrays == 0
    # The NOTIFY telling other processes of the answer goes once b's step is sent, while
    # it waits for its commit: not between the two steps, where the run waited for it.
    assert seen.announced_after == [3]
    await other.close()


async def test_an_answer_is_announced_while_the_next_node_of_its_run_still_runs(
    emptied_postgres_url: str,
) -> None:
    """Held for the run's next statement, the NOTIFY of an answer still goes when that
    statement is long in coming (here, a node waiting for the test)."""
    go_on = asyncio.Event()

    async def b(node_input: JsonValue) -> JsonValue:
        await go_on.wait()
        return node_input

    other, _ = await watching(emptied_postgres_url)  # a process with a live stream
    runner, session_id, store = await _paused(emptied_postgres_url, FunctionNode(b))

    with traffic(store) as seen:
        answering = asyncio.create_task(_drain(runner, session_id, _answer()))
        async with asyncio.timeout(30):  # a bound, not a timing: it comes within 0.05 s
            await seen.announced.wait()
        sent = list(seen.statements)
        go_on.set()
        await answering

    assert await _status(runner, session_id) is InvocationStatus.COMPLETED
    assert sent == ["WITH", "WITH"]  # the claim and the answer's step; b's not yet
    assert seen.announced_after == [2]
    await other.close()


async def test_runner_answer_sends_what_run_async_does(emptied_postgres_url: str) -> None:
    runner, session_id, store = await _paused(emptied_postgres_url)

    with traffic(store) as seen:
        async for _ in runner.answer(user_id="u", session_id=session_id, answers={"ask": True}):
            pass

    assert await _status(runner, session_id) is InvocationStatus.COMPLETED
    assert seen.statements == ["WITH", "WITH", "WITH"]


async def test_an_answer_nobody_listens_for_starts_no_background_sending(
    emptied_postgres_url: str,
) -> None:
    """Where no process listens to questions (the pause's NOTIFY found none), the answer's
    change to them is dropped as it is made: no statement, and no task started to find
    nothing to send."""
    runner, session_id, store = await _paused(emptied_postgres_url)
    loop = asyncio.get_running_loop()
    started: list[str] = []

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        started.append(coro.__qualname__)
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(counting)
    try:
        with traffic(store) as seen:
            await _drain(runner, session_id, _answer())
    finally:
        loop.set_task_factory(None)

    assert await _status(runner, session_id) is InvocationStatus.COMPLETED
    assert seen.statements == ["WITH", "WITH", "WITH"]
    assert seen.announcements == 0
    assert started == []
