"""The Workflow node and its scheduler: dispatch ready nodes, route outputs, pause, resume.

A workflow's state (queue, running and waiting runs, join arrivals, output) lives
in its run record inside the invocation's checkpoint. Every child step commits
the child's result together with the scheduling decision it causes, so on
resume the scheduler continues from exactly the committed frontier.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any, ClassVar, final

from pydantic import BaseModel, Field, JsonValue, SkipValidation

from baton.context import Context, InvocationContext, current_node_run
from baton.errors import GraphValidationError, WorkflowConfigurationError
from baton.schemas import SchemaType, current_state_schema
from baton.types import Content
from baton.workflow.checkpoint import (
    ForkedRun,
    Outcome,
    RunRecord,
    RunStatus,
    Trigger,
    WorkflowState,
    replay_key,
)
from baton.workflow.execution import (
    NodeRunFailedError,
    carried_failure,
    carried_interrupt,
    complete_with_answers,
    current_record,
    current_workflow,
    execute_run,
    wants_execution,
)
from baton.workflow.graph import Graph, parse_graph
from baton.workflow.handover import own_task
from baton.workflow.nodes import BaseNode, Node, NodeInput, RetryConfig

__all__ = ["Workflow"]

_START = "__START__"
# Read as every node run ends: a global, not the enum's attribute (a lookup on an Enum
# class passes through its metaclass's __getattr__ hook, ~1k instructions on Python 3.11).
_COMPLETED = RunStatus.COMPLETED
_FAILED = RunStatus.FAILED


@final
class Workflow(BaseNode):
    """A graph of nodes; itself a node, so workflows nest.

    Args:
        name: the workflow's name (a Python identifier).
        edges: edge items: chain tuples `("START", a, b)` with fan-out tuples and
            routing maps, or `Edge(...)`.
        max_concurrency: at most this many child runs at once (unbounded when None).
        wait_for_output: as a node of another workflow, a run that ends without output
            or route triggers nothing; the next arrival runs it again.
        state_schema: a pydantic model declaring the state keys its nodes (and nested
            workflows without their own) write; a write that does not fit is refused
            with StateSchemaError (see `baton.schemas`).
        retry_config, timeout, description, input_schema, output_schema: as for any node.

    Raises:
        GraphValidationError: every problem of the graph, in one error.
        TypeError: state_schema is not a pydantic model class.
        WorkflowConfigurationError: (later) `edges` assigned: build a new Workflow.
    """

    emits_output: ClassVar[bool] = False
    # As in the reference, a workflow called with ctx.run_node that ends without output
    # is still waiting for one (see `baton.workflow.dynamic`, raise_on_wait).
    is_waiting_when_empty: ClassVar[bool] = True
    # Its run only schedules child runs: none of the user's code runs in its body.
    schedules_only: ClassVar[bool] = True
    # The event of its own failure is signed with its name, the author its children's
    # events get (the reference's workflow signs it so).
    signs_own_failure: ClassVar[bool] = True

    graph: Graph
    # The edge items as given, as the reference keeps them: read, never run from (the
    # graph is what runs, and what the fingerprint describes), and left out of dumps.
    edges: SkipValidation[list[Any]] = Field(default_factory=list[Any], exclude=True)
    max_concurrency: int | None = None
    state_schema: SkipValidation[type[BaseModel] | None] = None

    def __init__(
        self,
        *,
        name: str,
        edges: Sequence[object] = (),
        max_concurrency: int | None = None,
        rerun_on_resume: bool = True,
        wait_for_output: bool = False,
        retry_config: RetryConfig | None = None,
        timeout: float | None = None,
        description: str = "",
        state_schema: type[BaseModel] | None = None,
        input_schema: SchemaType | None = None,
        output_schema: SchemaType | None = None,
    ) -> None:
        if state_schema is not None and not _is_model_class(state_schema):
            raise TypeError(
                f"state_schema of workflow '{name}' must be a pydantic model class, got "
                f"{state_schema!r}."
            )
        if max_concurrency is not None and max_concurrency < 1:
            raise GraphValidationError(
                name, [f"max_concurrency must be at least 1, got {max_concurrency}."]
            )
        given = list(edges)
        graph, problems = parse_graph(name, given)
        if graph is None:
            raise GraphValidationError(name, problems)
        # pydantic's own __init__ validates every field of this class, its own included.
        BaseModel.__init__(
            self,
            name=name,
            description=description,
            rerun_on_resume=rerun_on_resume,
            wait_for_output=wait_for_output,
            retry_config=retry_config,
            timeout=timeout,
            graph=graph,
            edges=given,
            max_concurrency=max_concurrency,
            state_schema=state_schema,
            input_schema=input_schema,
            output_schema=output_schema,
        )

    def __setattr__(self, name: str, value: object) -> None:
        # The graph is built and checked from the edges once, at construction; an
        # assignment after would change what the workflow shows, not what it runs.
        if name == "edges":
            raise WorkflowConfigurationError(
                f"workflow '{self.name}': edges cannot be assigned after the workflow is "
                "built (its graph is built and checked from them once, at construction); "
                "build a new Workflow(name=..., edges=...) with the edges you want."
            )
        super().__setattr__(name, value)

    @property
    def nodes(self) -> dict[str, Node]:
        return self.graph.nodes

    async def run(self, ctx: Context, node_input: NodeInput) -> AsyncIterator[object]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator is an AsyncIterator
        record = current_record.get()
        state = record.child if record.child is not None else WorkflowState()
        record.child = state
        replay = not ctx.is_resumable
        restarted = state.started and replay
        frontier = _restart(state) if restarted else []
        if not state.started or restarted:
            state.started = True
            successors = self.graph.successors(_START, [])
            state.queue.extend(
                _start_triggers(successors, node_input, record.message_input, record.branch)
            )
        schema = self.state_schema or current_state_schema.get()
        token = current_state_schema.set(schema)  # the children's tasks inherit it
        author = current_workflow.set(self.name)  # its children's events are signed with it
        # What its children read of it as their parent_ctx, pinned before they run.
        ctx.pin_event_author(self.name)  # its own context's author: itself, as in the reference
        ctx.pin_parent_ctx()
        parent = current_node_run.set(ctx)
        try:
            await _Scheduler(self, ctx, record, state, replay=replay, frontier=frontier).run()
        finally:
            current_node_run.reset(parent)
            current_workflow.reset(author)
            current_state_schema.reset(token)
        ctx.open_interrupts = {
            iid: carried_interrupt(ctx.invocation_context, record, iid)
            for iid in state.open_interrupts()
        }
        ctx.output = self._output(state) if not ctx.open_interrupts else None
        return
        yield  # an async generator that yields nothing: children commit their own events

    def _output(self, state: WorkflowState) -> JsonValue:
        """The one terminal node's output, once the workflow has finished.

        Raises:
            WorkflowConfigurationError: several terminal nodes produced output, so which
                one is the workflow's would depend on timing.
        """
        produced = state.terminal_outputs
        if len(produced) > 1:
            names = ", ".join(f"'{name}'" for name in sorted(produced))
            raise WorkflowConfigurationError(
                f"workflow '{self.name}': terminal nodes {names} each produced output, but a "
                "workflow has one output; let one terminal node produce it (join the branches "
                "with a JoinNode, or return None from the others)."
            )
        if produced:
            return next(iter(produced.values()))
        return state.output  # a checkpoint written before terminal outputs were recorded


def _start_triggers(
    successors: Sequence[str], node_input: NodeInput, message_input: bool, branch: str | None
) -> list[Trigger]:
    """START's successors' triggers, on the workflow's branch (on lanes of their own when
    there are several): a user's message goes on as one (`Content`), as in the reference;
    anything else as it is. `message_input`: `node_input` is a message's JSON already
    (the workflow's record says so, see `_run_once`)."""
    message = message_input or isinstance(node_input, Content)
    value = (
        node_input.model_dump(mode="json", exclude_none=True)
        if isinstance(node_input, Content)
        else node_input
    )
    fan_out = len(successors) > 1
    return [
        Trigger(node=n, input=value, message=message, branch=branch, fan_out=fan_out)
        for n in successors
    ]


def _shared_branch(branches: list[str | None]) -> str | None:
    """The branch the given ones lie on (their common leading segments), None for none."""
    split = [b.split(".") if b else [] for b in branches]
    shared: list[str] = []
    for segments in zip(*split, strict=False):
        if any(s != segments[0] for s in segments):
            break
        shared.append(segments[0])
    return ".".join(shared) or None


def _is_model_class(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def _restart(state: WorkflowState) -> list[RunRecord]:
    """Reset a replay-mode workflow to START; returns the unfinished runs to reinstate.

    Completed runs stay in `state.recorded` and are fast-forwarded as the walk reaches them.
    """
    frontier = list(state.runs.values())
    state.queue.clear()
    state.runs.clear()
    state.joins.clear()
    state.join_branches.clear()
    state.counters.clear()
    state.output = None
    state.terminal_outputs.clear()
    return frontier


class _Scheduler:
    def __init__(
        self,
        workflow: Workflow,
        ctx: Context,
        record: RunRecord,
        state: WorkflowState,
        *,
        replay: bool = False,
        frontier: list[RunRecord] | None = None,
    ) -> None:
        self.workflow = workflow
        self.graph = workflow.graph
        # Read once: a pydantic model's attribute costs ~500 instructions, every dispatch.
        self.max_concurrency = workflow.max_concurrency
        self.ctx = ctx
        self.invocation: InvocationContext = ctx.invocation_context
        self.record = record
        self.state = state
        self.running = 0
        self.group: asyncio.TaskGroup | None = None
        self.replay = replay
        self.frontier = list(frontier or [])
        self.replayed: dict[str, int] = {}  # recorded outcomes consumed, by replay key
        # Outcomes recorded before this execution, by replay key: only runs that really
        # happened before may be fast-forwarded, never one recorded moments ago by a
        # sibling trigger with an equal input (fan-in without a JoinNode).
        self.replayable = {key: len(done) for key, done in state.recorded.items()}
        # What a terminal node's output is the output of: this workflow run, and what its
        # own output is (shared by those runs' records, never changed).
        self.terminal_of = [record.path, *record.stands_for]

    async def run(self) -> None:
        # A run whose failure committed but was never handed on (its process stopped
        # first) fails the workflow now, before any other run starts, as it did then.
        for run in self.state.runs.values():
            if run.status is _FAILED:
                raise carried_failure(run)
        try:
            # Nothing to resume, or only a run its answers complete: maybe a chain, run alone.
            alone = not self.state.runs or await self._answered_alone()
            beside = await self._chain_alone() if alone else None
            if not alone or beside is not None or self.state.queue:
                # Runs beside each other: a TaskGroup, in a task of the engine's own (see
                # `baton.workflow.handover`).
                await own_task()
                async with asyncio.TaskGroup() as group:
                    self.group = group
                    if beside is not None:
                        self._pump()
                        await self._execute(beside)
                    else:
                        runs = list(self.state.runs.values()) if not alone else []
                        for index, run in enumerate(runs, 1):
                            await self._resume(run, pump=index < len(runs))
                        await self._execute_alone()
            # Runs the replay walk never reached (it stopped upstream) keep waiting as they were.
            for run in self.frontier:
                self.state.runs[run.key] = run
            # A fork's runs are taken as the walk reaches them; one it never reached (its
            # path went elsewhere) is not a run of this execution's history.
            self.state.forked.clear()
        except* NodeRunFailedError as failures:
            # The first failure stops the workflow; siblings were cancelled and stay
            # RUNNING in the checkpoint, so a retry of the invocation re-runs them.
            raise failures.exceptions[0] from None

    async def _resume(self, run: RunRecord, *, pump: bool = True) -> None:
        """Bring a run of the checkpoint forward; `pump`: start what its completion queued
        (the last one's is left to `run`)."""
        node = self.graph.nodes[run.node]
        decision = wants_execution(node, run)
        if decision is True:
            self._start(run, counted=False)
        elif decision is None:
            await complete_with_answers(node, run, self.invocation, self._absorb)
            if pump:
                self._pump()

    async def _answered_alone(self) -> bool:
        """Complete the checkpoint's one run, when its answers complete it (a paused
        question answered), in this task: whether no run is left to resume.

        Speed: the common resume (one question answered, then a chain) needs no TaskGroup,
        so the engine stays in its caller's task (see `baton.workflow.handover`). A resume
        of `START -> a -> ask -> b`: no task to create; on PostgreSQL 11 passes of the event
        loop -> 7; in memory 1,901k -> 1,424k instructions (callgrind,
        bench/resume_profile.py)."""
        if len(self.state.runs) != 1 or self.frontier:
            return False
        run = next(iter(self.state.runs.values()))
        node = self.graph.nodes[run.node]
        if wants_execution(node, run) is not None:
            return False
        await complete_with_answers(node, run, self.invocation, self._absorb)
        return not self.state.runs

    async def _chain_alone(self) -> RunRecord | None:
        """Execute runs one after another in this task while each is the only one ready
        (a chain), without a TaskGroup. Stops where several are ready, or one that may
        need the group (a replay's unfinished run), and leaves them queued; or with a run
        dispatched that others became ready beside (fast-forwards), which it returns.

        Speed: a group spanning the engine's steps would keep it from running in its
        caller's task (see `baton.workflow.handover`), where a step costs no pass of the
        event loop."""
        state = self.state
        while len(state.queue) == 1 and not self.frontier:
            run = self._dispatch()
            if run is None:
                continue  # fast-forwarded (a fork's, a replay's): what it queued is next
            if state.queue:
                return run  # others became ready beside it (fast-forwards)
            try:
                await execute_run(self.graph.nodes[run.node], run, self.invocation, self._absorb)
            finally:
                self.running -= 1
        return None

    async def _execute_alone(self) -> None:
        """Execute the ready runs: one alone (none other queued or running) in this task,
        as `_execute` continues a chain; several in tasks of their own, in queue order.

        Speed: a run alone needs no task to create, start, and wake this one when it ends
        (two event-loop iterations, on every workflow run and every resume)."""
        if len(self.state.queue) != 1 or self.running:
            self._pump()
            return
        alone = self._dispatch()
        # The dispatch may have fast-forwarded runs (a fork's or a replay's), queueing
        # more: those start beside it, as in `_execute`.
        if self.state.queue:
            self._pump()
        if alone is not None:
            await self._execute(alone)

    def _pump(self) -> None:
        while (run := self._dispatch()) is not None:
            self._start(run)

    def _dispatch(self) -> RunRecord | None:
        """The next queued run to execute (counted as running), or None."""
        limit = self.max_concurrency
        state = self.state
        queue = state.queue
        while queue and (limit is None or self.running < limit):
            trigger = queue.pop(0)
            node = trigger.node
            forked = self._take_forked(node) if state.forked else None
            if forked is not None and forked.done:
                outcome = Outcome(forked.run_id, forked.output, forked.routes, forked.moved_to)
                self._fast_forward(trigger, outcome)
                continue
            if forked is None and self.replay and self._replayed(trigger):
                continue
            if forked is not None:
                run_id = str(int(forked.run_id))
                self._count(node, forked.run_id)
            elif node in self.graph.runs_once:
                run_id = "1"  # counted only where a second run is possible: keeps checkpoints small
            else:
                count = state.counters.get(node, 0) + 1
                state.counters[node] = count
                run_id = str(count)
            key = f"{node}@{run_id}"  # made once, for the path and the runs' index
            run = RunRecord.dispatched(
                node, f"{self.record.path}/{key}", run_id, trigger.input, trigger.message
            )
            if forked is not None:
                run.child = forked.child
            if trigger.branch is not None or trigger.fan_out:
                run.branch = trigger.run_branch(run_id)
            if node in self.graph.terminals:
                run.terminal_of = self.terminal_of
            state.runs[key] = run
            self.running += 1
            return run
        return None

    def _replayed(self, trigger: Trigger) -> bool:
        """Fast-forward a completed run, or reinstate an unfinished one; False if neither."""
        key = replay_key(trigger.node, trigger.input)
        used = self.replayed.get(key, 0)
        if used < self.replayable.get(key, 0):
            self.replayed[key] = used + 1
            self._fast_forward(trigger, self.state.recorded[key][used], record=False)
            return True
        for run in self.frontier:
            if run.node == trigger.node and run.input == trigger.input:
                self.frontier.remove(run)
                self._count(run.node, run.run_id)
                self.state.runs[run.key] = run
                assert self.group is not None  # only called inside run()
                self.group.create_task(self._resume(run))
                return True
        return False

    def _take_forked(self, node: str) -> ForkedRun | None:
        """The node's next run as it stood where a fork starts, if any."""
        runs = self.state.forked.get(node)
        return runs.pop(0) if runs else None

    def _fast_forward(self, trigger: Trigger, outcome: Outcome, *, record: bool = True) -> None:
        """Complete the trigger's run with an outcome it had before, without running it
        (`record`: keep it for later replays, in replay mode)."""
        self._count(trigger.node, outcome.run_id)
        done = RunRecord(
            node=trigger.node,
            path=f"{self.record.path}/{trigger.node}@{outcome.run_id}",
            run_id=outcome.run_id,
            status=RunStatus.COMPLETED,
            input=trigger.input,
            message_input=trigger.message,
            output=outcome.output,
            routes=list(outcome.routes),
            branch=trigger.run_branch(outcome.run_id),
        )
        if outcome.moved_to is not None:
            done.move_to_branch(outcome.moved_to or None)
        self._absorb(done, record=record)

    def _count(self, node: str, run_id: str) -> None:
        if node not in self.graph.runs_once:
            self.state.counters[node] = max(self.state.counters.get(node, 0), int(run_id))

    def _start(self, run: RunRecord, *, counted: bool = True) -> None:
        assert self.group is not None  # only called inside run()
        if not counted:
            self.running += 1
        self.group.create_task(self._execute(run), name=run.path)

    async def _execute(self, run: RunRecord) -> None:
        current: RunRecord | None = run
        while current is not None:
            try:
                await execute_run(
                    self.graph.nodes[current.node], current, self.invocation, self._absorb
                )
            finally:
                self.running -= 1
            # Continue with the next ready run in this task (a chain needs no new tasks);
            # anything else ready gets a task of its own.
            current = self._dispatch()
            if self.state.queue:
                self._pump()

    def _absorb(self, run: RunRecord, *, record: bool = True) -> None:
        """Fold a finished run into the workflow state (inside the run's commit), and tell
        the invocation whether more of this workflow's runs are queued: a step that
        finishes this workflow's last run may wait to land with the workflow's own."""
        self._fold(run, record=record)
        self.invocation.work_queued = bool(self.state.queue)

    def _fold(self, run: RunRecord, *, record: bool) -> None:
        if run.status is not _COMPLETED:
            return
        state, graph, output = self.state, self.graph, run.output
        state.runs.pop(run.key, None)
        if self.replay and record:
            state.recorded.setdefault(replay_key(run.node, run.input), []).append(
                Outcome(run.run_id, output, list(run.routes), run.moved_to)
            )
        if (
            output is None
            and not run.routes
            and (run.waits_for_output or self._waits_for_output(run.node))
        ):
            return  # nothing to pass on: its successors wait for a run that produces output
        successors = graph.successors(run.node, run.routes)
        # As in the reference: successors of a run go on its branch, each on a lane of its
        # own when there are several, so agents on parallel paths do not see each other.
        fan_out = len(successors) > 1
        for name in successors:
            if name in graph.joins:
                self._arrive(name, run)
            else:
                # Positional, as Trigger's fields are declared: a keyword call costs more.
                state.queue.append(Trigger(name, output, False, run.branch, fan_out))
        if output is not None and run.node in graph.terminals:
            state.terminal_outputs[run.node] = output

    def _waits_for_output(self, name: str) -> bool:
        return getattr(self.graph.nodes[name], "wait_for_output", False)

    def _arrive(self, join: str, run: RunRecord) -> None:
        arrivals = self.state.joins.setdefault(join, {})
        arrivals[run.node] = run.output
        # The branch of each predecessor's latest arrival, as the reference keeps it: one
        # on the workflow's branch replaces a lane an earlier run of it arrived from.
        if run.branch is not None:
            self.state.join_branches.setdefault(join, {})[run.node] = run.branch
        elif join in self.state.join_branches:
            self.state.join_branches[join].pop(run.node, None)
        if all(p in arrivals for p in self.graph.predecessors.get(join, [])):
            branches = self.state.join_branches.pop(join, {})
            shared = _shared_branch([branches.get(p) for p in arrivals])
            self.state.queue.append(Trigger(node=join, input=dict(arrivals), branch=shared))
            del self.state.joins[join]
