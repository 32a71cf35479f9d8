"""A task sub-agent of an LlmAgent: the parent's model hands it the task with a call, the
task agent talks with the user until its model calls `finish_task`, and its result is
the call's response in the parent's conversation. Every backend.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from pydantic import JsonValue

from baton import LlmAgent
from baton.events import Event
from baton.models import ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus
from baton.types import FunctionCall
from tests.agents.test_same_agent_calls import branch_before_7e5c830
from tests.agents.test_task_mode import Person, finish, said, seen
from tests.conftest import StoreFactory
from tests.harness import attach_harness, build_harness

ASK = FunctionCall(id="call-1", name="asker", args={"request": "get the user's name"})


@pytest.fixture
def service(stores: StoreFactory) -> BaseSessionService:
    return BaseSessionService(stores.open())


def coordinator(coord: ScriptedModel, asker: ScriptedModel, **fields: object) -> LlmAgent:
    task = LlmAgent(
        name="asker",
        model=asker,
        description="Asks for the user's name.",
        instruction="Find out the user's name.",
        mode="task",
        **fields,  # pyright: ignore[reportArgumentType] -- the test's own fields
    )
    return LlmAgent(name="coord", model=coord, instruction="Help the user.", sub_agents=[task])


def responses(events: list[Event]) -> list[tuple[str, str, JsonValue]]:
    return [
        (e.author, r.name or "", r.response)
        for e in events
        if e.content
        for r in e.content.function_responses
    ]


async def test_a_task_sub_agent_talks_with_the_user_and_answers_the_parents_call(
    service: BaseSessionService,
) -> None:
    coord = ScriptedModel([[ASK], "Thanks, Bob!", "Hello again"])
    asker = ScriptedModel(["What's your name?", finish(result="Bob")])
    harness = await build_harness(coordinator(coord, asker), service, resumable=False)

    first = await harness.start("hello")

    assert [c.name for e in first for c in e.function_calls] == ["asker"]
    assert said(first) == [("asker", "What's your name?")]
    assert first[-1].branch == "asker@call-1"
    assert (await harness.invocation()).status == InvocationStatus.PAUSED

    second = await harness.start("Bob")

    assert {e.invocation_id for e in second} == {first[0].invocation_id}
    assert [c.name for e in second for c in e.function_calls] == ["finish_task"]
    assert responses(second) == [
        ("asker", "finish_task", {"result": "Task completed."}),
        ("user", "asker", {"result": "Bob"}),
    ]
    assert said(second) == [("coord", "Thanks, Bob!")]
    assert [e.output for e in second if e.output is not None] == []
    assert (await harness.invocation()).status == InvocationStatus.COMPLETED
    # The parent sees its call answered, not the conversation the task agent had.
    assert seen(coord.requests[1]) == [
        ("user", "hello"),
        ("model", "call asker"),
        ("user", "asker -> {'result': 'Bob'}"),
    ]
    # The task agent sees its task and its own conversation, not the parent's.
    assert seen(asker.requests[1]) == [
        ("user", '{"request": "get the user\'s name"}'),
        ("model", "What's your name?"),
        ("user", "Bob"),
    ]

    again = await harness.start("again")

    assert again[0].invocation_id != first[0].invocation_id
    assert said(again) == [("coord", "Hello again")]


async def test_the_parents_model_sees_the_task_agent_as_a_tool_without_transfer(
    service: BaseSessionService,
) -> None:
    coord = ScriptedModel(["Hi"])
    harness = await build_harness(coordinator(coord, ScriptedModel()), service, resumable=True)

    await harness.start("hello")

    [request] = coord.requests
    [tools] = request.config.tools or []
    [declaration] = tools.function_declarations or []
    assert declaration.name == "asker"
    assert declaration.description == (
        "Asks for the user's name.\n"
        "This hands the work to an agent of its own; call it alone, not with other tools."
    )
    parameters = declaration.parameters or {}
    assert (parameters["type"], parameters["required"]) == ("object", ["request"])
    assert parameters["properties"] == {
        "request": {
            "type": "string",
            "description": "What the task agent is to do, with the context it needs.",
        }
    }
    assert request.config.system_instruction == (
        'Help the user.\n\nYou are the agent named "coord".'
    )


async def test_a_structured_result_is_the_calls_response_and_a_plain_one_is_under_output(
    service: BaseSessionService,
) -> None:
    coord = ScriptedModel([[ASK], "Thanks"])
    asker = ScriptedModel([finish(name="Bob", age="42")])
    harness = await build_harness(
        coordinator(coord, asker, output_schema=Person, output_key="person"),
        service,
        resumable=True,
    )

    events = await harness.start("hello")

    assert responses(events)[-1] == ("user", "asker", {"name": "Bob", "age": 42})
    session = await service.get_session(app_name="app", user_id="u", session_id=harness.session_id)
    assert session is not None
    assert session.state == {"person": {"name": "Bob", "age": 42}}

    coord2 = ScriptedModel([[ASK], "Thanks"])
    harness2 = await build_harness(
        coordinator(coord2, ScriptedModel([finish(result=7)]), output_schema=int),
        service,
        resumable=False,
    )
    events = await harness2.start("hello")
    assert responses(events)[-1] == ("user", "asker", {"output": 7})


async def test_a_restarted_process_continues_the_task_where_the_user_left_it(
    service: BaseSessionService,
) -> None:
    coord = ScriptedModel([[ASK]])
    asker = ScriptedModel(["What's your name?"])
    harness = await build_harness(coordinator(coord, asker), service, resumable=True)
    await harness.start("hello")

    coord_after = ScriptedModel(["Thanks, Bob!"])
    asker_after = ScriptedModel([finish(result="Bob")])
    restarted = attach_harness(
        coordinator(coord_after, asker_after), service, harness.session_id, resumable=True
    )
    events = await restarted.start("Bob")

    assert said(events) == [("coord", "Thanks, Bob!")]
    assert len(asker_after.requests) == 1
    assert seen(asker_after.requests[0])[:2] == [
        ("user", '{"request": "get the user\'s name"}'),
        ("model", "What's your name?"),
    ]


@pytest.mark.parametrize("call_id", ["call%1", "call.1"], ids=["percent", "dotted"])
async def test_a_task_paused_by_a_baton_writing_call_ids_as_they_are_continues_after_upgrade(
    service: BaseSessionService, monkeypatch: pytest.MonkeyPatch, call_id: str
) -> None:
    """A task an earlier baton started (its call's id in its branch as it is, `%` and `.`
    too) and left waiting for the user's reply goes on in this one: the reply reaches the
    same conversation, on the branch its earlier events are on, and the task is not
    started again."""
    coord = ScriptedModel([[ASK.model_copy(update={"id": call_id})]])
    asker = ScriptedModel(["What's your name?"])
    with monkeypatch.context() as old:
        old.setattr("baton.agents.delegation.call_branch", branch_before_7e5c830)
        harness = await build_harness(coordinator(coord, asker), service, resumable=True)
        await harness.start("hello")

    coord_after = ScriptedModel(["Thanks, Bob!"])
    asker_after = ScriptedModel([finish(result="Bob")])
    restarted = attach_harness(
        coordinator(coord_after, asker_after), service, harness.session_id, resumable=True
    )
    events = await restarted.start("Bob")

    assert responses(events) == [
        ("asker", "finish_task", {"result": "Task completed."}),
        ("user", "asker", {"result": "Bob"}),
    ]
    assert said(events) == [("coord", "Thanks, Bob!")]
    assert {e.branch for e in events if e.author == "asker"} == {f"asker@{call_id}"}
    assert seen(asker_after.requests[0])[:3] == [
        ("user", '{"request": "get the user\'s name"}'),
        ("model", "What's your name?"),
        ("user", "Bob"),
    ]


async def test_the_task_agent_runs_anew_for_each_call(service: BaseSessionService) -> None:
    again = FunctionCall(id="call-2", name="asker", args={"request": "once more"})
    coord = ScriptedModel([[ASK], [again], "Both done"])
    asker = ScriptedModel([finish(result="one"), finish(result="two")])
    harness = await build_harness(coordinator(coord, asker), service, resumable=True)

    events = await harness.start("hello")

    assert [r for r in responses(events) if r[0] == "user"] == [
        ("user", "asker", {"result": "one"}),
        ("user", "asker", {"result": "two"}),
    ]
    assert seen(asker.requests[1]) == [("user", '{"request": "once more"}')]
    assert said(events) == [("coord", "Both done")]


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_two_task_calls_in_one_turn_talk_with_the_user_one_after_the_other(
    service: BaseSessionService, resumable: bool
) -> None:
    # Both used to start at once: two questions open, the second call running on the
    # first's agent state, one reply finishing both tasks, and the run left paused.
    age = FunctionCall(id="call-2", name="asker", args={"request": "get the user's age"})
    coord = ScriptedModel([[ASK, age], "Thanks"])
    asker = ScriptedModel(
        ["What's your name?", finish(result="Bob"), "How old are you?", finish(result="7")]
    )
    harness = await build_harness(coordinator(coord, asker), service, resumable=resumable)

    first = await harness.start("hello")
    [asked] = await harness.runner.pending(user_id="u", session_id=harness.session_id)
    second = await harness.start("Bob")
    third = await harness.start("7")

    assert said(first) == [("asker", "What's your name?")]
    assert asked.message == "What's your name?"
    assert said(second) == [("asker", "How old are you?")]
    assert [r for r in responses(second) if r[0] == "user"] == [
        ("user", "asker", {"result": "Bob"})
    ]
    assert seen(asker.requests[2]) == [("user", '{"request": "get the user\'s age"}')]
    assert [r for r in responses(third) if r[0] == "user"] == [("user", "asker", {"result": "7"})]
    assert said(third) == [("coord", "Thanks")]
    assert {e.invocation_id for e in [*second, *third]} == {first[0].invocation_id}
    assert (await harness.invocation()).status == InvocationStatus.COMPLETED


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(
            lambda: LlmAgent(
                name="a", model=ScriptedModel(), mode="task", tools=[lambda_named("finish_task")]
            ),
            "LlmAgent 'a' has a tool named 'finish_task', the name of the tool a task agent ends",
            id="own-finish_task",
        ),
        pytest.param(
            lambda: LlmAgent(
                name="p",
                model=ScriptedModel(),
                tools=[lambda_named("a")],
                sub_agents=[LlmAgent(name="a", model=ScriptedModel(), mode="task")],
            ),
            "agent 'p' has two tools named 'a'",
            id="tool-named-as-task-agent",
        ),
    ],
)
def test_invalid_combinations_are_refused(build: Callable[[], LlmAgent], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def lambda_named(name: str) -> Callable[[], str]:
    def tool() -> str:
        """A tool."""
        return "done"

    tool.__name__ = name
    return tool


async def test_a_task_agent_hands_part_of_its_task_to_a_task_agent_of_its_own(
    service: BaseSessionService,
) -> None:
    inner_call = FunctionCall(id="call-2", name="inner", args={"request": "ask the age"})
    inner = LlmAgent(
        name="inner", model=ScriptedModel(["How old are you?", finish(result="42")]), mode="task"
    )
    outer_model = ScriptedModel([[inner_call], finish(result="Bob, 42")])
    asker = LlmAgent(name="asker", model=outer_model, mode="task", sub_agents=[inner])
    coord = ScriptedModel([[ASK], "Done"])
    root = LlmAgent(name="coord", model=coord, sub_agents=[asker])
    harness = await build_harness(root, service, resumable=True)

    first = await harness.start("hello")
    second = await harness.start("42")

    assert said(first) == [("inner", "How old are you?")]
    assert first[-1].branch == "asker@call-1.inner@call-2"
    assert [r for r in responses(second) if r[0] == "user"] == [
        ("user", "inner", {"result": "42"}),
        ("user", "asker", {"result": "Bob, 42"}),
    ]
    assert said(second) == [("coord", "Done")]
    assert seen(outer_model.requests[1])[-1] == ("user", "inner -> {'result': '42'}")


async def test_a_task_agents_own_calls_in_one_turn_run_at_once(
    service: BaseSessionService,
) -> None:
    """A task agent's model turn with two calls of its own tools runs them at once, as the
    reference does (asyncio.gather): each tool returns only once both started (run one
    after the other, the first would wait until the guard fails the test)."""
    started: list[str] = []
    both = asyncio.Event()

    async def look(x: str) -> str:
        """Looks something up."""
        started.append(x)
        if len(started) == 2:
            both.set()
        async with asyncio.timeout(10):  # a guard against a hang, not a measure
            await both.wait()
        return f"found {x}"

    turn = [FunctionCall(id=f"l{x}", name="look", args={"x": x}) for x in "ab"]
    coord = ScriptedModel([[ASK], "Done"])
    asker = ScriptedModel([turn, finish(result="both")])
    harness = await build_harness(coordinator(coord, asker, tools=[look]), service, resumable=True)

    events = await harness.start("hello")

    assert sorted(started) == ["a", "b"]
    assert responses(events) == [
        ("asker", "look", {"result": "found a"}),
        ("asker", "look", {"result": "found b"}),
        ("asker", "finish_task", {"result": "Task completed."}),
        ("user", "asker", {"result": "both"}),
    ]
    assert said(events) == [("coord", "Done")]
