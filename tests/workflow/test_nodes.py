"""Function nodes, parameter binding, retries, timeouts, state and routing."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from pydantic import BaseModel

from baton import (
    Context,
    Event,
    FunctionNode,
    JoinNode,
    RequestInput,
    RetryConfig,
    Workflow,
    node,
    types,
)
from baton.errors import MissingParameterError, NodeTimeoutError, OutputAlreadySetError
from tests.harness import MakeHarness, asked, outputs


async def test_every_kind_of_function_is_a_node(make_harness: MakeHarness) -> None:
    def plain(node_input: str) -> str:
        return node_input + "1"

    async def coroutine(node_input: str) -> str:
        return node_input + "2"

    def generator(node_input: str):
        yield Event(message="thinking")
        yield node_input + "3"

    async def async_generator(node_input: str):
        yield node_input + "4"

    wf = Workflow(
        name="wf",
        edges=[
            (
                "START",
                plain,
                FunctionNode(func=coroutine),
                FunctionNode(generator),
                node(async_generator),
            )
        ],
    )
    h = await make_harness(wf)
    events = await h.start("x")
    assert outputs(events) == [
        ("plain", "x1"),
        ("coroutine", "x12"),
        ("generator", "x123"),
        ("async_generator", "x1234"),
    ]
    assert events[2].content is not None
    assert events[2].content.text == "thinking"


def test_node_decorator_forms() -> None:
    @node
    def one() -> None: ...

    @node(name="renamed", rerun_on_resume=True, timeout=3)
    def two() -> None: ...

    assert (one.name, one.rerun_on_resume) == ("one", False)
    assert (two.name, two.rerun_on_resume, two.timeout) == ("renamed", True, 3)


def test_rerun_default_follows_whether_the_function_reads_resume_inputs() -> None:
    async def reads(ctx: Context) -> Any:
        return ctx.resume_inputs

    async def ignores(ctx: Context) -> None:
        return None

    assert FunctionNode(reads).rerun_on_resume is True
    assert FunctionNode(ignores).rerun_on_resume is False
    assert FunctionNode(reads, rerun_on_resume=False).rerun_on_resume is False


def test_bad_node_arguments_are_rejected() -> None:
    with pytest.raises(TypeError, match="FunctionNode needs a function"):
        FunctionNode(42)  # pyright: ignore[reportArgumentType] -- the point of the test
    with pytest.raises(ValueError, match="lambda has no usable name"):
        FunctionNode(lambda: None)
    with pytest.raises(ValueError, match="must be a Python identifier"):
        FunctionNode(lambda: None, name="has space")
    with pytest.raises(ValueError, match="timeout must be positive"):
        FunctionNode(print, name="p", timeout=0)
    with pytest.raises(ValueError, match="max_attempts"):
        RetryConfig(max_attempts=-1)
    with pytest.raises(ValueError, match="exception classes or class names, got 42"):
        RetryConfig(exceptions=[42])  # pyright: ignore[reportArgumentType] -- the point of the test


class TimeOffRequest(BaseModel):
    employee: str
    days: int


class TimeOffDecision(BaseModel):
    approved: bool


async def test_seed_004_evaluate_request_binds_the_input_into_its_type(
    make_harness: MakeHarness,
) -> None:
    def parse(node_input: str) -> TimeOffRequest:
        employee, days = node_input.split(":")
        return TimeOffRequest(employee=employee, days=int(days))

    def evaluate_request(request: TimeOffRequest):
        if request.days <= 1:
            return TimeOffDecision(approved=True)
        return RequestInput(
            interrupt_id="manager_approval",
            message="Please review this time off request.",
            payload=request,
            response_schema=TimeOffDecision,
        )

    h = await make_harness(Workflow(name="wf", edges=[("START", parse, evaluate_request)]))
    assert outputs(await h.start("ann:1"))[-1] == ("evaluate_request", {"approved": True})
    events = await h.start("bob:5")
    assert asked(events) == ["manager_approval"]
    call = events[-1].function_calls[0]
    assert call.args
    assert call.args["payload"] == {"employee": "bob", "days": 5}
    done = await h.answer(("manager_approval", {"approved": False}), wrap=False)
    assert outputs(done) == [("evaluate_request", {"approved": False})]


async def test_a_function_given_after_the_node_ran_is_the_one_called(
    make_harness: MakeHarness,
) -> None:
    """The node's function, replaced by assignment or in a `model_copy` after a run, is the
    one that runs next, bound by its own parameters (a new one may take other ones)."""

    def first(node_input: str) -> str:
        return f"first {node_input}"

    def second(ctx: Context, node_input: str) -> str:
        return f"second {node_input} in {ctx.node_path}"

    async def third(node_input: str):
        yield f"third {node_input}"

    ran = FunctionNode(first, name="step")
    h = await make_harness(Workflow(name="wf", edges=[("START", ran)]))
    assert outputs(await h.start("a")) == [("step", "first a")]
    copied = ran.model_copy(update={"func": third})

    ran.func = second
    assert outputs(await h.start("b")) == [("step", "second b in wf@1/step@1")]

    h = await make_harness(Workflow(name="copy", edges=[("START", copied)]))
    assert outputs(await h.start("c")) == [("step", "third c")]
    assert outputs(
        await (await make_harness(Workflow(name="wf", edges=[("START", ran)]))).start("d")
    ) == [("step", "second d in wf@1/step@1")]


async def test_a_node_deleting_a_state_key_gets_attribute_error_as_in_the_reference(
    make_harness: MakeHarness,
) -> None:
    def tidy(ctx: Context) -> list[str]:
        ctx.state["kept"] = 1
        refused: list[str] = []
        for key in ("kept", "missing"):
            try:
                del ctx.state[key]
            except AttributeError:
                refused.append(f"del {key}")
            try:
                ctx.state.pop(key, None)
            except AttributeError:
                refused.append(f"pop {key}")
        return refused

    h = await make_harness(Workflow(name="wf", edges=[("START", tidy)]))

    assert outputs(await h.start()) == [
        ("tidy", ["del kept", "pop kept", "del missing", "pop missing"])
    ]
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state["kept"] == 1


def test_a_function_given_later_sets_what_the_node_took_from_the_first() -> None:
    """What the node took from its function because the caller left it out (whether it
    runs again on resume, its description) follows a function given later; what the
    caller set stays."""

    def takes(node_input: str) -> str:
        """Takes the answer as it is."""
        return node_input

    def handles(ctx: Context) -> str:
        """Handles the answers itself."""
        return str(ctx.resume_inputs)

    node = FunctionNode(takes, name="step")
    assert (node.rerun_on_resume, node.description) == (False, "Takes the answer as it is.")
    copied = node.model_copy(update={"func": handles})
    node.func = handles
    set_apart = FunctionNode(takes, rerun_on_resume=False, description="mine")
    set_apart.func = handles
    set_later = FunctionNode(takes)
    set_later.rerun_on_resume = False
    set_later.func = handles

    assert (node.rerun_on_resume, node.description) == (True, "Handles the answers itself.")
    assert (copied.rerun_on_resume, copied.description) == (True, "Handles the answers itself.")
    assert (set_apart.rerun_on_resume, set_apart.description) == (False, "mine")
    assert set_later.rerun_on_resume is False
    assert node.model_copy(update={"func": takes, "rerun_on_resume": True}).rerun_on_resume


async def test_state_parameters_and_missing_parameter_error(make_harness: MakeHarness) -> None:
    def uses_state(limit: int, region: str = "eu") -> str:
        return f"{limit}/{region}"

    h = await make_harness(Workflow(name="wf", edges=[("START", uses_state)]), state={"limit": 3})
    assert outputs(await h.start()) == [("uses_state", "3/eu")]

    def needs(limit: int, other: str) -> None: ...

    h = await make_harness(Workflow(name="wf2", edges=[("START", needs)]))
    with pytest.raises(MissingParameterError) as caught:
        await h.start()
    assert str(caught.value) == (
        "node 'needs' needs parameter 'limit', but session state has no key 'limit' (and it is "
        "not the node's only input parameter); set state['limit'] before this node runs or give "
        "the parameter a default."
    )


async def test_state_writes_are_visible_downstream_and_ride_on_events(
    make_harness: MakeHarness,
) -> None:
    def writer(ctx: Context) -> str:
        ctx.state["count"] = 1
        return "w"

    def bumper(ctx: Context):
        yield Event(output="b", state={"count": ctx.state["count"] + 1, "temp:scratch": 1})

    def reader(count: int) -> int:
        return count

    h = await make_harness(Workflow(name="wf", edges=[("START", writer, bumper, reader)]))
    events = await h.start()
    assert outputs(events)[-1] == ("reader", 2)
    assert events[0].actions.state_delta == {"count": 1}
    assert events[1].actions.state_delta == {"count": 2}  # temp: keys ride on no event
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state == {"count": 2}


class _Stamped(FunctionNode):  # pyright: ignore[reportGeneralTypeIssues] -- a subclass, as code written for the reference makes
    """A function node whose own code writes the run's state around its function's."""

    async def call(self, ctx: Context, node_input: Any) -> object:  # pyright: ignore[reportIncompatibleMethodOverride] -- awaits the same
        ctx.state["stamped"] = "by call"
        return await super().call(ctx, node_input)

    async def run(self, ctx: Context, node_input: Any):  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator
        ctx.state["stamped"] = "by run"
        async for item in super().run(ctx, node_input):
            yield item


async def test_a_function_node_subclass_s_state_writes_land_though_its_function_takes_no_ctx(
    make_harness: MakeHarness,
) -> None:
    """The function takes no `ctx`, but the node's own code (a `FunctionNode` subclass's
    `call` or `run`) does: what it writes lands with the run, for the nodes after it."""

    async def returns(node_input: Any) -> str:
        return "returned"

    async def yields(node_input: Any):
        yield "yielded"

    def read(ctx: Context, node_input: str) -> str:
        return f"{node_input}, stamped {ctx.state.get('stamped')}"

    for func, said, by in ((yields, "yielded", "by run"), (returns, "returned", "by call")):
        stamped = _Stamped(func)  # pyright: ignore[reportCallIssue] -- FunctionNode's __init__, unseen in a subclass
        h = await make_harness(Workflow(name="wf", edges=[("START", stamped, read)]))

        events = await h.start()

        assert outputs(events)[-1] == ("read", f"{said}, stamped {by}")
        session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
        assert session is not None
        assert session.state == {"stamped": by}


async def test_second_output_in_one_run_fails_with_a_clear_error(make_harness: MakeHarness) -> None:
    def twice():
        yield 1
        yield 2

    h = await make_harness(Workflow(name="wf", edges=[("START", twice)]))
    with pytest.raises(OutputAlreadySetError, match="node 'twice' produced a second output"):
        await h.start()


async def test_retry_config_retries_then_succeeds_and_records_each_failure(
    make_harness: MakeHarness,
) -> None:
    attempts: list[int] = []

    def flaky(ctx: Context) -> str:
        attempts.append(ctx.attempt_count)
        if len(attempts) < 3:
            raise ConnectionError(f"try {len(attempts)}")
        return "ok"

    retry = RetryConfig(max_attempts=3, initial_delay=0, exceptions=("ConnectionError",))
    h = await make_harness(
        Workflow(name="wf", edges=[("START", FunctionNode(flaky, retry_config=retry))])
    )
    events = await h.start()
    assert attempts == [1, 2, 3]
    assert [(e.error_code, e.error_message) for e in events if e.error_code] == [
        ("ConnectionError", "try 1"),
        ("ConnectionError", "try 2"),
    ]
    assert outputs(events) == [("flaky", "ok")]


async def test_retry_skips_exceptions_not_listed(make_harness: MakeHarness) -> None:
    calls: list[int] = []

    def broken() -> None:
        calls.append(1)
        raise KeyError("nope")

    retry = RetryConfig(max_attempts=5, initial_delay=0, exceptions=(ConnectionError,))
    h = await make_harness(
        Workflow(name="wf", edges=[("START", FunctionNode(broken, retry_config=retry))])
    )
    with pytest.raises(KeyError):
        await h.start()
    assert calls == [1]


async def test_timeout_raises_node_timeout_error(make_harness: MakeHarness) -> None:
    async def slow() -> None:
        await asyncio.Event().wait()

    h = await make_harness(Workflow(name="wf", edges=[("START", FunctionNode(slow, timeout=0.05))]))
    with pytest.raises(NodeTimeoutError, match="node 'slow' timed out after 0.05 seconds"):
        await h.start()


async def test_loop_with_routes_gets_fresh_run_ids(make_harness: MakeHarness) -> None:
    def count(ctx: Context):
        n = ctx.state.get("n", 0) + 1
        yield Event(output=n, route="again" if n < 3 else "done", state={"n": n})
        return

    def finish(node_input: int) -> str:
        return f"done at {node_input}"

    wf = Workflow(name="wf", edges=[("START", count), (count, {"again": count, "done": finish})])
    h = await make_harness(wf)
    events = await h.start()
    assert [e.node_info.path for e in events if e.node_info] == [
        "wf@1/count@1",
        "wf@1/count@2",
        "wf@1/count@3",
        "wf@1/finish@1",
    ]
    assert outputs(events)[-1] == ("finish", "done at 3")


async def test_a_node_reached_by_two_edges_runs_once_per_trigger_with_its_own_run_id(
    make_harness: MakeHarness,
) -> None:
    def split(node_input: str) -> str:
        return node_input

    def left(node_input: str) -> str:
        return "L"

    def right(node_input: str) -> str:
        return "R"

    def merge(node_input: str) -> str:
        return f"merged {node_input}"

    wf = Workflow(name="wf", edges=[("START", split, (left, right), merge)])
    h = await make_harness(wf)
    events = await h.start("x")
    merged = sorted(
        (e.node_info.path, e.output)
        for e in events
        if e.node_info and e.node_info.name == "merge" and e.output is not None
    )
    # left and right run in parallel worker threads: which one arrives first is not fixed.
    assert [path for path, _ in merged] == ["wf@1/merge@1", "wf@1/merge@2"]
    assert sorted(str(output) for _, output in merged) == ["merged L", "merged R"]


async def test_join_waits_for_every_predecessor(make_harness: MakeHarness) -> None:
    async def left() -> str:
        await asyncio.sleep(0.01)
        return "L"

    def right() -> str:
        return "R"

    def final(node_input: dict[str, str]) -> str:
        return node_input["left"] + node_input["right"]

    join = JoinNode(name="join")
    h = await make_harness(Workflow(name="wf", edges=[("START", (left, right), join, final)]))
    events = await h.start()
    assert outputs(events)[-2:] == [("join", {"right": "R", "left": "L"}), ("final", "LR")]


async def test_max_concurrency_limits_parallel_children(make_harness: MakeHarness) -> None:
    running = 0
    peak = 0

    async def work(ctx: Context) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1

    names = [FunctionNode(work, name=f"w{i}") for i in range(4)]
    wf = Workflow(name="wf", edges=[("START", tuple(names))], max_concurrency=2)
    h = await make_harness(wf)
    await h.start()
    assert peak == 2


async def test_custom_base_node_subclass(make_harness: MakeHarness) -> None:
    from baton import BaseNode

    class Doubler(BaseNode):
        async def _run_impl(self, *, ctx: Context, node_input: types.Content):  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator
            # After START: the user's message, as in the reference.
            yield int((node_input.parts or [])[0].text or "") * 2

    h = await make_harness(Workflow(name="wf", edges=[("START", Doubler(name="double"))]))
    assert outputs(await h.start("21")) == [("double", 42)]


def test_retry_jitter_moves_each_wait_either_way_within_max_delay() -> None:
    random.seed(7)
    retry = RetryConfig(initial_delay=1, backoff_factor=2, max_delay=5, jitter=0.5)
    first = [retry.delay(1) for _ in range(2000)]
    # 1 s, give or take half
    assert 0.5 <= min(first) < 0.6
    assert 1.4 < max(first) <= 1.5
    # 8 s is past max_delay: capped to 5 / 1.5 before the jitter, so draws reach 5, not past.
    fourth = [retry.delay(4) for _ in range(2000)]
    assert 5 / 3 <= min(fourth) < 1.8
    assert 4.9 < max(fourth) <= 5
    # The reference's default jitter (1.0) applies when none is given: waits vary.
    assert len({RetryConfig().delay(1) for _ in range(5)}) > 1
    assert RetryConfig(jitter=0, max_delay=5).delay(4) == 5


async def test_a_node_run_reads_its_own_node_from_ctx_node_as_in_the_reference(
    make_harness: MakeHarness,
) -> None:
    seen: list[tuple[str, str]] = []

    def child(ctx: Context, node_input: str) -> str:
        assert ctx.node is not None
        seen.append((type(ctx.node).__name__, ctx.node.name))
        return node_input

    async def caller(ctx: Context, node_input: str) -> str:
        assert ctx.node is not None
        seen.append((type(ctx.node).__name__, ctx.node.name))
        return await ctx.run_node(FunctionNode(child, name="helper"), node_input)

    step = FunctionNode(caller, name="step", rerun_on_resume=True)
    h = await make_harness(Workflow(name="wf", edges=[("START", step)]))

    assert outputs(await h.start("a")) == [("helper", "a"), ("step", "a")]
    assert seen == [("FunctionNode", "step"), ("FunctionNode", "helper")]
