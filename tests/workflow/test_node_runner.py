"""NodeRunner: a custom orchestration node runs its children as the reference's architecture
document shows (seeds 000 and 001), each child a checkpointed run: finished children are
not redone, waiting ones resume with their answers, on every backend and in a new process."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue

from baton import Context, FunctionNode, NodeRunner, RequestInput, Workflow
from baton.events import Event
from baton.sessions.services import BaseSessionService, InMemorySessionService
from baton.sessions.sql import SqlStore
from baton.sessions.store import InvocationStatus
from tests.conftest import StoreFactory
from tests.harness import asked, attach_harness, build_harness, outputs
from tests.workflow.node_runner_app import Drive, editor, file_log, pipeline


def paths(events: list[Event]) -> list[str]:
    return [e.node_info.path for e in events if e.node_info]


def answers_to(ctx: Context, *ids: str) -> dict[str, Any]:
    """The caller's answers to the given questions (those a child asked)."""
    return {iid: ctx.resume_inputs[iid] for iid in ids if iid in ctx.resume_inputs}


def root(script: Callable[[Context], Awaitable[Any]]) -> Workflow:
    return Workflow(name="wf", edges=[("START", Drive(name="parent", script=script))])


async def test_the_seed_example_carries_prior_output_and_open_interrupts_across_restarts(
    stores: StoreFactory,
) -> None:
    runs: list[str] = []
    h = await build_harness(editor(runs.append), BaseSessionService(stores.open()), resumable=True)

    first = await h.start()

    assert outputs(first) == [("drafter", "draft of the brief")]
    assert asked(first) == ["fc-1", "fc-2"]
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    again = attach_harness(
        editor(runs.append), BaseSessionService(stores.open()), h.session_id, resumable=True
    )

    second = await again.answer(("fc-1", "one"))

    # The drafter ran again with its prior output and its still-open question carried:
    # no second output, no second question.
    assert outputs(second) == []
    assert asked(second) == []
    last = attach_harness(
        editor(runs.append), BaseSessionService(stores.open()), h.session_id, resumable=True
    )
    third = await last.answer(("fc-2", "two"))

    assert outputs(third) == [
        ("editor", {"draft": "draft of the brief", "answers": {"fc-1": "one", "fc-2": "two"}})
    ]
    assert runs == [
        "drafter run_id=1 answers=[] output=None open=[]",
        "drafter run_id=1 answers=['fc-1'] output='draft of the brief' open=['fc-2']",
        "drafter run_id=1 answers=['fc-1', 'fc-2'] output='draft of the brief' open=[]",
    ]
    # Resumed, the drafter kept its run id: its events before and after share one path.
    assert {p for p in paths(first + second + third) if "drafter" in p} == {"editor@1/drafter@1"}
    assert (await last.invocation()).status == InvocationStatus.COMPLETED


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_a_finished_child_is_not_redone_and_a_waiting_child_completes_from_its_answer(
    stores: StoreFactory, resumable: bool
) -> None:
    runs: list[str] = []
    h = await build_harness(
        pipeline(runs.append), BaseSessionService(stores.open()), resumable=resumable
    )
    first = await h.start()
    assert outputs(first) == [("step_a", "A(x)")]
    assert asked(first) == ["fc-b"]
    again = attach_harness(
        pipeline(runs.append), BaseSessionService(stores.open()), h.session_id, resumable=resumable
    )

    second = await again.answer(("fc-b", "yes"))

    assert outputs(second) == [
        ("ask_b", "yes"),
        ("pipeline", {"a": "A(x)", "b": "yes", "b_run": "pipeline@1/ask_b@1"}),
    ]
    assert runs == ["a(x)", "b(y)"]  # each child's code ran once


async def test_a_new_process_resumes_the_run(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}"
    log = tmp_path / "runs.log"
    store = SqlStore(url)
    try:
        h = await build_harness(pipeline(file_log(log)), BaseSessionService(store), resumable=True)
        assert asked(await h.start()) == ["fc-b"]
    finally:
        await store.close()

    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "tests.workflow.node_runner_app"],
        *[url, h.session_id, str(log), "fc-b", "yes"],
        stdout=asyncio.subprocess.PIPE,
        cwd=Path(__file__).parents[2],
    )
    async with asyncio.timeout(120):
        stdout, _ = await process.communicate()

    assert process.returncode == 0
    assert json.loads(stdout) == [
        ["ask_b", "yes"],
        ["pipeline", {"a": "A(x)", "b": "yes", "b_run": "pipeline@1/ask_b@1"}],
    ]
    assert log.read_text().splitlines() == ["a(x)", "b(y)"]


@pytest.mark.parametrize(
    "rerun", [False, True], ids=["rerun_on_resume=False", "rerun_on_resume=True"]
)
async def test_partial_answers_keep_a_leaf_waiting_or_rerun_it_as_the_seed_tables_say(
    rerun: bool,
) -> None:
    bodies: list[list[str]] = []
    seen: list[tuple[JsonValue, list[str]]] = []

    async def two(ctx: Context) -> AsyncGenerator[Any, None]:
        bodies.append(sorted(ctx.resume_inputs))
        if {"a", "b"} <= set(ctx.resume_inputs):
            yield {"rerun with": dict(ctx.resume_inputs)}
            return
        yield RequestInput(interrupt_id="a", message="a?")
        yield RequestInput(interrupt_id="b", message="b?")

    leaf = FunctionNode(two, name="leaf", rerun_on_resume=rerun)

    async def script(ctx: Context) -> JsonValue:
        child = await NodeRunner(node=leaf, parent_ctx=ctx).run(
            resume_inputs=answers_to(ctx, "a", "b")
        )
        seen.append((child.output, sorted(child.interrupt_ids)))
        return None if child.interrupt_ids else child.output

    h = await build_harness(root(script), InMemorySessionService(), resumable=True)
    assert asked(await h.start()) == ["a", "b"]

    partial = await h.answer(("a", "A"))

    assert asked(partial) == []  # b is still open: not asked again
    assert outputs(partial) == []
    assert seen[-1] == (None, ["b"])
    assert bodies == ([[]] if not rerun else [[], ["a"]])

    complete = await h.answer(("b", "B"))

    expected = {"a": "A", "b": "B"} if not rerun else {"rerun with": {"a": "A", "b": "B"}}
    assert outputs(complete) == [("leaf", expected), ("parent", expected)]
    assert bodies == ([[]] if not rerun else [[], ["a"], ["a", "b"]])


async def test_a_resumed_child_keeps_its_run_id_and_a_fresh_dispatch_gets_a_new_one() -> None:
    seen: list[tuple[str, str, JsonValue]] = []

    def ask(ctx: Context, node_input: str) -> RequestInput:
        return RequestInput(interrupt_id=f"q{ctx.run_id}", message=f"round {node_input}?")

    asker = FunctionNode(ask, name="ask")

    async def script(ctx: Context) -> JsonValue:
        got: list[JsonValue] = []
        for round_ in (1, 2):
            runner = NodeRunner(node=asker, parent_ctx=ctx, run_id=round_)
            child = await runner.run(str(round_), resume_inputs=answers_to(ctx, f"q{round_}"))
            seen.append((child.run_id, child.node_path, child.output))
            if child.interrupt_ids:
                return None
            got.append(child.output)
        return got

    h = await build_harness(root(script), InMemorySessionService(), resumable=True)
    first = await h.start()
    second = await h.answer(("q1", "yes"))
    third = await h.answer(("q2", "no"))

    assert asked(first) == ["q1"]
    assert asked(second) == ["q2"]
    assert outputs(third)[-1] == ("parent", ["yes", "no"])
    assert seen == [
        ("1", "wf@1/parent@1/ask@1", None),
        ("1", "wf@1/parent@1/ask@1", "yes"),  # resumed: the same run
        ("2", "wf@1/parent@1/ask@2", None),  # fresh dispatch: a new run
        ("1", "wf@1/parent@1/ask@1", "yes"),  # finished: its recorded result
        ("2", "wf@1/parent@1/ask@2", "no"),
    ]
    assert [p for p in paths(first + second) if "/ask" in p] == [
        "wf@1/parent@1/ask@1",  # asked q1
        "wf@1/parent@1/ask@1",  # answered: ask@1's output, on the path it asked on
        "wf@1/parent@1/ask@2",
    ]


async def test_a_child_that_fails_is_reported_on_its_context_and_the_caller_goes_on() -> None:
    def boom(node_input: str) -> str:
        raise ValueError(f"no {node_input}")

    async def script(ctx: Context) -> JsonValue:
        child = await NodeRunner(node=FunctionNode(boom), parent_ctx=ctx).run("luck")
        return f"{type(child.error).__name__} at {child.error_node_path}: {child.error}"

    h = await build_harness(root(script), InMemorySessionService(), resumable=True)
    events = await h.start()

    assert [(e.node_info.path, e.error_code) for e in events if e.error_code and e.node_info] == [
        ("wf@1/parent@1/boom@1", "ValueError")
    ]
    assert outputs(events) == [("parent", "ValueError at wf@1/parent@1/boom@1: no luck")]


async def test_named_children_and_run_node_calls_mix_across_a_resume() -> None:
    echoes: list[int] = []

    def echo(node_input: int) -> int:
        echoes.append(node_input)
        return node_input

    asker = FunctionNode(lambda: RequestInput(interrupt_id="q", message="?"), name="asker")

    async def script(ctx: Context) -> JsonValue:
        before = await ctx.run_node(echo, 1)
        child = await NodeRunner(node=asker, parent_ctx=ctx, run_id="echo").run(
            resume_inputs=answers_to(ctx, "q")
        )
        if child.interrupt_ids:
            return None
        return [before, child.output, await ctx.run_node(echo, 2)]

    h = await build_harness(root(script), InMemorySessionService(), resumable=True)
    await h.start()
    events = await h.answer(("q", "A"))

    assert outputs(events)[-1] == ("parent", [1, "A", 2])
    assert echoes == [1, 2]  # echo(1) ran once, before the pause


async def refusal(call: Callable[[], Awaitable[object]]) -> str:
    try:
        await call()
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return "accepted"


async def test_bad_inputs_are_refused_with_specific_errors_and_change_nothing(
    stores: StoreFactory,
) -> None:
    asked_runs: list[str] = []
    refused: list[str] = []

    def ask(node_input: str) -> RequestInput:
        asked_runs.append(node_input)
        return RequestInput(interrupt_id="q1", message="ok?")

    def echo(node_input: str) -> str:
        return node_input

    asker = FunctionNode(ask, name="ask")

    async def first_run(ctx: Context) -> None:
        def runner(**given: Any) -> NodeRunner:
            return NodeRunner(
                node=given.pop("node", asker), parent_ctx=given.pop("ctx", ctx), **given
            )

        for make in (
            lambda: runner(node=echo),  # a function, not a node
            lambda: runner(node="ask"),
            lambda: runner(ctx=object()),
            lambda: runner(run_id="a/b"),
            lambda: runner(run_id=""),
            lambda: runner(use_sub_branch=True, override_branch="x"),
            lambda: runner(run_id="new", prior_interrupt_ids={"q1"}),
            lambda: runner(prior_interrupt_ids="q1"),
        ):
            refused.append(await refusal(lambda make=make: make().run("in")))
        new = NodeRunner(node=asker, parent_ctx=ctx, run_id="new")
        refused.append(await refusal(lambda: new.run("in", resume_inputs={"q1": "x"})))
        await ctx.run_node(echo, "v")  # the positional call echo@1
        clash = NodeRunner(node=FunctionNode(echo), parent_ctx=ctx, run_id=1)
        refused.append(await refusal(lambda: clash.run("v")))
        child = await NodeRunner(node=asker, parent_ctx=ctx).run("in")
        assert child.interrupt_ids == {"q1"}
        again = NodeRunner(node=asker, parent_ctx=ctx)
        refused.append(await refusal(lambda: again.run("another input")))

    async def resumed(ctx: Context) -> JsonValue:
        for runner, answers in (
            (NodeRunner(node=asker, parent_ctx=ctx), {"zzz": 1}),
            (NodeRunner(node=asker, parent_ctx=ctx), {"q1": "no"}),
            (NodeRunner(node=asker, parent_ctx=ctx, prior_output="made up"), {}),
            (NodeRunner(node=asker, parent_ctx=ctx, prior_interrupt_ids={"q1"}), {}),
        ):
            refused.append(await refusal(lambda r=runner, a=answers: r.run("in", resume_inputs=a)))
        await ctx.run_node(echo, "v")
        child = await NodeRunner(node=asker, parent_ctx=ctx).run("in", resume_inputs={"q1": "yes"})
        return child.output

    async def script(ctx: Context) -> JsonValue:
        if not ctx.resume_inputs:
            await first_run(ctx)
            return None
        return await resumed(ctx)

    h = await build_harness(root(script), BaseSessionService(stores.open()), resumable=True)
    first = await h.start()
    again = attach_harness(
        root(script), BaseSessionService(stores.open()), h.session_id, resumable=True
    )
    second = await again.answer(("q1", "yes"))

    kinds = [line.partition(":")[0] for line in refused]
    assert kinds == [
        "TypeError",
        "TypeError",
        "TypeError",
        "InvalidIdError",
        "InvalidIdError",
        "ValueError",
        "UnknownInterruptError",
        "TypeError",
        "UnknownInterruptError",
        "ValueError",
        "WorkflowChangedError",
        "UnknownInterruptError",
        "AlreadyAnsweredError",
        "OutputAlreadySetError",
        "UnknownInterruptError",
    ]
    assert "wrap a function in FunctionNode(fn)" in refused[0]
    assert "run_id 'a/b'" in refused[3]
    assert "taken by the ctx.run_node call echo@1" in refused[9]
    assert "interrupt 'zzz' was not asked by node run 'wf@1/parent@1/ask@1'" in refused[11]
    assert "was answered with 'yes', but resume_inputs gives 'no'" in refused[12]
    # Nothing refused ran or left a trace: one run of ask, which then completed.
    assert asked_runs == ["in"]
    assert sorted({p for p in paths(first + second)}) == [
        "wf@1/parent@1",
        "wf@1/parent@1/ask@1",
        "wf@1/parent@1/echo@1",
    ]
    assert outputs(second)[-1] == ("parent", "yes")
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


async def test_one_run_asked_for_twice_at_once_runs_once() -> None:
    runs: list[str] = []

    async def slow(node_input: str) -> str:
        runs.append(node_input)
        await asyncio.sleep(0)  # the second call arrives while this run is under way
        return node_input.upper()

    child = FunctionNode(slow, name="slow")

    async def script(ctx: Context) -> JsonValue:
        first, second = await asyncio.gather(
            NodeRunner(node=child, parent_ctx=ctx).run("x"),
            NodeRunner(node=child, parent_ctx=ctx).run("x"),
        )
        return [first.output, second.output]

    h = await build_harness(root(script), InMemorySessionService(), resumable=True)
    events = await h.start()

    assert outputs(events) == [("slow", "X"), ("parent", ["X", "X"])]
    assert runs == ["x"]


async def test_a_child_s_route_is_on_its_context_also_when_its_result_is_recorded() -> None:
    routes: list[object] = []

    def pick(node_input: str) -> Event:
        return Event(output=node_input, route="left")

    picker = FunctionNode(pick, name="pick")
    asker = FunctionNode(lambda: RequestInput(interrupt_id="q", message="?"), name="asker")

    async def script(ctx: Context) -> JsonValue:
        picked = await NodeRunner(node=picker, parent_ctx=ctx).run("p")
        routes.append(picked.route)
        waited = await NodeRunner(node=asker, parent_ctx=ctx).run(
            resume_inputs=answers_to(ctx, "q")
        )
        return None if waited.interrupt_ids else [picked.output, waited.output]

    h = await build_harness(root(script), InMemorySessionService(), resumable=True)
    await h.start()
    events = await h.answer(("q", "A"))

    assert outputs(events)[-1] == ("parent", ["p", "A"])
    assert routes == ["left", "left"]  # run, then its recorded result
