"""`run_async(abort_signal=...)`: the run stops where it is, is sealed with an
`INVOCATION_ABORTED` event, and continues by its id, the interrupted node run again."""

from __future__ import annotations

import asyncio

from baton import Workflow, types
from baton.sessions.store import InvocationStatus
from tests.harness import MakeHarness


def _go() -> types.Content:
    return types.Content(role="user", parts=[types.Part(text="go")])


def _workflow(abort: asyncio.Event, ran: list[str]) -> Workflow:
    def a(node_input: str) -> str:
        ran.append("a")
        return "a"

    async def b(node_input: str) -> str:
        ran.append("b")
        if ran.count("b") == 1:
            abort.set()  # the caller aborts while b is under way
            await asyncio.Event().wait()  # b never finishes this time
        return "b"

    def c(node_input: str) -> str:
        ran.append("c")
        return "c"

    return Workflow(name="wf", edges=[("START", a, b, c)])


async def test_an_aborted_run_is_sealed_and_continues_by_its_id(
    make_harness: MakeHarness,
) -> None:
    abort = asyncio.Event()
    ran: list[str] = []
    h = await make_harness(_workflow(abort, ran))

    events = await h.collect(new_message=_go(), abort_signal=abort)

    assert ran == ["a", "b"]
    assert [e.output for e in events if e.output is not None] == ["a"]
    seal = events[-1]
    assert (seal.author, seal.error_code) == ("wf", "INVOCATION_ABORTED")
    assert "invocation_id" in (seal.error_message or "")
    invocation = await h.invocation()
    assert invocation.status is InvocationStatus.FAILED
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.events[-1].id == seal.id

    resumed = await h.collect(invocation_id=invocation.id)

    assert ran == ["a", "b", "b", "c"]  # a committed and is not run again; b is
    assert [e.output for e in resumed if e.output is not None][-1] == "c"
    assert (await h.invocation()).status is InvocationStatus.COMPLETED


async def test_a_signal_set_after_the_run_ended_seals_nothing(make_harness: MakeHarness) -> None:
    ran = ["b"]  # b ran once already: this time it does not abort
    h = await make_harness(_workflow(asyncio.Event(), ran))
    abort = asyncio.Event()

    events = [
        e
        async for e in h.runner.run_async(
            user_id="u", session_id=h.session_id, new_message=_go(), abort_signal=abort
        )
    ]
    abort.set()

    assert not any(e.error_code for e in events)
    assert (await h.invocation()).status is InvocationStatus.COMPLETED
    assert ran == ["b", "a", "b", "c"]
