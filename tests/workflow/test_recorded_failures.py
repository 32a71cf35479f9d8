"""A node run whose failure was committed does not run again.

A process that stops right after committing a node's failure leaves it recorded but not
handed on. The process that continues the run hands it on from the record, as the
stopped one would have: to the workflow, which fails (or retries, per its RetryConfig),
or to a NodeRunner's caller. The exception object went with the stopped process; its
class names and message come back as a NodeFailedError. A person continuing a failed
invocation still runs what failed again. On every backend.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import pytest
from pydantic import JsonValue

from baton import (
    BaseNode,
    Context,
    FunctionNode,
    NodeRunner,
    RequestInput,
    RetryConfig,
    Workflow,
    types,
)
from baton.errors import NodeFailedError
from baton.events import Event
from baton.history import acting_node
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus, StepCommit, Store
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, attach_harness, build_harness, outputs

TROUBLE = "the check found trouble"


class NodeTrouble(ValueError):
    """A subclass, so that the class names a failure is handed on with are checked."""


def stop_after_the_first_failure(store: Store) -> Callable[[], None]:
    """Make the store's process stop right after it commits the first step that records a
    node's error: that commit lands, then every commit raises as a lost database would, so
    nothing after it is recorded. Returns what undoes it (the memory store is shared by the
    'processes' of a test)."""
    commit = store.commit_step
    stopped = False

    async def committing(step: StepCommit) -> int:
        nonlocal stopped
        if stopped:
            raise ConnectionError("the process stopped")
        version = await commit(step)
        if any(e.error_code for e in step.events):
            stopped = True
            raise ConnectionError("the process stopped right after this commit")
        return version

    setattr(store, "commit_step", committing)  # noqa: B010 -- SqlStore is final, as in tests/crash
    return lambda: delattr(store, "commit_step")


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


def restarted(h: Harness, stores: StoreFactory, root: Workflow) -> Harness:
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
    commit = store.commit_step

    async def first_only(step: StepCommit) -> int:
        await commit(step)
        raise ConnectionError("the process stopped right after this commit")

    setattr(store, "commit_step", first_only)  # noqa: B010 -- as above
    with pytest.raises(ConnectionError, match="the process stopped"):
        await h.collect(invocation_id=invocation_id, new_message=_text("try again"))
    delattr(store, "commit_step")
    assert counter.runs == {"prepare": 1, "check": 1}

    events = await restarted(h, stores, root).collect(invocation_id=invocation_id)
    assert counter.runs == {"prepare": 1, "check": 2, "book": 1}
    assert outputs(events)[-1] == ("book", "booked after checked")


class Drive(BaseNode):
    """An orchestration node whose body is `script`: yields what it returns, if anything."""

    rerun_on_resume: bool = True
    script: Callable[[Context], Awaitable[Any]]

    async def _run_impl(self, *, ctx: Context, node_input: Any) -> AsyncGenerator[Any, None]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator
        result = await self.script(ctx)
        if result is not None:
            yield result


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
