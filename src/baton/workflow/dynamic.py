"""Dynamic nodes: `await ctx.run_node(node, node_input)` runs a child as a checkpointed run.

Each call becomes a child run of the calling node, kept in the caller's run record
(`record.child`): the calls in the order the code issued them (`WorkflowState.calls`),
the unfinished children as run records (`runs`), and each finished child's output.
A rerun of the caller (an answer arrived, a crash was recovered, a retry) issues its
calls again: a finished call returns its recorded output without running, a waiting
child resumes with its answers, a child in flight runs again. A call that differs
from the one recorded at the same position is refused with `WorkflowChangedError`.
When the caller's run completes, its record (and with it the calls) leaves the
checkpoint, so a checkpoint holds only the calls of runs still in progress.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeAlias, final

from pydantic import JsonValue

from baton.context import Context, InvocationContext, NamedOutcome, NamedRun, current_node_run
from baton.errors import (
    AlreadyAnsweredError,
    OutputAlreadySetError,
    UnknownInterruptError,
    WorkflowChangedError,
)
from baton.events import to_json_value
from baton.workflow.checkpoint import (
    DynamicCall,
    RunRecord,
    RunStatus,
    WorkflowState,
    replay_key,
    rerun_failed,
)
from baton.workflow.nodes import FunctionNode, Node

__all__ = ["ChildInterrupted", "ChildRunner", "ChildWaiting", "DynamicRuns", "as_node"]

Finish: TypeAlias = Callable[[RunRecord], None]
ChildRunner: TypeAlias = Callable[[Node, RunRecord, InvocationContext, Finish], Awaitable[None]]
"""Executes (or completes from its answers) one child run; the engine provides it."""


class ChildInterrupted(BaseException):
    """A dynamic child waits for input: unwinds the calling node, which then waits too.

    A BaseException, so a node's `except Exception` does not swallow the pause.
    """

    def __init__(self, path: str, interrupts: list[str]) -> None:
        super().__init__(f"dynamic child '{path}' waits for {', '.join(interrupts)}")
        self.path = path
        self.interrupts = interrupts


class ChildWaiting(ChildInterrupted):
    """A child called with raise_on_wait=True ended without output while it waits for
    one: unwinds the calling node, which ends without output (see `Context.run_node`)."""

    def __init__(self, path: str) -> None:
        BaseException.__init__(self, f"dynamic child '{path}' waits for its output")
        self.path = path
        self.interrupts = []


def as_node(target: object) -> Node:
    """A node for what `ctx.run_node` was given: a node, or a function to wrap.

    Raises:
        TypeError: neither a node nor a function.
    """
    if isinstance(target, Node):
        return target
    if callable(target):
        return FunctionNode(target)
    raise TypeError(
        f"ctx.run_node needs a node, an agent or a function, got {target!r} "
        f"({type(target).__name__})."
    )


@final
class DynamicRuns:
    """The dynamic calls of one execution of one node run."""

    def __init__(self, record: RunRecord, invocation: InvocationContext, run: ChildRunner) -> None:
        self._record = record
        self._invocation = invocation
        self._run = run
        self._issued = 0
        self._cursor = 0  # the index in the recorded calls of the next positional one
        self._inflight: set[asyncio.Task[None]] = set()
        # NodeRunner runs under way, by key; made by the first (most runs make none).
        self._named: dict[str, asyncio.Task[None]] | None = None
        self._delegate: str | None = None  # the child whose output stands for this run's
        self._waiting = False  # a raise_on_wait call stopped the run at a waiting child

    @property
    def delegates_output(self) -> bool:
        """Whether a call of this execution passed use_as_output=True."""
        return self._delegate is not None

    @property
    def waits_for_output(self) -> bool:
        """Whether a raise_on_wait call stopped this execution at a waiting child."""
        return self._waiting

    async def run_node(
        self,
        node: object,
        node_input: Any = None,
        *,
        run_id: str | None = None,
        use_as_output: bool = False,
        use_sub_branch: bool = False,
        override_branch: str | None = None,
        raise_on_wait: bool = False,
        caller: Context | None = None,
    ) -> Any:
        """Run `node` as a child of this run and return its output (see the module doc and
        `Context.run_node` for the options; a child keeps the ones it started with);
        `caller` is the calling run's context, the child's `parent_ctx`.

        Raises:
            WorkflowChangedError: this call differs from the one recorded at its position.
            ChildInterrupted: the child waits for input (the caller then waits too), or
                (ChildWaiting, with `raise_on_wait`) for its output.
            ValueError: a second call passed use_as_output=True.
        """
        child = as_node(node)
        value = to_json_value(node_input, what=f"the input of dynamic node '{child.name}'")
        if use_as_output:
            self._claim_output(child.name)
        state = self._state()
        call = self._match(state, child.name, value, run_id)
        if call.done:
            return self._settled(child, call.output, [], call.key, raise_on_wait)
        record = state.runs.get(call.key)
        if record is None:
            record = self._new_record(
                child, call.key, value, use_as_output, use_sub_branch, override_branch
            )
        await self._start(child, record, caller)
        if record.status is RunStatus.COMPLETED:
            return self._settled(child, record.output, record.routes, record.path, raise_on_wait)
        raise ChildInterrupted(record.path, list(record.interrupts))

    async def run_named(self, node: Node, run_id: str, request: NamedRun) -> NamedOutcome:
        """Run `node` as this run's child `<name>@<run_id>` (a `NodeRunner`'s run): the
        same child each time the key is given, whatever the order of the calls.

        A call that completed before returns its recorded result without running; a
        waiting child resumes with the answers it was given (all of them answered, or a
        `rerun_on_resume` node); a new one starts with `request.prior_output` as its output.

        Raises:
            WorkflowChangedError: the key was run before with another input.
            ValueError: the key belongs to a `ctx.run_node` call; a second use_as_output.
            UnknownInterruptError: `request` names a question the run did not ask, or one
                that has no answer yet.
            OutputAlreadySetError: `request.prior_output` is not the output it recorded.
            NodeRunFailedError (the engine's): the child failed for good.
        """
        key = f"{node.name}@{run_id}"
        value = to_json_value(request.node_input, what=f"the input of node '{node.name}'")
        prior = to_json_value(request.prior_output, what=f"the prior output of node '{key}'")
        path = f"{self._record.path}/{key}"
        digest = replay_key(node.name, value)
        call = self._named_call(key, digest, value)
        state = self._record.child
        record = state.runs.get(key) if call is not None and state is not None else None
        _check_named(path, call, record, request, prior)
        if request.use_as_output:
            self._claim_output(node.name)
        if call is not None and call.done:
            return NamedOutcome(path, call.output, list(call.routes), [], {}, None)
        if record is None:
            state = self._state()
            if call is None:
                state.calls.append(DynamicCall(key=key, digest=digest, named=True))
            record = self._new_record(
                node,
                key,
                value,
                request.use_as_output,
                request.use_sub_branch,
                request.override_branch,
            )
            record.output = prior
        if self._named is None:
            self._named = {}
        running = self._named.get(key)
        if running is not None and not running.done():
            # The same run asked for again while it runs (asyncio.gather): it runs once.
            await asyncio.wait((running,))
            running.result()  # its failure, raised to this caller too
        else:
            if running is not None:
                # Called again in this execution after it failed: a retry. (A failed run
                # this execution never called hands its recorded failure on instead: a
                # replay of the call that failed, see `wants_execution`.)
                rerun_failed(record)
            self._named[key] = task = self._start(node, record, request.caller)
            await task
        done = record.status is RunStatus.COMPLETED
        return NamedOutcome(
            path,
            record.output,
            list(record.routes),
            [] if done else list(record.interrupts),
            dict(record.answers),
            record.branch,
        )

    def _named_call(self, key: str, digest: str, value: JsonValue) -> DynamicCall | None:
        """The named call recorded with `key`, or None.

        Raises:
            ValueError: a `ctx.run_node` call of this run has that key.
            WorkflowChangedError: it was recorded with another input.
        """
        state = self._record.child
        call = next((c for c in state.calls if c.key == key), None) if state else None
        if call is None:
            return None
        if not call.named:
            raise ValueError(
                f"run_id {key.rpartition('@')[2]!r} of node '{key.rpartition('@')[0]}' is "
                f"taken by the ctx.run_node call {key} of node run '{self._record.path}'; "
                "give the NodeRunner another run_id."
            )
        if call.digest != digest:
            raise WorkflowChangedError(
                f"node run '{self._record.path}/{key}' was started with another input "
                f"than {value!r} in invocation '{self._invocation.invocation_id}'; a run_id "
                "names one run: reuse it only to resume that run, and give a new run a new "
                "run_id."
            )
        return call

    def _new_record(
        self,
        child: Node,
        key: str,
        value: JsonValue,
        use_as_output: bool,
        use_sub_branch: bool,
        override_branch: str | None,
    ) -> RunRecord:
        """A new child run, kept in this run's checkpoint."""
        parent = self._record
        record = RunRecord(
            node=child.name,
            path=f"{parent.path}/{key}",
            run_id=key.rpartition("@")[2],
            input=value,
            branch=override_branch or _sub_branch(parent.branch, key, use_sub_branch),
            output_for=[parent.path, *parent.stands_for] if use_as_output else [],
            output_branch=_claimer_branch(parent) if use_as_output else None,
        )
        self._state().runs[key] = record
        return record

    def _start(self, child: Node, record: RunRecord, caller: Context | None) -> asyncio.Task[None]:
        """Execute the child, complete it from its answers or leave it waiting: a task
        this run's end settles; await it. `caller`: the calling run's context (not kept
        here: the caller's context holds these calls, and a cycle would outlive the run)."""
        if caller is not None:
            # What the child reads of the caller as its parent_ctx, as it reads here (not
            # in the child's task, nor in a child workflow's children's).
            caller.pin_event_author()
            caller.pin_parent_ctx()
        # The child's task is made with the caller as its parent_ctx (a task copies the
        # context variables it is made with).
        parent = current_node_run.set(caller)
        try:
            task = asyncio.ensure_future(self._run(child, record, self._invocation, self._finished))
        finally:
            current_node_run.reset(parent)
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return task

    def _settled(
        self, child: Node, output: Any, routes: list[Any], path: str, raise_on_wait: bool
    ) -> Any:
        """A completed child's output; with `raise_on_wait`, ChildWaiting when it ended
        without output or route while it waits for output."""
        waits = getattr(child, "wait_for_output", False) or getattr(
            child, "is_waiting_when_empty", False
        )
        if raise_on_wait and waits and output is None and not routes:
            self._waiting = True
            raise ChildWaiting(path)
        return output

    def _claim_output(self, name: str) -> None:
        """Make `name`'s call the one whose output stands for this run's.

        Raises:
            ValueError: another call of this execution claimed it already.
        """
        if self._delegate is not None:
            raise ValueError(
                f"node run '{self._record.path}' passed use_as_output=True to "
                f"ctx.run_node('{self._delegate}') already, and again to "
                f"ctx.run_node('{name}'); a run's output stands for one child: pass it once."
            )
        self._delegate = name

    def _state(self) -> WorkflowState:
        if self._record.child is None:
            self._record.child = WorkflowState(started=True)
        return self._record.child

    def _match(
        self, state: WorkflowState, name: str, value: JsonValue, run_id: str | None
    ) -> DynamicCall:
        """The call at this position: the recorded one if it matches, else a new one."""
        position = self._issued
        self._issued += 1
        digest = replay_key(name, value)
        recorded = self._next_recorded(state)
        if recorded is not None:
            wanted = f"{name}@{run_id}" if run_id else None
            if recorded.digest != digest or (wanted is not None and recorded.key != wanted):
                raise self._changed(position, recorded, name, value)
            return recorded
        key = f"{name}@{run_id or self._next_number(state, name)}"
        if run_id is not None:
            _check_run_id(name, run_id, state, key)
        call = DynamicCall(key=key, digest=digest)
        state.calls.append(call)
        self._cursor = len(state.calls)
        return call

    def _next_recorded(self, state: WorkflowState) -> DynamicCall | None:
        """The recorded `ctx.run_node` call at this execution's next position (named
        calls, a NodeRunner's, hold no position), or None past the last."""
        calls = state.calls
        while self._cursor < len(calls) and calls[self._cursor].named:
            self._cursor += 1
        if self._cursor == len(calls):
            return None
        self._cursor += 1
        return calls[self._cursor - 1]

    @staticmethod
    def _next_number(state: WorkflowState, name: str) -> int:
        """One past the node's unnamed calls so far, or the next number none of its calls
        holds (a NodeRunner's run of it, or a call given that run id, took it)."""
        mine = [c for c in state.calls if c.key.rpartition("@")[0] == name]
        number = 1 + sum(1 for c in mine if not c.named)
        taken = {c.key for c in mine}  # the node's keys only, not every call's
        while f"{name}@{number}" in taken:
            number += 1
        return number

    def _changed(
        self, position: int, recorded: DynamicCall, name: str, value: JsonValue
    ) -> WorkflowChangedError:
        before = recorded.key.rpartition("@")[0]
        what = (
            f"ctx.run_node('{name}') with a different input ({value!r})"
            if before == name
            else f"ctx.run_node('{name}')"
        )
        return WorkflowChangedError(
            f"node run '{self._record.path}' changed since invocation "
            f"'{self._invocation.invocation_id}' started: its dynamic call #{position + 1} was "
            f"ctx.run_node('{before}') ({recorded.key}) and is now {what}. Dynamic calls are "
            "matched by the order the code issues them; resume with the code the run started "
            "with, or start a new run."
        )

    def _finished(self, child: RunRecord) -> None:
        """Inside the child's last step: a completed child's output joins its call."""
        state = self._state()
        if child.status is not RunStatus.COMPLETED:
            return
        state.runs.pop(child.key, None)
        for call in state.calls:
            if call.key == child.key:
                call.done = True
                call.output = child.output
                call.routes = list(child.routes)

    @property
    def idle(self) -> bool:
        """No child was ever called: nothing to settle (most node runs)."""
        return not self._inflight and self._record.child is None

    async def settle(self, *, cancel: bool) -> list[str]:
        """Wait for children still in flight (cancelled first when `cancel`).

        Returns:
            The interrupt ids of this run's children that wait for input.
        """
        if cancel:
            for task in self._inflight:
                task.cancel()
        if self._inflight:
            await asyncio.gather(*self._inflight, return_exceptions=True)
        state = self._record.child
        return state.open_interrupts() if state is not None else []


def _check_named(
    path: str,
    call: DynamicCall | None,
    record: RunRecord | None,
    request: NamedRun,
    prior: JsonValue,
) -> None:
    """Refuse what a NodeRunner's run was given that its record contradicts, before
    anything changes.

    Raises:
        UnknownInterruptError: an answer or a carried interrupt the run never asked, or an
            answer to a question still unanswered.
        AlreadyAnsweredError: an answer other than the one the run was given.
        OutputAlreadySetError: a prior output other than the one the run recorded.
    """
    if call is None:
        asked = request.prior_interrupt_ids | set(request.resume_inputs)
        if asked:
            raise UnknownInterruptError(
                f"node run '{path}' has not run before, so it asked nothing, but it was "
                f"given {_ids(asked)} (resume_inputs / prior_interrupt_ids); pass a new run "
                "neither, or pass the run_id of the run that asked them."
            )
        return
    recorded = call.output if record is None else record.output
    if prior is not None and prior != recorded:
        raise OutputAlreadySetError(
            f"node run '{path}' recorded the output {recorded!r}, but prior_output is "
            f"{prior!r}; pass the output it recorded (child_ctx.output), or None."
        )
    open_ids: set[str] = set() if record is None else set(record.interrupts)
    not_open = request.prior_interrupt_ids - open_ids
    if not_open:
        raise UnknownInterruptError(
            f"prior_interrupt_ids names {_ids(not_open)}, which node run '{path}' does not "
            f"wait for (open: {_ids(open_ids) or 'none'}); pass only the ids it still waits for."
        )
    if record is not None:
        _check_answers(path, record, request.resume_inputs)


def _check_answers(path: str, record: RunRecord, resume_inputs: dict[str, Any]) -> None:
    for iid, value in resume_inputs.items():
        if iid in record.answers:
            if value != record.answers[iid]:
                raise AlreadyAnsweredError(
                    f"interrupt '{iid}' of node run '{path}' was answered with "
                    f"{record.answers[iid]!r}, but resume_inputs gives {value!r}; pass the "
                    "answer it was given (the caller's ctx.resume_inputs)."
                )
        elif iid in record.interrupts:
            raise UnknownInterruptError(
                f"interrupt '{iid}' of node run '{path}' has no answer yet; answers reach a "
                "run through the Runner (a FunctionResponse with its id): pass only the "
                "answers the caller's ctx.resume_inputs holds."
            )
        else:
            asked = sorted({*record.interrupts, *record.answers})
            raise UnknownInterruptError(
                f"interrupt '{iid}' was not asked by node run '{path}' (it asked: "
                f"{_ids(asked) or 'nothing'}); pass a run only the answers to its own questions."
            )


def _ids(ids: Iterable[str]) -> str:
    return ", ".join(f"'{iid}'" for iid in sorted(ids))


def _sub_branch(branch: str | None, key: str, use_sub_branch: bool) -> str | None:
    """The child's branch: the caller's, or (`use_sub_branch`) one of its own below it."""
    if not use_sub_branch:
        return branch
    return f"{branch}.{key}" if branch else key


def _claimer_branch(parent: RunRecord) -> str | None:
    """The branch of the run a child's output stands for at the top (`use_as_output`):
    the caller's, or the caller's own claimer's."""
    return parent.output_branch if parent.output_for else parent.branch


def _check_run_id(name: str, run_id: str, state: WorkflowState, key: str) -> None:
    if run_id.isdigit():
        raise ValueError(
            f"run_id {run_id!r} of dynamic node '{name}' is a number, which is reserved for "
            "numbered calls; give it a name with letters (e.g. 'review-1')."
        )
    if any(c.key == key for c in state.calls):
        raise ValueError(
            f"run_id {run_id!r} of dynamic node '{name}' was already used by this node run; "
            "give each call its own run_id."
        )
