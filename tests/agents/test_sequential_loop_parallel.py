"""Sequential, loop and parallel agents: finished sub-agents never run again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import suppress

import pytest
from pydantic import InstanceOf

from baton import Event, EventActions, InvocationContext
from baton.agents import BaseAgent, LoopAgent, ParallelAgent, SequentialAgent
from baton.sessions.store import InvocationStatus
from baton.types import Content, Part
from tests.agents import quoting
from tests.agents.agents import Boom, Runs, Step, Waiter, texts
from tests.agents.conftest import MakeRunner, runner_with_artifacts
from tests.conftest import StoreFactory
from tests.harness import Harness


async def test_sequential_runs_sub_agents_in_order_and_ends(make: MakeRunner) -> None:
    runs = Runs()
    seq = SequentialAgent(name="seq", sub_agents=[Step(name=n, runs=runs) for n in "abc"])
    h = await make(seq)

    events = await h.start()

    assert texts(events) == [("a", "a done"), ("b", "b done"), ("c", "c done")]
    assert (events[-1].author, events[-1].actions.end_of_agent) == ("seq", True)
    assert texts(events)[-1][1] == "c done"
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_sequential_resumes_after_the_last_finished_sub_agent(
    make: MakeRunner, resumable: bool
) -> None:
    runs = Runs(fail={"c": {1}})
    seq = SequentialAgent(name="seq", sub_agents=[Step(name=n, runs=runs) for n in "abcd"])
    h = await make(seq, resumable=resumable)

    with pytest.raises(Boom):
        await h.start()
    invocation = await h.invocation()
    events = await h.collect(invocation_id=invocation.id)

    assert runs.count == {"a": 1, "b": 1, "c": 2, "d": 1}
    assert texts(events) == [("c", "c done"), ("d", "d done")]
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state == {"a": 1, "b": 1, "c": 2, "d": 1}


async def test_loop_resumes_at_the_current_sub_agent_and_iteration(make: MakeRunner) -> None:
    runs = Runs(fail={"b": {2}})
    loop = LoopAgent(
        name="loop", max_iterations=3, sub_agents=[Step(name=n, runs=runs) for n in "abc"]
    )
    h = await make(loop)

    with pytest.raises(Boom):
        await h.start()
    assert runs.count == {"a": 2, "b": 2, "c": 1}
    events = await h.collect(invocation_id=(await h.invocation()).id)

    assert runs.count == {"a": 3, "b": 4, "c": 3}
    assert [a for a, _ in texts(events)] == ["b", "c", "a", "b", "c"]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_loop_stops_after_the_sub_agent_that_escalates(make: MakeRunner) -> None:
    runs = Runs()
    loop = LoopAgent(
        name="loop",
        sub_agents=[Step(name="a", runs=runs), Step(name="stop", runs=runs, escalate=True)],
    )
    h = await make(loop)

    await h.start()

    assert runs.count == {"a": 1, "stop": 1}


async def test_loop_without_limit_or_sub_agents_ends_at_once(make: MakeRunner) -> None:
    h = await make(LoopAgent(name="loop"))

    events = await h.start()

    assert [e.actions.end_of_agent for e in events] == [True]


async def test_parallel_resume_runs_only_unfinished_branches(make: MakeRunner) -> None:
    runs = Runs(fail={"b": {1}})
    waiter = Waiter(name="b", runs=runs, wait_for=["a", "c"])
    par = ParallelAgent(
        name="par", sub_agents=[Step(name="a", runs=runs), waiter, Step(name="c", runs=runs)]
    )
    h = await make(par)

    with pytest.raises(Boom):
        await h.start()
    events = await h.collect(invocation_id=(await h.invocation()).id)

    assert runs.count == {"a": 1, "b": 2, "c": 1}
    assert texts(events) == [("b", "b done")]
    assert texts(events)[-1][1] == "b done"
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_parallel_branches_are_tagged_and_all_finish(make: MakeRunner) -> None:
    runs = Runs()
    inner = SequentialAgent(name="inner", sub_agents=[Step(name="x", runs=runs)])
    par = ParallelAgent(name="par", sub_agents=[Step(name="a", runs=runs), inner])
    h = await make(par)

    events = await h.start()

    branches = {e.author: e.branch for e in events if e.content}
    assert branches == {"a": "par.a", "x": "par.inner"}
    assert (events[-1].author, events[-1].actions.end_of_agent) == ("par", True)


@pytest.mark.parametrize("max_iterations", [0, -1])
async def test_a_loop_of_fewer_than_one_iteration_runs_its_sub_agents_no_times(
    make: MakeRunner, max_iterations: int
) -> None:
    runs = Runs()
    loop = LoopAgent(
        name="loop", max_iterations=max_iterations, sub_agents=[Step(name="a", runs=runs)]
    )
    h = await make(loop)

    events = await h.start()

    assert runs.count == {}
    assert texts(events) == []
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


class Slow(BaseAgent):
    """Takes a few turns of the loop, says done, and counts its runs."""

    runs: InstanceOf[Runs]

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        for _ in range(5):
            await asyncio.sleep(0)
        self.runs.bump(self.name)
        yield Event(
            author=self.name, content=Content(role="model", parts=[Part(text=f"{self.name} done")])
        )


async def test_a_failed_branch_lets_its_siblings_finish_and_a_retry_runs_only_it(
    make: MakeRunner,
) -> None:
    runs = Runs(fail={"q": {1}})
    par = ParallelAgent(
        name="par",
        sub_agents=[
            Slow(name="p", runs=runs),
            Step(name="q", runs=runs),
            Slow(name="r", runs=runs),
        ],
    )
    h = await make(par)

    with pytest.raises(Boom):
        await h.start()
    assert runs.count == {"p": 1, "q": 1, "r": 1}  # p and r ran to their end before the failure
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert sorted(text for _, text in texts(session.events)) == ["go", "p done", "r done"]

    events = await h.collect(invocation_id=(await h.invocation()).id)
    assert runs.count == {"p": 1, "q": 2, "r": 1}  # the retry ran only the failed branch
    assert texts(events) == [("q", "q done")]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_failed_branch_of_a_nested_parallel_agent_is_the_only_one_run_again(
    stores: StoreFactory,
) -> None:
    # On every backend: a sequence around a parallel agent whose branches are a
    # sub-agent, a failing one and a parallel agent of two more.
    runs = Runs(fail={"q": {1}})
    inner = ParallelAgent(name="inner", sub_agents=[Slow(name=n, runs=runs) for n in ("r1", "r2")])
    par = ParallelAgent(
        name="par", sub_agents=[Slow(name="p", runs=runs), Step(name="q", runs=runs), inner]
    )
    root = SequentialAgent(
        name="seq", sub_agents=[Step(name="first", runs=runs), par, Step(name="last", runs=runs)]
    )
    runner = runner_with_artifacts(stores, root)
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    h = Harness(runner, runner.session_service, session.id)

    with pytest.raises(Boom):
        await h.start()
    assert runs.count == {"first": 1, "p": 1, "q": 1, "r1": 1, "r2": 1}
    assert (await h.invocation()).status == InvocationStatus.FAILED

    events = await h.collect(invocation_id=(await h.invocation()).id)
    assert runs.count == {"first": 1, "p": 1, "q": 2, "r1": 1, "r2": 1, "last": 1}
    assert texts(events) == [("q", "q done"), ("last", "last done")]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
    stored = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert stored is not None
    assert sorted(text for _, text in texts(stored.events)) == [
        "first done",
        "go",
        "last done",
        "p done",
        "q done",
        "r1 done",
        "r2 done",
    ]


async def test_nested_parallel_branches_are_named_as_in_the_reference(make: MakeRunner) -> None:
    runs = Runs()
    inner = SequentialAgent(
        name="inner",
        sub_agents=[
            Step(name="y1", runs=runs),
            ParallelAgent(name="par2", sub_agents=[Step(name=n, runs=runs) for n in ("z1", "z2")]),
        ],
    )
    outer = SequentialAgent(
        name="outer",
        sub_agents=[ParallelAgent(name="par", sub_agents=[Step(name="x", runs=runs), inner])],
    )
    h = await make(outer)

    events = await h.start()

    # google-adk 2.13.0 names them so: a parallel agent's name joins its own branch.
    assert {e.author: e.branch for e in events if e.content} == {
        "x": "par.x",
        "y1": "par.inner",
        "z1": "par.inner.par2.z1",
        "z2": "par.inner.par2.z2",
    }


def seen(events: list[Event]) -> list[tuple[str, str | None, bool]]:
    """(author, text, ended) of each event, in order."""
    return [
        (e.author, e.content.text if e.content else None, bool(e.actions.end_of_agent))
        for e in events
    ]


def agent_shapes() -> dict[str, BaseAgent]:
    runs = Runs()
    return {
        "sequential": SequentialAgent(
            name="seq", sub_agents=[Step(name=n, runs=runs) for n in "ab"]
        ),
        "loop": LoopAgent(name="loop", max_iterations=2, sub_agents=[Step(name="a", runs=runs)]),
        "parallel": ParallelAgent(name="par", sub_agents=[Step(name="a", runs=runs)]),
    }


@pytest.mark.parametrize("shape", ["sequential", "loop", "parallel"])
async def test_a_non_resumable_run_streams_no_agent_checkpoints(
    make: MakeRunner, shape: str
) -> None:
    resumable = await make(agent_shapes()[shape], resumable=True)
    replay = await make(agent_shapes()[shape], resumable=False)

    with_checkpoints = await resumable.start()
    without = await replay.start()

    # As the reference: a resumable run streams its agents' checkpoints and ends, a
    # non-resumable one only what the agents say.
    assert any(e.is_checkpoint_only() for e in with_checkpoints)
    assert seen(without) == [
        s for e, s in zip(with_checkpoints, seen(with_checkpoints), strict=False) if e.content
    ]
    assert all(e.actions.agent_state is None and not e.actions.end_of_agent for e in without)
    # baton stores them in both modes: its agents resume from them.
    session = await replay.service.get_session(
        app_name="app", user_id="u", session_id=replay.session_id
    )
    assert session is not None
    assert [e.id for e in session.events if e.is_checkpoint_only()]


class Talker(BaseAgent):
    """Says two things; the first may escalate. One that `holds` first waits up to 30 s for
    nothing: only its branch being stopped keeps it from speaking (a pause of a set length
    could end, on a loaded machine, before the other branch's escalation is stored)."""

    holds: bool = False
    escalate: bool = False

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        for said in ("says", "again"):
            if self.holds:
                with suppress(TimeoutError):
                    async with asyncio.timeout(30):
                        await asyncio.Event().wait()
            yield Event(
                author=self.name,
                message=f"{self.name} {said}",
                actions=EventActions(escalate=(self.escalate and said == "says") or None),
            )


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_a_sub_agent_that_escalates_ends_its_parallel_agent_at_once(
    make: MakeRunner, resumable: bool
) -> None:
    par = ParallelAgent(
        name="par", sub_agents=[Talker(name="p1", escalate=True), Talker(name="p2", holds=True)]
    )
    loop = LoopAgent(
        name="loop", max_iterations=2, sub_agents=[par, Step(name="after", runs=Runs())]
    )
    h = await make(loop, resumable=resumable)

    events = await h.start()

    # As the reference (google-adk 2.13.0): the escalation stops the other branch and the
    # escalating agent where they are, ends the parallel agent, and the loop with it.
    assert texts(events) == [("p1", "p1 says")]
    ends = [e.author for e in events if e.actions.end_of_agent]
    assert ends == (["par", "loop"] if resumable else [])
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_an_agent_without_history_after_another_sees_that_agents_reply(
    make: MakeRunner,
) -> None:
    from baton.agents import LlmAgent
    from baton.models import ScriptedModel

    first, second = ScriptedModel(["one"]), ScriptedModel(["two"])
    pipeline = SequentialAgent(
        name="s",
        sub_agents=[
            LlmAgent(name="a", model=first),
            LlmAgent(name="b", model=second, include_contents="none"),
        ],
    )
    h = await make(pipeline)
    await h.start("hi")

    # As the reference (2.13.0): b's turn starts at a's reply; the user's message,
    # an earlier turn to b, is not shown.
    [request] = second.requests
    assert quoting.turns(request) == [("user", [quoting.PREAMBLE, quoting.said("a", "one")])]
