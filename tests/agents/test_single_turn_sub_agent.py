"""A sub-agent with mode="single_turn" is a tool of its parent LlmAgent, as in the reference.

The parent's model is offered a tool named after the sub-agent (its description, one
string argument `request`) and no transfer to it; a call runs the sub-agent on the
request, on a branch of its own, and its reply is the call's result. Expected
declarations, requests and stored events are those google-adk 2.13.0 produced for the
same agents (probed with models that record their requests).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import JsonValue

from baton import Workflow
from baton.agents import LlmAgent
from baton.events import Event
from baton.models import LlmRequest, ScriptedModel
from baton.models.scripted import ScriptItem
from baton.sessions.store import InvocationStatus
from baton.tools import BaseTool, LongRunningFunctionTool
from baton.types import FunctionCall
from tests.agents.conftest import MakeRunner
from tests.agents.test_single_turn_node import seen
from tests.harness import outputs


def ask_helper(request: str, call_id: str = "h1") -> list[FunctionCall]:
    return [FunctionCall(id=call_id, name="helper", args={"request": request})]


def stored(events: list[Event]) -> list[tuple[str, str | None, JsonValue]]:
    """(author, branch, what) of each event with content or an end mark."""
    shown: list[tuple[str, str | None, JsonValue]] = []
    for event in events:
        for part in event.content.parts or [] if event.content else []:
            if part.function_call:
                what: JsonValue = f"call {part.function_call.name}"
            elif part.function_response:
                what = {part.function_response.name or "": part.function_response.response}
            else:
                what = part.text
            shown.append((event.author, event.branch, what))
        if event.actions.end_of_agent:
            shown.append((event.author, event.branch, "end"))
    return shown


def with_helper(parent: ScriptedModel, helper: LlmAgent) -> LlmAgent:
    """The parent agent 'boss' (its model `parent`) over the single-turn sub-agent."""
    return LlmAgent(name="boss", model=parent, sub_agents=[helper])


def helper_agent(model: ScriptedModel, *tools: BaseTool | Callable[..., object]) -> LlmAgent:
    return LlmAgent(name="helper", model=model, mode="single_turn", tools=tools)


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


async def test_the_parent_calls_the_sub_agent_as_a_tool_and_sees_its_reply(
    make: MakeRunner,
) -> None:
    parent_model = ScriptedModel(responses=[ask_helper("summarize x"), "parent done"])
    helper_model = ScriptedModel(responses=["summary of x"])
    helper = helper_agent(helper_model)
    helper.description, helper.instruction = "Summarizes things.", "Summarize."
    h = await make(with_helper(parent_model, helper))
    events = await h.start("go")

    first = parent_model.requests[0]
    assert [t.model_dump(exclude_none=True) for t in first.config.tools or []] == [
        {
            "function_declarations": [
                {
                    "name": "helper",
                    "description": "Summarizes things.",
                    "parameters": {
                        "type": "object",
                        "properties": {"request": {"type": "string"}},
                        "required": ["request"],
                    },
                }
            ]
        }
    ]
    # Its identity (no instruction, no transfer to offer), as google-adk 2.13.0 gives it.
    assert first.config.system_instruction == 'You are the agent named "boss".'
    assert [seen(r) for r in parent_model.requests] == [
        ["user: go"],
        [
            "user: go",
            "model: call helper({'request': 'summarize x'})",
            "user: result helper={'result': 'summary of x'}",
        ],
    ]
    assert [seen(r) for r in helper_model.requests] == [["user: summarize x"]]
    assert helper_model.requests[0].config.system_instruction == "Summarize."
    assert not helper_model.requests[0].config.tools
    assert stored(events) == [
        ("boss", None, "call helper"),
        ("helper", "helper@h1", "summary of x"),
        ("helper", "helper@h1", "end"),
        ("boss", None, {"helper": {"result": "summary of x"}}),
        ("boss", None, "parent done"),
        ("boss", None, "end"),
    ]


async def test_two_calls_run_the_sub_agent_twice_each_on_its_own_request(
    make: MakeRunner,
) -> None:
    two = [*ask_helper("one", "h1"), *ask_helper("two", "h2")]
    parent_model = ScriptedModel(responses=[two, "parent done"])

    def helper_turn(request: LlmRequest) -> ScriptItem:
        asked = seen(request)
        if asked == ["user: one"]:
            return [FunctionCall(id="a1", name="add", args={"a": 1, "b": 2})]
        return "r1" if asked[0] == "user: one" else "r2"

    helper_model = ScriptedModel(responder=helper_turn)
    h = await make(with_helper(parent_model, helper_agent(helper_model, add)))
    await h.start("go")

    # The two calls run at once, as in the reference: their requests interleave.
    assert sorted(seen(r) for r in helper_model.requests) == [
        ["user: one"],
        ["user: one", "model: call add({'a': 1, 'b': 2})", "user: result add={'result': 3}"],
        ["user: two"],
    ]
    assert seen(parent_model.requests[1])[-1] == (
        "user: result helper={'result': 'r1'}, result helper={'result': 'r2'}"
    )


async def test_a_later_turn_of_the_parent_does_not_see_the_sub_agents_events(
    make: MakeRunner,
) -> None:
    parent_model = ScriptedModel(responses=[ask_helper("x"), "parent done", "again done"])
    h = await make(with_helper(parent_model, helper_agent(ScriptedModel(responses=["sub"]))))
    await h.start("go")
    await h.start("more")

    assert seen(parent_model.requests[2]) == [
        "user: go",
        "model: call helper({'request': 'x'})",
        "user: result helper={'result': 'sub'}",
        "model: parent done",
        "user: more",
    ]


async def test_a_sub_agent_waiting_for_input_holds_its_parent_until_answered(
    make: MakeRunner,
) -> None:
    tickets: list[str] = []

    def ticket(reason: str) -> None:
        """Files a ticket; a person answers it."""
        tickets.append(reason)

    parent_model = ScriptedModel(responses=[ask_helper("x"), "parent done"])
    helper_model = ScriptedModel(
        responses=[[FunctionCall(id="t1", name="ticket", args={"reason": "r"})], "filed"]
    )
    helper = helper_agent(helper_model, LongRunningFunctionTool(ticket))
    h = await make(with_helper(parent_model, helper))
    await h.start("go")
    assert len(parent_model.requests) == 1
    assert (await h.invocation()).status == InvocationStatus.PAUSED

    events = await h.answer(("t1", {"status": "ok"}), name="ticket", wrap=False)

    assert tickets == ["r"]
    assert [seen(r) for r in helper_model.requests] == [
        ["user: x"],
        ["user: x", "model: call ticket({'reason': 'r'})", "user: result ticket={'status': 'ok'}"],
    ]
    assert seen(parent_model.requests[1])[-1] == "user: result helper={'result': 'filed'}"
    assert stored(events) == [
        ("helper", "helper@h1", "filed"),
        ("helper", "helper@h1", "end"),
        ("boss", None, {"helper": {"result": "filed"}}),
        ("boss", None, "parent done"),
        ("boss", None, "end"),
    ]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_two_calls_of_one_sub_agent_both_wait_and_each_answer_goes_to_its_own_call(
    make: MakeRunner, resumable: bool
) -> None:
    """The two calls run at once, as in the reference: both ask a person, and both
    questions are open together. The second call's answer ends only the second call;
    the first's ends the first and gives the parent both results in the turn's order."""

    def ticket(reason: str) -> None:
        """Files a ticket; a person answers it."""

    two = [*ask_helper("one", "h1"), *ask_helper("two", "h2")]
    parent_model = ScriptedModel(responses=[two, "parent done"])

    def helper_turn(request: LlmRequest) -> ScriptItem:
        asked = seen(request)
        which = asked[0].removeprefix("user: ")  # "one" or "two"
        if len(asked) == 1:
            ticket_id = "t1" if which == "one" else "t2"
            return [FunctionCall(id=ticket_id, name="ticket", args={"reason": which})]
        return f"filed {which}"

    helper_model = ScriptedModel(responder=helper_turn)
    helper = helper_agent(helper_model, LongRunningFunctionTool(ticket))
    h = await make(with_helper(parent_model, helper), resumable=resumable)

    first = await h.start("go")
    assert sorted(e for e in stored(first) if e[0] == "helper") == [
        ("helper", "helper@h1", "call ticket"),
        ("helper", "helper@h2", "call ticket"),
    ]
    assert {i.interrupt_id for i in await h.service.store.list_interrupts("app", "u")} == {
        "t1",
        "t2",
    }

    second = await h.answer(("t2", {"status": "ok 2"}), name="ticket", wrap=False)
    assert [e for e in stored(second) if e[2] != "end"] == [
        ("helper", "helper@h2", "filed two"),
        ("boss", None, {"helper": {"result": "filed two"}}),
    ]
    assert {i.interrupt_id for i in await h.service.store.list_interrupts("app", "u")} == {"t1"}
    assert (await h.invocation()).status == InvocationStatus.PAUSED

    third = await h.answer(("t1", {"status": "ok 1"}), name="ticket", wrap=False)
    assert next(e for e in stored(third) if e[2] != "end") == ("helper", "helper@h1", "filed one")
    answered = [seen(r) for r in helper_model.requests if len(seen(r)) > 1]
    assert sorted(answered) == [
        [
            "user: one",
            "model: call ticket({'reason': 'one'})",
            "user: result ticket={'status': 'ok 1'}",
        ],
        [
            "user: two",
            "model: call ticket({'reason': 'two'})",
            "user: result ticket={'status': 'ok 2'}",
        ],
    ]
    assert len(helper_model.requests) == 4  # no call ran its sub-agent again
    assert seen(parent_model.requests[1])[-1] == (
        "user: result helper={'result': 'filed one'}, result helper={'result': 'filed two'}"
    )
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_in_a_non_resumable_app_the_reply_comes_back_the_same(make: MakeRunner) -> None:
    parent_model = ScriptedModel(responses=[ask_helper("x"), "parent done"])
    helper = helper_agent(ScriptedModel(responses=["sub"]))
    h = await make(with_helper(parent_model, helper), resumable=False)
    events = await h.start("go")

    assert seen(parent_model.requests[1])[-1] == "user: result helper={'result': 'sub'}"
    assert stored(events) == [
        ("boss", None, "call helper"),
        ("helper", "helper@h1", "sub"),
        ("boss", None, {"helper": {"result": "sub"}}),
        ("boss", None, "parent done"),
    ]


def test_a_single_turn_sub_agent_is_no_transfer_target() -> None:
    helper = helper_agent(ScriptedModel())
    chat = LlmAgent(name="chat", model=ScriptedModel())
    boss = LlmAgent(name="boss", model=ScriptedModel(), sub_agents=[helper, chat])

    assert sorted(boss.tools_by_name) == ["helper", "transfer_to_agent"]
    assert sorted(chat.tools_by_name) == ["transfer_to_agent"]
    assert sorted(helper.tools_by_name) == []


def test_a_tool_named_as_a_single_turn_sub_agent_is_refused() -> None:
    def helper(x: int) -> int:
        """Doubles."""
        return 2 * x

    sub = helper_agent(ScriptedModel())
    with pytest.raises(ValueError, match="two tools named 'helper'"):
        LlmAgent(name="boss", model=ScriptedModel(), tools=[helper], sub_agents=[sub])


async def test_a_workflow_node_calls_its_single_turn_sub_agent_as_a_tool(make: MakeRunner) -> None:
    parent_model = ScriptedModel(responses=[ask_helper("x"), "parent done"])
    boss = with_helper(parent_model, helper_agent(ScriptedModel(responses=["sub"])))
    h = await make(Workflow(name="wf", edges=[("START", boss)]))
    events = await h.start("go")

    assert seen(parent_model.requests[1])[-1] == "user: result helper={'result': 'sub'}"
    assert outputs(events) == [("boss", "parent done")]


async def test_tool_callbacks_apply_to_a_sub_agent_call(make: MakeRunner) -> None:
    calls: list[tuple[str, JsonValue]] = []

    def before(tool: BaseTool, args: dict[str, JsonValue], tool_context: object) -> JsonValue:
        calls.append(("before", args))
        return {"skipped": True} if args.get("request") == "skip" else None

    def after(
        tool: BaseTool, args: dict[str, JsonValue], tool_context: object, tool_response: JsonValue
    ) -> JsonValue:
        calls.append(("after", tool_response))
        return {"wrapped": tool_response}

    script = [ask_helper("skip", "h1"), ask_helper("run", "h2"), "done"]
    parent_model, helper_model = ScriptedModel(responses=script), ScriptedModel(responses=["ran"])
    boss = with_helper(parent_model, helper_agent(helper_model))
    boss.before_tool_callback, boss.after_tool_callback = before, after
    h = await make(boss)
    await h.start("go")

    # As the reference: a before-callback's result stands for the sub-agent's run.
    assert [seen(r)[-1] for r in parent_model.requests[1:]] == [
        "user: result helper={'wrapped': {'skipped': True}}",
        "user: result helper={'wrapped': 'ran'}",
    ]
    assert [seen(r) for r in helper_model.requests] == [["user: run"]]
    # The after-callback gets the result as it came, the sub-agent's bare reply.
    assert calls == [
        ("before", {"request": "skip"}),
        ("after", {"skipped": True}),
        ("before", {"request": "run"}),
        ("after", "ran"),
    ]


async def test_an_agent_tool_runs_its_agent_for_the_callers_model(make: MakeRunner) -> None:
    from baton.tools.agent_tool import AgentTool

    parent_model = ScriptedModel(responses=[ask_helper("summarize x"), "parent done"])
    helper = LlmAgent(name="helper", description="Summarizes.", model=ScriptedModel(["sum x"]))
    h = await make(LlmAgent(name="boss", model=parent_model, tools=[AgentTool(agent=helper)]))
    events = await h.start("go")

    declared = parent_model.requests[0].config.function_declarations
    assert [(d.name, d.description, d.parameters) for d in declared] == [
        (
            "helper",
            "Summarizes.",
            {
                "type": "object",
                "properties": {"request": {"type": "string"}},
                "required": ["request"],
            },
        )
    ]
    assert [seen(r) for r in parent_model.requests][1][
        -1
    ] == "user: result helper={'result': 'sum x'}"
    assert stored(events) == [
        ("boss", None, "call helper"),
        ("helper", "helper@h1", "sum x"),
        ("helper", "helper@h1", "end"),
        ("boss", None, {"helper": {"result": "sum x"}}),
        ("boss", None, "parent done"),
        ("boss", None, "end"),
    ]


async def test_an_agent_tool_that_skips_summarization_ends_the_turn_with_the_reply(
    make: MakeRunner,
) -> None:
    from baton.tools import AgentTool

    parent_model = ScriptedModel(responses=[ask_helper("summarize x")])
    helper = LlmAgent(name="helper", model=ScriptedModel(["sum x"]))
    tool = AgentTool(agent=helper, skip_summarization=True)
    h = await make(LlmAgent(name="boss", model=parent_model, tools=[tool]))
    events = await h.start("go")

    assert len(parent_model.requests) == 1  # the caller's model is not asked again
    [result] = [e for e in events if e.content and e.content.function_responses]
    assert result.actions.skip_summarization is True
    assert result.content is not None
    assert result.content.text == "sum x"  # shown as text too
    assert stored(events)[-3:] == [
        ("boss", None, {"helper": {"result": "sum x"}}),
        ("boss", None, "sum x"),
        ("boss", None, "end"),
    ]


def test_an_agent_tool_without_its_callers_plugins_is_refused() -> None:
    from baton.tools import AgentTool

    helper = LlmAgent(name="helper", model=ScriptedModel(["x"]))
    with pytest.raises(ValueError, match="include_plugins=False is not supported"):
        AgentTool(agent=helper, include_plugins=False)
