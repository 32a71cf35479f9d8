"""A node that reruns on resume (`rerun_on_resume=True`) yields again, from its top, what
it yielded before it paused: those events are the run's own replay, stored and shown once,
on every backend, in both modes, resumed by a fresh Runner (a restarted process). Only an
event the earlier execution really recorded, at the same place in the run, is replayed."""

from __future__ import annotations

from typing import Any

import pytest

from baton import Context, Event, EventActions, RequestInput, Workflow, node
from baton.history import acting_node
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus
from baton.workflow.nodes import Node
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, attach_harness, build_harness


@pytest.fixture(params=[True, False], ids=["resumable", "replay"])
def resumable(request: pytest.FixtureRequest) -> bool:
    return request.param


def shown(events: list[Event]) -> list[tuple[str, Any]]:
    """What each event of a node says, as a person reads it: (node, text / output / state)."""
    found: list[tuple[str, Any]] = []
    for e in events:
        if e.node_info is None:
            continue  # the user's messages
        if e.long_running_tool_ids:
            found.append((acting_node(e), f"asks {sorted(e.long_running_tool_ids)}"))
        elif e.content is not None and e.content.text:
            found.append((acting_node(e), e.content.text))
        elif e.output is not None:
            found.append((acting_node(e), {"output": e.output}))
        elif e.actions.state_delta:
            found.append((acting_node(e), {"state": e.actions.state_delta}))
    return found


async def ask(node_input: str) -> Any:
    yield RequestInput(interrupt_id=f"q-{node_input}", message="ok?")


def done(node_input: object) -> str:
    return f"done {node_input}"


async def run_through(
    stores: StoreFactory, root: Node, resumable: bool, *answers: tuple[str, str]
) -> tuple[list[list[Event]], list[Event]]:
    """Start, then give each answer through a fresh Runner over a fresh store (a restart);
    what each call yielded, and the session's events at the end."""
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=resumable)
    calls = [await h.start()]
    for answer in answers:
        h = attach_harness(
            root, BaseSessionService(stores.open()), h.session_id, resumable=resumable
        )
        calls.append(await h.answer(answer))
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
    session = await h.service.store.get_session(h.key)
    assert session is not None
    return calls, list(session.events)


async def test_a_message_yielded_before_a_child_asks_is_stored_once(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()

    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> Any:
        counter.bump("parent")
        yield Event(message="asking the reviewer")
        answer = await ctx.run_node(ask, "x")
        yield f"got {answer}"

    root = Workflow(name="wf", edges=[("START", parent, done)])

    (first, second), session = await run_through(stores, root, resumable, ("q-x", "yes"))

    assert shown(first) == [("ask", "asks ['q-x']"), ("parent", "asking the reviewer")]
    assert shown(second) == [
        ("ask", {"output": "yes"}),
        ("parent", {"output": "got yes"}),
        ("done", {"output": "done got yes"}),
    ]
    assert shown(session) == shown(first) + shown(second)
    assert counter.runs == {"parent": 2}


async def test_an_output_and_state_yielded_before_a_child_asks_are_stored_once(
    stores: StoreFactory, resumable: bool
) -> None:
    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> Any:
        ctx.state["seen"] = True  # the same write on the rerun
        yield Event(state={"step": 1})
        yield Event(output="early")
        answer = await ctx.run_node(ask, "x")
        yield Event(message=f"got {answer}")

    root = Workflow(name="wf", edges=[("START", parent, done)])

    (first, second), session = await run_through(stores, root, resumable, ("q-x", "yes"))

    assert shown(first) == [
        ("ask", "asks ['q-x']"),
        ("parent", {"state": {"seen": True, "step": 1}}),
        ("parent", {"output": "early"}),
    ]
    assert shown(second) == [
        ("ask", {"output": "yes"}),
        ("parent", "got yes"),
        ("done", {"output": "done early"}),
    ]
    assert shown(session) == shown(first) + shown(second)


async def test_each_pause_stores_only_what_is_new_since_the_last(
    stores: StoreFactory, resumable: bool
) -> None:
    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> Any:
        yield Event(message="one")
        first = await ctx.run_node(ask, "a")
        yield Event(message=f"two after {first}")
        second = await ctx.run_node(ask, "b")
        yield f"{first} {second}"

    root = Workflow(name="wf", edges=[("START", parent, done)])

    calls, session = await run_through(stores, root, resumable, ("q-a", "A"), ("q-b", "B"))

    assert [shown(c) for c in calls] == [
        [("ask", "asks ['q-a']"), ("parent", "one")],
        [("ask", {"output": "A"}), ("ask", "asks ['q-b']"), ("parent", "two after A")],
        [
            ("ask", {"output": "B"}),
            ("parent", {"output": "A B"}),
            ("done", {"output": "done A B"}),
        ],
    ]
    assert shown(session) == [item for c in calls for item in shown(c)]


async def test_a_rerun_that_yields_something_else_stores_it_and_all_after_it(
    stores: StoreFactory, resumable: bool
) -> None:
    """Only a replay of what the earlier execution recorded, at the same place, is left out:
    a changed event is new, and so is everything after it, even an event the earlier
    execution also recorded (it recorded it at another place)."""
    counter = Counter()

    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> Any:
        counter.bump("parent")
        yield Event(message="same")
        yield Event(message=f"execution {counter.runs['parent']}")
        yield Event(message="same")
        answer = await ctx.run_node(ask, "x")
        yield answer

    root = Workflow(name="wf", edges=[("START", parent, done)])

    (first, second), session = await run_through(stores, root, resumable, ("q-x", "yes"))

    assert shown(first) == [
        ("ask", "asks ['q-x']"),
        ("parent", "same"),
        ("parent", "execution 1"),
        ("parent", "same"),
    ]
    assert shown(second) == [
        ("ask", {"output": "yes"}),
        ("parent", "execution 2"),
        ("parent", "same"),
        ("parent", {"output": "yes"}),
        ("done", {"output": "done yes"}),
    ]
    assert shown(session) == shown(first) + shown(second)


async def test_a_node_that_asks_itself_stores_what_it_said_before_asking_once(
    stores: StoreFactory, resumable: bool
) -> None:
    @node(rerun_on_resume=True)
    async def review(ctx: Context) -> Any:
        yield Event(message="please review")
        if "r" not in ctx.resume_inputs:
            yield RequestInput(interrupt_id="r", message="ok?")
            return
        yield f"reviewed: {ctx.resume_inputs['r']}"

    root = Workflow(name="wf", edges=[("START", review, done)])

    (first, second), session = await run_through(stores, root, resumable, ("r", "fine"))

    assert shown(first) == [("review", "please review"), ("review", "asks ['r']")]
    assert shown(second) == [
        ("review", {"output": "reviewed: fine"}),
        ("done", {"output": "done reviewed: fine"}),
    ]
    assert shown(session) == shown(first) + shown(second)


async def test_a_rerun_that_failed_stored_nothing_so_its_retry_replays_the_first_execution(
    stores: StoreFactory, resumable: bool
) -> None:
    """The rerun after the answer fails once after yielding its replay: its step lands
    whole or not at all, so the retry (by invocation id, in a fresh Runner) matches what
    the first execution recorded, and the session holds each event once."""
    counter = Counter()

    @node(rerun_on_resume=True)
    async def parent(ctx: Context) -> Any:
        counter.bump("parent")
        yield Event(message="asking the reviewer")
        answer = await ctx.run_node(ask, "x")
        if counter.runs["parent"] == 2:
            raise RuntimeError("the rerun broke")
        yield f"got {answer}"

    root = Workflow(name="wf", edges=[("START", parent, done)])
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=resumable)
    first = await h.start()
    with pytest.raises(RuntimeError, match="the rerun broke"):
        await h.answer(("q-x", "yes"))
    invocation = await h.invocation()
    again = attach_harness(
        root, BaseSessionService(stores.open()), h.session_id, resumable=resumable
    )

    retried = await again.collect(invocation_id=invocation.id)

    assert shown(first) == [("ask", "asks ['q-x']"), ("parent", "asking the reviewer")]
    assert shown(retried) == [
        ("parent", {"output": "got yes"}),
        ("done", {"output": "done got yes"}),
    ]
    session = await again.service.store.get_session(again.key)
    assert session is not None
    assert [s for s in shown(session.events) if s[1] == "asking the reviewer"] == [
        ("parent", "asking the reviewer")
    ]
    assert (await again.invocation()).status == InvocationStatus.COMPLETED
    assert counter.runs == {"parent": 3}


async def test_a_prompt_said_before_each_new_question_of_its_own_is_stored_each_time(
    stores: StoreFactory, resumable: bool
) -> None:
    """A node that goes through its questions, saying the same prompt before each: a rerun
    that asks a new question where the earlier execution asked says anew what it said
    before asking (the reference shows it before each question too: nothing can tell a
    prompt from a greeting there, and a message said twice is better than one lost); a
    rerun that goes past its last question, answered, replays what it said before."""

    @node(rerun_on_resume=True)
    async def form(ctx: Context) -> Any:
        yield Event(message="Welcome")
        for i in range(2):
            if f"q{i}" in ctx.resume_inputs:
                continue
            yield Event(message="Please answer the next question.")
            yield RequestInput(interrupt_id=f"q{i}", message=f"question {i}")
            return
        yield f"answers {[ctx.resume_inputs[f'q{i}'] for i in range(2)]}"

    root = Workflow(name="wf", edges=[("START", form, done)])

    calls, session = await run_through(stores, root, resumable, ("q0", "a"), ("q1", "b"))

    prompt = ("form", "Please answer the next question.")
    assert [shown(c) for c in calls] == [
        [("form", "Welcome"), prompt, ("form", "asks ['q0']")],
        [("form", "Welcome"), prompt, ("form", "asks ['q1']")],
        [
            ("form", {"output": "answers ['a', 'b']"}),
            ("done", {"output": "done answers ['a', 'b']"}),
        ],
    ]
    assert shown(session) == [item for c in calls for item in shown(c)]


@node(rerun_on_resume=True)
async def owner_writer(ctx: Context) -> Any:
    ctx.state["owner"] = "parent"
    yield Event(state={"step": 1})
    answer = await ctx.run_node(ask, "x")
    yield f"got {answer} as {ctx.state['owner']}"


async def answer_over_a_newer_value(
    stores: StoreFactory, resumable: bool
) -> tuple[Harness, list[Event]]:
    """`owner_writer` writes, asks; the user writes the same keys; the answer (through a
    fresh Runner) reruns it. The harness, and what the answering call yielded."""
    root = Workflow(name="wf", edges=[("START", owner_writer, done)])
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=resumable)
    await h.start()
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    await h.service.append_event(
        session,
        Event(author="user", actions=EventActions(state_delta={"owner": "user", "step": 0})),
    )
    h = attach_harness(root, BaseSessionService(stores.open()), h.session_id, resumable=resumable)
    return h, await h.answer(("q-x", "yes"))


async def test_a_replayed_state_write_is_applied_again_over_a_newer_value(
    stores: StoreFactory, resumable: bool
) -> None:
    """The rerun's replayed event is not stored again, but its write is applied again, as
    the reference applies it: a key changed by someone else while the run waited holds
    the node's write once the run goes on."""
    h, second = await answer_over_a_newer_value(stores, resumable)

    assert shown(second) == [
        ("ask", {"output": "yes"}),
        ("owner_writer", {"output": "got yes as parent"}),
        ("done", {"output": "done got yes as parent"}),
    ]
    final = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert final is not None
    assert (final.state["owner"], final.state["step"]) == ("parent", 1)
    written = [s for s in shown(final.events) if s[0] == "owner_writer" and "state" in s[1]]
    assert written == [("owner_writer", {"state": {"owner": "parent", "step": 1}})]


async def test_a_rewind_after_a_replayed_state_write_restores_that_write(
    stores: StoreFactory, resumable: bool
) -> None:
    """The write a rerun applies again over a newer value is on the session's events too,
    so a rewind to after the run (before the next invocation) restores the node's write,
    not the value it replaced while the run waited."""
    h, _ = await answer_over_a_newer_value(stores, resumable)
    later = await h.start("again")  # writes the same keys, then waits

    await h.runner.rewind_async(
        user_id="u", session_id=h.session_id, rewind_before_invocation_id=later[0].invocation_id
    )

    final = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert final is not None
    assert (final.state["owner"], final.state["step"]) == ("parent", 1)
