"""An agent called as a tool (`AgentTool`) behaves as google-adk 2.13.0's does.

The reference runs the agent in a session of its own holding only the request: its
model sees the request as a user turn and what the agent (and agents it transfers to)
did since, never its caller's conversation. Expected requests are what the reference
sent its models for the same agents (probed with models that record their requests).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable

import pytest
from pydantic import BaseModel, JsonValue

from baton import BaseAgent, InvocationContext
from baton.agents import LlmAgent, SequentialAgent
from baton.events import Event
from baton.models import LlmResponse, ScriptedModel
from baton.models.scripted import ScriptItem
from baton.readonly_context import ReadonlyContext
from baton.sessions.store import InvocationStatus
from baton.tools import BaseTool, FunctionTool, LongRunningFunctionTool, ToolContext
from baton.tools.agent_tool import AgentTool
from baton.tools.base_toolset import BaseToolset
from baton.types import Content, FunctionCall, Part
from tests.agents.agents import Runs, Step
from tests.agents.conftest import runner_with_artifacts
from tests.agents.quoting import PREAMBLE, called, returned
from tests.agents.test_single_turn_node import seen
from tests.conftest import StoreFactory
from tests.harness import Harness


def call(name: str, call_id: str, **args: JsonValue) -> list[FunctionCall]:
    return [FunctionCall(id=call_id, name=name, args=args)]


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


async def harness(stores: StoreFactory, root: LlmAgent) -> Harness:
    runner = runner_with_artifacts(stores, root)
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    return Harness(runner, runner.session_service, session.id)


async def test_the_agents_model_sees_the_request_and_its_own_turns_not_the_callers(
    stores: StoreFactory,
) -> None:
    boss_model = ScriptedModel(
        responses=["hello back", call("helper", "h1", request="summarize x"), "boss done"]
    )
    helper_model = ScriptedModel(
        responses=[call("add", "a1", a=1, b=2), call("transfer_to_agent", "t1", agent_name="sub")]
    )
    sub_model = ScriptedModel(responses=["sub says"])
    sub = LlmAgent(name="sub", model=sub_model, description="Helps the helper.")
    helper = LlmAgent(name="helper", model=helper_model, tools=[add], sub_agents=[sub])
    h = await harness(stores, LlmAgent(name="boss", model=boss_model, tools=[AgentTool(helper)]))

    await h.start("hi")
    await h.start("go")

    assert [seen(r) for r in helper_model.requests] == [
        ["user: summarize x"],
        [
            "user: summarize x",
            "model: call add({'a': 1, 'b': 2})",
            "user: result add={'result': 3}",
        ],
    ]
    # The agent it transfers to sees the same conversation, the helper's turns quoted.
    assert seen(sub_model.requests[0]) == [
        "user: summarize x",
        *(
            f"user: {PREAMBLE}, {quote}"
            for quote in [
                called("helper", "add", "{'a': 1, 'b': 2}"),
                returned("helper", "add", "{'result': 3}"),
                called("helper", "transfer_to_agent", "{'agent_name': 'sub'}"),
                returned("helper", "transfer_to_agent", "{'result': None}"),
            ]
        ),
    ]
    # The reply of the agent it transferred to is the call's result.
    assert seen(boss_model.requests[-1])[-1] == "user: result helper={'result': 'sub says'}"


async def test_resumed_after_its_tools_answer_the_agent_still_sees_only_its_call(
    stores: StoreFactory,
) -> None:
    def ticket(reason: str) -> None:
        """Files a ticket; a person answers it."""
        del reason

    boss_model = ScriptedModel(responses=["hello back", call("helper", "h1", request="x"), "done"])
    helper_model = ScriptedModel(responses=[call("ticket", "t1", reason="r"), "filed"])
    helper = LlmAgent(name="helper", model=helper_model, tools=[LongRunningFunctionTool(ticket)])
    h = await harness(stores, LlmAgent(name="boss", model=boss_model, tools=[AgentTool(helper)]))
    await h.start("hi")
    await h.start("go")
    assert (await h.invocation()).status == InvocationStatus.PAUSED

    await h.answer(("t1", {"status": "ok"}), name="ticket", wrap=False)

    assert [seen(r) for r in helper_model.requests] == [
        ["user: x"],
        ["user: x", "model: call ticket({'reason': 'r'})", "user: result ticket={'status': 'ok'}"],
    ]
    assert seen(boss_model.requests[-1])[-1] == "user: result helper={'result': 'filed'}"
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


def shown(events: list[Event]) -> list[tuple[str, list[str]]]:
    """(author, parts) of each event with content: a call or a result by its tool's name."""
    return [
        (
            e.author,
            [
                f"call {p.function_call.name}"
                if p.function_call
                else f"result {p.function_response.name}"
                if p.function_response
                else p.text or ""
                for p in e.content.parts or []
            ],
        )
        for e in events
        if e.content and e.content.parts
    ]


@pytest.mark.parametrize("how", ["AgentTool", "single_turn"])
async def test_a_turns_results_are_one_event_in_the_turns_order_after_the_agents_events(
    stores: StoreFactory, how: str
) -> None:
    async def slow(x: int) -> int:
        """Returns x, slowly."""
        await asyncio.sleep(0.05)
        return x

    def fast(x: int) -> int:
        """Returns x."""
        return x

    turn = [*call("slow", "s1", x=1), *call("helper", "h1", request="r"), *call("fast", "f1", x=2)]
    boss_model = ScriptedModel(responses=[turn, "boss done"])
    helper = LlmAgent(name="helper", model=ScriptedModel(responses=["helped"]))
    if how == "AgentTool":
        boss = LlmAgent(name="boss", model=boss_model, tools=[slow, AgentTool(helper), fast])
    else:
        helper.mode = "single_turn"
        boss = LlmAgent(name="boss", model=boss_model, tools=[slow, fast], sub_agents=[helper])
    h = await harness(stores, boss)

    events = await h.start("go")

    # As google-adk 2.13.0 yields them: the sub-agent's events (its single-turn
    # sub-agent's; an AgentTool's it does not show), then the turn's one result event.
    expected = [
        ("boss", ["call slow", "call helper", "call fast"]),
        ("helper", ["helped"]),
        ("boss", ["result slow", "result helper", "result fast"]),
        ("boss", ["boss done"]),
    ]
    assert shown(events) == expected
    session = await h.runner.session_service.get_session(
        app_name="app", user_id="u", session_id=h.session_id
    )
    assert session is not None
    assert shown(session.events)[1:] == expected
    assert seen(boss_model.requests[1])[-1] == (
        "user: result slow={'result': 1}, result helper={'result': 'helped'}, "
        "result fast={'result': 2}"
    )


async def test_skip_summarization_ends_the_turn_with_the_reply_among_the_turns_results(
    stores: StoreFactory,
) -> None:
    def fast(x: int) -> int:
        """Returns x."""
        return x

    turn = [*call("helper", "h1", request="r"), *call("fast", "f1", x=1)]
    boss_model = ScriptedModel(responses=[turn, "not asked"])
    helper = LlmAgent(name="helper", model=ScriptedModel(responses=["helped"]))
    tool = AgentTool(helper, skip_summarization=True)
    h = await harness(stores, LlmAgent(name="boss", model=boss_model, tools=[tool, fast]))

    events = await h.start("go")

    # As google-adk 2.13.0 ends it: one result event, the reply as text after its result,
    # and the caller's model is not asked again.
    [result] = [e for e in events if e.author == "boss" and e.content and e.content.role == "user"]
    assert shown([result]) == [("boss", ["result helper", "helped", "result fast"])]
    assert result.actions.skip_summarization
    assert len(boss_model.requests) == 1


class Helpers(BaseToolset):
    """A toolset that lists agents called as tools."""

    def __init__(self, *tools: BaseTool) -> None:
        super().__init__()
        self.tools = list(tools)

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        del readonly_context
        return self.tools


async def test_an_agent_a_toolset_lists_holds_its_caller_until_its_question_is_answered(
    stores: StoreFactory,
) -> None:
    def ticket(reason: str) -> None:
        """Files a ticket; a person answers it."""
        del reason

    boss_model = ScriptedModel(responses=[call("helper", "h1", request="x"), "done"])
    helper_model = ScriptedModel(responses=[call("ticket", "t1", reason="r"), "filed"])
    helper = LlmAgent(name="helper", model=helper_model, tools=[LongRunningFunctionTool(ticket)])
    boss = LlmAgent(name="boss", model=boss_model, tools=[Helpers(AgentTool(helper))])
    h = await harness(stores, boss)
    await h.start("go")
    assert (await h.invocation()).status == InvocationStatus.PAUSED

    await h.answer(("t1", {"status": "ok"}), name="ticket", wrap=False)

    assert seen(helper_model.requests[-1])[-1] == "user: result ticket={'status': 'ok'}"
    assert seen(boss_model.requests[-1])[-1] == "user: result helper={'result': 'filed'}"
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_sequences_last_reply_is_the_result_its_text_without_thoughts(
    stores: StoreFactory,
) -> None:
    boss_model = ScriptedModel(responses=[call("seq", "q1", request="r"), "boss done"])
    parts = [Part(text="thinking", thought=True), Part(text="from b"), Part(text="more b")]
    last = LlmResponse(content=Content(role="model", parts=parts))
    first = LlmAgent(name="a", model=ScriptedModel(responses=["from a"]))
    second = LlmAgent(name="b", model=ScriptedModel(responses=[last]))
    seq = SequentialAgent(name="seq", sub_agents=[first, second])
    h = await harness(stores, LlmAgent(name="boss", model=boss_model, tools=[AgentTool(seq)]))

    await h.start("go")

    # As google-adk 2.13.0 gives it: the last reply's text parts, joined by newlines.
    assert seen(boss_model.requests[1])[-1] == "user: result seq={'result': 'from b\\nmore b'}"


def helper_tools(ran: list[str]) -> list[BaseTool]:
    """A tool that writes the state and saves an artifact, then one a person answers."""

    async def note(tool_context: ToolContext) -> str:
        """Notes the request."""
        ran.append("note")
        tool_context.state["seen"] = "yes"
        tool_context.state["temp:scratch"] = 1
        await tool_context.save_artifact("note.txt", Part(text="noted"))
        return "noted"

    def ticket(reason: str) -> None:
        """Files a ticket; a person answers it."""
        del reason

    return [FunctionTool(note), LongRunningFunctionTool(ticket)]


async def answered_after_a_restart(
    stores: StoreFactory, boss: Callable[..., LlmAgent]
) -> tuple[Harness, list[Event]]:
    """Start `boss(resumed=False)`, whose call's agent asks ticket "t1"; answer it from
    another process running `boss(resumed=True)`: that process and what it streamed."""
    first = await harness(stores, boss(resumed=False))
    await first.start("go")
    assert (await first.invocation()).status == InvocationStatus.PAUSED
    runner = runner_with_artifacts(stores, boss(resumed=True))
    again = Harness(runner, runner.session_service, first.session_id)
    events = await again.answer(("t1", {"status": "ok"}), name="ticket", wrap=False)
    return again, events


def result_of(events: list[Event], call_id: str) -> Event:
    [event] = [
        e
        for e in events
        if e.author == "boss" and any(r.id == call_id for r in e.get_function_responses())
    ]
    return event


async def test_the_agents_writes_and_saves_are_on_its_callers_result_event_after_a_restart(
    stores: StoreFactory,
) -> None:
    ran: list[str] = []

    def boss(*, resumed: bool) -> LlmAgent:
        helper_turns: list[ScriptItem] = [call("note", "n1"), call("ticket", "t1", reason="r")]
        boss_turns: list[ScriptItem] = [call("helper", "h1", request="x")]
        helper_model = ScriptedModel(responses=["filed"] if resumed else helper_turns)
        helper = LlmAgent(name="helper", model=helper_model, tools=helper_tools(ran))
        boss_model = ScriptedModel(responses=["done"] if resumed else boss_turns)
        return LlmAgent(name="boss", model=boss_model, tools=[AgentTool(helper)])

    # Another process answers: the helper continues after its question, once.
    again, events = await answered_after_a_restart(stores, boss)

    # As google-adk 2.13.0 shows them: the agent's writes but `temp:` ones, and its
    # saves, on the caller's result event (streamed and stored alike).
    result = result_of(events, "h1")
    assert result.actions.state_delta == {"seen": "yes"}
    assert result.actions.artifact_delta == {"note.txt": 0}
    session = await again.runner.session_service.get_session(
        app_name="app", user_id="u", session_id=again.session_id
    )
    assert session is not None
    stored = result_of(session.events, "h1")
    assert (stored.actions.state_delta, stored.actions.artifact_delta) == (
        {"seen": "yes"},
        {"note.txt": 0},
    )
    assert session.state["seen"] == "yes"
    assert ran == ["note"]
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


async def test_the_agent_reads_neither_its_callers_temp_nor_adk_keys_and_its_temp_ones_end(
    stores: StoreFactory,
) -> None:
    seen_by: dict[str, dict[str, JsonValue]] = {}
    keys = ["temp:mine", "_adk_mine", "temp:boss", "_adk_boss", "shared"]

    def look(who: str, tool_context: ToolContext) -> None:
        seen_by[who] = {k: tool_context.state.get(k) for k in keys}

    def boss_writes(tool_context: ToolContext) -> str:
        """Writes the caller's keys."""
        tool_context.state.update({"temp:boss": 1, "_adk_boss": 2, "shared": 3})
        return "ok"

    def helper_writes(tool_context: ToolContext) -> str:
        """Writes the helper's keys."""
        look("helper before", tool_context)
        tool_context.state.update({"temp:mine": 4, "_adk_mine": 5})
        return "ok"

    def helper_reads(tool_context: ToolContext) -> str:
        """Reads them back."""
        look("helper after", tool_context)
        return "ok"

    def boss_reads(tool_context: ToolContext) -> str:
        """Reads after the call."""
        look("boss after", tool_context)
        return "ok"

    helper_model = ScriptedModel(
        responses=[call("helper_writes", "w1"), call("helper_reads", "r1"), "helped"]
    )
    helper = LlmAgent(name="helper", model=helper_model, tools=[helper_writes, helper_reads])
    turns: list[ScriptItem] = [
        call("boss_writes", "b1"),
        call("helper", "h1", request="x"),
        call("boss_reads", "b2"),
        "done",
    ]
    boss_model = ScriptedModel(responses=turns)
    boss = LlmAgent(
        name="boss", model=boss_model, tools=[boss_writes, AgentTool(helper), boss_reads]
    )
    h = await harness(stores, boss)

    events = await h.start("go")

    # As google-adk 2.13.0's agent sees them: its caller's state but `temp:` and `_adk`
    # keys, and its own writes; its `temp:` ones end with the call, the rest are its
    # caller's (on the call's result event too).
    assert seen_by == {
        "helper before": {**dict.fromkeys(keys), "shared": 3},
        "helper after": {**dict.fromkeys(keys), "temp:mine": 4, "_adk_mine": 5, "shared": 3},
        "boss after": {
            **dict.fromkeys(keys),
            "temp:boss": 1,
            "_adk_boss": 2,
            "_adk_mine": 5,
            "shared": 3,
        },
    }
    assert result_of(events, "h1").actions.state_delta == {"_adk_mine": 5}


async def test_a_task_agents_question_is_the_calls_result_and_the_users_reply_goes_to_the_caller(
    stores: StoreFactory,
) -> None:
    helper_model = ScriptedModel(responses=["What is your name?"])
    helper = LlmAgent(name="helper", mode="task", model=helper_model)
    boss_model = ScriptedModel(
        responses=[call("helper", "h1", request="x"), "Helper asks your name.", "Hi Bob"]
    )
    h = await harness(stores, LlmAgent(name="boss", model=boss_model, tools=[AgentTool(helper)]))

    await h.start("go")
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
    events = await h.start("Bob")

    # As in google-adk 2.13.0, which runs the agent with no user to answer it: its
    # question is the call's result, the run goes on, and the user's reply is the caller's.
    assert (
        seen(boss_model.requests[1])[-1] == "user: result helper={'result': 'What is your name?'}"
    )
    assert seen(boss_model.requests[2])[-1] == "user: Bob"
    assert shown(events) == [("boss", ["Hi Bob"])]
    assert len(helper_model.requests) == 1


class Pair(BaseAgent):
    """Runs its sub-agents one after the other, with no checkpoint of its own."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        for sub in self.sub_agents:
            async for event in sub.run_async(ctx):
                yield event


async def test_an_agent_resumed_in_another_process_runs_its_ended_sub_agents_once(
    stores: StoreFactory,
) -> None:
    runs = Runs()

    def boss(*, resumed: bool) -> LlmAgent:
        def ticket(reason: str) -> None:
            """Files a ticket; a person answers it."""
            del reason

        asks: list[ScriptItem] = [call("ticket", "t1", reason="r")]
        model = ScriptedModel(responses=["filed"] if resumed else asks)
        second = LlmAgent(name="second", model=model, tools=[LongRunningFunctionTool(ticket)])
        pair = Pair(name="pair", sub_agents=[Step(name="first", runs=runs), second])
        boss_model = ScriptedModel(
            responses=["done"] if resumed else [call("pair", "p1", request="x")]
        )
        return LlmAgent(name="boss", model=boss_model, tools=[AgentTool(pair)])

    again, _ = await answered_after_a_restart(stores, boss)

    assert runs.count == {"first": 1}
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


class Booking(BaseModel):
    room: str
    nights: int


async def test_a_task_agents_finish_task_result_is_the_calls_result_not_its_earlier_text(
    stores: StoreFactory,
) -> None:
    said = LlmResponse(
        content=Content(
            role="model",
            parts=[
                Part(text="Booking it."),
                Part(function_call=FunctionCall(id="f1", name="finish_task", args={})),
            ],
        )
    )
    finish = call("finish_task", "f2", room="blue", nights=2)
    helper_model = ScriptedModel(responses=[said, finish])
    helper = LlmAgent(name="helper", mode="task", model=helper_model, output_schema=Booking)
    boss_model = ScriptedModel(responses=[call("helper", "h1", request="x"), "Booked."])
    h = await harness(stores, LlmAgent(name="boss", model=boss_model, tools=[AgentTool(helper)]))

    await h.start("go")

    # google-adk 2.13.0 gives "" (the task's result is lost); baton gives what the agent
    # gave finish_task, not the text of one of its earlier turns.
    assert seen(boss_model.requests[1])[-1] == "user: result helper={'room': 'blue', 'nights': 2}"


async def test_a_task_agent_resumed_in_another_process_gives_its_result_to_its_caller_once(
    stores: StoreFactory,
) -> None:
    ran: list[str] = []
    boss_models: list[ScriptedModel] = []

    def boss(*, resumed: bool) -> LlmAgent:
        asks: list[ScriptItem] = [call("ticket", "t1", reason="r")]
        finish = call("finish_task", "f1", result="ticket filed")
        helper_model = ScriptedModel(responses=[finish] if resumed else asks)
        helper = LlmAgent(
            name="helper", mode="task", model=helper_model, tools=helper_tools(ran)[1:]
        )
        boss_model = ScriptedModel(
            responses=["done"] if resumed else [call("helper", "h1", request="x")]
        )
        boss_models.append(boss_model)
        return LlmAgent(name="boss", model=boss_model, tools=[AgentTool(helper)])

    again, events = await answered_after_a_restart(stores, boss)

    assert result_of(events, "h1").get_function_responses()[0].response == {
        "result": "ticket filed"
    }
    assert [seen(r)[-1] for r in boss_models[1].requests] == [
        "user: result helper={'result': 'ticket filed'}"
    ]
    assert (await again.invocation()).status == InvocationStatus.COMPLETED
