"""An agent resumes from its checkpoint and its invocation's events: what a resume reads
from the store does not grow with the session's history, on every backend, as a
workflow's resume does not (tests/runner/test_guarantees.py).

Only the model's next request needs the conversation: with `include_contents="none"`
nothing before the run is read; with "default" the session's events are read once, for
the model, and every earlier message reaches it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from baton import (
    EventActions,
    LlmAgent,
    LongRunningFunctionTool,
    LoopAgent,
    ParallelAgent,
    SequentialAgent,
    Workflow,
    types,
)
from baton.events import Event
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.sql import SqlStore
from baton.sessions.store import InvocationStatus, SessionKey, StepCommit, Store
from baton.types import FunctionCall, InvocationId
from baton.workflow.nodes import Node
from tests.conftest import StoreFactory
from tests.harness import Harness, build_harness
from tests.store.traffic import traffic

HISTORY = 120  # earlier events in the session: messages, and state writes between them


def start_job(what: str) -> None:
    """Start a job; its result arrives later (None: no interim status for the model)."""
    del what


def _respond(request: LlmRequest) -> str | FunctionCall:
    """Call the tool first; once its result is in, answer."""
    last = request.contents[-1]
    if last.function_responses:
        return "done"
    return FunctionCall(id="c1", name="start_job", args={"what": "report"})


def _assistant(model: ScriptedModel, contents: str) -> LlmAgent:
    """A chat agent, its model shown the history or not ("default" / "none"): as a
    workflow node too. Or ("single_turn") one that sees only its input and its turns."""
    return LlmAgent(
        name="assistant",
        model=model,
        tools=[LongRunningFunctionTool(start_job)],
        include_contents="none" if contents == "none" else "default",
        mode="single_turn" if contents == "single_turn" else "chat",
    )


def _shapes() -> dict[str, Callable[[LlmAgent], Node]]:
    return {
        "llm": lambda agent: agent,
        "sequential": lambda agent: SequentialAgent(name="seq", sub_agents=[agent]),
        "loop": lambda agent: LoopAgent(name="loop", max_iterations=1, sub_agents=[agent]),
        "parallel": lambda agent: ParallelAgent(name="par", sub_agents=[agent]),
        "workflow": lambda agent: Workflow(name="wf", edges=[("START", agent)]),
    }


@dataclass
class Reads:
    """What the store returned to its callers: events, and whole histories loaded."""

    events: int = 0
    histories: int = 0


def count_reads(store: Store, monkeypatch: pytest.MonkeyPatch) -> Reads:
    """The real store, its event reads counted (each call goes through to it)."""
    reads = Reads()
    get_session, list_events = store.get_session, store.list_events

    async def counted_session(
        key: SessionKey, *, with_events: bool = True, event_limit: int | None = None
    ) -> object:
        session = await get_session(key, with_events=with_events, event_limit=event_limit)
        if session is not None and with_events:
            reads.events += len(session.events)
            reads.histories += event_limit is None
        return session

    async def counted_events(key: SessionKey, invocation_id: InvocationId) -> list[Event]:
        events = await list_events(key, invocation_id)
        reads.events += len(events)
        return events

    monkeypatch.setattr(store, "get_session", counted_session)
    monkeypatch.setattr(store, "list_events", counted_events)
    return reads


async def fill_history(store: Store, key: SessionKey, size: int) -> None:
    """`size` earlier events outside any run: user messages, every third a state write."""
    history = tuple(
        Event(author="user", actions=EventActions(state_delta={"seen": i}))
        if i % 3 == 2
        else Event(author="user", content=_text(f"earlier {i}"))
        for i in range(size)
    )
    commit = StepCommit(session=key, invocation_id=None, expected_version=0, events=history)
    await store.commit_step(commit)


def _text(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def job_result() -> types.Content:
    result = types.FunctionResponse(id="c1", name="start_job", response={"url": "r.pdf"})
    return types.Content(role="user", parts=[types.Part(function_response=result)])


@dataclass
class Resumed:
    reads: Reads
    request: LlmRequest  # the model's request after the result arrived


async def resume_after(
    store: Store, reads: Reads, shape: str, contents: str, history: int
) -> Resumed:
    """Pause the agent at its long-running call after `history` earlier events, then
    answer the call; what the answering call read."""
    model = ScriptedModel(responder=_respond)
    root = _shapes()[shape](_assistant(model, contents))
    h = await build_harness(root, BaseSessionService(store), resumable=True)
    await fill_history(store, h.key, history)
    await h.start("make the report")
    assert len(model.requests) == 1
    reads.events = reads.histories = 0
    await h.collect(new_message=job_result())
    assert await _status(h) == InvocationStatus.COMPLETED
    assert len(model.requests) == 2
    return Resumed(Reads(reads.events, reads.histories), model.requests[-1])


async def fresh_and_long(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch, shape: str, contents: str
) -> tuple[Resumed, Resumed]:
    """The resume in a new session, and after `HISTORY` earlier events."""
    store = stores.open()
    reads = count_reads(store, monkeypatch)
    fresh = await resume_after(store, reads, shape, contents, 0)
    return fresh, await resume_after(store, reads, shape, contents, HISTORY)


async def _status(h: Harness) -> InvocationStatus:
    [invocation] = await h.runner.store.list_invocations(h.key)
    return invocation.status


def _texts(request: LlmRequest) -> list[str]:
    return [c.text for c in request.contents if c.text]


@pytest.mark.parametrize("shape", list(_shapes()))
async def test_an_agent_without_history_in_its_contents_resumes_reading_only_its_run(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    fresh, long = await fresh_and_long(stores, monkeypatch, shape, "none")

    assert long.reads == fresh.reads
    assert long.reads.histories == 0
    # The run's own events only: the message, the call, its status and its result (the
    # sequence's and the loop's checkpoints besides), however long the session.
    assert long.reads.events <= 6
    assert long.request.contents == fresh.request.contents
    assert [c.role for c in long.request.contents] == ["user", "model", "user"]
    assert _texts(long.request) == ["make the report"]
    [result] = long.request.contents[-1].function_responses
    assert result.response == {"url": "r.pdf"}


@pytest.mark.parametrize("shape", ["llm", "workflow"])
async def test_an_agent_showing_the_history_reads_it_once_for_the_model(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    fresh, long = await fresh_and_long(stores, monkeypatch, shape, "default")

    assert fresh.reads.histories == long.reads.histories == 1
    assert long.reads.events - fresh.reads.events == HISTORY
    messages = [f"earlier {i}" for i in range(HISTORY) if i % 3 != 2]
    assert _texts(long.request) == [*messages, "make the report"]
    assert _texts(fresh.request) == ["make the report"]


async def test_a_single_turn_workflow_node_resumes_reading_only_its_run(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh, long = await fresh_and_long(stores, monkeypatch, "workflow", "single_turn")

    assert long.reads == fresh.reads
    assert long.reads.histories == 0
    assert long.request.contents == fresh.request.contents
    assert _texts(long.request) == ["make the report"]


async def test_an_agent_resume_sends_postgres_the_same_statements_after_any_history(
    emptied_postgres_url: str,
) -> None:
    store = SqlStore(emptied_postgres_url)
    seen: list[list[str]] = []
    for history in (0, HISTORY):
        model = ScriptedModel(responder=_respond)
        agent = _assistant(model, "none")
        h = await build_harness(agent, BaseSessionService(store), resumable=True)
        await fill_history(store, h.key, history)
        await h.start("make the report")
        with traffic(store) as sent:
            await h.collect(new_message=job_result())
        assert await _status(h) == InvocationStatus.COMPLETED
        seen.append(sent.statements)
    await store.close()

    assert seen[0] == seen[1]
    assert seen[0].count("SELECT") <= 6


@pytest.mark.parametrize("contents", ["none", "default"])
async def test_an_agent_resume_on_postgres_reads_its_run_with_the_claim(
    emptied_postgres_url: str, contents: str
) -> None:
    """The claim returns the invocation's events: the agent learns how far its run got,
    and (with "none") builds its model's request, without a read of its own."""
    store = SqlStore(emptied_postgres_url)
    model = ScriptedModel(responder=_respond)
    h = await build_harness(_assistant(model, contents), BaseSessionService(store), resumable=True)
    await fill_history(store, h.key, 4)
    await h.start("make the report")
    with traffic(store) as sent:
        await h.collect(new_message=job_result())
    assert await _status(h) == InvocationStatus.COMPLETED
    await store.close()

    # The claim, the answer's step, the model's reply's step and the run's end: with
    # "default" the session's events besides (the session, then its events), for the model.
    history_read = [] if contents == "none" else ["SELECT", "SELECT"]
    assert sent.statements == ["WITH", "WITH", *history_read, "WITH", "WITH"]
    assert [c.role for c in model.requests[-1].contents][-3:] == ["user", "model", "user"]
    assert _texts(model.requests[-1])[-1] == "make the report"
    [result] = model.requests[-1].contents[-1].function_responses
    assert result.response == {"url": "r.pdf"}


def _desk_transfers(request: LlmRequest) -> FunctionCall:
    return FunctionCall(id="t1", name="transfer_to_agent", args={"agent_name": "assistant"})


def _assistant_greets_then_works(request: LlmRequest) -> str | FunctionCall:
    # The desk's transfer follows the user's message, quoted (as in the reference).
    said = [c.text for c in request.contents if not (c.text or "").startswith("For context")]
    return "hi" if said[-1] == "hello" else _respond(request)


async def routed_resume_after(
    store: Store, reads: Reads, history: int, *, between: int = 0
) -> Reads:
    """A conversation the desk handed to its assistant; a new message goes to the
    assistant (the root routes it there), which pauses at its long-running call; what
    the call answering it read. `between`: user events between the two messages."""
    assistant = LlmAgent(
        name="assistant",
        model=ScriptedModel(responder=_assistant_greets_then_works),
        tools=[LongRunningFunctionTool(start_job)],
        include_contents="none",
    )
    desk = LlmAgent(
        name="desk",
        model=ScriptedModel(responder=_desk_transfers),
        sub_agents=[assistant],
        include_contents="none",
    )
    h = await build_harness(desk, BaseSessionService(store), resumable=True)
    await fill_history(store, h.key, history)
    await h.start("hello")
    await fill_history(store, h.key, between)
    asked = await h.start("make the report")
    # The assistant answers it directly: the desk does not run (nor transfer again).
    assert [(e.author, c.name) for e in asked for c in e.function_calls] == [
        ("assistant", "start_job")
    ]
    reads.events = reads.histories = 0
    done = await h.collect(new_message=job_result())
    assert [(e.author, e.content.text) for e in done if e.content and e.content.text] == [
        ("assistant", "done")
    ]
    return Reads(reads.events, reads.histories)


async def test_a_conversation_left_with_a_sub_agent_resumes_there_without_the_history(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = stores.open()
    reads = count_reads(store, monkeypatch)
    shorter = await routed_resume_after(store, reads, HISTORY)
    longer = await routed_resume_after(store, reads, 4 * HISTORY)

    # Routing reads back from the newest earlier events until one decides.
    assert shorter == longer
    assert longer.histories == 0


async def test_routing_reads_further_back_until_an_agents_reply_decides(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = stores.open()
    reads = count_reads(store, monkeypatch)
    # 200 user events since the assistant's reply: more than the first read covers.
    resumed = await routed_resume_after(store, reads, 0, between=200)
    assert resumed.histories == 0
