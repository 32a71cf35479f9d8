"""A node run whose failure was committed does not run again.

A process that stops right after committing a node's failure leaves it recorded but not
handed on. The process that continues the run hands it on from the record, as the
stopped one would have: to the workflow, which fails (or retries, per its RetryConfig),
or to a NodeRunner's caller. The exception object went with the stopped process; its
class names and message come back as a NodeFailedError. A person continuing a failed
invocation still runs what failed again. On every backend.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress
from datetime import timedelta

import pytest
from pydantic import JsonValue

from baton import (
    App,
    Context,
    FunctionNode,
    NodeRunner,
    RequestInput,
    ResumabilityConfig,
    RetryConfig,
    Runner,
    Workflow,
    types,
)
from baton.agents import ParallelAgent, SequentialAgent
from baton.errors import NodeFailedError, error_class_names
from baton.events import Event
from baton.history import acting_node
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus, Notification, StepCommit, Store
from baton.workflow.checkpoint import RunRecord, RunStatus, find_chain
from baton.workflow.execution import carried_failure
from baton.workflow.nodes import Node
from tests.agents.agents import Runs, Step, texts
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, attach_harness, build_harness, outputs
from tests.workflow.node_runner_app import Drive

TROUBLE = "the check found trouble"


class NodeTrouble(ValueError):
    """A subclass, so that the class names a failure is handed on with are checked."""


def stop_after(store: Store, last: Callable[[StepCommit], bool]) -> Callable[[], None]:
    """Make the store's process stop right after it commits the first step `last` says
    is its last: that commit lands, then every commit raises as a lost database would, so
    nothing after it is recorded. Returns what undoes it (the memory store is shared by the
    'processes' of a test)."""
    commit = store.commit_step
    stopped = False

    async def committing(step: StepCommit) -> int:
        nonlocal stopped
        if stopped:
            raise ConnectionError("the process stopped")
        version = await commit(step)
        if last(step):
            stopped = True
            raise ConnectionError("the process stopped right after this commit")
        return version

    setattr(store, "commit_step", committing)  # noqa: B010 -- SqlStore is final, as in tests/crash
    return lambda: delattr(store, "commit_step")


def stop_after_the_first_failure(store: Store) -> Callable[[], None]:
    """`stop_after` the first step that records a node's error."""
    return stop_after(store, lambda step: any(e.error_code for e in step.events))


async def drain(store: Store) -> list[Notification]:
    """Every notification recorded since the last drain, oldest first."""
    taken: list[Notification] = []
    ttl = timedelta(seconds=30)
    while claimed := await store.claim_notifications("http://r.test", "t", ttl=ttl, limit=1):
        taken += claimed.notifications
        await store.accept_notification("http://r.test", "t", taken[-1].seq, ttl=ttl)
    return taken


def errors(events: list[Event]) -> list[tuple[str, str | None, str | None]]:
    return [(acting_node(e), e.error_code, e.error_message) for e in events if e.error_code]


async def stored_events(h: Harness) -> list[Event]:
    session = await h.service.store.get_session(h.key)
    assert session is not None
    return session.events


def failing_twice_nested(counter: Counter, *, fails: int, retry: RetryConfig | None) -> Workflow:
    """START -> prepare -> inner[START -> check] -> book; `check` raises NodeTrouble on its
    first `fails` executions."""

    def prepare(node_input: str) -> str:
        counter.bump("prepare")
        return "prepared"

    def check(node_input: str) -> str:
        counter.bump("check")
        if counter.runs["check"] <= fails:
            raise NodeTrouble(TROUBLE)
        return "checked"

    def book(node_input: str) -> str:
        counter.bump("book")
        return f"booked after {node_input}"

    inner = Workflow(name="inner", edges=[("START", check)], retry_config=retry)
    return Workflow(name="wf", edges=[("START", prepare, inner, book)])


async def crashed_after_the_failure(
    stores: StoreFactory, root: Workflow, *, resumable: bool
) -> tuple[Harness, str]:
    """Start `root` in a 'process' that stops right after committing a node's failure."""
    store = stores.open()
    undo = stop_after_the_first_failure(store)
    h = await build_harness(root, BaseSessionService(store), resumable=resumable)
    with pytest.raises(ConnectionError, match="the process stopped"):
        await h.start()
    undo()
    invocation = await h.invocation()
    assert invocation.status == InvocationStatus.RUNNING
    return h, invocation.id


def restarted(h: Harness, stores: StoreFactory, root: Node) -> Harness:
    resumable = h.runner.is_resumable
    return attach_harness(
        root, BaseSessionService(stores.open()), h.session_id, resumable=resumable
    )


@pytest.fixture(params=[True, False], ids=["resumable", "replay"])
def resumable(request: pytest.FixtureRequest) -> bool:
    return request.param


async def test_a_committed_failure_fails_its_workflow_without_the_node_running_again(
    stores: StoreFactory, resumable: bool
) -> None:
    counter = Counter()
    root = failing_twice_nested(counter, fails=99, retry=None)
    h, invocation_id = await crashed_after_the_failure(stores, root, resumable=resumable)
    assert counter.runs == {"prepare": 1, "check": 1}

    again = restarted(h, stores, root)
    with pytest.raises(NodeFailedError) as raised:
        await again.collect(invocation_id=invocation_id)

    assert counter.runs == {"prepare": 1, "check": 1}  # not run again
    failure = raised.value
    assert (failure.error_type, str(failure)) == ("NodeTrouble", TROUBLE)
    assert failure.error_classes[:2] == ("NodeTrouble", "ValueError")
    assert failure.node_path == "wf@1/inner@1/check@1"
    invocation = await again.invocation()
    assert invocation.status == InvocationStatus.FAILED
    assert invocation.error == f"node run 'wf@1' failed: NodeTrouble: {TROUBLE}"
    assert errors(await stored_events(again)) == [("check", "NodeTrouble", TROUBLE)]


async def test_a_committed_failure_is_retried_by_its_workflow_as_without_the_stop(
    stores: StoreFactory, resumable: bool
) -> None:
    """The workflow's RetryConfig lists ValueError: the recorded NodeTrouble matches it by
    its recorded classes, and the run goes on as one that never stopped."""
    retry = RetryConfig(exceptions=["ValueError"], max_attempts=2, initial_delay=0, jitter=0)
    plain = Counter()
    reference = await build_harness(
        failing_twice_nested(plain, fails=1, retry=retry),
        BaseSessionService(stores.open()),
        resumable=resumable,
    )
    await reference.start()

    counter = Counter()
    root = failing_twice_nested(counter, fails=1, retry=retry)
    h, invocation_id = await crashed_after_the_failure(stores, root, resumable=resumable)
    again = restarted(h, stores, root)
    events = await again.collect(invocation_id=invocation_id)

    assert counter.runs == plain.runs == {"prepare": 1, "check": 2, "book": 1}
    assert outputs(events)[-1] == ("book", "booked after checked")
    assert errors(await stored_events(again)) == errors(await stored_events(reference))
    assert errors(await stored_events(again)) == [
        ("check", "NodeTrouble", TROUBLE),  # the attempt that failed
        ("inner", "NodeTrouble", TROUBLE),  # the workflow's retry of it
    ]
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


async def test_a_person_continuing_a_failed_run_runs_the_failed_node_again_even_after_a_stop(
    stores: StoreFactory,
) -> None:
    """Continuing a failed invocation marks what failed to run again, with its first
    commit: a process that stops after that commit leaves it to be run, not handed on."""
    counter = Counter()
    root = failing_twice_nested(counter, fails=1, retry=None)
    store = stores.open()
    h = await build_harness(root, BaseSessionService(store), resumable=True)
    with pytest.raises(NodeTrouble):
        await h.start()
    invocation_id = (await h.invocation()).id

    # The continue's first commit (its message) lands; the process stops before `check`.
    undo = stop_after(store, lambda _: True)
    with pytest.raises(ConnectionError, match="the process stopped"):
        await h.collect(invocation_id=invocation_id, new_message=_text("try again"))
    undo()
    assert counter.runs == {"prepare": 1, "check": 1}

    events = await restarted(h, stores, root).collect(invocation_id=invocation_id)
    assert counter.runs == {"prepare": 1, "check": 2, "book": 1}
    assert outputs(events)[-1] == ("book", "booked after checked")


async def test_a_node_runner_child_s_failure_is_handed_again_on_a_rerun_and_retried_on_request(
    stores: StoreFactory,
) -> None:
    """The caller reruns from the top after its question is answered: the child's recorded
    failure is what its first call gets again (it does not run); the second call with the
    same run_id is the caller's retry, and runs it."""
    counter = Counter()
    seen: list[str] = []

    def flaky(node_input: str) -> str:
        counter.bump("flaky")
        if counter.runs["flaky"] == 1:
            raise NodeTrouble(TROUBLE)
        return f"fine {node_input}"

    child = FunctionNode(flaky)

    async def script(ctx: Context) -> JsonValue | RequestInput:
        first = await NodeRunner(node=child, parent_ctx=ctx, run_id="c").run("x")
        error = first.error
        kind = error.error_type if isinstance(error, NodeFailedError) else type(error).__name__
        seen.append(f"{type(error).__name__} {kind}: {error}")
        if "go" not in ctx.resume_inputs:
            return RequestInput(interrupt_id="go", message="retry it?")
        retried = await NodeRunner(node=child, parent_ctx=ctx, run_id="c").run("x")
        return retried.output

    root = Workflow(name="wf", edges=[("START", Drive(name="parent", script=script))])
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=True)
    await h.start()
    events = await restarted(h, stores, root).answer(("go", "yes"))

    assert seen == [
        f"NodeTrouble NodeTrouble: {TROUBLE}",
        f"NodeFailedError NodeTrouble: {TROUBLE}",  # handed on from its record
    ]
    assert counter.runs == {"flaky": 2}
    assert outputs(events)[-1] == ("parent", "fine x")


def _text(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


class Lost(LookupError):
    """The failure a caller does not catch, after one it caught."""


def catching_then_failing(counter: Counter, *, retry: RetryConfig | None = None) -> Workflow:
    """START -> caller: its first child fails with NodeTrouble, which it catches and goes
    on; its second child fails with Lost, which it does not: the caller fails with Lost."""

    def first(node_input: str) -> str:
        counter.bump("first")
        raise NodeTrouble(TROUBLE)

    def second(node_input: str) -> str:
        counter.bump("second")
        raise Lost("the second child lost it")

    async def caller(ctx: Context, node_input: str) -> str:
        counter.bump("caller")
        with suppress(Exception):  # caught: the caller goes on
            await ctx.run_node(first, "x")
        return await ctx.run_node(second, "y")

    return Workflow(name="wf", edges=[("START", FunctionNode(caller))], retry_config=retry)


async def test_a_run_fails_with_its_child_s_failure_not_one_it_caught_before(
    stores: StoreFactory,
) -> None:
    """The failed run's failure is the one that ended it: the invocation's error (landed
    with the root's failure, once) names Lost, not the NodeTrouble the caller caught."""
    counter = Counter()
    root = catching_then_failing(counter)
    h = await build_harness(root, BaseSessionService(stores.open()), resumable=True)
    await drain(h.service.store)
    with pytest.raises(Lost):
        await h.start()
    invocation = await h.invocation()
    assert invocation.status == InvocationStatus.FAILED
    assert invocation.error == "node run 'wf@1' failed: Lost: the second child lost it"
    ended = [n.body["run"] for n in await drain(h.service.store) if n.kind == "run.failed"]
    assert ended == [{"status": "failed", "error": invocation.error}]


async def test_a_committed_failure_after_a_caught_one_is_handed_on_as_it_was(
    stores: StoreFactory,
) -> None:
    """The process stops right after the caller's failure commits (its workflow still
    running): the continuing process hands on Lost, which the workflow's RetryConfig (for
    NodeTrouble only) does not retry, as the stopped process would not have."""
    retry = RetryConfig(exceptions=["NodeTrouble"], max_attempts=2, initial_delay=0, jitter=0)
    counter = Counter()
    root = catching_then_failing(counter, retry=retry)
    store = stores.open()

    def caller_failed(step: StepCommit) -> bool:
        checkpoint = step.checkpoint
        chain = find_chain(RunRecord.from_json(checkpoint), "wf@1/caller@1") if checkpoint else None
        return chain is not None and chain[-1].status is RunStatus.FAILED

    undo = stop_after(store, caller_failed)
    h = await build_harness(root, BaseSessionService(store), resumable=True)
    with pytest.raises(ConnectionError, match="the process stopped"):
        await h.start()
    undo()
    invocation_id = (await h.invocation()).id
    assert counter.runs == {"caller": 1, "first": 1, "second": 1}

    again = restarted(h, stores, root)
    with pytest.raises(NodeFailedError) as raised:
        await again.collect(invocation_id=invocation_id)
    assert counter.runs == {"caller": 1, "first": 1, "second": 1}  # not retried
    assert (raised.value.error_type, str(raised.value)) == ("Lost", "the second child lost it")
    assert raised.value.node_path == "wf@1/caller@1/second@1"
    invocation = await again.invocation()
    assert invocation.error == "node run 'wf@1' failed: Lost: the second child lost it"


def _asking(counter: Counter) -> Workflow:
    """START -> inner[START -> ask]: `ask` asks with a minute's deadline and no on_timeout."""

    def ask(node_input: str) -> RequestInput:
        counter.bump("ask")
        return RequestInput(interrupt_id="ok", message="ok?", timeout=60)

    inner = Workflow(name="inner", edges=[("START", FunctionNode(ask))])
    return Workflow(name="wf", edges=[("START", inner)])


def _clocked(root: Workflow, store: Store, stores: StoreFactory, session_id: str) -> Harness:
    """A process's Runner for `root`, reading the stores' clock (deadlines are judged by it)."""
    service = BaseSessionService(store)
    app = App(
        name="app", root_agent=root, resumability_config=ResumabilityConfig(is_resumable=True)
    )
    return Harness(
        Runner(app=app, session_service=service, clock=stores.clock), service, session_id
    )


async def test_a_deadline_s_committed_failure_is_handed_on_not_asked_again(
    stores: StoreFactory,
) -> None:
    """The expiry fails `ask` with InputTimeoutError and the process stops right after that
    commit: the continuing process fails the run with it, recorded once, the question not
    asked again, and one run.failed notification says why."""
    counter = Counter()
    root = _asking(counter)
    store = stores.open()
    session = await BaseSessionService(store).create_session(app_name="app", user_id="u")
    h = _clocked(root, store, stores, session.id)
    await h.start()
    await drain(store)
    stores.clock.advance(61)
    [row] = await h.runner.pending(user_id="u")
    undo = stop_after_the_first_failure(store)
    with pytest.raises(ConnectionError, match="the process stopped"):
        await h.runner.expire(row)
    undo()
    invocation = await h.invocation()
    assert invocation.status == InvocationStatus.RUNNING

    again = _clocked(root, stores.open(), stores, session.id)
    with pytest.raises(NodeFailedError) as raised:
        await again.collect(invocation_id=invocation.id)

    assert raised.value.error_type == "InputTimeoutError"
    assert counter.runs == {"ask": 1}
    assert await again.runner.pending(user_id="u") == []
    [(node, code, _)] = errors(await stored_events(again))
    assert (node, code) == ("ask", "InputTimeoutError")
    invocation = await again.invocation()
    assert invocation.status == InvocationStatus.FAILED
    assert invocation.error is not None
    assert invocation.error.startswith("node run 'wf@1' failed: InputTimeoutError: node 'ask'")
    kinds = [n.kind for n in await drain(store)]
    assert kinds == ["question.expired", "run.failed"]


@pytest.mark.parametrize("in_workflow", [True, False], ids=["in-a-workflow", "as-the-root"])
async def test_a_parallel_agent_s_committed_failure_fails_once_and_a_continue_reruns_its_branch(
    stores: StoreFactory, in_workflow: bool
) -> None:
    """A sequence around a parallel agent whose branch `q` fails: the process stops right
    after that failure commits. The continuing process (in a workflow) hands it on: nothing
    runs again, the run fails once saying why. A person continuing the failed invocation
    then runs only `q` and what comes after it (issue 11 item 2)."""
    runs = Runs(fail={"q": {1}})
    par = ParallelAgent(
        name="par", sub_agents=[Step(name="p", runs=runs), Step(name="q", runs=runs)]
    )
    seq = SequentialAgent(name="seq", sub_agents=[Step(name="first", runs=runs), par])
    root: Node = Workflow(name="wf", edges=[("START", seq)]) if in_workflow else seq
    store = stores.open()
    h = await build_harness(root, BaseSessionService(store), resumable=True)
    await drain(store)
    undo = stop_after_the_first_failure(store)
    with pytest.raises(ConnectionError, match="the process stopped"):
        await h.start()
    undo()
    invocation = await h.invocation()
    failed = f"node run '{root.name}@1' failed: Boom: q fails on run 1"
    if in_workflow:
        assert invocation.status == InvocationStatus.RUNNING
        again = restarted(h, stores, root)
        with pytest.raises(NodeFailedError):
            await again.collect(invocation_id=invocation.id)
        invocation = await again.invocation()
    assert runs.count == {"first": 1, "p": 1, "q": 1}
    assert (invocation.status, invocation.error) == (InvocationStatus.FAILED, failed)
    assert [n.body["run"] for n in await drain(store) if n.kind == "run.failed"] == [
        {"status": "failed", "error": failed}
    ]

    person = restarted(h, stores, root)
    events = await person.collect(invocation_id=invocation.id)
    assert runs.count == {"first": 1, "p": 1, "q": 2}
    assert texts(events)[0] == ("q", "q done")
    assert (await person.invocation()).status == InvocationStatus.COMPLETED
    assert [code for _, code, _ in errors(await stored_events(person))] == ["Boom"]


async def test_a_caught_failure_under_a_waiting_run_is_not_rerun_when_a_person_continues(
    stores: StoreFactory,
) -> None:
    """`asker` catches its child's failure and asks; its sibling `failer` fails the run. A
    person continuing the failed invocation runs `failer` again, not `flaky`: `asker` was
    waiting, not failed, and resumes as it stood, its child's failure handed to it again."""
    counter = Counter()

    def flaky(node_input: str) -> str:
        counter.bump("flaky")
        raise NodeTrouble(TROUBLE)

    async def asker(ctx: Context, node_input: str) -> RequestInput | str:
        counter.bump("asker")
        with suppress(Exception):  # caught: the asker goes on
            await ctx.run_node(flaky, "x")
        if "go" not in ctx.resume_inputs:
            return RequestInput(interrupt_id="go", message="go on?")
        return "asked"

    asked = asyncio.Event()

    async def failer(node_input: str) -> None:
        counter.bump("failer")
        if counter.runs["failer"] == 1:
            await asked.wait()
            raise Lost("the first run lost it")

    store = stores.open()
    commit = store.commit_step

    async def committing(step: StepCommit) -> int:
        version = await commit(step)
        checkpoint = step.checkpoint
        chain = find_chain(RunRecord.from_json(checkpoint), "wf@1/asker@1") if checkpoint else None
        if chain and chain[-1].status is RunStatus.WAITING:
            asked.set()  # `failer` fails once `asker` waits
        return version

    setattr(store, "commit_step", committing)  # noqa: B010 -- as above
    root = Workflow(name="wf", edges=[("START", (FunctionNode(asker), FunctionNode(failer)))])
    h = await build_harness(root, BaseSessionService(store), resumable=True)
    with pytest.raises(Lost):
        await h.start()
    invocation_id = (await h.invocation()).id
    assert counter.runs == {"asker": 1, "flaky": 1, "failer": 1}
    delattr(store, "commit_step")

    await restarted(h, stores, root).collect(invocation_id=invocation_id)
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    events = await restarted(h, stores, root).answer(("go", "yes"))
    assert outputs(events)[-1] == ("asker", "asked")
    assert counter.runs == {"asker": 2, "flaky": 1, "failer": 2}


def test_a_failure_recorded_without_its_classes_is_handed_on_with_its_own_class_s_name() -> None:
    """A checkpoint written before failed runs kept their classes' names: the recorded
    text's class still matches a RetryConfig naming it."""
    record = RunRecord.from_json(
        {
            "node": "check",
            "path": "wf@1/check@1",
            "run_id": "1",
            "status": "failed",
            "error": f"NodeTrouble: {TROUBLE}",
        }
    )
    failure = carried_failure(record).error
    assert isinstance(failure, NodeFailedError)
    assert (failure.error_type, str(failure)) == ("NodeTrouble", TROUBLE)
    assert error_class_names(failure) == ("NodeTrouble",)
    assert RetryConfig(exceptions=["NodeTrouble"]).should_retry(failure, 1)
