"""Two calls of one agent in a model turn (an `AgentTool`, or a single-turn sub-agent)
run at once, as in the reference (google-adk 2.13.0 runs a response's calls with
`asyncio.gather`), each with checkpoints of its own: a run stopped mid-turn resumes each
call where it was, and when both wait for a person, both questions are open and each
answer goes to its own call, even after a restart. Every backend.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from pydantic import JsonValue

from baton import LlmAgent, types
from baton.agents.delegation import call_branch
from baton.events import Event
from baton.models import LlmRequest, ScriptedModel
from baton.models.scripted import ScriptItem
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus
from baton.tools import AgentTool, LongRunningFunctionTool
from baton.types import FunctionCall
from tests.agents.test_parallel_calls import shown
from tests.agents.test_single_turn_node import seen
from tests.conftest import StoreFactory
from tests.harness import Harness, attach_harness, build_harness

GUARD = 10  # seconds: a guard against a hang, not a measure
TURN = [
    FunctionCall(id="c1", name="helper", args={"request": "a"}),
    FunctionCall(id="c2", name="helper", args={"request": "b"}),
]
DOTTED = [call.model_copy(update={"id": f"call.{n}"}) for n, call in enumerate(TURN)]
RESULTS = ["c1 -> {'result': 'found a'}", "c2 -> {'result': 'found b'}"]


@pytest.fixture
def service(stores: StoreFactory) -> BaseSessionService:
    return BaseSessionService(stores.open())


def asked_for(request: LlmRequest) -> str:
    """What the helper was asked on this call: "a" or "b"."""
    return seen(request)[0].removeprefix("user: ")


async def test_two_calls_of_one_agent_tool_run_at_once(service: BaseSessionService) -> None:
    """Each call's model answers only once both calls' models were asked: run one after
    the other, the first would wait for good (the guard fails the test)."""
    asked: list[str] = []
    both_asked = asyncio.Event()

    async def helper_turn(request: LlmRequest) -> ScriptItem:
        asked.append(asked_for(request))
        if len(asked) == 2:
            both_asked.set()
        async with asyncio.timeout(GUARD):
            await both_asked.wait()
        return f"found {asked_for(request)}"

    helper = LlmAgent(name="helper", model=ScriptedModel(responder=helper_turn))
    boss_model = ScriptedModel([TURN, "done"])
    boss = LlmAgent(name="boss", model=boss_model, tools=[AgentTool(agent=helper)])
    h = await build_harness(boss, service, resumable=True)

    events = await h.start("go")

    assert sorted(asked) == ["a", "b"]
    assert shown(events)[0] == ("boss", ["call c1", "call c2"], {})
    assert sorted(shown(events)[1:3]) == [("helper", ["found a"], {}), ("helper", ["found b"], {})]
    assert shown(events)[3:] == [("boss", RESULTS, {}), ("boss", ["done"], {})]
    assert seen(boss_model.requests[1])[-1] == (
        "user: result helper={'result': 'found a'}, result helper={'result': 'found b'}"
    )
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


@pytest.mark.parametrize("ids", [("c1", "c2"), ("call.1", "call.2")], ids=["plain", "dotted"])
async def test_a_turn_stopped_mid_way_resumes_each_call_from_its_own_checkpoint(
    stores: StoreFactory, ids: tuple[str, str]
) -> None:
    """Both calls' helpers ran their tool (committed), then the run stops; another
    runner on another store resumes it by id: neither tool nor either first model turn
    runs again, and each call's model sees its own tool result (call ids with dots too,
    as a model may give)."""
    runs: Counter[str] = Counter()
    resumed = asyncio.Event()

    async def helper_turn(request: LlmRequest) -> ScriptItem:
        which = asked_for(request)
        if len(seen(request)) == 1:
            runs[f"first turn {which}"] += 1
            return FunctionCall(id=f"l{which}", name="lookup", args={"x": which})
        async with asyncio.timeout(GUARD):
            await resumed.wait()  # the first runner stops before this turn ends
        runs[f"second turn {which}"] += 1
        assert seen(request)[-1] == f"user: result lookup={{'result': 'value of {which}'}}"
        return f"found {which}"

    def lookup(x: str) -> str:
        """The helper's own tool."""
        runs[f"lookup {x}"] += 1
        return f"value of {x}"

    turn = [call.model_copy(update={"id": i}) for call, i in zip(TURN, ids, strict=True)]
    boss_model = ScriptedModel([turn, "done"])  # one script over both runners

    def tree() -> LlmAgent:
        helper = LlmAgent(name="helper", model=ScriptedModel(responder=helper_turn), tools=[lookup])
        return LlmAgent(name="boss", model=boss_model, tools=[AgentTool(agent=helper)])

    h = await build_harness(tree(), BaseSessionService(stores.open()), resumable=True)
    read = await h.start_until(lambda events: len(_looked_up(events)) == 2)
    assert _looked_up(read) == {call_branch(None, "helper", i) for i in ids}
    invocation = await h.invocation()
    assert invocation.status != InvocationStatus.COMPLETED

    resumed.set()
    again = attach_harness(tree(), BaseSessionService(stores.open()), h.session_id, resumable=True)
    events = await again.collect(invocation_id=invocation.id)

    assert runs == Counter(
        {
            "first turn a": 1,
            "first turn b": 1,
            "lookup a": 1,
            "lookup b": 1,
            "second turn a": 1,
            "second turn b": 1,
        }
    )
    results = [r.replace("c1", ids[0]).replace("c2", ids[1]) for r in RESULTS]
    assert shown(events)[-2:] == [("boss", results, {}), ("boss", ["done"], {})]
    assert len(boss_model.requests) == 2
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


def ticket(reason: str) -> None:
    """Files a ticket; a person answers it."""


def sub_agent_tree(boss_model: ScriptedModel, helper_model: ScriptedModel) -> LlmAgent:
    helper = LlmAgent(
        name="helper",
        model=helper_model,
        mode="single_turn",
        tools=[LongRunningFunctionTool(ticket)],
    )
    return LlmAgent(name="boss", model=boss_model, sub_agents=[helper])


async def open_ids(h: Harness) -> set[str]:
    return {i.interrupt_id for i in await h.service.store.list_interrupts("app", "u")}


def ticket_answer(iid: str, status: str) -> types.Content:
    response = types.FunctionResponse(id=iid, name="ticket", response={"status": status})
    return types.Content(role="user", parts=[types.Part(function_response=response)])


@pytest.mark.parametrize("first_answered", ["ta", "tb"])
async def test_both_calls_wait_and_each_answer_after_a_restart_goes_to_its_own_call(
    stores: StoreFactory, first_answered: str
) -> None:
    """Both calls of the sub-agent ask a person at once. Each answer comes to a new
    runner (a restarted process) resuming the run by its id: it ends its own call only,
    runs nothing that ended again, and the parent's model gets both results in the turn's
    order once both are answered. The calls' ids have dots, as a model may give them."""
    runs: Counter[str] = Counter()

    def helper_turn(request: LlmRequest) -> ScriptItem:
        which = asked_for(request)
        runs[f"helper {which} turn {len(seen(request))}"] += 1
        if len(seen(request)) == 1:
            return FunctionCall(id=f"t{which}", name="ticket", args={"reason": which})
        assert seen(request)[-1] == f"user: result ticket={{'status': 'ok {which}'}}"
        return f"found {which}"

    boss_model = ScriptedModel([DOTTED, "done"])

    def tree() -> LlmAgent:
        return sub_agent_tree(boss_model, ScriptedModel(responder=helper_turn))

    h = await build_harness(tree(), BaseSessionService(stores.open()), resumable=True)
    await h.start("go")
    assert await open_ids(h) == {"ta", "tb"}
    invocation = await h.invocation()
    assert invocation.status == InvocationStatus.PAUSED

    later = "tb" if first_answered == "ta" else "ta"
    answers: list[list[Event]] = []
    for iid in (first_answered, later):
        runner = attach_harness(
            tree(), BaseSessionService(stores.open()), h.session_id, resumable=True
        )
        status = f"ok {iid.removeprefix('t')}"
        answers.append(
            await runner.collect(
                new_message=ticket_answer(iid, status), invocation_id=invocation.id
            )
        )
        if iid == first_answered:
            assert await open_ids(h) == {later}
            assert (await h.invocation()).status == InvocationStatus.PAUSED

    first_which = first_answered.removeprefix("t")
    assert shown(answers[0]) == [
        ("helper", [f"found {first_which}"], {}),
        (
            "boss",
            [f"call.{'0' if first_which == 'a' else '1'} -> {{'result': 'found {first_which}'}}"],
            {},
        ),
    ]
    assert shown(answers[1])[-1] == ("boss", ["done"], {})
    assert runs == Counter(
        {"helper a turn 1": 1, "helper b turn 1": 1, "helper a turn 3": 1, "helper b turn 3": 1}
    )
    assert seen(boss_model.requests[1])[-1] == (
        "user: result helper={'result': 'found a'}, result helper={'result': 'found b'}"
    )
    assert await open_ids(h) == set()
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_an_answer_for_a_call_that_is_not_waiting_is_refused_on_every_backend(
    stores: StoreFactory,
) -> None:
    """A bad answer (an id neither call asked) while both calls wait: refused, and both
    questions stay open for their own answers."""
    boss_model = ScriptedModel([TURN, "done"])

    def helper_turn(request: LlmRequest) -> ScriptItem:
        which = asked_for(request)
        if len(seen(request)) == 1:
            return FunctionCall(id=f"t{which}", name="ticket", args={"reason": which})
        return f"found {which}"

    h = await build_harness(
        sub_agent_tree(boss_model, ScriptedModel(responder=helper_turn)),
        BaseSessionService(stores.open()),
        resumable=True,
    )
    await h.start("go")
    invocation = await h.invocation()

    with pytest.raises(ValueError, match="tz"):
        await h.collect(new_message=ticket_answer("tz", "ok"), invocation_id=invocation.id)

    assert await open_ids(h) == {"ta", "tb"}
    await h.collect(new_message=ticket_answer("ta", "ok a"), invocation_id=invocation.id)
    await h.collect(new_message=ticket_answer("tb", "ok b"), invocation_id=invocation.id)
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
    answered: JsonValue = seen(boss_model.requests[1])[-1]
    assert (
        answered == "user: result helper={'result': 'found a'}, result helper={'result': 'found b'}"
    )


def by_name(name: str, branch: str | None, base: str | None) -> str:
    """An earlier baton's key of an agent's checkpoint: its name, wherever it ran."""
    del branch, base
    return name


def no_scope(branch: str | None, base: str | None) -> str:
    """An earlier baton's scope of an agent's checkpoints: none."""
    del branch, base
    return ""


@contextmanager
def keyed_by_name(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """An earlier baton's writer of checkpoints, by agent name, while in the block."""
    with monkeypatch.context() as old:
        for module in ("baton.workflow.execution", "baton.agents.base_agent"):
            old.setattr(f"{module}.agent_key", by_name)
        for module in ("baton.agents.context", "baton.agents.base_agent"):
            old.setattr(f"{module}.call_scope", no_scope)
        yield old


async def test_a_call_paused_by_a_baton_keying_checkpoints_by_agent_resumes_where_it_was(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run paused by an earlier baton, which kept a delegated call's checkpoints by
    agent name (its writer stands in here), resumes in this one: the sub-agent's tool
    and model turns that ran are not run again."""
    runs: Counter[str] = Counter()

    def helper_turn(request: LlmRequest) -> ScriptItem:
        asked = len(seen(request))
        runs[f"helper turn {asked}"] += 1
        if asked == 1:
            return FunctionCall(id="l1", name="lookup", args={"x": "a"})
        if asked == 3:
            return FunctionCall(id="ta", name="ticket", args={"reason": "a"})
        return "found a"

    def lookup(x: str) -> str:
        """The helper's own tool."""
        runs[f"lookup {x}"] += 1
        return f"value of {x}"

    boss_model = ScriptedModel([[TURN[0]], "done"])

    def tree() -> LlmAgent:
        helper = LlmAgent(
            name="helper",
            model=ScriptedModel(responder=helper_turn),
            mode="single_turn",
            tools=[lookup, LongRunningFunctionTool(ticket)],
        )
        return LlmAgent(name="boss", model=boss_model, sub_agents=[helper])

    with keyed_by_name(monkeypatch):
        h = await build_harness(tree(), BaseSessionService(stores.open()), resumable=True)
        await h.start("go")
    invocation = await h.invocation()
    assert invocation.status == InvocationStatus.PAUSED

    again = attach_harness(tree(), BaseSessionService(stores.open()), h.session_id, resumable=True)
    events = await again.collect(
        new_message=ticket_answer("ta", "ok a"), invocation_id=invocation.id
    )

    assert runs == Counter(
        {"helper turn 1": 1, "lookup a": 1, "helper turn 3": 1, "helper turn 5": 1}
    )
    assert shown(events)[-2:] == [
        ("boss", ["c1 -> {'result': 'found a'}"], {}),
        ("boss", ["done"], {}),
    ]
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


async def test_a_second_call_paused_by_a_baton_keying_checkpoints_by_agent_gets_its_answer(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An earlier baton ran two calls of one agent one after the other and kept their
    checkpoints by agent name: the first call ended, the second asks a person and the run
    pauses. Resumed here with the answer, the second call goes on from its checkpoint
    with that answer (it does not ask again, nor end with an empty result)."""
    runs: Counter[str] = Counter()

    def helper_turn(request: LlmRequest) -> ScriptItem:
        which = asked_for(request)
        runs[f"helper {which} turn {len(seen(request))}"] += 1
        if which == "b" and len(seen(request)) == 1:
            return FunctionCall(id="tb", name="ticket", args={"reason": "b"})
        return f"found {which}"

    boss_model = ScriptedModel([TURN, "done"])

    def tree() -> LlmAgent:
        return sub_agent_tree(boss_model, ScriptedModel(responder=helper_turn))

    one_at_a_time = asyncio.Lock()  # the earlier baton's calls of one agent
    delegate = LlmAgent._delegate  # pyright: ignore[reportPrivateUsage] -- the earlier writer

    async def in_turn(self: LlmAgent, *args: Any) -> Event | None:
        async with one_at_a_time:
            return await delegate(self, *args)

    with keyed_by_name(monkeypatch) as old:
        old.setattr(LlmAgent, "_delegate", in_turn)
        h = await build_harness(tree(), BaseSessionService(stores.open()), resumable=True)
        await h.start("go")
    invocation = await h.invocation()
    assert invocation.status == InvocationStatus.PAUSED
    assert await open_ids(h) == {"tb"}

    again = attach_harness(tree(), BaseSessionService(stores.open()), h.session_id, resumable=True)
    events = await again.collect(
        new_message=ticket_answer("tb", "ok b"), invocation_id=invocation.id
    )

    assert runs == Counter({"helper a turn 1": 1, "helper b turn 1": 1, "helper b turn 3": 1})
    assert shown(events)[-2:] == [
        ("boss", ["c2 -> {'result': 'found b'}"], {}),
        ("boss", ["done"], {}),
    ]
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


def _looked_up(events: list[Event]) -> set[str | None]:
    """The branches of the helper calls whose tool (the lookup) has answered."""
    return {
        e.branch
        for e in events
        if e.author == "helper" and e.content and e.content.function_responses
    }


def branch_before_7e5c830(branch: str | None, agent: str, call_id: str) -> str:
    """An earlier baton's branch of a delegated call: the call id as it is."""
    own = f"{agent}@{call_id}"
    return f"{branch}.{own}" if branch else own


@pytest.mark.parametrize("ids", [("c%1", "c%2"), ("call.1", "c2")], ids=["percent", "dotted"])
async def test_calls_paused_by_a_baton_writing_call_ids_as_they_are_resume_where_they_were(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch, ids: tuple[str, str]
) -> None:
    """A run paused by an earlier baton, which put a call's id in its branch as it is
    (`%` and `.` too), resumes in this one, each answer after a restart: each call's
    helper goes on from its checkpoint (neither its tool nor its model turns run again)
    and the boss gets both results."""
    runs: Counter[str] = Counter()

    def helper_turn(request: LlmRequest) -> ScriptItem:
        which, asked = asked_for(request), len(seen(request))
        runs[f"helper {which} turn {asked}"] += 1
        if asked == 1:
            return FunctionCall(id=f"l{which}", name="lookup", args={"x": which})
        if asked == 3:
            return FunctionCall(id=f"t{which}", name="ticket", args={"reason": which})
        return f"found {which}"

    def lookup(x: str) -> str:
        """The helper's own tool."""
        runs[f"lookup {x}"] += 1
        return f"value of {x}"

    turn = [call.model_copy(update={"id": i}) for call, i in zip(TURN, ids, strict=True)]
    boss_model = ScriptedModel([turn, "done"])

    def tree() -> LlmAgent:
        helper = LlmAgent(
            name="helper",
            model=ScriptedModel(responder=helper_turn),
            mode="single_turn",
            tools=[lookup, LongRunningFunctionTool(ticket)],
        )
        return LlmAgent(name="boss", model=boss_model, sub_agents=[helper])

    with monkeypatch.context() as old:
        old.setattr("baton.agents.delegation.call_branch", branch_before_7e5c830)
        h = await build_harness(tree(), BaseSessionService(stores.open()), resumable=True)
        await h.start("go")
    invocation = await h.invocation()
    assert await open_ids(h) == {"ta", "tb"}

    events: list[Event] = []
    for iid in ("tb", "ta"):  # each answer to a new runner, as after a restart
        again = attach_harness(
            tree(), BaseSessionService(stores.open()), h.session_id, resumable=True
        )
        status = f"ok {iid.removeprefix('t')}"
        events = await again.collect(
            new_message=ticket_answer(iid, status), invocation_id=invocation.id
        )

    each_once = [f"lookup {w}" for w in "ab"] + [
        f"helper {w} turn {n}" for w in "ab" for n in (1, 3, 5)
    ]
    assert runs == Counter(each_once)
    results = [f"{i} -> {{'result': 'found {w}'}}" for i, w in zip(ids, "ab", strict=True)]
    assert shown(events)[-2:] == [("boss", [results[0]], {}), ("boss", ["done"], {})]
    assert seen(boss_model.requests[1])[-1] == (
        "user: result helper={'result': 'found a'}, result helper={'result': 'found b'}"
    )
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
