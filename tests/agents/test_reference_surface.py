"""Agent and tool attributes code written for the reference reads and sets."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from baton import (
    BaseAgent,
    Event,
    InvocationContext,
    LlmAgent,
    LoopAgent,
    ParallelAgent,
    SequentialAgent,
    Workflow,
    types,
)
from baton.callback_context import CallbackContext
from baton.errors import StateSchemaError
from baton.history import acting_node
from baton.models import LlmRequest, ScriptedModel
from baton.readonly_context import ReadonlyContext
from baton.tools import BaseTool, FunctionTool, ToolContext
from baton.tools.base_toolset import BaseToolset
from baton.workflow.workers import ParallelWorker
from tests.agents.conftest import MakeRunner


class Shout(BaseTool):
    """A tool written as the reference's docs show: its own __init__, not BaseTool's."""

    def __init__(self) -> None:
        self.name = "shout"
        self.description = "Shouts the word."

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters={"type": "object", "properties": {"word": {"type": "string"}}},
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        return {"said": str(args["word"]).upper()}


async def test_a_tool_that_skips_base_tool_init_reads_as_an_ordinary_tool(
    make: MakeRunner,
) -> None:
    assert (BaseTool.is_long_running, BaseTool.custom_metadata) == (False, None)
    tool = Shout()
    assert (tool.is_long_running, tool.custom_metadata) == (False, None)
    call = types.FunctionCall(id="c1", name="shout", args={"word": "hi"})
    model = ScriptedModel(responses=[call, "done"])
    h = await make(LlmAgent(name="agent", model=model, tools=[tool]))

    events = await h.start()

    parts = [p for e in events if e.content for p in e.content.parts or []]
    assert [p.function_response.response for p in parts if p.function_response] == [{"said": "HI"}]
    assert [p.text for p in parts if p.text] == ["done"]


class Listed(BaseToolset):
    """Lists one tool named after the state's `flavour`."""

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        flavour = readonly_context.state["flavour"] if readonly_context else "none"
        return [FunctionTool(lambda: flavour, name=f"get_{flavour}")]


def greet(name: str) -> str:
    return f"hello {name}"


async def test_canonical_methods_take_a_context_as_the_reference_s(make: MakeRunner) -> None:
    seen: list[object] = []

    async def mood(ctx: InvocationContext) -> str:  # handed a ReadonlyContext here
        return f"be {ctx.state['mood']}"

    async def look(callback_context: CallbackContext) -> None:
        seen.append(await agent.canonical_instruction(callback_context))
        seen.append(await agent.canonical_global_instruction(callback_context))
        seen.append([t.name for t in await agent.canonical_tools(callback_context)])
        seen.append(await plain.canonical_instruction(callback_context))

    agent = LlmAgent(
        name="agent",
        model=ScriptedModel(["done"]),
        instruction=mood,
        global_instruction="Hi {mood}",
        tools=[greet, Listed()],
        before_agent_callback=look,
        sub_agents=[plain := LlmAgent(name="plain", instruction="Answer {mood}.")],
    )
    h = await make(agent, state={"mood": "kind", "flavour": "mint"})

    with pytest.warns(DeprecationWarning, match="global_instruction"):  # as the reference
        await h.start()

    assert seen == [
        ("be kind", True),
        ("Hi {mood}", False),
        ["greet", "get_mint"],
        ("Answer {mood}.", False),
    ]
    assert [t.name for t in await plain.canonical_tools()] == []
    assert [t.name for t in await agent.canonical_tools()] == ["greet", "get_none"]


async def test_an_agent_without_model_takes_the_default_model(
    make: MakeRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert LlmAgent.DEFAULT_MODEL == "gemini-3.5-flash"
    monkeypatch.setattr(LlmAgent, "_default_model", LlmAgent.DEFAULT_MODEL)  # restored after
    LlmAgent.set_default_model(ScriptedModel(["from the default"]))
    h = await make(LlmAgent(name="agent"))

    events = await h.start()

    assert [e.content.text for e in events if e.content] == ["from the default"]
    with pytest.raises(TypeError, match="takes a model string or a BaseLlm, got 3"):
        LlmAgent.set_default_model(3)  # pyright: ignore[reportArgumentType] -- the bad input tested
    with pytest.raises(ValueError, match="model string is empty"):
        LlmAgent.set_default_model("")


def test_the_default_gemini_model_without_a_key_is_refused_saying_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    agent = LlmAgent(name="agent")

    with pytest.raises(ValueError, match="has no model") as e:
        _ = agent.canonical_model

    message = str(e.value)
    assert "default model 'gemini-3.5-flash'" in message
    assert "GEMINI_API_KEY" in message
    assert "LlmAgent.set_default_model" in message


class Quiet(BaseAgent):
    """Says `text` when it has one, and writes `writes` into the state first."""

    text: str = ""
    writes: dict[str, Any] = Field(default_factory=dict[str, Any])

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        yield Event(
            author=self.name,
            content=types.ModelContent(self.text) if self.text else None,
            state=self.writes,
        )


def after(node_input: object) -> str:
    return f"after {node_input}"


@pytest.mark.parametrize("kind", [SequentialAgent, ParallelAgent, LoopAgent])
async def test_an_agent_node_waiting_for_output_triggers_nothing_without_one(
    make: MakeRunner, kind: type[BaseAgent]
) -> None:
    options: dict[str, Any] = {"max_iterations": 1} if kind is LoopAgent else {}
    silent = kind(name="silent", sub_agents=[Quiet(name="q")], wait_for_output=True, **options)
    assert silent.wait_for_output
    h = await make(Workflow(name="wf", edges=[("START", silent, after)]))

    events = await h.start()

    assert [acting_node(e) for e in events if e.output is not None] == []
    loud = kind(name="loud", sub_agents=[Quiet(name="q")], **options)
    h = await make(Workflow(name="wf2", edges=[("START", loud, after)]))
    assert [e.output for e in await h.start() if e.output is not None] == ["after None"]


class Counts(BaseModel):
    count: int = 0


@pytest.mark.parametrize("kind", [SequentialAgent, ParallelAgent, LoopAgent])
async def test_an_agent_s_state_schema_refuses_a_write_of_its_tree(
    make: MakeRunner, kind: type[BaseAgent]
) -> None:
    options: dict[str, Any] = {"max_iterations": 1} if kind is LoopAgent else {}
    bad = kind(
        name="a", sub_agents=[Quiet(name="q", writes={"bogus": 1})], state_schema=Counts, **options
    )
    h = await make(Workflow(name="wf", edges=[("START", bad)]))

    with pytest.raises(StateSchemaError, match="agent 'a' wrote state key 'bogus'"):
        await h.start()

    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state == {}
    good = kind(
        name="b", sub_agents=[Quiet(name="q", writes={"count": 3})], state_schema=Counts, **options
    )
    h = await make(Workflow(name="wf2", edges=[("START", good)]))
    await h.start()
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state == {"count": 3}
    with pytest.raises(TypeError, match="state_schema must be a pydantic model class, got 3"):
        kind(name="c", state_schema=3)  # pyright: ignore[reportArgumentType] -- the bad input tested


def three(node_input: object) -> list[str]:
    return ["a", "b", "c"]


def echo(request: LlmRequest) -> str:
    return f"echo {request.contents[-1].text}"


async def test_an_llm_agent_parallel_worker_runs_once_per_item(make: MakeRunner) -> None:
    agent = LlmAgent(name="each", model=ScriptedModel(responder=echo), parallel_worker=True)
    h = await make(Workflow(name="wf", edges=[("START", three, agent, after)]))

    events = await h.start()

    replies = sorted(e.content.text for e in events if e.author == "each" and e.content)
    assert replies == ["echo a", "echo b", "echo c"]
    assert [(acting_node(e), e.output) for e in events if e.output is not None] == [
        ("three", ["a", "b", "c"]),
        ("each", ["echo a", "echo b", "echo c"]),
        ("after", "after ['echo a', 'echo b', 'echo c']"),
    ]
    assert agent.parallel_worker  # the flag stays as given, as the reference's


def look_up(item: str) -> str:
    """Look an item up."""
    return f"found {item}"


def look_up_then_answer(request: LlmRequest) -> str | types.FunctionCall:
    last = request.contents[-1]
    if last.function_responses:
        return f"done {last.function_responses[0].response}"
    return types.FunctionCall(name="look_up", args={"item": last.text})


async def test_a_parallel_worker_llm_agent_s_items_are_offered_its_tools(
    make: MakeRunner,
) -> None:
    model = ScriptedModel(responder=look_up_then_answer)
    agent = LlmAgent(name="each", model=model, tools=[look_up], parallel_worker=True)
    h = await make(Workflow(name="wf", edges=[("START", three, agent)]))

    events = await h.start()

    assert [e.output for e in events if e.output is not None][-1] == [
        "done {'result': 'found a'}",
        "done {'result': 'found b'}",
        "done {'result': 'found c'}",
    ]
    offered = [
        [d.name for t in r.config.tools or [] for d in t.function_declarations or []]
        for r in model.requests
    ]
    assert offered == [["look_up"]] * 6


@pytest.mark.parametrize("kind", [SequentialAgent, ParallelAgent, LoopAgent])
async def test_parallel_worker_on_other_agents_is_refused_naming_what_works(
    make: MakeRunner, kind: type[BaseAgent]
) -> None:
    with pytest.raises(ValidationError, match=f"{kind.__name__} takes no parallel_worker"):
        kind(name="a", sub_agents=[Quiet(name="q", text="hi")], parallel_worker=True)  # pyright: ignore[reportCallIssue] -- the bad input tested

    options: dict[str, Any] = {"max_iterations": 1} if kind is LoopAgent else {}
    worker = ParallelWorker(node=kind(name="a", sub_agents=[Quiet(name="q", text="hi")], **options))
    h = await make(Workflow(name="wf", edges=[("START", three, worker)]))
    events = await h.start()
    assert [e.content.text for e in events if e.author == "q" and e.content] == ["hi"] * 3
