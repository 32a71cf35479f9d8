"""The process the agent crash test kills: starts or resumes the agent tree once.

    run(["--url", URL, "--session", S, "--work", DIR, "--action", "start"|"resume"|"reply",
         "--kill-at", K, "--root", <a name in ROOTS>], log)

"reply" sends the user's reply to a task agent's question ("Bob") as a new message.

Every agent, tool and model call appends its name to DIR/runs (fsynced first), so
the test counts executions across processes. Every step commit that returned is
counted in DIR/commits; the process SIGKILLs itself right after the K-th, so the
store really holds that step and nothing after it ran. Each process reads time a
minute ahead of the one before, so a killed process's lease has expired for it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import time
from collections.abc import AsyncGenerator, Callable
from datetime import timedelta
from pathlib import Path
from typing import ClassVar, cast

from pydantic import JsonValue

from baton import (
    App,
    BaseAgent,
    Event,
    EventActions,
    InvocationContext,
    LlmAgent,
    LongRunningFunctionTool,
    LoopAgent,
    ParallelAgent,
    ResumabilityConfig,
    Runner,
    SequentialAgent,
    Workflow,
    types,
)
from baton.models import BaseLlm, LlmRequest, ScriptedModel
from baton.models.scripted import ScriptItem
from baton.sessions.services import BaseSessionService
from baton.sessions.sql import SqlStore
from baton.sessions.store import SessionKey, StepCommit
from baton.tools import FunctionTool, ToolContext
from baton.types import FunctionCall, SessionId
from tests.agents.examples import load_example

APP_NAME = "crash_agents"
_story = load_example("story_agent")
STORY_SCRIPT = cast(dict[str, str], _story.SCRIPT)
build_story_agent = cast(
    Callable[[Callable[[str], BaseLlm | str]], BaseAgent], _story.build_story_agent
)
USER_ID = "u"


class Recorder:
    """Appends one line per execution to a file that survives SIGKILL."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def runs(self) -> list[str]:
        """What ran so far, in this process and the ones before."""
        return self.path.read_text().split() if self.path.exists() else []

    def record(self, name: str) -> None:
        with self.path.open("a") as file:
            file.write(f"{name}\n")
            file.flush()
            os.fsync(file.fileno())


class Recorded(BaseAgent):
    """Records its execution, then says so and ends in the same event, so once that
    event is committed it never runs again."""

    recorder: Recorder

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        self.recorder.record(self.name)
        yield Event(
            author=self.name,
            content=types.Content(role="model", parts=[types.Part(text=f"{self.name} done")]),
            actions=EventActions(state_delta={self.name: "done"}, end_of_agent=True),
        )


class _Handoff:
    """The writer's two calls run at once; t2 ends only once t1's result is committed on
    its own (when t1 ran in this process), so every run commits the same steps."""

    t1_ended = False
    t1_committed = asyncio.Event()

    @classmethod
    def note(cls, step: StepCommit) -> None:
        """Called after each commit: whether it recorded t1's result as it ended."""
        for event in step.events:
            state = event.actions.agent_state
            if isinstance(state, dict) and state.get("finished_calls"):
                cls.t1_committed.set()


def build_root(recorder: Recorder) -> BaseAgent:
    """seq[first, writer (model + tools t1, t2), par[p1, p2], loop x2 [l1], last]."""

    async def t1(x: int) -> str:
        recorder.record("t1")
        _Handoff.t1_ended = True
        return f"t1({x})"

    async def t2(x: int) -> str:
        if _Handoff.t1_ended:
            await _Handoff.t1_committed.wait()
        recorder.record("t2")
        return f"t2({x})"

    def tool(name: str) -> FunctionTool:
        return FunctionTool(t1 if name == "t1" else t2, name=name)

    def respond(request: LlmRequest) -> ScriptItem:
        answered = [r for c in request.contents for r in c.function_responses]
        recorder.record("model" if not answered else "model-final")
        if not answered:
            return [FunctionCall(name="t1", args={"x": 1}), FunctionCall(name="t2", args={"x": 2})]
        return "written"

    def step(name: str) -> Recorded:
        return Recorded(name=name, recorder=recorder)

    writer = LlmAgent(
        name="writer",
        model=ScriptedModel(responder=respond),
        tools=[tool("t1"), tool("t2")],
        output_key="text",
    )
    return SequentialAgent(
        name="root",
        sub_agents=[
            step("first"),
            writer,
            ParallelAgent(name="par", sub_agents=[step("p1"), step("p2")]),
            LoopAgent(name="loop", max_iterations=2, sub_agents=[step("l1")]),
            step("last"),
        ],
    )


def build_with_long_running(recorder: Recorder) -> BaseAgent:
    """writer's turn calls the long-running tool job and the plain tool t2 at once; job
    returns its ticket (an interim result) and ends first (t2 waits for its checkpoint,
    as in build_root); the model replies to the turn's results and the run waits for
    the job's final response (see test_crash_callbacks_transfer)."""

    async def job(x: int) -> dict[str, JsonValue]:
        recorder.record("job")
        _Handoff.t1_ended = True
        return {"ticket": x}

    async def t2(x: int) -> str:
        if _Handoff.t1_ended:
            await _Handoff.t1_committed.wait()
        recorder.record("t2")
        return f"t2({x})"

    def respond(request: LlmRequest) -> ScriptItem:
        answered = [r for c in request.contents for r in c.function_responses]
        recorder.record("model-pending" if answered else "model")
        if not answered:
            return [FunctionCall(name="job", args={"x": 1}), FunctionCall(name="t2", args={"x": 2})]
        return "pending"

    return LlmAgent(
        name="writer",
        model=ScriptedModel(responder=respond),
        tools=[LongRunningFunctionTool(job), FunctionTool(t2, name="t2")],
    )


def build_story(recorder: Recorder) -> BaseAgent:
    """The story_agent example (seed 002's StoryFlowAgent), each model call recorded."""

    def make(name: str) -> ScriptedModel:
        def respond(request: LlmRequest) -> str:
            del request
            recorder.record(name)
            return STORY_SCRIPT[name]

        return ScriptedModel(model=name, responder=respond)

    return build_story_agent(make)


def recorded_tool(recorder: Recorder) -> Callable[[int], str]:
    """A tool `t1(x)` whose calls are recorded."""

    def t1(x: int) -> str:
        """A tool.

        Args:
            x: a number.
        """
        recorder.record("t1")
        return f"t1({x})"

    return t1


def build_with_callbacks(recorder: Recorder) -> BaseAgent:
    """An LlmAgent calling one tool, every callback recorded (see test_callbacks_crash)."""

    t1 = recorded_tool(recorder)

    def respond(request: LlmRequest) -> ScriptItem:
        answered = [r for c in request.contents for r in c.function_responses]
        recorder.record("model" if not answered else "model-final")
        return "written" if answered else [FunctionCall(name="t1", args={"x": 1})]

    def recorded(name: str, result: object = None) -> Callable[..., object]:
        def callback(**kwargs: object) -> object:
            del kwargs
            recorder.record(name)
            return result

        return callback

    return LlmAgent(
        name="writer",
        model=ScriptedModel(responder=respond),
        tools=[t1],
        before_agent_callback=recorded("before_agent"),
        after_agent_callback=recorded(
            "after_agent", types.Content(role="model", parts=[types.Part(text="signed")])
        ),
        before_model_callback=recorded("before_model"),
        after_model_callback=recorded("after_model"),
        before_tool_callback=recorded("before_tool"),
        after_tool_callback=recorded("after_tool"),
    )


def build_with_transfer(recorder: Recorder) -> BaseAgent:
    """triage transfers to refunds, which calls a tool and answers (see test_callbacks_crash)."""

    t1 = recorded_tool(recorder)

    def triage(request: LlmRequest) -> ScriptItem:
        del request
        recorder.record("triage")
        return [FunctionCall(name="transfer_to_agent", args={"agent_name": "refunds"})]

    def refunds(request: LlmRequest) -> ScriptItem:
        answered = [r for c in request.contents for r in c.function_responses if r.name == "t1"]
        recorder.record("refunds-final" if answered else "refunds")
        return "refunded" if answered else [FunctionCall(name="t1", args={"x": 1})]

    worker = LlmAgent(name="refunds", model=ScriptedModel(responder=refunds), tools=[t1])
    return LlmAgent(name="triage", model=ScriptedModel(responder=triage), sub_agents=[worker])


def build_with_handback(recorder: Recorder) -> BaseAgent:
    """triage transfers to refunds, which hands over to its peer sales; sales calls a tool
    and hands back to triage, which answers (see test_crash_callbacks_transfer)."""

    t1 = recorded_tool(recorder)

    def answered(request: LlmRequest) -> bool:
        return any(r.name == "t1" for c in request.contents for r in c.function_responses)

    def told(request: LlmRequest) -> bool:  # other agents' texts reach triage as context
        return any("t1 ran" in (c.text or "") for c in request.contents)

    def triage(request: LlmRequest) -> ScriptItem:
        if told(request):
            recorder.record("triage-final")
            return "all done"
        recorder.record("triage")
        return [FunctionCall(name="transfer_to_agent", args={"agent_name": "refunds"})]

    def refunds(request: LlmRequest) -> ScriptItem:
        del request
        recorder.record("refunds")
        return [FunctionCall(name="transfer_to_agent", args={"agent_name": "sales"})]

    def sales(request: LlmRequest) -> ScriptItem:
        if answered(request):
            recorder.record("sales-final")
            return ["t1 ran", FunctionCall(name="transfer_to_agent", args={"agent_name": "triage"})]
        recorder.record("sales")
        return [FunctionCall(name="t1", args={"x": 1})]

    return LlmAgent(
        name="triage",
        model=ScriptedModel(responder=triage),
        sub_agents=[
            LlmAgent(name="refunds", model=ScriptedModel(responder=refunds)),
            LlmAgent(name="sales", model=ScriptedModel(responder=sales), tools=[t1]),
        ],
    )


def build_with_delegation(recorder: Recorder) -> BaseAgent:
    """boss calls its single-turn sub-agent helper as a tool; helper calls t1 and replies;
    boss answers with helper's reply (see test_crash_callbacks_transfer)."""

    t1 = recorded_tool(recorder)

    def boss(request: LlmRequest) -> ScriptItem:
        replies = [r for c in request.contents for r in c.function_responses]
        recorder.record("boss-final" if replies else "boss")
        return "all done" if replies else [FunctionCall(name="helper", args={"request": "go"})]

    def helper(request: LlmRequest) -> ScriptItem:
        answered = any(c.function_responses for c in request.contents)
        recorder.record("helper-final" if answered else "helper")
        return "t1 ran" if answered else [FunctionCall(name="t1", args={"x": 1})]

    worker = LlmAgent(
        name="helper", model=ScriptedModel(responder=helper), tools=[t1], mode="single_turn"
    )
    return LlmAgent(name="boss", model=ScriptedModel(responder=boss), sub_agents=[worker])


class Escalating(BaseAgent):
    """Records its execution, then escalates: its ParallelAgent ends at once."""

    recorder: Recorder

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        self.recorder.record(self.name)
        yield Event(
            author=self.name,
            content=types.Content(role="model", parts=[types.Part(text="enough")]),
            actions=EventActions(escalate=True),
        )


class Slow(BaseAgent):
    """Records its execution, then takes longer than any test waits."""

    recorder: Recorder

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        self.recorder.record(self.name)
        await asyncio.sleep(3600)
        yield Event(author=self.name)


def build_with_escalation(recorder: Recorder) -> BaseAgent:
    """seq[par[p1 (escalates), p2 (slow)], last]: par ends at p1's escalation."""
    par = ParallelAgent(
        name="par",
        sub_agents=[Escalating(name="p1", recorder=recorder), Slow(name="p2", recorder=recorder)],
    )
    return SequentialAgent(name="root", sub_agents=[par, Recorded(name="last", recorder=recorder)])


def task_model(recorder: Recorder) -> ScriptedModel:
    """A task agent's model: it asks the user's name, looks it up with t1 once the user
    replied, then finishes with it."""

    def respond(request: LlmRequest) -> ScriptItem:
        replied = any(c.role == "user" and c.text == "Bob" for c in request.contents)
        looked_up = any(r.name == "t1" for c in request.contents for r in c.function_responses)
        if not replied:
            recorder.record("question")
            return "What's your name?"
        if not looked_up:
            recorder.record("lookup")
            return [FunctionCall(name="t1", args={"x": 1})]
        recorder.record("finish")
        return [FunctionCall(name="finish_task", args={"result": "Bob"})]

    return ScriptedModel(responder=respond)


def build_task_node(recorder: Recorder) -> Workflow:
    """START -> asker (a task agent with tool t1) -> after (records its input)."""
    asker = LlmAgent(
        name="asker", model=task_model(recorder), mode="task", tools=[recorded_tool(recorder)]
    )

    def after(node_input: JsonValue) -> JsonValue:
        recorder.record("after")
        return node_input

    return Workflow(name="wf", edges=[("START", asker, after)])


def build_task_sequence(recorder: Recorder) -> Workflow:
    """START -> steps (a sequence ending in the task agent asker) -> after, which records
    its input: the task's result, not the task's question."""
    asker = LlmAgent(
        name="asker", model=task_model(recorder), mode="task", tools=[recorded_tool(recorder)]
    )
    steps = SequentialAgent(name="steps", sub_agents=[asker])

    def after(node_input: JsonValue) -> JsonValue:
        recorder.record(f"after:{json.dumps(node_input, separators=(',', ':'))}")
        return node_input

    return Workflow(name="wf", edges=[("START", steps, after)])


def build_task_delegation(recorder: Recorder) -> BaseAgent:
    """coord hands the task to its task sub-agent asker (which uses tool t1), then thanks."""

    def coord(request: LlmRequest) -> ScriptItem:
        if any(r.name == "asker" for c in request.contents for r in c.function_responses):
            recorder.record("thanks")
            return "Thanks, Bob!"
        recorder.record("delegate")
        return [FunctionCall(name="asker", args={"request": "get the name"})]

    asker = LlmAgent(
        name="asker", model=task_model(recorder), mode="task", tools=[recorded_tool(recorder)]
    )
    return LlmAgent(name="coord", model=ScriptedModel(responder=coord), sub_agents=[asker])


class _EndOrder:
    """When the cart's calls end: b adds its item first, c builds on it and ends, then b
    ends, then a. A call waiting for another's end waits, when that one ended in this
    process, for the commit of its result too, so every run commits the same steps."""

    ended: ClassVar[set[str]] = set()  # the items whose call ended in this process
    committed: ClassVar[set[str]] = set()  # call ids whose result a commit recorded
    b_added = asyncio.Event()

    @classmethod
    def note(cls, step: StepCommit) -> None:
        """Called after each commit: the calls whose results it recorded as they ended."""
        for event in step.events:
            state = event.actions.agent_state
            finished = state.get("finished_calls") if isinstance(state, dict) else None
            cls.committed.update(finished if isinstance(finished, dict) else ())

    @classmethod
    async def until_ended(cls, item: str, recorder: Recorder) -> None:
        """Until `item`'s call ended: in this process, with its result committed, or in
        an earlier one."""
        while True:
            if item in cls.ended and f"c{'abc'.index(item) + 1}" in cls.committed:
                return
            if item not in cls.ended and f"add-{item}" in recorder.runs():
                return
            await asyncio.sleep(0.01)


def build_with_shared_writes(recorder: Recorder) -> BaseAgent:
    """cart's turn adds a, b and c at once, each adding its item (once: the tool is
    idempotent) to a list key and a dict key, as it sees them, and setting a scalar key.
    b adds first; c adds on b's item and ends; b ends; a adds last (see `_EndOrder`)."""

    async def add(item: str, tool_context: ToolContext) -> str:
        state = tool_context.state
        if item == "c" and "b" not in cast(list[JsonValue], state.get("cart", [])):
            await _EndOrder.b_added.wait()  # b runs in this process
        elif item == "a":
            await _EndOrder.until_ended("b", recorder)
        cart = cast(list[JsonValue], state.get("cart", []))
        if item not in cart:
            state["cart"] = [*cart, item]
        state["seen"] = {**cast(dict[str, JsonValue], state.get("seen", {})), item: True}
        state["last"] = item
        if item == "b":
            _EndOrder.b_added.set()
            await _EndOrder.until_ended("c", recorder)
        recorder.record(f"add-{item}")
        _EndOrder.ended.add(item)
        return f"added {item}"

    def respond(request: LlmRequest) -> ScriptItem:
        if not [r for c in request.contents for r in c.function_responses]:
            return [
                FunctionCall(id=f"c{n}", name="add", args={"item": item})
                for n, item in enumerate("abc", start=1)
            ]
        return "added"

    return LlmAgent(name="cart", model=ScriptedModel(responder=respond), tools=[add])


def build_with_structured_reply(recorder: Recorder) -> BaseAgent:
    """An agent with a tool and an output_schema: its model calls t1, then gives its
    reply through set_model_response, whose answer and the reply commit one by one."""

    def respond(request: LlmRequest) -> ScriptItem:
        answered = [r for c in request.contents for r in c.function_responses]
        recorder.record("model" if not answered else "model-final")
        if not answered:
            return [FunctionCall(name="t1", args={"x": 1})]
        return [FunctionCall(name="set_model_response", args={"response": "done"})]

    return LlmAgent(
        name="writer",
        model=ScriptedModel(responder=respond),
        tools=[recorded_tool(recorder)],
        output_schema=str,
        output_key="answer",
    )


ROOTS: dict[str, Callable[[Recorder], BaseAgent | Workflow]] = {
    "tree": build_root,
    "story": build_story,
    "callbacks": build_with_callbacks,
    "transfer": build_with_transfer,
    "handback": build_with_handback,
    "delegation": build_with_delegation,
    "long_running": build_with_long_running,
    "escalation": build_with_escalation,
    "task_node": build_task_node,
    "task_sequence": build_task_sequence,
    "task_delegation": build_task_delegation,
    "shared_writes": build_with_shared_writes,
    "structured": build_with_structured_reply,
}


def count_process(counter: Path) -> int:
    """How many processes ran the app before this one (this one is counted)."""
    before = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(before + 1))
    return before


def count_commits(store: SqlStore, counter: Path, kill_at: int | None) -> None:
    """Count each commit that returned; die right after the K-th."""
    commit = store.commit_step

    async def counted(step: StepCommit) -> int:
        version = await commit(step)
        done = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(done))
        if done == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        _Handoff.note(step)
        _EndOrder.note(step)
        return version

    setattr(store, "commit_step", counted)  # noqa: B010 -- SqlStore is final: wrap, not subclass


async def main(args: argparse.Namespace) -> None:
    work = Path(args.work)
    resuming = args.action == "resume"
    # Each process reads time a minute later than the one before, so the leases of those
    # killed before it have expired for it.
    ahead = 60 * count_process(work / "processes")
    store = SqlStore(args.url, clock=lambda: time.time() + ahead)
    count_commits(store, work / "commits", args.kill_at)
    runner = Runner(
        app=App(
            name=APP_NAME,
            root_agent=ROOTS[args.root](Recorder(work / "runs")),
            resumability_config=ResumabilityConfig(is_resumable=True),
        ),
        session_service=BaseSessionService(store),
        lease_ttl=timedelta(seconds=30),
    )
    invocation = None
    if resuming:
        invocations = await store.list_invocations(
            SessionKey(APP_NAME, USER_ID, SessionId(args.session))
        )
        invocation = invocations[-1].id
    text = "Bob" if args.action == "reply" else "go"
    message = None if resuming else types.Content(role="user", parts=[types.Part(text=text)])
    try:
        async with asyncio.timeout(30):
            async for _ in runner.run_async(
                user_id=USER_ID,
                session_id=args.session,
                invocation_id=invocation,
                new_message=message,
            ):
                pass
    finally:
        await runner.close()


def run(argv: list[str], log: str) -> None:
    """Entry point in a forked process: output to `log`, then one run of `main`."""
    with open(log, "ab", buffering=0) as file:
        os.dup2(file.fileno(), 1)
        os.dup2(file.fileno(), 2)
    args = parse(argv)
    asyncio.run(main(args))
    # The test reads this when the forkserver loses the exit status (see the test).
    (Path(args.work) / f"{args.action}-returned").touch()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--action", choices=["start", "resume", "reply"], required=True)
    parser.add_argument("--kill-at", type=int)
    parser.add_argument("--root", choices=sorted(ROOTS), default="tree")
    return parser.parse_args(argv)
