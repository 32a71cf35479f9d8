"""The calls of one model turn run at once, as the reference's (2.13.0): a call that ends
first does not wait for the others, and the turn's results come as one event once all
have ended. A call that ended is recorded as it ends: neither a sibling's failure nor a
crash runs it again (the crash: tests/agents/test_crash.py). Every backend.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import Field, JsonValue

from baton import BaseAgentState, LlmAgent, types
from baton.errors import UnknownInterruptError
from baton.events import REQUEST_CONFIRMATION_FUNCTION, Event
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus
from baton.tools import BaseTool, FunctionTool, LongRunningFunctionTool, ToolContext
from baton.types import FunctionCall
from tests.agents.agents import Boom
from tests.conftest import StoreFactory
from tests.harness import Harness, asked, build_harness
from tests.runner.test_rewind import session_events

TURN = [
    FunctionCall(id="c1", name="slow", args={"x": "a"}),
    FunctionCall(id="c2", name="fast", args={"x": "b"}),
]


@pytest.fixture
def service(stores: StoreFactory) -> BaseSessionService:
    return BaseSessionService(stores.open())


class Tools:
    """`slow` ends only after `fast` has: run one after the other in the turn's order,
    `slow` would wait for good (it gives up after a while and fails the test)."""

    def __init__(self, *, slow_fails: int = 0) -> None:
        self.log: list[str] = []
        self.fast_ended = asyncio.Event()
        self.slow_fails = slow_fails  # how many of slow's first runs fail

    async def slow(self, x: str) -> dict[str, JsonValue]:
        """Slow work.

        Args:
            x: what to work on.
        """
        self.log.append("slow starts")
        async with asyncio.timeout(10):  # a guard against a hang, not a measure
            await self.fast_ended.wait()
        if self.log.count("slow starts") <= self.slow_fails:
            self.log.append("slow fails")
            raise Boom("slow broke")
        self.log.append("slow ends")
        return {"slow": x}

    async def fast(self, x: str, tool_context: ToolContext) -> dict[str, JsonValue]:
        """Fast work.

        Args:
            x: what to work on.
        """
        self.log.append("fast starts")
        tool_context.state["fast"] = x
        self.log.append("fast ends")
        self.fast_ended.set()
        return {"fast": x}


async def harness(service: BaseSessionService, model: ScriptedModel, tools: Tools) -> Harness:
    agent = LlmAgent(name="a", model=model, tools=[tools.slow, tools.fast])
    return await build_harness(agent, service, resumable=True)


def shown(events: list[Event]) -> list[tuple[str, list[str], dict[str, JsonValue]]]:
    """(author, parts, state written) of each event with content."""
    seen: list[tuple[str, list[str], dict[str, JsonValue]]] = []
    for event in events:
        if event.content is None:
            continue
        parts: list[str] = []
        for part in event.content.parts or []:
            if part.function_call is not None:
                parts.append(f"call {part.function_call.id}")
            elif part.function_response is not None:
                response = part.function_response
                parts.append(f"{response.id} -> {response.response}")
            elif part.text is not None:
                parts.append(part.text)
        seen.append((event.author, parts, dict(event.actions.state_delta)))
    return seen


def sent(request: LlmRequest) -> list[tuple[str, list[str]]]:
    """(role, parts) of each content the model was sent."""
    return [(author, parts) for author, parts, _ in shown([_as_event(c) for c in request.contents])]


def _as_event(content: types.Content) -> Event:
    return Event(author=content.role or "", content=content)


async def test_the_calls_of_one_turn_run_at_once_and_their_results_are_one_event(
    service: BaseSessionService,
) -> None:
    tools = Tools()
    model = ScriptedModel([TURN, "done"])
    h = await harness(service, model, tools)

    events = await h.start("go")

    assert tools.log == ["slow starts", "fast starts", "fast ends", "slow ends"]
    turn: list[tuple[str, list[str], dict[str, JsonValue]]] = [
        ("a", ["call c1", "call c2"], {}),
        ("a", ["c1 -> {'slow': 'a'}", "c2 -> {'fast': 'b'}"], {"fast": "b"}),
        ("a", ["done"], {}),
    ]
    assert shown(events) == turn
    assert shown(await session_events(h)) == [("user", ["go"], {}), *turn]
    assert sent(model.requests[1]) == [
        ("user", ["go"]),
        ("model", ["call c1", "call c2"]),
        ("user", ["c1 -> {'slow': 'a'}", "c2 -> {'fast': 'b'}"]),
    ]


async def test_a_call_that_ended_does_not_run_again_when_its_sibling_failed(
    service: BaseSessionService,
) -> None:
    tools = Tools(slow_fails=1)
    model = ScriptedModel([TURN, "done"])
    h = await harness(service, model, tools)

    with pytest.raises(Boom, match="slow broke"):
        await h.start("go")
    failed = await h.invocation()
    events = await h.collect(invocation_id=failed.id)

    assert failed.status == InvocationStatus.FAILED
    assert tools.log == [
        "slow starts",
        "fast starts",
        "fast ends",
        "slow fails",
        "slow starts",
        "slow ends",
    ]
    assert shown(events) == [
        ("a", ["c1 -> {'slow': 'a'}", "c2 -> {'fast': 'b'}"], {"fast": "b"}),
        ("a", ["done"], {}),
    ]
    assert sent(model.requests[1])[-1] == ("user", ["c1 -> {'slow': 'a'}", "c2 -> {'fast': 'b'}"])
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_call_still_running_when_its_sibling_fails_is_cancelled_and_runs_again(
    service: BaseSessionService,
) -> None:
    """As in the reference (2.13.0, probed), a call that raises cancels the calls of its
    turn still running; the resume runs them again with the failed one."""
    log: list[str] = []
    resumed = asyncio.Event()

    async def slow(x: str) -> str:
        """Slow work, which ends only in the resumed run.

        Args:
            x: what to work on.
        """
        log.append("slow starts")
        try:
            async with asyncio.timeout(10):  # a guard against a hang, not a measure
                await resumed.wait()
        except asyncio.CancelledError:
            log.append("slow cancelled")
            raise
        log.append("slow ends")
        return x

    async def fast(x: str) -> str:
        """Fast work that fails the first time.

        Args:
            x: what to work on.
        """
        log.append("fast starts")
        if log.count("fast starts") == 1:
            raise Boom("fast broke")
        return x

    model = ScriptedModel([TURN, "done"])
    h = await build_harness(
        LlmAgent(name="a", model=model, tools=[slow, fast]), service, resumable=True
    )

    with pytest.raises(Boom, match="fast broke"):
        await h.start("go")
    resumed.set()
    events = await h.collect(invocation_id=(await h.invocation()).id)

    assert log[:3] == ["slow starts", "fast starts", "slow cancelled"]
    assert sorted(log[3:]) == ["fast starts", "slow ends", "slow starts"]
    assert shown(events)[0] == ("a", ["c1 -> {'result': 'a'}", "c2 -> {'result': 'b'}"], {})
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_call_waiting_for_confirmation_lets_its_sibling_end_and_runs_once_confirmed(
    service: BaseSessionService,
) -> None:
    tools = Tools()
    runs: list[str] = []

    def pay(amount: int) -> str:
        """Pay.

        Args:
            amount: how much.
        """
        runs.append("pay")
        return f"paid {amount}"

    turn = [FunctionCall(id="c1", name="pay", args={"amount": 5}), TURN[1]]
    model = ScriptedModel([turn, "done"])
    agent = LlmAgent(
        name="a", model=model, tools=[FunctionTool(pay, require_confirmation=True), tools.fast]
    )
    h = await build_harness(agent, service, resumable=True)

    first = await h.start("go")
    await h.answer(
        ("adk-confirm-c1", {"confirmed": True}), name=REQUEST_CONFIRMATION_FUNCTION, wrap=False
    )

    assert asked(first) == ["adk-confirm-c1"]
    assert shown(first)[1] == ("a", ["c2 -> {'fast': 'b'}"], {"fast": "b"})
    assert runs == ["pay"]
    assert tools.log == ["fast starts", "fast ends"]
    # as the reference sends it: the turn's results together, in the turn's order
    assert sent(model.requests[1])[-1] == (
        "user",
        ["c1 -> {'result': 'paid 5'}", "c2 -> {'fast': 'b'}"],
    )
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_long_running_call_starts_once_beside_a_plain_one(
    service: BaseSessionService,
) -> None:
    tools = Tools()
    started: list[str] = []

    def job(x: str) -> None:
        """Start a job.

        Args:
            x: what to do.
        """
        started.append(x)

    turn = [FunctionCall(id="c1", name="job", args={"x": "report"}), TURN[1]]
    model = ScriptedModel([turn, "done"])
    agent = LlmAgent(name="a", model=model, tools=[LongRunningFunctionTool(job), tools.fast])
    h = await build_harness(agent, service, resumable=True)

    first = await h.start("go")
    result = types.FunctionResponse(id="c1", name="job", response={"url": "r.pdf"})
    second = await h.collect(
        new_message=types.Content(role="user", parts=[types.Part(function_response=result)])
    )

    assert started == ["report"]
    assert tools.log == ["fast starts", "fast ends"]
    assert shown(first) == [
        ("a", ["call c1", "call c2"], {}),
        ("a", ["c2 -> {'fast': 'b'}"], {"fast": "b"}),
    ]
    assert shown(second)[-1] == ("a", ["done"], {})
    # as the reference sends it: the call's response follows the turn's results, which
    # had no part for it
    assert sent(model.requests[1])[-1] == (
        "user",
        ["c2 -> {'fast': 'b'}", "c1 -> {'url': 'r.pdf'}"],
    )
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_long_running_call_runs_at_once_with_the_others_its_interim_result_among_theirs(
    service: BaseSessionService,
) -> None:
    """As in the reference: the long-running call does not wait for the plain one, its
    interim result is a part of the turn's one result event, the model is sent it there,
    and the call's later response takes its place."""
    tools = Tools()
    model = ScriptedModel([TURN, "pending", "done"])
    agent = LlmAgent(name="a", model=model, tools=[LongRunningFunctionTool(tools.slow), tools.fast])
    h = await build_harness(agent, service, resumable=True)

    first = await h.start("go")
    result = types.FunctionResponse(id="c1", name="slow", response={"url": "r.pdf"})
    second = await h.collect(
        new_message=types.Content(role="user", parts=[types.Part(function_response=result)])
    )

    assert tools.log == ["slow starts", "fast starts", "fast ends", "slow ends"]
    turn: list[tuple[str, list[str], dict[str, JsonValue]]] = [
        ("a", ["call c1", "call c2"], {}),
        ("a", ["c1 -> {'slow': 'a'}", "c2 -> {'fast': 'b'}"], {"fast": "b"}),
        ("a", ["pending"], {}),
    ]
    assert shown(first) == turn
    assert first[0].long_running_tool_ids == {"c1"}
    assert asked(first) == ["c1"]
    assert sent(model.requests[1])[-1] == ("user", ["c1 -> {'slow': 'a'}", "c2 -> {'fast': 'b'}"])
    assert shown(second) == [("a", ["done"], {})]
    assert sent(model.requests[2]) == [
        ("user", ["go"]),
        ("model", ["call c1", "call c2"]),
        ("user", ["c1 -> {'url': 'r.pdf'}", "c2 -> {'fast': 'b'}"]),
    ]
    assert shown(await session_events(h)) == [
        ("user", ["go"], {}),
        *turn,
        ("user", ["c1 -> {'url': 'r.pdf'}"], {}),
        ("a", ["done"], {}),
    ]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


class PreviousLlmAgentState(BaseAgentState):
    """An LlmAgent's checkpoint as the release before concurrent calls reads it."""

    run_start: str
    started_calls: list[str] = Field(default_factory=list[str])


async def test_a_checkpoint_without_calls_ended_early_reads_in_the_previous_release(
    service: BaseSessionService,
) -> None:
    """A run written by this release and answered by a process of the previous one (a
    rolling upgrade): its checkpoints carry no finished calls unless some ended early."""
    tools = Tools()
    turn = [FunctionCall(id="c1", name="job", args={"x": "report"}), TURN[1]]

    async def job(x: str) -> None:  # ends with fast, at once: no call ends early
        """Start a job.

        Args:
            x: what to do.
        """

    model = ScriptedModel([turn, "done"])
    agent = LlmAgent(name="a", model=model, tools=[LongRunningFunctionTool(job), tools.fast])
    h = await build_harness(agent, service, resumable=True)
    await h.start("go")

    written = [e.actions.agent_state for e in await session_events(h) if e.author == "a"]
    checkpoints = [s for s in written if s is not None]
    assert len(checkpoints) >= 2
    for checkpoint in checkpoints:
        PreviousLlmAgentState.model_validate(checkpoint)


async def test_a_call_reads_what_a_call_of_the_same_turn_wrote(
    service: BaseSessionService,
) -> None:
    """As the reference's calls share the session's state: the second `add` builds on
    the first one's write, and the turn's result keeps both items."""

    async def add(item: str, tool_context: ToolContext) -> list[JsonValue]:
        """Add an item to the cart.

        Args:
            item: the item.
        """
        before = tool_context.state.get("cart", [])
        assert isinstance(before, list)
        cart: list[JsonValue] = [*before, item]
        tool_context.state["cart"] = cart
        return cart

    await two_adds_keep_both_items(service, add)


async def test_the_sync_tools_of_one_turn_run_one_after_another(
    service: BaseSessionService,
) -> None:
    """As the reference runs a `def` tool on its event loop: the second `add` starts once
    the first has ended, so a read-modify-write of the state that waits between its read
    and its write (a slow lookup) loses nothing."""
    log: list[str] = []

    def add(item: str, tool_context: ToolContext) -> list[JsonValue]:
        """Add an item to the cart.

        Args:
            item: the item.
        """
        log.append(f"{item} starts")
        before = tool_context.state.get("cart", [])
        assert isinstance(before, list)
        time.sleep(0.05)  # a slow lookup between the read and the write
        cart: list[JsonValue] = [*before, item]
        tool_context.state["cart"] = cart
        log.append(f"{item} ends")
        return cart

    await two_adds_keep_both_items(service, add)

    assert log == ["a starts", "a ends", "b starts", "b ends"]


async def two_adds_keep_both_items(service: BaseSessionService, add: Callable[..., Any]) -> None:
    """A turn of two `add` calls (items a, then b) gives ['a'] then ['a', 'b'], and the
    session keeps both items."""
    turn = [
        FunctionCall(id="c1", name="add", args={"item": "a"}),
        FunctionCall(id="c2", name="add", args={"item": "b"}),
    ]
    model = ScriptedModel([turn, "done"])
    h = await build_harness(LlmAgent(name="a", model=model, tools=[add]), service, resumable=True)
    events = await h.start("go")

    assert shown(events)[1] == (
        "a",
        ["c1 -> {'result': ['a']}", "c2 -> {'result': ['a', 'b']}"],
        {"cart": ["a", "b"]},
    )
    session = await h.service.store.get_session(h.key)
    assert session is not None
    assert session.state == {"cart": ["a", "b"]}


async def test_two_calls_sharing_an_id_both_run_once_and_both_results_are_kept(
    service: BaseSessionService,
) -> None:
    """A model may give two calls of a turn one id: as in the reference, both run, the
    turn's result event holds both results, and the model is sent both. Here the second
    ends first and the first fails once: the second is not run again on the resume."""
    tools = Tools(slow_fails=1)
    turn = [
        FunctionCall(id="c1", name="slow", args={"x": "a"}),
        FunctionCall(id="c1", name="fast", args={"x": "b"}),
    ]
    model = ScriptedModel([turn, "done"])
    keys: list[str] = []

    def note_key(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> None:
        keys.append(tool_context.idempotency_key.rpartition("/")[2])

    agent = LlmAgent(
        name="a", model=model, tools=[tools.slow, tools.fast], before_tool_callback=note_key
    )
    h = await build_harness(agent, service, resumable=True)

    with pytest.raises(Boom, match="slow broke"):
        await h.start("go")
    events = await h.collect(invocation_id=(await h.invocation()).id)

    assert tools.log == [
        "slow starts",
        "fast starts",
        "fast ends",
        "slow fails",
        "slow starts",
        "slow ends",
    ]
    results = ("a", ["c1 -> {'slow': 'a'}", "c1 -> {'fast': 'b'}"], {"fast": "b"})
    assert shown(events) == [results, ("a", ["done"], {})]
    assert sent(model.requests[1])[-1] == ("user", results[1])
    assert keys == ["c1", "c1#1", "c1"]  # each call's own idempotency key, kept on resume
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_scalar_key_two_calls_write_keeps_the_later_call_in_the_turn(
    service: BaseSessionService,
) -> None:
    """As in the reference: the turn's result merges the calls' writes in the turn's
    order, so the second call's value of a scalar key wins although the first wrote
    last; a list or dict key keeps the value written last (deep merged, for a dict),
    as a call may have built on another's write."""
    fast_wrote = asyncio.Event()

    async def first(tool_context: ToolContext) -> str:
        """Write once the second call has written."""
        async with asyncio.timeout(10):  # a guard against a hang, not a measure
            await fast_wrote.wait()
        tool_context.state["k"] = "first"
        tool_context.state["d"] = {"by": "first", "first": True}
        return "ok"

    async def second(tool_context: ToolContext) -> str:
        """Write at once."""
        tool_context.state["k"] = "second"
        tool_context.state["d"] = {"by": "second", "second": True}
        fast_wrote.set()
        return "ok"

    turn = [FunctionCall(id="c1", name="first"), FunctionCall(id="c2", name="second")]
    model = ScriptedModel([turn, "done"])
    h = await build_harness(
        LlmAgent(name="a", model=model, tools=[first, second]), service, resumable=True
    )
    events = await h.start("go")

    written = {"k": "second", "d": {"by": "first", "second": True, "first": True}}
    assert shown(events)[1][2] == written
    session = await h.service.store.get_session(h.key)
    assert session is not None
    assert session.state == written


async def test_a_long_running_call_that_asks_for_confirmation_runs_once_confirmed(
    service: BaseSessionService,
) -> None:
    """A long-running tool that asks a person to confirm has not started: confirmed, it
    runs (and its call then waits for its result), as a plain tool's call does."""
    runs: list[str] = []

    def job(x: str, tool_context: ToolContext) -> dict[str, JsonValue] | None:
        """Start a job.

        Args:
            x: what to do.
        """
        if tool_context.tool_confirmation is None:
            tool_context.request_confirmation(hint="start it?")
            return None
        runs.append(x)
        return {"status": "started"}

    turn = [FunctionCall(id="c1", name="job", args={"x": "report"})]
    model = ScriptedModel([turn, "pending", "done"])
    agent = LlmAgent(name="a", model=model, tools=[LongRunningFunctionTool(job)])
    h = await build_harness(agent, service, resumable=True)

    first = await h.start("go")
    await h.answer(
        ("adk-confirm-c1", {"confirmed": True}), name=REQUEST_CONFIRMATION_FUNCTION, wrap=False
    )

    result = types.FunctionResponse(id="c1", name="job", response={"url": "r.pdf"})
    await h.collect(
        new_message=types.Content(role="user", parts=[types.Part(function_response=result)])
    )

    assert "adk-confirm-c1" in asked(first)
    assert runs == ["report"]
    assert sent(model.requests[2])[-1] == ("user", ["c1 -> {'url': 'r.pdf'}"])
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


@pytest.mark.parametrize("paid_first", [True, False], ids=["pay-first", "pay-second"])
async def test_a_call_asking_for_confirmation_beside_one_sharing_its_id_runs_once_confirmed(
    service: BaseSessionService, paid_first: bool
) -> None:
    """Two calls of a turn share an id, and one needs a confirmation: the other runs at
    once; confirmed, the first runs once and the model is sent both results in the
    turn's order. (The reference, 2.13.0, fails the resume with 'Function call name
    mismatch for ID'.)"""
    tools = Tools()
    runs: list[str] = []

    def pay(amount: int) -> str:
        """Pay.

        Args:
            amount: how much.
        """
        runs.append("pay")
        return f"paid {amount}"

    paying = FunctionCall(id="c1", name="pay", args={"amount": 5})
    other = FunctionCall(id="c1", name="fast", args={"x": "b"})
    turn = [paying, other] if paid_first else [other, paying]
    model = ScriptedModel([turn, "done"])
    agent = LlmAgent(
        name="a", model=model, tools=[FunctionTool(pay, require_confirmation=True), tools.fast]
    )
    h = await build_harness(agent, service, resumable=True)

    request = "adk-confirm-c1" if paid_first else "adk-confirm-c1#1"  # the call's key
    first = await h.start("go")
    second = await h.answer(
        (request, {"confirmed": True}), name=REQUEST_CONFIRMATION_FUNCTION, wrap=False
    )

    assert asked(first) == [request]
    assert shown(first)[1] == ("a", ["c1 -> {'fast': 'b'}"], {"fast": "b"})
    assert runs == ["pay"]
    assert tools.log == ["fast starts", "fast ends"]
    results = ["c1 -> {'result': 'paid 5'}", "c1 -> {'fast': 'b'}"]
    if not paid_first:
        results.reverse()
    assert sent(model.requests[1])[-1] == ("user", results)
    assert shown(second)[-1] == ("a", ["done"], {})
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


@pytest.mark.parametrize("first", [0, 1], ids=["first-answered-first", "second-answered-first"])
async def test_two_calls_sharing_an_id_each_ask_for_their_own_confirmation(
    service: BaseSessionService, first: int
) -> None:
    """Two calls of a turn share an id and both ask for a confirmation (one statically, one
    from its body): each gets its own request (the second's id from its key, c1#1), an
    answer runs only its own call, the run waits for the other, and the model is sent
    both results in the turn's order. An id no call was asked under is refused."""
    runs: list[str] = []

    def pay(amount: int) -> str:
        """Pay.

        Args:
            amount: how much.
        """
        runs.append("pay")
        return f"paid {amount}"

    def refund(amount: int, tool_context: ToolContext) -> str:
        """Refund.

        Args:
            amount: how much.
        """
        if tool_context.tool_confirmation is None:
            tool_context.request_confirmation(hint="Refund?")
            return "waiting"
        runs.append("refund")
        return f"refunded {amount}"

    turn = [
        FunctionCall(id="c1", name="pay", args={"amount": 5}),
        FunctionCall(id="c1", name="refund", args={"amount": 7}),
    ]
    model = ScriptedModel([turn, "done"])
    agent = LlmAgent(
        name="a", model=model, tools=[FunctionTool(pay, require_confirmation=True), refund]
    )
    h = await build_harness(agent, service, resumable=True)
    ids = ["adk-confirm-c1", "adk-confirm-c1#1"]
    names = ["pay", "refund"]

    started = await h.start("go")
    with pytest.raises(UnknownInterruptError, match="adk-confirm-c1#2"):
        await h.answer(
            ("adk-confirm-c1#2", {"confirmed": True}),
            name=REQUEST_CONFIRMATION_FUNCTION,
            wrap=False,
        )
    one = await h.answer(
        (ids[first], {"confirmed": True}), name=REQUEST_CONFIRMATION_FUNCTION, wrap=False
    )
    ran_first = list(runs)
    status = (await h.invocation()).status
    other = await h.answer(
        (ids[1 - first], {"confirmed": True}), name=REQUEST_CONFIRMATION_FUNCTION, wrap=False
    )

    assert asked(started) == ids
    assert ran_first == [names[first]]
    assert asked(one) == []
    assert status == InvocationStatus.PAUSED
    assert runs == [names[first], names[1 - first]]
    assert len(model.requests) == 2
    assert sent(model.requests[1])[-1] == (
        "user",
        ["c1 -> {'result': 'paid 5'}", "c1 -> {'result': 'refunded 7'}"],
    )
    assert shown(other)[-1] == ("a", ["done"], {})
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


@pytest.mark.parametrize("first", [0, 1], ids=["first-answered-first", "second-answered-first"])
async def test_two_calls_of_one_tool_sharing_an_id_each_get_their_own_confirmed_result(
    service: BaseSessionService, first: int
) -> None:
    """The model calls one tool twice in a turn under one id, and both calls need a
    confirmation: whichever request is answered first, each call runs with its own
    arguments once its own request is answered, and the model is sent each call's result
    in the turn's order (the second rejected here: the model is told so for it alone)."""
    runs: list[int] = []

    def pay(amount: int) -> str:
        """Pay.

        Args:
            amount: how much.
        """
        runs.append(amount)
        return f"paid {amount}"

    turn = [
        FunctionCall(id="c1", name="pay", args={"amount": 5}),
        FunctionCall(id="c1", name="pay", args={"amount": 7}),
    ]
    model = ScriptedModel([turn, "done"])
    agent = LlmAgent(name="a", model=model, tools=[FunctionTool(pay, require_confirmation=True)])
    h = await build_harness(agent, service, resumable=True)
    ids = ["adk-confirm-c1", "adk-confirm-c1#1"]
    confirmed = [True, False]

    started = await h.start("go")
    await h.answer(
        (ids[first], {"confirmed": confirmed[first]}),
        name=REQUEST_CONFIRMATION_FUNCTION,
        wrap=False,
    )
    status = (await h.invocation()).status
    last = await h.answer(
        (ids[1 - first], {"confirmed": confirmed[1 - first]}),
        name=REQUEST_CONFIRMATION_FUNCTION,
        wrap=False,
    )

    assert asked(started) == ids
    assert status == InvocationStatus.PAUSED
    assert runs == [5]
    assert len(model.requests) == 2
    assert sent(model.requests[1])[-1] == (
        "user",
        ["c1 -> {'result': 'paid 5'}", "c1 -> {'error': 'This tool call is rejected.'}"],
    )
    assert shown(last)[-1] == ("a", ["done"], {})
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
