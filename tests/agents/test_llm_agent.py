"""LlmAgent: the function-calling loop, recorded tool results, long-running tools, resume."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest
from pydantic import JsonValue

from baton import Workflow, types
from baton.agents import (
    LlmAgent,
    LoopAgent,
    MissingStateKeyError,
    ModelCallError,
    ParallelAgent,
    SequentialAgent,
)
from baton.errors import (
    AlreadyAnsweredError,
    InvalidResponseError,
    UnknownInterruptError,
    UnknownModelError,
)
from baton.models import BaseLlm, LlmRequest, LlmResponse, ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus
from baton.tools import BaseTool, FunctionTool, LongRunningFunctionTool, ToolContext
from baton.types import FunctionCall
from tests.agents.agents import Boom, Runs, Step, counting_model, texts
from tests.agents.conftest import MakeRunner
from tests.agents.examples import load_example
from tests.agents.quoting import PREAMBLE, said, turns
from tests.conftest import StoreFactory
from tests.harness import Harness, asked, build_harness, outputs


def tools_counted(runs: Runs, *names: str) -> list[FunctionTool]:
    """A FunctionTool per name: `name(x: int) -> str`, counted in `runs`."""

    def make(name: str) -> FunctionTool:
        def tool(x: int) -> str:
            run = runs.bump(name)
            return f"{name}({x}) run {run}"

        return FunctionTool(tool, name=name, description=f"The {name} tool.")

    return [make(n) for n in names]


def calls(*names: str) -> list[FunctionCall]:
    return [FunctionCall(id=f"call-{n}", name=n, args={"x": i}) for i, n in enumerate(names)]


def responses(request: LlmRequest) -> dict[str, object]:
    return {r.id or "": r.response for c in request.contents for r in c.function_responses}


async def test_a_failed_tool_reruns_alone_and_finished_tools_are_reused(make: MakeRunner) -> None:
    runs = Runs(fail={"c": {1}})
    model = ScriptedModel(responses=[calls("a", "b", "c"), "all done"])
    agent = LlmAgent(name="agent", model=model, tools=tools_counted(runs, "a", "b", "c"))
    h = await make(agent)

    with pytest.raises(Boom):
        await h.start("do it")
    events = await h.collect(invocation_id=(await h.invocation()).id)

    assert runs.count == {"a": 1, "b": 1, "c": 2}
    assert len(model.requests) == 2
    assert responses(model.requests[1]) == {
        "call-a": {"result": "a(0) run 1"},
        "call-b": {"result": "b(1) run 1"},
        "call-c": {"result": "c(2) run 2"},
    }
    assert texts(events)[-1] == ("agent", "all done")
    assert outputs(events)[-1][1] == "all done"


async def test_a_recorded_model_turn_is_not_asked_again_when_its_tools_fail(
    make: MakeRunner,
) -> None:
    runs = Runs(fail={"a": {1, 2}})
    model = ScriptedModel(responses=[calls("a"), "ok"])
    agent = LlmAgent(name="agent", model=model, tools=tools_counted(runs, "a"))
    h = await make(agent)

    with pytest.raises(Boom):
        await h.start()
    invocation = (await h.invocation()).id
    with pytest.raises(Boom):
        await h.collect(invocation_id=invocation)
    await h.collect(invocation_id=invocation)

    assert len(model.requests) == 2
    assert runs.count == {"a": 3}


async def test_the_idempotency_key_is_stable_across_recovery(make: MakeRunner) -> None:
    keys: list[str] = []

    def pay(amount: int, tool_context: ToolContext) -> str:
        keys.append(tool_context.idempotency_key)
        if len(keys) == 1:
            raise Boom("network down")
        return "paid"

    model = ScriptedModel(responses=[FunctionCall(id="p1", name="pay", args={"amount": 3}), "ok"])
    h = await make(LlmAgent(name="agent", model=model, tools=[pay]))

    with pytest.raises(Boom):
        await h.start()
    await h.collect(invocation_id=(await h.invocation()).id)

    assert len(keys) == 2
    assert keys[0] == keys[1]
    assert keys[0].endswith("/p1")


async def test_regular_and_long_running_calls_in_one_turn(make: MakeRunner) -> None:
    runs = Runs()

    def ask(question: str) -> None:
        runs.bump(question)

    model = ScriptedModel(
        responses=[
            [
                FunctionCall(id="r", name="a", args={"x": 1}),
                FunctionCall(id="l1", name="ask", args={"question": "q1"}),
                FunctionCall(id="l2", name="ask", args={"question": "q2"}),
            ],
            "both answered",
        ]
    )
    agent = LlmAgent(
        name="agent",
        model=model,
        tools=[*tools_counted(runs, "a"), LongRunningFunctionTool(ask)],
    )
    h = await make(agent)

    started = await h.start()
    assert asked(started) == ["l1", "l2"]
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    partly = await h.answer(("l1", "yes"), name="ask")
    assert partly == []  # nothing ran: the other call is still open
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    done = await h.answer(("l2", "no"), name="ask")

    assert runs.count == {"a": 1, "q1": 1, "q2": 1}
    assert len(model.requests) == 2
    assert responses(model.requests[1]) == {
        "r": {"result": "a(1) run 1"},
        "l1": {"result": "yes"},
        "l2": {"result": "no"},
    }
    assert outputs(done)[-1][1] == "both answered"
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_long_running_call_with_invalid_arguments_does_not_pause(
    make: MakeRunner,
) -> None:
    def ask(question: str) -> None:
        del question

    model = ScriptedModel(responses=[FunctionCall(id="l1", name="ask", args={"wrong": 1}), "sorry"])
    h = await make(LlmAgent(name="agent", model=model, tools=[LongRunningFunctionTool(ask)]))

    events = await h.start()

    assert asked(events) == []
    error = str(responses(model.requests[1])["l1"])
    assert "Invoking `ask()` failed as the following mandatory input parameters" in error
    assert outputs(events)[-1][1] == "sorry"


async def test_unknown_tools_get_an_error_the_model_can_read(make: MakeRunner) -> None:
    model = ScriptedModel(responses=[FunctionCall(id="x", name="nope", args={}), "fine"])
    h = await make(LlmAgent(name="agent", model=model))

    await h.start()

    assert responses(model.requests[1]) == {
        "x": {"error": "tool 'nope' does not exist; tools: none."}
    }


async def test_instruction_is_filled_from_state_and_output_key_is_saved(
    make: MakeRunner,
) -> None:
    model = ScriptedModel(responses=["a poem"])
    agent = LlmAgent(
        name="poet",
        model=model,
        instruction='Write about {topic}{style?}. Reply as {"poem": ...}.',
        output_key="poem",
    )
    h = await make(agent, state={"topic": "tea"})

    await h.start()

    assert model.requests[0].config.system_instruction == (
        'Write about tea. Reply as {"poem": ...}.\n\n' 'You are the agent named "poet".'
    )
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state["poem"] == "a poem"


async def test_instruction_values_are_written_as_the_reference_writes_them(
    make: MakeRunner,
) -> None:
    model = ScriptedModel(responses=["ok"])
    agent = LlmAgent(name="a", model=model, instruction="v={v} d={d} n={n} x={x}")
    h = await make(agent, state={"v": True, "d": {"a": 1}, "n": None, "x": 2.5})

    await h.start()

    assert model.requests[0].config.system_instruction == (
        "v=True d={'a': 1} n= x=2.5\n\nYou are the agent named \"a\"."
    )


async def test_a_missing_state_key_in_the_instruction_is_named(make: MakeRunner) -> None:
    agent = LlmAgent(name="poet", model=ScriptedModel(), instruction="About {topic}.")
    h = await make(agent, state={"colour": "red"})

    with pytest.raises(MissingStateKeyError, match=r"agent 'poet' uses \{topic\}.*keys: colour"):
        await h.start()
    with pytest.raises(KeyError):  # what the reference's code catches
        await h.start()


async def test_history_of_earlier_invocations_reaches_the_model(make: MakeRunner) -> None:
    model = ScriptedModel(responses=["hello", "you said hi"])
    h = await make(LlmAgent(name="agent", model=model))

    await h.start("hi")
    await h.start("what did I say?")

    assert [(c.role, c.text) for c in model.requests[1].contents] == [
        ("user", "hi"),
        ("model", "hello"),
        ("user", "what did I say?"),
    ]


def approval_tool(request: str) -> str:
    """Request human approval for an action."""
    return f"Approved: {request}"


def next_step(node_input: str) -> str:
    return f"next: {node_input}"


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_seed_004_llm_agent_with_approval_in_a_workflow(
    make: MakeRunner, resumable: bool
) -> None:
    model = ScriptedModel(
        responses=[
            FunctionCall(id="c1", name="approval_tool", args={"request": "buy a laptop"}),
            "Your purchase is waiting for approval.",
            "The purchase was approved.",
        ]
    )
    llm_agent = LlmAgent(
        name="agent_with_approval",
        model=model,
        instruction="When you need approval, use the approval_tool.",
        tools=[LongRunningFunctionTool(func=approval_tool)],
    )
    agent = Workflow(name="hitl_workflow", edges=[("START", llm_agent), (llm_agent, next_step)])
    h = await make(agent, resumable=resumable)

    paused = await h.start("buy a laptop")
    [call_event] = [e for e in paused if e.long_running_tool_ids]
    call = call_event.function_calls[0]
    resumed = await h.answer(("c1", {"approved": True}), name=call.name or "", wrap=False)

    assert (call.id, call.name) == ("c1", "approval_tool")
    # The tool's value is an interim result: the model replies to it in the same turn,
    # then the run waits for the approval, and next_step waits with it.
    assert texts(paused) == [("agent_with_approval", "Your purchase is waiting for approval.")]
    assert "next_step" not in [name for name, _ in outputs(paused)]
    assert len(model.requests) == 3
    assert responses(model.requests[1]) == {"c1": {"result": "Approved: buy a laptop"}}
    assert responses(model.requests[2]) == {"c1": {"approved": True}}
    assert outputs(resumed) == [
        ("agent_with_approval", "The purchase was approved."),
        ("next_step", "next: The purchase was approved."),
    ]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


def approval_agent(name: str, runs: Runs) -> LlmAgent:
    def respond(request: LlmRequest) -> list[str | FunctionCall]:
        run = runs.bump(name)
        if run == 1:
            return [FunctionCall(id=f"{name}-ok", name="approval_tool", args={"request": name})]
        if run == 2:  # the tool's interim result
            return [f"{name} is waiting"]
        return [f"{name} approved"]

    return LlmAgent(
        name=name,
        model=ScriptedModel(model=name, responder=respond),
        tools=[LongRunningFunctionTool(approval_tool)],
    )


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_an_answer_inside_a_sequence_continues_with_the_next_sub_agent(
    make: MakeRunner, resumable: bool
) -> None:
    runs = Runs()
    seq = SequentialAgent(
        name="seq",
        sub_agents=[
            Step(name="before", runs=runs),
            approval_agent("ask", runs),
            Step(name="after", runs=runs),
        ],
    )
    h = await make(seq, resumable=resumable)

    started = await h.start()
    assert asked(started) == ["ask-ok"]
    assert texts(started) == [("before", "before done"), ("ask", "ask is waiting")]
    events = await h.answer(("ask-ok", "yes"), name="approval_tool")

    assert texts(events) == [("ask", "ask approved"), ("after", "after done")]
    # Checkpoints are streamed in resumable mode only (stored in both: they resume it).
    streamed = any(e.is_checkpoint_only() for e in started + events)
    assert streamed == resumable
    assert runs.count == {"before": 1, "ask": 3, "after": 1}
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_an_answer_inside_a_loop_continues_the_iteration(make: MakeRunner) -> None:
    runs = Runs()
    loop = LoopAgent(
        name="loop",
        max_iterations=2,
        sub_agents=[approval_agent("ask", runs), Step(name="after", runs=runs)],
    )
    h = await make(loop)

    started = await h.start()
    assert asked(started) == ["ask-ok"]
    assert texts(started) == [("ask", "ask is waiting")]
    events = await h.answer(("ask-ok", "yes"), name="approval_tool")

    # The second iteration's ask runs afresh: its model answers at once (run 4).
    assert [a for a, _ in texts(events)] == ["ask", "after", "ask", "after"]
    assert runs.count == {"ask": 4, "after": 2}
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_parallel_llm_agents_see_only_their_own_branch(make: MakeRunner) -> None:
    runs = Runs()
    left = LlmAgent(name="left", model=counting_model("left", runs))
    right = LlmAgent(name="right", model=counting_model("right", runs))
    after = LlmAgent(name="after", model=counting_model("after", runs))
    seq = SequentialAgent(
        name="seq", sub_agents=[ParallelAgent(name="par", sub_agents=[left, right]), after]
    )
    h = await make(seq)

    await h.start("go")

    def seen(agent: LlmAgent) -> list[str]:
        model = agent.canonical_model
        assert isinstance(model, ScriptedModel)
        return ["\n".join(parts) for _, parts in turns(model.requests[0])]

    assert seen(left) == ["go"]
    assert seen(right) == ["go"]
    assert sorted(seen(after)) == sorted(
        [
            "go",
            f"{PREAMBLE}\n{said('left', 'left says 1')}",
            f"{PREAMBLE}\n{said('right', 'right says 1')}",
        ]
    )


async def test_node_input_from_a_predecessor_is_a_user_turn(make: MakeRunner) -> None:
    model = ScriptedModel(responses=["summary"])
    agent = LlmAgent(name="summarize", model=model)

    def draft(node_input: str) -> str:
        return f"draft of {node_input}"

    h = await make(Workflow(name="wf", edges=[("START", draft, agent)]))
    await h.start("a trip")

    # A single-turn node, as the reference's: its input, not the user's message before it.
    assert [(c.role, c.text) for c in model.requests[0].contents] == [
        ("user", "draft of a trip"),
    ]


async def test_an_agent_without_model_is_refused_with_a_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without a key for the default model (see test_reference_surface for the default).
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    agent = LlmAgent(name="agent")

    with pytest.raises(ValueError, match="has no model"):
        _ = agent.canonical_model


async def test_an_unknown_model_is_refused_before_the_run_stores_anything(
    make: MakeRunner,
) -> None:
    def draft(node_input: str) -> str:
        return f"draft of {node_input}"

    writer = LlmAgent(name="writer", model="claude-3-haiku")
    h = await make(Workflow(name="flow", edges=[("START", draft, writer)]))

    with pytest.raises(UnknownModelError) as caught:
        await h.start("a trip")

    assert "'claude-3-haiku'" in str(caught.value)
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.events == []
    assert await h.service.store.list_invocations(h.key) == []


async def test_the_approval_example_pauses_for_the_refund_and_finishes_after_it(
    make: MakeRunner, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("BATON_MODEL", raising=False)
    module = load_example("approval_agent")
    assert "BATON_MODEL is not set" in capsys.readouterr().err
    h = await make(cast(LlmAgent, module.root_agent))

    paused = await h.start("Please refund order 7, it arrived broken.")
    [call] = [c for e in paused for c in e.function_calls if e.long_running_tool_ids]
    done = await h.answer((call.id or "", {"approved": True}), name="issue_refund", wrap=False)

    assert call.name == "issue_refund"
    assert call.args == {
        "order_id": "7",
        "amount": 120.0,
        "reason": "Please refund order 7, it arrived broken.",
    }
    assert outputs(done)[-1][1] == "The refund for order 7 was approved."


async def test_answering_one_parallel_branch_does_not_rerun_the_other(make: MakeRunner) -> None:
    runs = Runs()
    par = ParallelAgent(
        name="par", sub_agents=[approval_agent("x", runs), approval_agent("y", runs)]
    )
    seq = SequentialAgent(name="seq", sub_agents=[par, Step(name="after", runs=runs)])
    h = await make(seq)

    started = await h.start()
    assert sorted(asked(started)) == ["x-ok", "y-ok"]
    assert sorted(texts(started)) == [("x", "x is waiting"), ("y", "y is waiting")]
    first = await h.answer(("y-ok", "yes"), name="approval_tool")
    assert texts(first) == [("y", "y approved")]
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    second = await h.answer(("x-ok", "yes"), name="approval_tool")

    assert texts(second) == [("x", "x approved"), ("after", "after done")]
    assert runs.count == {"x": 3, "y": 3, "after": 1}


async def test_two_long_running_calls_one_after_the_other(make: MakeRunner) -> None:
    model = ScriptedModel(
        responses=[
            FunctionCall(id="first", name="approval_tool", args={"request": "a"}),
            "a is waiting",
            FunctionCall(id="second", name="approval_tool", args={"request": "b"}),
            "b is waiting",
            "both approved",
        ]
    )
    agent = LlmAgent(name="agent", model=model, tools=[LongRunningFunctionTool(approval_tool)])
    h = await make(SequentialAgent(name="seq", sub_agents=[agent]))

    started = await h.start()
    assert asked(started) == ["first"]
    assert texts(started) == [("agent", "a is waiting")]
    second = await h.answer(("first", "ok"), name="approval_tool")
    assert asked(second) == ["second"]
    assert texts(second) == [("agent", "b is waiting")]
    done = await h.answer(("second", "ok"), name="approval_tool")

    assert texts(done) == [("agent", "both approved")]
    assert len(model.requests) == 5
    assert responses(model.requests[4]) == {"first": {"result": "ok"}, "second": {"result": "ok"}}
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_a_tool_that_escalates_ends_the_loop(make: MakeRunner) -> None:
    def exit_loop(tool_context: ToolContext) -> str:
        """Stop the loop."""
        tool_context.actions.escalate = True
        return "stopping"

    model = ScriptedModel(responses=[FunctionCall(id="e", name="exit_loop", args={}), "stopped"])
    agent = LlmAgent(name="agent", model=model, tools=[exit_loop])
    h = await make(LoopAgent(name="loop", max_iterations=5, sub_agents=[agent]))

    events = await h.start()

    assert len(model.requests) == 2
    assert texts(events)[-1][1] == "stopped"


async def test_a_model_error_fails_the_run_and_a_resume_asks_again(make: MakeRunner) -> None:
    model = ScriptedModel(
        responses=[LlmResponse(error_code="RATE_LIMITED", error_message="slow down"), "ok"]
    )
    h = await make(LlmAgent(name="agent", model=model))

    with pytest.raises(ModelCallError, match="RATE_LIMITED: slow down"):
        await h.start()
    events = await h.collect(invocation_id=(await h.invocation()).id)

    assert outputs(events)[-1][1] == "ok"
    assert len(model.requests) == 2


async def test_a_long_running_tool_that_failed_to_start_is_started_on_resume(
    make: MakeRunner,
) -> None:
    runs = Runs(fail={"notify": {1}})

    def notify(person: str) -> None:
        runs.bump("notify")

    model = ScriptedModel(
        responses=[FunctionCall(id="n", name="notify", args={"person": "ann"}), "ann said yes"]
    )
    h = await make(LlmAgent(name="agent", model=model, tools=[LongRunningFunctionTool(notify)]))

    with pytest.raises(Boom):
        await h.start()
    await h.collect(invocation_id=(await h.invocation()).id)
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    done = await h.answer(("n", "yes"), name="notify")

    assert runs.count == {"notify": 2}
    assert len(model.requests) == 2
    assert outputs(done)[-1][1] == "ann said yes"


async def snapshot(h: Harness) -> tuple[object, ...]:
    """Everything a rejected answer must leave as it was: events, state, the invocation."""
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    return [e.id for e in session.events], session.state, await h.invocation()


async def test_bad_answers_to_a_long_running_call_change_nothing(make: MakeRunner) -> None:
    model = ScriptedModel(
        responses=[
            FunctionCall(id="c1", name="approval_tool", args={"request": "x"}),
            "waiting",
            "done",
        ]
    )
    agent = LlmAgent(name="agent", model=model, tools=[LongRunningFunctionTool(approval_tool)])
    h = await make(agent)
    assert asked(await h.start()) == ["c1"]
    paused = await snapshot(h)

    with pytest.raises(UnknownInterruptError, match="'nope' is not open .*open: 'c1'"):
        await h.answer(("nope", "yes"), name="approval_tool")
    assert await snapshot(h) == paused
    done = await h.answer(("c1", "yes"), name="approval_tool")
    finished = await snapshot(h)
    with pytest.raises(AlreadyAnsweredError, match="'c1'"):
        await h.answer(("c1", "no"), name="approval_tool")

    assert await snapshot(h) == finished
    assert outputs(done)[-1][1] == "done"
    assert len(model.requests) == 3


async def test_the_model_sees_an_answer_under_the_name_of_the_call_it_answers(
    make: MakeRunner,
) -> None:
    model = ScriptedModel(
        responses=[
            FunctionCall(id="c1", name="approval_tool", args={"request": "x"}),
            "waiting",
            "done",
        ]
    )
    agent = LlmAgent(name="agent", model=model, tools=[LongRunningFunctionTool(approval_tool)])
    h = await make(agent)
    await h.start()

    await h.answer(("c1", "yes"), name="adk_request_input")

    answers = [r for c in model.requests[2].contents for r in c.function_responses]
    assert [(r.id, r.name, r.response) for r in answers] == [
        ("c1", "approval_tool", {"result": "yes"})
    ]


def test_two_tools_with_one_name_are_refused_when_the_agent_is_built() -> None:
    def lookup(x: int) -> int:
        return x

    with pytest.raises(ValueError, match="agent 'agent' has two tools named 'lookup'"):
        LlmAgent(name="agent", tools=[lookup, FunctionTool(lookup)])


class ReferenceStyleModel(BaseLlm):
    """A custom model written against the reference's model interface, imports changed."""

    model: str = "reference-style"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].parts or []
        if last and last[0].function_response:
            answer = last[0].function_response.response or {}
            reply = types.Part.from_text(text=f"the tool said {answer['result']}")
        else:
            [tool] = llm_request.config.tools
            [declaration] = tool.function_declarations or []
            reply = types.Part.from_function_call(name=declaration.name, args={"x": 7})
        yield LlmResponse(content=types.Content(role="model", parts=[reply]))


async def test_a_custom_model_written_for_the_reference_drives_an_agent(
    make: MakeRunner,
) -> None:
    runs = Runs()
    agent = LlmAgent(name="agent", model=ReferenceStyleModel(), tools=tools_counted(runs, "a"))
    h = await make(agent)

    events = await h.start()

    assert runs.count == {"a": 1}
    assert outputs(events)[-1][1] == "the tool said a(7) run 1"


async def test_a_tool_reads_its_state_as_a_dict_as_in_the_reference(make: MakeRunner) -> None:
    seen: list[dict[str, JsonValue]] = []

    def note(x: int, tool_context: ToolContext) -> str:
        tool_context.state["temp:x"] = x
        tool_context.state["kind"] = "note"
        seen.append(tool_context.state.to_dict())
        return "noted"

    agent = LlmAgent(name="agent", model=ReferenceStyleModel(), tools=[note])
    h = await make(agent, state={"user:name": "ann"})

    await h.start()

    assert seen == [{"temp:x": 7, "kind": "note", "user:name": "ann"}]


async def test_a_long_running_tool_declares_the_answer_it_waits_for(
    make: MakeRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BATON_MODEL", raising=False)
    module = load_example("approval_agent")
    h = await make(cast(LlmAgent, module.root_agent))
    paused = await h.start("Please refund order 7, it arrived broken.")
    [call] = [c for e in paused for c in e.function_calls if e.long_running_tool_ids]
    [row] = await h.runner.store.list_interrupts(h.runner.app_name, h.user_id)
    schema = row.response_schema
    assert schema is not None
    assert schema["required"] == ["approved"]
    assert schema["properties"]["approved"]["type"] == "boolean"  # type: ignore[index]
    with pytest.raises(InvalidResponseError, match="'approved' is a required property"):
        await h.answer((call.id or "", {"note": "fine"}), name="issue_refund", wrap=False)
    assert len(await h.runner.store.list_interrupts(h.runner.app_name, h.user_id)) == 1
    done = await h.answer((call.id or "", {"approved": False}), name="issue_refund", wrap=False)
    assert outputs(done)[-1][1] == "The refund for order 7 was declined."


def test_a_response_schema_that_is_no_schema_is_refused() -> None:
    with pytest.raises(TypeError, match="is not a pydantic model"):
        LongRunningFunctionTool(lambda: None, name="refund", response_schema=object())


async def test_the_model_is_sent_the_images_of_the_users_earlier_messages(
    stores: StoreFactory,
) -> None:
    model = ScriptedModel(["A cat.", "Grey."])
    harness = await build_harness(
        LlmAgent(name="agent", model=model), BaseSessionService(stores.open()), resumable=True
    )
    image = types.Part.from_bytes(data=b"\x89PNG", mime_type="image/png")

    await harness.collect(
        new_message=types.Content(role="user", parts=[types.Part(text="What is it?"), image])
    )
    await harness.start("What colour?")

    [first, _, _] = model.requests[1].contents
    assert first.role == "user"
    assert first.parts == [types.Part(text="What is it?"), image]


def test_a_generate_content_config_setting_what_the_agent_sets_itself_is_refused() -> None:
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(name="f")])
    for given, field in (
        ({"tools": [tool]}, "tools"),
        ({"system_instruction": "Be brief."}, "instruction"),
        ({"response_schema": {"type": "object"}}, "output_schema"),
    ):
        config = types.GenerateContentConfig.model_validate(given)
        with pytest.raises(ValueError, match=rf"give it as LlmAgent\({field}="):
            LlmAgent(name="a", model=ScriptedModel(responses=[]), generate_content_config=config)

    sampling = types.GenerateContentConfig(temperature=0.1, top_k=5)
    agent = LlmAgent(name="a", model=ScriptedModel(responses=[]), generate_content_config=sampling)
    assert agent.generate_content_config == sampling


async def test_a_generate_content_config_response_json_schema_reaches_the_model(
    make: MakeRunner,
) -> None:
    """The reference (2.13.0, probed) refuses tools, system_instruction and
    response_schema in an agent's generate_content_config, but takes response_json_schema
    and sends it."""
    schema: dict[str, Any] = {"type": "object", "properties": {"poem": {"type": "string"}}}
    config = types.GenerateContentConfig(
        response_mime_type="application/json", response_json_schema=schema
    )
    model = ScriptedModel(responses=['{"poem": "tea"}'])
    agent = LlmAgent(name="poet", model=model, generate_content_config=config)
    h = await make(agent)

    await h.start()

    assert model.requests[0].config.response_json_schema == schema


class ReferenceStyleTool(BaseTool):
    """A custom tool written against the reference's BaseTool, imports changed."""

    def __init__(self) -> None:
        super().__init__(name="get_weather", description="Weather.", custom_metadata={"v": 1})

    def _get_declaration(self) -> types.FunctionDeclaration:
        schema = types.Schema(
            type=types.Type.OBJECT, properties={"city": types.Schema(type=types.Type.STRING)}
        )
        return types.FunctionDeclaration.model_validate(
            {"name": self.name, "description": self.description, "parameters": schema}
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        tool_context.state["asked"] = args["city"]
        return {"temp": 20}


async def test_a_tool_written_for_the_references_base_tool_runs(make: MakeRunner) -> None:
    model = ScriptedModel([FunctionCall(id="w1", name="get_weather", args={"city": "Oslo"}), "20"])
    tool = ReferenceStyleTool()
    h = await make(LlmAgent(name="agent", model=model, tools=[tool]))
    await h.start()

    [declared] = model.requests[0].config.function_declarations
    assert declared.parameters == {"type": "object", "properties": {"city": {"type": "string"}}}
    assert responses(model.requests[1]) == {"w1": {"temp": 20}}
    session = await h.service.get_session(
        app_name=h.runner.app_name, user_id="u", session_id=h.session_id
    )
    assert session is not None
    assert session.state["asked"] == "Oslo"
    assert tool.custom_metadata == {"v": 1}
    assert (
        await FunctionTool(add_numbers).run_async(args={"a": 1, "b": 2}, tool_context=ToolContext())
        == 3
    )


def add_numbers(a: int, b: int) -> int:
    return a + b


def test_a_tool_class_implementing_neither_run_is_refused() -> None:
    class Nothing(BaseTool):
        pass

    with pytest.raises(TypeError, match="implements neither run"):
        Nothing(name="n")


class CountingModel(BaseLlm):
    """A model that reports its token counts and why it stopped, as models do."""

    model: str = "counting"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text="hello")]),
            finish_reason="STOP",
            usage_metadata=types.UsageMetadata(
                prompt_token_count=11, candidates_token_count=2, total_token_count=13
            ),
        )


async def test_a_reply_event_carries_the_models_token_counts_and_finish_reason(
    make: MakeRunner,
) -> None:
    h = await make(LlmAgent(name="agent", model=CountingModel()))
    events = await h.start()

    usage = types.UsageMetadata(
        prompt_token_count=11, candidates_token_count=2, total_token_count=13
    )
    [reply] = [e for e in events if e.content and e.content.text == "hello"]
    assert (reply.finish_reason, reply.usage_metadata) == ("STOP", usage)
    session = await h.service.get_session(
        app_name=h.runner.app_name, user_id="u", session_id=h.session_id
    )
    assert session is not None
    [stored] = [e for e in session.events if e.id == reply.id]
    assert (stored.finish_reason, stored.usage_metadata) == ("STOP", usage)
    assert reply.to_wire()["usageMetadata"] == {
        "promptTokenCount": 11,
        "candidatesTokenCount": 2,
        "totalTokenCount": 13,
    }
