"""An agent called as a tool (`AgentTool`) runs at once with the other calls of its
caller's model turn, as in the reference (google-adk 2.13.0, probed): a plain tool runs
while the agent's model does, the turn's results are one event in the calls' order, and a
call that raises cancels the others. Its events are committed as they come, so a run
stopped mid-turn and resumed by another runner runs no finished call again. Every backend.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from pydantic import JsonValue

from baton import LlmAgent
from baton.models import LlmRequest, ScriptedModel
from baton.models.scripted import ScriptItem
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus
from baton.tools import AgentTool
from baton.types import FunctionCall
from tests.agents.agents import Boom
from tests.agents.test_parallel_calls import shown
from tests.conftest import StoreFactory
from tests.harness import attach_harness, build_harness

TURN = [
    FunctionCall(id="c1", name="first", args={}),
    FunctionCall(id="c2", name="helper", args={"request": "look it up"}),
    FunctionCall(id="c3", name="last", args={}),
]
GUARD = 10  # seconds: a guard against a hang, not a measure


@pytest.fixture
def service(stores: StoreFactory) -> BaseSessionService:
    return BaseSessionService(stores.open())


def boss(helper: LlmAgent, *tools: object, model: ScriptedModel | None = None) -> LlmAgent:
    model = model or ScriptedModel([TURN, "done"])
    return LlmAgent(name="boss", model=model, tools=[*tools, AgentTool(agent=helper)])  # pyright: ignore[reportArgumentType] -- plain functions are tools


async def test_an_agent_called_as_a_tool_runs_while_a_plain_call_does(
    service: BaseSessionService,
) -> None:
    """`first` ends only once the helper's model was asked, and the helper's model
    answers only once `first` started: run one after the other, either would wait for
    good. `last` ends first; the results are still in the calls' order."""
    log: list[str] = []
    first_started, helper_asked = asyncio.Event(), asyncio.Event()

    async def helper_turn(request: LlmRequest) -> ScriptItem:
        log.append("helper's model asked")
        helper_asked.set()
        async with asyncio.timeout(GUARD):
            await first_started.wait()
        return "found it"

    async def first() -> str:
        """The first call."""
        log.append("first starts")
        first_started.set()
        async with asyncio.timeout(GUARD):
            await helper_asked.wait()
        log.append("first ends")
        return "one"

    async def last() -> str:
        """The last call."""
        log.append("last runs")
        return "three"

    helper = LlmAgent(name="helper", model=ScriptedModel(responder=helper_turn))
    h = await build_harness(boss(helper, first, last), service, resumable=True)

    events = await h.start("go")

    assert log[0] == "first starts"
    assert sorted(log[1:3]) == ["helper's model asked", "last runs"]
    assert log[3:] == ["first ends"]
    assert shown(events) == [
        ("boss", ["call c1", "call c2", "call c3"], {}),
        ("helper", ["found it"], {}),
        (
            "boss",
            [
                "c1 -> {'result': 'one'}",
                "c2 -> {'result': 'found it'}",
                "c3 -> {'result': 'three'}",
            ],
            {},
        ),
        ("boss", ["done"], {}),
    ]


async def test_a_call_that_raises_cancels_the_agent_called_beside_it(
    service: BaseSessionService,
) -> None:
    log: list[str] = []
    helper_asked = asyncio.Event()

    async def helper_turn(request: LlmRequest) -> ScriptItem:
        log.append("helper's model asked")
        helper_asked.set()
        try:
            await asyncio.Event().wait()  # until cancelled
        except asyncio.CancelledError:
            log.append("helper's model cancelled")
            raise
        return "never"

    async def first() -> str:
        """Work that goes on until cancelled."""
        log.append("first starts")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            log.append("first cancelled")
            raise
        return "never"

    async def last() -> str:
        """Work that fails once the helper's model was asked."""
        async with asyncio.timeout(GUARD):
            await helper_asked.wait()
        log.append("last raises")
        raise Boom("last broke")

    helper = LlmAgent(name="helper", model=ScriptedModel(responder=helper_turn))
    h = await build_harness(boss(helper, first, last), service, resumable=True)

    with pytest.raises(Boom, match="last broke"):
        await h.start("go")

    assert log[:3] == ["first starts", "helper's model asked", "last raises"]
    assert sorted(log[3:]) == ["first cancelled", "helper's model cancelled"]
    assert (await h.invocation()).status == InvocationStatus.FAILED


async def test_a_turn_stopped_mid_way_resumes_without_running_a_finished_call_again(
    stores: StoreFactory,
) -> None:
    """The run stops (its consumer closes it) once the helper's tool result is committed,
    `first` having ended and `last` still running; another runner on another store
    resumes it by id: `first`, the helper's tool and its first model turn do not run
    again, and the turn's results are one event in the calls' order."""
    runs: Counter[str] = Counter()
    resumed = asyncio.Event()

    def helper_turn(request: LlmRequest) -> ScriptItem:
        runs["helper's model"] += 1
        if runs["helper's model"] == 1:
            return FunctionCall(id="h1", name="lookup", args={})
        return "found it"

    def lookup() -> str:
        """The helper's own tool."""
        runs["lookup"] += 1
        return "the answer"

    async def first() -> str:
        """Ends at once."""
        runs["first"] += 1
        return "one"

    async def last() -> str:
        """Ends only in the resumed run."""
        runs["last starts"] += 1
        async with asyncio.timeout(GUARD):
            await resumed.wait()
        runs["last ends"] += 1
        return "three"

    boss_model = ScriptedModel([TURN, "done"])  # one script over both runners

    def tree() -> LlmAgent:
        helper = LlmAgent(name="helper", model=ScriptedModel(responder=helper_turn), tools=[lookup])
        return boss(helper, first, last, model=boss_model)

    h = await build_harness(tree(), BaseSessionService(stores.open()), resumable=True)
    seen = await h.start_until(
        lambda events: events[-1].author == "helper"
        and events[-1].content is not None
        and bool(events[-1].content.function_responses)
    )
    invocation = await h.invocation()
    assert invocation.status != InvocationStatus.COMPLETED

    resumed.set()
    again = attach_harness(tree(), BaseSessionService(stores.open()), h.session_id, resumable=True)
    events = await again.collect(invocation_id=invocation.id)

    assert runs == Counter(
        {"first": 1, "lookup": 1, "helper's model": 2, "last starts": 2, "last ends": 1}
    )
    results: list[tuple[str, list[str], dict[str, JsonValue]]] = [
        (
            "boss",
            [
                "c1 -> {'result': 'one'}",
                "c2 -> {'result': 'found it'}",
                "c3 -> {'result': 'three'}",
            ],
            {},
        ),
        ("boss", ["done"], {}),
    ]
    assert shown(seen)[-1] == ("helper", ["h1 -> {'result': 'the answer'}"], {})
    assert shown(events) == [("helper", ["found it"], {}), *results]
    assert len(boss_model.requests) == 2
    assert (await again.invocation()).status == InvocationStatus.COMPLETED
