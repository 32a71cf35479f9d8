"""An LlmAgent as a workflow node runs in single-turn mode, as in the reference.

With no `mode`, no parent and no sub-agents, a workflow node's model sees only the
node's input (a user turn) and its own turns: not the session's history, not the
user's message when another node came first, not its own earlier passes in a loop.
Each expected request below is what google-adk 2.13.0 sent its model for the same
workflow (probed with a model that records its requests), except where a test says
the reference differs.
"""

from __future__ import annotations

import pydantic
import pytest

from baton import Context, Workflow
from baton.agents import LlmAgent
from baton.errors import GraphValidationError, WorkflowConfigurationError
from baton.events import Event, RequestInput
from baton.models import LlmRequest, ScriptedModel
from baton.tools import LongRunningFunctionTool
from baton.types import FunctionCall
from baton.workflow import JoinNode, node
from tests.agents.conftest import MakeRunner
from tests.agents.quoting import turns
from tests.harness import outputs


def seen(request: LlmRequest) -> list[str]:
    """A request's contents, one line per content: `role: part, part`."""
    return [f"{role}: {', '.join(parts)}" for role, parts in turns(request)]


def topic(node_input: str) -> str:
    del node_input
    return "topic"


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def ticket(reason: str) -> None:
    """Files a ticket; a person answers it."""
    del reason


async def test_after_a_function_node_the_model_sees_only_the_node_input(
    make: MakeRunner,
) -> None:
    model = ScriptedModel(responses=["answer"])
    writer = LlmAgent(name="writer", model=model, instruction="Write.")
    h = await make(Workflow(name="wf", edges=[("START", topic, writer)]))
    await h.start("go")
    assert [seen(r) for r in model.requests] == [["user: topic"]]
    assert model.requests[0].config.system_instruction == "Write."


async def test_after_start_each_invocation_shows_only_its_own_message(make: MakeRunner) -> None:
    model = ScriptedModel(responses=["one", "two"])
    h = await make(Workflow(name="wf", edges=[("START", LlmAgent(name="w", model=model))]))
    await h.start("go")
    await h.start("again")
    assert [seen(r) for r in model.requests] == [["user: go"], ["user: again"]]


async def test_tool_calls_and_results_of_its_own_run_are_shown(make: MakeRunner) -> None:
    model = ScriptedModel(
        responses=[[FunctionCall(id="c1", name="add", args={"a": 1, "b": 2})], "three"]
    )
    writer = LlmAgent(name="writer", model=model, tools=[add])
    h = await make(Workflow(name="wf", edges=[("START", topic, writer)]))
    await h.start("go")
    assert [seen(r) for r in model.requests] == [
        ["user: topic"],
        ["user: topic", "model: call add({'a': 1, 'b': 2})", "user: result add={'result': 3}"],
    ]


async def test_a_dict_input_is_shown_as_json(make: MakeRunner) -> None:
    def fields(node_input: str) -> dict[str, int]:
        del node_input
        return {"a": 1}

    model = ScriptedModel(responses=["answer"])
    writer = LlmAgent(name="writer", model=model)
    h = await make(Workflow(name="wf", edges=[("START", fields, writer)]))
    await h.start("go")
    assert [seen(r) for r in model.requests] == [['user: {"a": 1}']]


async def test_after_an_answered_question_the_model_sees_the_answer(make: MakeRunner) -> None:
    def ask(node_input: str) -> RequestInput:
        del node_input
        return RequestInput(interrupt_id="q", message="which?")

    model = ScriptedModel(responses=["done"])
    writer = LlmAgent(name="writer", model=model)
    h = await make(Workflow(name="wf", edges=[("START", ask, writer)]))
    await h.start("go")
    await h.answer(("q", "blue"))
    assert [seen(r) for r in model.requests] == [["user: blue"]]


async def test_resumed_after_a_long_running_tool_it_still_sees_its_input(
    make: MakeRunner,
) -> None:
    """The reference's resumed request shows the user's message ('go') in place of the
    node's input ('topic'), which its first request showed; baton's keeps the input."""
    model = ScriptedModel(
        responses=[[FunctionCall(id="t1", name="ticket", args={"reason": "r"})], "done"]
    )
    writer = LlmAgent(name="writer", model=model, tools=[LongRunningFunctionTool(ticket)])
    h = await make(Workflow(name="wf", edges=[("START", topic, writer)]))
    await h.start("go")
    await h.answer(("t1", {"status": "ok"}), name="ticket", wrap=False)
    assert [seen(r) for r in model.requests] == [
        ["user: topic"],
        [
            "user: topic",
            "model: call ticket({'reason': 'r'})",
            "user: result ticket={'status': 'ok'}",
        ],
    ]


async def test_in_a_loop_each_pass_sees_only_its_own_input(make: MakeRunner) -> None:
    def check(ctx: Context, node_input: str) -> Event:
        del node_input
        n = ctx.state["n"] = ctx.state.get("n", 0) + 1
        return Event(output=f"pass{n}", route="again" if n < 3 else "done")

    def end(node_input: str) -> str:
        return node_input

    model = ScriptedModel(responses=["one", "two"])
    writer = LlmAgent(name="writer", model=model)
    edges = [("START", check), (check, {"again": writer, "done": end}), (writer, check)]
    h = await make(Workflow(name="wf", edges=edges))
    await h.start("go")
    assert [seen(r) for r in model.requests] == [["user: pass1"], ["user: pass2"]]


async def test_in_sequence_the_second_agent_sees_the_first_ones_reply(make: MakeRunner) -> None:
    model = ScriptedModel(responses=["one", "two"])
    first, second = LlmAgent(name="a1", model=model), LlmAgent(name="a2", model=model)
    h = await make(Workflow(name="wf", edges=[("START", first, second)]))
    await h.start("go")
    assert [seen(r) for r in model.requests] == [["user: go"], ["user: one"]]


async def test_parallel_paths_and_a_nested_workflow_see_only_their_input(
    make: MakeRunner,
) -> None:
    def source(node_input: str) -> str:
        del node_input
        return "src"

    model = ScriptedModel(responses=["one", "two", "three"])
    w1, w2, w3 = (LlmAgent(name=n, model=model) for n in ("w1", "w2", "w3"))
    inner = Workflow(name="inner", edges=[("START", topic, w3)])
    join = JoinNode(name="j")
    edges = [("START", source, (w1, w2, inner)), ((w1, w2, inner), join)]
    h = await make(Workflow(name="wf", edges=edges))
    await h.start("go")
    assert sorted(str(seen(r)) for r in model.requests) == sorted(
        [str(["user: src"]), str(["user: src"]), str(["user: topic"])]
    )


async def test_a_chat_agent_after_start_sees_the_conversation(make: MakeRunner) -> None:
    model = ScriptedModel(responses=["one", "two"])
    chat = LlmAgent(name="w", model=model, mode="chat")
    h = await make(Workflow(name="wf", edges=[("START", chat)]))
    await h.start("go")
    await h.start("again")
    assert [seen(r) for r in model.requests] == [
        ["user: go"],
        ["user: go", "model: one", "user: again"],
    ]


def test_a_chat_agent_after_another_node_is_refused() -> None:
    chat = LlmAgent(name="w", model=ScriptedModel(), mode="chat")
    with pytest.raises(GraphValidationError) as caught:
        Workflow(name="wf", edges=[("START", topic, chat)])
    message = str(caught.value)
    assert "node 'w' follows 'topic'" in message
    assert "mode='chat'" in message


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        LlmAgent(name="w", model=ScriptedModel(), mode="solo")  # pyright: ignore[reportArgumentType] -- the wrong value under test
    message = str(caught.value)
    assert "'solo'" in message
    assert "'chat', 'task' or 'single_turn'" in message


async def test_a_single_turn_root_agent_is_refused_before_anything_is_stored(
    make: MakeRunner,
) -> None:
    model = ScriptedModel(responses=["never"])
    h = await make(LlmAgent(name="solo", model=model, mode="single_turn"))
    with pytest.raises(
        WorkflowConfigurationError, match="root agent 'solo' has mode='single_turn'"
    ):
        await h.start("go")
    assert await h.service.store.list_invocations(h.key) == []
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.events == []
    assert model.requests == []


async def test_an_agent_a_node_runs_is_single_turn_too(make: MakeRunner) -> None:
    model = ScriptedModel(responses=["one"])
    writer = LlmAgent(name="writer", model=model)

    @node(rerun_on_resume=True)
    async def caller(ctx: Context, node_input: str) -> str:
        del node_input
        return f"got {await ctx.run_node(writer, node_input='dyn input')}"

    h = await make(Workflow(name="wf", edges=[("START", caller)]))
    events = await h.start("go")
    assert [seen(r) for r in model.requests] == [["user: dyn input"]]
    assert outputs(events)[-1] == ("caller", "got one")
