"""Executing one node run: drive its generator, collect what it yields, commit its step.

A run's events, state writes and new interrupts are buffered and land in one
commit together with the run's new status (and whatever its parent decides
about successors), so a crash leaves either all of a step or none of it.
Nodes with `commits_each_event` (agents) commit each event as it comes, so a
finished tool call or sub-agent is durable before the next one starts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, cast

from pydantic import JsonValue

from baton.auth.auth_flow import CREDENTIAL_SCHEMA, credential_message
from baton.context import Context, InvocationContext, StepParts, agent_key, current_workflow
from baton.errors import (
    InputTimeoutError,
    LeaseLostError,
    NodeFailedError,
    NodeTimeoutError,
    OutputAlreadySetError,
    StoreUnavailableError,
    error_class_names,
)
from baton.events import (
    ASSIGNEES_KEY,
    CONFIRMATION_SCHEMA,
    JSON_SCALARS,
    REQUEST_CONFIRMATION_FUNCTION,
    REQUEST_CREDENTIAL_FUNCTION,
    REQUEST_INPUT_FUNCTION,
    RESPONSE_SCHEMAS_KEY,
    TASK_REPLY_FUNCTION,
    TASK_REPLY_SCHEMA,
    Event,
    EventActions,
    NodeInfo,
    RequestInput,
    RouteValue,
    UiWidget,
    to_json_value,
)
from baton.schemas import SchemaType, check_node_data, current_state_schema
from baton.sessions.store import Interrupt
from baton.tracing import node_span
from baton.types import Content
from baton.workflow.checkpoint import RunRecord, RunStatus, rerun_failed
from baton.workflow.dynamic import ChildInterrupted, DynamicRuns
from baton.workflow.handover import own_task
from baton.workflow.loopwatch import watch_loop, watch_node_runs
from baton.workflow.nodes import FunctionNode, Node, NodeInput

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from opentelemetry.trace import Tracer

__all__ = [
    "NodeRunFailedError",
    "carried_failure",
    "carried_interrupt",
    "complete_with_answers",
    "current_record",
    "current_workflow",
    "event_author",
    "execute_run",
    "failure_text",
    "message_value",
    "open_interrupt",
    "wants_execution",
]

current_record: Final[ContextVar[RunRecord]] = ContextVar("baton_current_record")
"""The record of the workflow run executing in this task (read by workflows for their
state; set for the runs of nodes that only schedule children, see `_execute`)."""

Finish = Callable[[RunRecord], None]

_ASKED: Final = "?"
"""In `RunRecord.yielded`: the run asked a question of its own there (no digest is "?")."""
_NOTHING_REPLAYED: Final[tuple[int, dict[str, JsonValue]]] = (0, {})
"""What `_Collector.drop_replayed` finds in a run with no earlier execution (never mutated)."""
# Read on every node run: globals, not class attributes. A lookup on an Enum class, or on
# a pydantic model class, passes through its metaclass's __getattr__ hook: ~1k
# instructions apiece on Python 3.11.
_COMPLETED: Final = RunStatus.COMPLETED
_WAITING: Final = RunStatus.WAITING
_of_output: Final = Event.of_output


def event_author(node: Node) -> str:
    """The author of the events the engine makes for `node`'s runs.

    As in the reference: the enclosing workflow's name, or the node's own at the top;
    an agent (`authors_own_events`) signs its own events.
    """
    if getattr(node, "authors_own_events", False):
        return node.name
    return current_workflow.get() or node.name


class NodeRunFailedError(Exception):
    """A node run failed for good; carries the node's own exception up the tree."""

    def __init__(self, path: str, error: BaseException) -> None:
        super().__init__(f"node run '{path}' failed: {described(error)}")
        self.path = path
        self.error = error


def described(error: BaseException) -> str:
    """`Type: message`, as a run's failure is recorded and reported (a failure handed on
    from its record by its own type's name, see `carried_failure`)."""
    kind = error.error_type if isinstance(error, NodeFailedError) else type(error).__name__
    return f"{kind}: {error}"


def carried_failure(record: RunRecord) -> NodeRunFailedError:
    """The failure `record` committed, to hand on now: the process that committed it
    stopped before its workflow (or caller) took it, and the exception itself went with
    that process. Its class names and message, as recorded, travel in a NodeFailedError,
    whose `node_path` is the run the exception came from (`record`, or the failed run
    below it whose failure `record` took on).
    """
    failed = _recorded_failure(record) or record
    text = failed.error or "its error was not recorded"
    classes = failed.error_classes
    kind = classes[0] if classes else text.partition(": ")[0] if ": " in text else ""
    message = text.removeprefix(f"{kind}: ") if kind else text
    if not classes and kind:
        # Recorded before failed runs kept their classes: its own class's name at least,
        # so that a RetryConfig naming it still matches.
        classes = (kind,)
    error = NodeFailedError(message, error_type=kind, error_classes=classes, node_path=failed.path)
    return NodeRunFailedError(record.path, error)


def failure_text(record: RunRecord) -> str | None:
    """What a failed run's failure reports (`str` of its NodeRunFailedError), from the
    error recorded at or below it; None when none was."""
    if _recorded_failure(record) is None:
        return None
    return str(carried_failure(record))


def _recorded_failure(record: RunRecord) -> RunRecord | None:
    """The run whose exception `record` failed with: the one below it that recorded the
    error `record` recorded as its own (a child's failure it took on, see `_execute`), or
    itself. A run that recorded none (written before failed runs recorded their children's
    errors): the first failed run below it that recorded one."""
    if record.error is not None:
        return _origin(record)
    if record.child is None:
        return None
    for run in record.child.runs.values():
        if run.status is RunStatus.FAILED and (found := _recorded_failure(run)) is not None:
            return found
    return None


def _origin(record: RunRecord) -> RunRecord:
    """The deepest failed run at or below `record` that recorded `record`'s failure. Not
    just any failed child: a dynamic child whose failure its caller caught stays failed
    in the caller's checkpoint (a rerun of the caller hands it that failure again)."""
    child = record.child
    if child is not None:
        for run in reversed(child.runs.values()):
            if (
                run.status is RunStatus.FAILED
                and run.error == record.error
                and run.error_classes == record.error_classes
            ):
                return _origin(run)
    return record


def wants_execution(node: Node, record: RunRecord) -> bool | None:
    """Whether a loaded run must execute (True), complete from its answers (None) or wait.

    Raises:
        NodeRunFailedError: the run failed, and its failure was committed but never
            handed on (its process stopped first): it is handed on now, the node not
            run again. What chose to run it again marked it so (`rerun_failed`).
    """
    if record.status is RunStatus.FAILED:
        raise carried_failure(record)
    if record.status is RunStatus.RUNNING or record.expired:
        return True
    if record.status != RunStatus.WAITING or not record.fresh:
        return False
    if node.rerun_on_resume or record.child is not None:
        return True
    return None if not record.interrupts else False


async def complete_with_answers(
    node: Node, record: RunRecord, invocation: InvocationContext, finish: Finish
) -> None:
    """Finish a `rerun_on_resume=False` run whose interrupts are all answered: the answer
    (or the answers by id) becomes its output, without executing it again."""
    answers = record.answers
    output: JsonValue = next(iter(answers.values())) if len(answers) == 1 else dict(answers)
    # Assembled, not validated: the answers are JSON (checked against their questions).
    event = Event.of_output(
        output,
        invocation_id=invocation.invocation_id,
        author=event_author(node),
        path=record.path,
        run_id=record.run_id,
        output_for=[record.path, *record.stands_for],
        branch=record.branch,
    )

    def mutate() -> None:
        record.status = RunStatus.COMPLETED
        record.output = output
        record.fresh = []
        finish(record)

    await invocation.commit(StepParts(events=(event,), joinable=True), mutate)


@dataclass(slots=True, init=False)
class _Collector:
    """Normalizes what a node yields and keeps it until the step commits."""

    node: Node
    ctx: Context
    record: RunRecord
    # The invocation's id, read once per run rather than through `ctx`'s property per event.
    invocation_id: str
    # The invocation and the run's dynamic calls, as `ctx` holds them: read here, not
    # through its properties (a call or two each, several a run). None: it can make none.
    invocation: InvocationContext
    children: DynamicRuns | None
    # The node's code never sees `ctx`: a function without a `ctx` parameter (the runs
    # `_child_runs` makes no calls' object for) and no gate. Nothing but this collector
    # writes its state (an event's state_delta, taken at once), and nothing saves
    # artifacts or renders widgets there, so no run's end asks for any. Speed: most nodes; their
    # runs skip six such calls and the leftovers' pass: 6.7k of 195k instructions a run
    # (callgrind, bench/engine_profile.py).
    ctx_unseen: bool
    events: list[Event]
    opened: list[Interrupt]
    has_output: bool
    # The route the last event the node yielded with one carried (a route set on ctx
    # after it, or without one, needs an event of its own).
    carried_route: RouteValue | list[RouteValue] | None
    # The author of the last event the node yielded (None: none yet); an agent's failure
    # is signed with it (`_failure_author`).
    last_author: str | None

    def __init__(
        self,
        node: Node,
        ctx: Context,
        record: RunRecord,
        invocation: InvocationContext,
        children: DynamicRuns | None,
    ) -> None:
        # Written out (one is made for every node run): the generated __init__ tests each
        # default's sentinel and calls the list factories.
        self.node, self.ctx, self.record = node, ctx, record
        self.invocation_id = invocation.invocation_id
        self.invocation, self.children = invocation, children
        # A gate may write the state of a run whose function takes no `ctx` (a credential
        # gate keeps the credential there, see `baton.workflow.authorizing`).
        self.ctx_unseen = children is None and not cast(FunctionNode, node).is_gated
        self.events, self.opened = [], []
        self.has_output = False
        self.carried_route = None
        self.last_author = None

    async def take(self, item: object) -> None:
        if not self.add(item):
            return
        if type(item) is Event and item.id in self.invocation.row_only_checkpoints:
            # Its agent state is noted: the run's checkpoint keeps it, no event of its own.
            # Kept events are appended: it is the last, if it was kept (`list.remove` would
            # compare it field by field with every earlier one, and fail if it was not).
            events = self.events
            if events and events[-1] is item:
                events.pop()
        if not self.commits_each_event:
            return
        if type(item) is Event and self._ends_the_nodes_agent(item):
            # The agent's last event: it lands with the run's end, one write for both.
            # A non-resumable run keeps it in the checkpoint only, as the reference's
            # sessions hold no end marks then (the caller is not shown it either).
            if not self.invocation.is_resumable:
                self.events.pop()
            return
        await self.flush()

    def _ends_the_nodes_agent(self, event: Event) -> bool:
        """Whether `event` is the bare end mark of the agent this node runs (not one of
        its sub-agents', which its later steps read back)."""
        return bool(
            event.actions.end_of_agent
            and event.author == self.node.name
            and event.is_checkpoint_only()
        )

    def add(self, item: object) -> bool:
        """Normalize and keep one yielded item; False if it was nothing to keep."""
        if item is None:
            return False
        if type(item) in JSON_SCALARS:
            # Most outputs. Speed: none of the checks below, each a pass through the model
            # class's ABCMeta.__instancecheck__ for a value of another type (~700
            # instructions apiece, 1% of a node run).
            self._absorb_output(item)
            return True
        if isinstance(item, RequestInput):
            event = self._ask(item)
            if event is None:
                return False
        elif isinstance(item, Event):
            event = item
        elif isinstance(item, Content):
            event = Event(content=item)  # a message, not a JSON output
        else:
            self._absorb_output(item)
            return True
        self._absorb(event)
        return True

    def _absorb_output(self, item: object) -> None:
        """Keep a yielded value as the run's output event: `_absorb` for an event the
        engine makes, without the normalizing such an event needs none of (its ids, author
        and branch are the run's; it carries no route, state writes, questions or agent
        state of its own). Most runs produce just this one event.

        Speed: the event is made with the run's pending writes and saved artifacts on it,
        not given them after as `_take_actions` gives them (a call, a loop and two reads of
        pydantic fields more, every run); rendered widgets are added as it adds them."""
        # A JSON scalar (most outputs) as it is: no call, no error message made in advance.
        output = (
            item
            if type(item) in JSON_SCALARS
            else to_json_value(item, what=f"the output of node '{self.node.name}'")
        )
        self._note_output(output)
        if _delegates_output(self.children):
            # A child's output event stands for this run's: the value still goes to the
            # next nodes, through ctx.output, and this event would carry nothing.
            return
        if self.ctx_unseen:  # nothing pending to take
            self.events.append(
                _output_event(
                    output,  # pyright: ignore[reportArgumentType] -- JSON, as below
                    self.record,
                    self.invocation_id,
                    event_author(self.node),
                )
            )
            return
        ctx = self.ctx
        event = _output_event(
            output,  # pyright: ignore[reportArgumentType] -- JSON: a scalar, or converted
            self.record,
            self.invocation_id,
            event_author(self.node),
            ctx.state.take_pending(),
            ctx.take_artifact_delta(),
        )
        widgets = ctx.take_ui_widgets()
        if widgets:
            _show_widgets(event.actions, widgets)
        self.events.append(event)

    @property
    def commits_each_event(self) -> bool:
        return getattr(self.node, "commits_each_event", False)

    def _ask(self, request: RequestInput) -> Event | None:
        iid = request.interrupt_id
        if iid in self.ctx.open_interrupts or iid in self.ctx.resume_inputs:
            return None  # asked again on a rerun: already open, or answered
        event = request.to_event(author=event_author(self.node))
        self._note_long_running(event)
        return event

    def _open(
        self,
        iid: str,
        function_name: str,
        message: str | None,
        payload: JsonValue,
        schema: dict[str, JsonValue] | None,
    ) -> Interrupt:
        ic = self.ctx.invocation_context
        row = Interrupt(
            app_name=ic.app_name,
            user_id=ic.user_id,
            session_id=ic.session.id,
            invocation_id=ic.invocation_id,
            interrupt_id=iid,
            node_path=self.record.path,
            function_name=function_name,
            message=message,
            payload=payload,
            response_schema=schema,
        )
        self.ctx.open_interrupts[iid] = row
        self.opened.append(row)
        return row

    def _absorb(self, event: Event) -> None:
        if event.invocation_id != self.invocation_id:
            event.invocation_id = self.invocation_id
        if not event.author:
            event.author = event_author(self.node)
        self.last_author = event.author
        record = self.record
        if event.node_info is None:
            event.node_info = NodeInfo(
                path=record.path,
                run_id=record.run_id,
                output_for=None if event.output is None else [record.path],
            )
        if event.branch is not None and not getattr(self.node, "authors_own_events", False):
            self._move(event)
        if record.branch is not None or record.output_for or record.terminal_of:
            self.place(event)
        if event.output is not None and not self._take_output(event):
            return
        actions = event.actions
        self._take_actions(actions)
        # Guarded here, not in the callees: most events ask nothing and carry no agent
        # state, and a call apiece costs more than the test (this runs for every event).
        if event.long_running_tool_ids:
            self._note_long_running(event)
        if actions.agent_state is not None or actions.end_of_agent:
            self._note_agent_state(event)
        self.events.append(event)

    def _move(self, event: Event) -> None:
        """As in the reference: an event a node yields on a branch it names moves the run
        there ("": back to the root), its later events and its successors with it.

        An agent's events are left alone: they name its sub-agents' branches (a
        ParallelAgent's lanes), which its successors must not end up on.
        """
        branch = event.branch or None
        event.branch = branch
        self.record.move_to_branch(branch)
        self.ctx.branch = branch

    def _take_actions(self, actions: EventActions) -> None:
        """Apply an event's route and state writes to the run; put the run's pending
        writes and saved artifacts on the event."""
        ctx = self.ctx
        if actions.route is not None:
            ctx.route = actions.route
            self.carried_route = actions.route
        for key, value in actions.state_delta.items():
            ctx.state[key] = value
        pending = ctx.state.take_pending()
        if pending or actions.state_delta:
            actions.state_delta = pending
        saved = ctx.take_artifact_delta()
        if saved:
            actions.artifact_delta = {**actions.artifact_delta, **saved}
        widgets = ctx.take_ui_widgets()
        if widgets:
            _show_widgets(actions, widgets)

    def _take_output(self, event: Event) -> bool:
        """Record the event's output as the run's; False when the event is then left with
        nothing to show (a child's output event stands for this run's: `use_as_output`).

        Raises:
            OutputAlreadySetError: the run had an output already.
        """
        self._note_output(event.output)
        if not _delegates_output(self.children):
            return True
        event.output = None  # the value still goes to the next nodes, through ctx.output
        return not _is_bare(event)

    def _note_output(self, output: object) -> None:
        """Record `output` as the run's.

        Raises:
            OutputAlreadySetError: the run had an output already.
        """
        if self.has_output:
            raise OutputAlreadySetError(
                f"node '{self.node.name}' produced a second output ({output!r}); a node "
                "run has one output: yield further values as events without output."
            )
        self.has_output = True
        self.ctx.output = output

    def place(self, event: Event) -> None:
        """The event on the run's branch, its output standing for its callers' (a dynamic
        child's, with `use_as_output`): that one on the branch of the outermost of them,
        as in the reference, so what runs after it there sees it."""
        record = self.record
        _put_on_branch(event, record)
        info = event.node_info
        if not info or (event.output is None and not info.message_as_output):
            return
        if record.output_for:
            event.node_info = info.model_copy(
                update={"output_for": [record.path, *record.output_for]}
            )
            if event.content is None or not event.content.function_responses:
                event.branch = record.output_branch
        elif record.terminal_of:
            event.node_info = info.model_copy(
                update={"output_for": [record.path, *record.terminal_of]}
            )

    def _note_long_running(self, event: Event) -> None:
        if not event.long_running_tool_ids:
            return
        calls = {c.id: c for c in event.function_calls if c.id}
        for iid in sorted(event.long_running_tool_ids or ()):
            if iid in self.ctx.open_interrupts or iid in self.ctx.resume_inputs:
                continue
            call = calls.get(iid)
            name = call.name if call and call.name else ""
            args = (call.args if call else None) or {}
            if name == REQUEST_INPUT_FUNCTION:
                # A RequestInput, yielded by a node or converted by an agent: index what it asks.
                schema = args.get("response_schema")
                message = args.get("message")
                row = self._open(
                    iid,
                    name,
                    message if isinstance(message, str) else None,
                    args.get("payload"),
                    schema if isinstance(schema, dict) else None,
                )
                _set_deadline(row, args)
                _set_assignee(row, args)
            elif call is None:
                # A task agent's question (its reply without calls): the user's next
                # message answers it.
                text = event.content.text if event.content else None
                self._open(iid, TASK_REPLY_FUNCTION, text or None, None, TASK_REPLY_SCHEMA)
            elif name == REQUEST_CONFIRMATION_FUNCTION:
                # A tool waits for approval: the answer must be a ToolConfirmation.
                asked = args.get("toolConfirmation")
                hint = asked.get("hint") if isinstance(asked, dict) else None
                message = hint if isinstance(hint, str) and hint else None
                self._open(iid, name, message, args, CONFIRMATION_SCHEMA)
            elif name == REQUEST_CREDENTIAL_FUNCTION:
                # A tool waits for the user's credential: the answer must hold one (see
                # `read_answer`, which checks it against these args before it is stored).
                self._open(iid, name, credential_message(args), args, CREDENTIAL_SCHEMA)
            else:
                # An agent's long-running tool call: the tool may declare the answer it
                # expects, and who must give it.
                row = self._open(iid, name, None, args or None, _declared_schema(event, iid))
                row.assignee = _declared_assignee(event, iid)

    def _note_agent_state(self, event: Event) -> None:
        actions = event.actions
        key = agent_key(event.author, event.branch, self.ctx.branch)  # per delegated call
        if actions.agent_state is not None:
            self.ctx.agent_states[key] = actions.agent_state
        if actions.end_of_agent:
            self.ctx.agent_states.pop(key, None)
            self.ctx.ended_agents.add(key)

    def state_event(self, delta: dict[str, JsonValue]) -> Event:
        """An event carrying this run's state writes, for a run that emitted nothing else."""
        event = Event(
            invocation_id=self.invocation_id,
            author=event_author(self.node),
            node_info=NodeInfo(path=self.record.path, run_id=self.record.run_id),
        )
        event.actions.state_delta = dict(delta)
        _put_on_branch(event, self.record)
        return event

    def flush_leftovers(self, deferred: Event | None) -> None:
        """Put what no event carried yet, state written after the node's last event and
        a route set on `ctx`, on the engine's output event (`deferred`) or on one event
        of their own, as the reference does, so the session's events show every write.
        Widgets rendered after the last event go there too (the reference drops a node's
        widgets)."""
        pending = self.ctx.state.take_pending()
        route = None if self.ctx.route == self.carried_route else self.ctx.route
        widgets = self.ctx.take_ui_widgets()
        if not pending and route is None and not widgets:
            return
        if deferred is None:
            deferred = self.state_event(pending)
            self.events.append(deferred)
        else:
            deferred.actions.state_delta = pending
        if route is not None:
            deferred.actions.route = route
        if widgets:
            _show_widgets(deferred.actions, widgets)

    def drop_replayed(self, earlier: list[str]) -> tuple[int, dict[str, JsonValue]]:
        """Leave out the events that replay what the run's earlier executions yielded
        (`RunRecord.yielded`): the same event at the same place, counted from the first,
        up to the first that differs; everything from there on is new. Return how far
        into `earlier` the replay went, and the state writes the left-out events carry.

        Where the run asked a question of its own (`_ASKED`), it paused: what it said
        before is a replay once this execution goes past that place (the question was
        answered), but said anew when it asks a new question there instead, as a loop
        that prompts before each of its questions does (the reference shows the prompt
        before each one too).

        The events' effects on the run (its output, route and state) were taken as they
        came. Their state writes are applied to the session again (as the reference, which
        stores the event again, applies them; see `carry_rewrites`): a key something else
        changed while the run waited holds the node's write, as in the run's `ctx.state`.
        """
        replayed, matching = 0, True
        dropped: list[int] = []  # indexes of the replays
        passed = 0  # `dropped` and `replayed` at the last place asked that it went past
        passed_at = 0
        for index, event in enumerate(self.events):
            asks = bool(event.long_running_tool_ids)
            if matching and replayed < len(earlier) and earlier[replayed] == _ASKED:
                if asks:  # a new question where it asked before: said since then is new
                    del dropped[passed:]
                    replayed, matching = passed_at, False
                else:
                    while replayed < len(earlier) and earlier[replayed] == _ASKED:
                        replayed += 1
                    passed, passed_at = len(dropped), replayed
            if asks:
                continue  # a question: one already asked is not yielded again
            if matching and replayed < len(earlier) and _said(event) == earlier[replayed]:
                dropped.append(index)
                replayed += 1
                continue
            matching = False
        rewritten: dict[str, JsonValue] = {}
        if dropped:
            left_out = set(dropped)
            for index in dropped:
                rewritten.update(self.events[index].actions.state_delta)
            self.events = [e for i, e in enumerate(self.events) if i not in left_out]
        return replayed, rewritten

    def carry_rewrites(self, rewritten: dict[str, JsonValue]) -> None:
        """Put the left-out replays' state writes that change the session (something else
        wrote those keys while the run waited) on the run's first new event, under its own
        writes (what the run wrote after the replay wins), or on an event of their own: the
        session's events show every write, so a rewind rebuilds the state the run left."""
        changed = self.ctx.state.changes(rewritten)
        if not changed:
            return
        if self.events:
            first = self.events[0].actions
            first.state_delta = {**changed, **first.state_delta}
        else:
            self.events.append(self.state_event(changed))

    def said(self, earlier: list[str], replayed: int) -> list[str]:
        """What the run's code yielded until now (see `RunRecord.yielded`): the replayed
        part of `earlier`, then what this execution's events say (`_ASKED` for a question)."""
        return [
            *earlier[:replayed],
            *(_ASKED if event.long_running_tool_ids else _said(event) for event in self.events),
        ]

    def parts(self, *, pending_taken: bool = False) -> StepParts:
        """The step: what was collected, with every write of the run not yet committed.
        `pending_taken`: `flush_leftovers` just put the run's pending writes on an event,
        so there are none to ask for (a property's and a method's call fewer, every run)."""
        # Positional (events, state_delta, opened): keywords cost a dict, every step.
        return StepParts(tuple(self.events), self._all_writes(pending_taken), tuple(self.opened))

    def _all_writes(self, pending_taken: bool) -> dict[str, JsonValue]:
        delta: dict[str, JsonValue] = {}
        for event in self.events:
            writes = event.actions.state_delta
            if writes:
                delta.update(writes)
        if not pending_taken:
            delta.update(self.ctx.state.take_pending())
        return delta

    async def flush(self) -> None:
        """Commit what was collected so far; the run stays RUNNING."""
        parts = self.parts()
        self.events, self.opened = [], []
        record, ctx = self.record, self.ctx

        def mutate() -> None:
            record.agent_states = dict(ctx.agent_states)
            record.ended_agents = sorted(ctx.ended_agents)
            record.interrupts = list(ctx.open_interrupts)
            record.output = ctx.output

        await ctx.invocation_context.commit(parts, mutate)


def _set_deadline(row: Interrupt, args: dict[str, JsonValue]) -> None:
    """Copy a RequestInput's deadline (see `RequestInput.to_function_call`) onto its row."""
    timeout = args.get("timeout")
    if isinstance(timeout, int | float) and not isinstance(timeout, bool):
        row.timeout = float(timeout)
        row.answers_on_timeout = "on_timeout" in args
        row.on_timeout = args.get("on_timeout")


def _set_assignee(row: Interrupt, args: dict[str, JsonValue]) -> None:
    """Copy a RequestInput's assignee (see `RequestInput.to_function_call`) onto its row."""
    assignee = args.get("assignee")
    if isinstance(assignee, str):
        row.assignee = assignee


def _context_for(
    node: Node, record: RunRecord, invocation: InvocationContext, children: DynamicRuns | None
) -> Context:
    # Made in two calls: a class called with keywords packs them into a dict that its
    # __init__ unpacks again; a method call passes them as they are (every node run).
    ctx = object.__new__(Context)
    ctx.__init__(
        invocation,
        node_path=record.path,
        run_id=record.run_id,
        node_name=node.name,
        # A run that runs children sees the answers they were given too, as in the
        # reference, so it can hand them on (a NodeRunner's resume_inputs).
        resume_inputs=record.answers
        if record.child is None or not record.child.calls
        else {**record.child.answers_below(), **record.answers},
        open_interrupts={
            iid: carried_interrupt(invocation, record, iid) for iid in record.interrupts
        }
        if record.interrupts
        else None,
        output=record.output,
        attempt_count=record.attempt,
        agent_states=record.agent_states,
        ended_agents=set(record.ended_agents) if record.ended_agents else None,
        children=children,
        state_schema=current_state_schema.get(),
        branch=record.branch,
    )
    ctx.node = node
    return ctx


def carried_interrupt(invocation: InvocationContext, record: RunRecord, iid: str) -> Interrupt:
    """A still-open interrupt carried over from an earlier execution (its index row exists)."""
    return open_interrupt(invocation, record.path, iid)


def open_interrupt(invocation: InvocationContext, node_path: str, iid: str) -> Interrupt:
    """The run's record of a question `node_path` waits on: what the engine needs of it
    (no function name; its index row, if any, holds the rest)."""
    return Interrupt(
        app_name=invocation.app_name,
        user_id=invocation.user_id,
        session_id=invocation.session.id,
        invocation_id=invocation.invocation_id,
        interrupt_id=iid,
        node_path=node_path,
        function_name="",
    )


def execute_run(
    node: Node, record: RunRecord, invocation: InvocationContext, finish: Finish
) -> Awaitable[None]:
    """Execute one run (retrying per the node's RetryConfig) and commit its step; await
    the result.

    Raises:
        NodeRunFailedError: the run failed for good; its error event was committed.
    """
    tracer = invocation.tracer
    if tracer is None:
        # Speed: the run's own coroutine, not one more wrapped around it for every run.
        return _execute(node, record, invocation, finish)
    return _execute_traced(tracer, node, record, invocation, finish)


async def _execute_traced(
    tracer: Tracer, node: Node, record: RunRecord, invocation: InvocationContext, finish: Finish
) -> None:
    with node_span(tracer, node.name, record.path, record.run_id) as span:
        try:
            await _execute(node, record, invocation, finish)
        finally:
            span.set_attributes(
                {"baton.node.status": record.status.value, "baton.node.attempts": record.attempt}
            )


async def _execute(
    node: Node, record: RunRecord, invocation: InvocationContext, finish: Finish
) -> None:
    # Read once: an attribute of a pydantic model (most nodes) costs ~500 instructions.
    schedules_only: bool = getattr(node, "schedules_only", False)
    # Only a run that schedules children (a workflow's) reads its record from here, at its
    # start (see `Workflow.run`). Speed: a context variable's set and reset cost ~4k
    # instructions, ~1.5% of every other node's run.
    token = current_record.set(record) if schedules_only else None
    watch_loop()
    record.attempt = 0
    try:
        if record.expired:
            await _fail_unanswered(node, record, invocation, finish)
        while True:
            record.attempt += 1
            record.return_to_start_branch()  # the node names its branch again, if it moves
            children = _child_runs(node, record, invocation)
            ctx = _context_for(node, record, invocation, children)
            collector = _Collector(node, ctx, record, invocation, children)
            try:
                await _run_once(node, ctx, record, collector, own_code=not schedules_only)
                if children is not None and not children.idle:
                    _carry(ctx, record, await children.settle(cancel=False))
            except ChildInterrupted:
                # A dynamic child waits: so does this run, once its other children settled.
                _carry(ctx, record, await _settle(children, cancel=False))
            except NodeRunFailedError as failure:
                await _settle(children, cancel=True)
                error = failure.error
                # A child failed (an item of a parallel worker): retried as the run's own
                # error, the children that completed are not run again.
                if isinstance(error, Exception) and await _retried(
                    node, record, invocation, error, collector.last_author
                ):
                    continue
                # The child's failure is this run's: recorded as its own (no event: the
                # child's said it), so that it is the one handed on from this run's record.
                await _commit_failure(node, record, invocation, error, finish, said=True)
                raise NodeRunFailedError(record.path, failure.error) from failure.error
            except Exception as error:
                await _settle(children, cancel=True)
                if run_stopper(error) is not None:
                    raise  # nothing more can be recorded: the run stays resumable as it is
                if await _retried(node, record, invocation, error, collector.last_author):
                    continue
                await _commit_failure(
                    node, record, invocation, error, finish, last_author=collector.last_author
                )
                raise NodeRunFailedError(record.path, error) from error
            await _commit_end(node, ctx, record, collector, finish)
            return
    finally:
        _forget_record(token)


def _forget_record(token: Token[RunRecord] | None) -> None:
    """Undo what `_execute` noted as the run started: its record, if it was set."""
    if token is not None:
        current_record.reset(token)


# A node run that holds the event loop is named by its record, read off this frame.
watch_node_runs(_execute.__code__, "record")


def _child_runs(node: Node, record: RunRecord, invocation: InvocationContext) -> DynamicRuns | None:
    """The run's dynamic calls (`ctx.run_node`); None for a function that takes no `ctx`,
    which can make none (and has no earlier calls of its run to settle).

    Speed: most node runs call no node; such a function's runs skip making the calls'
    object and asking it after the run whether it has children and delegates output.
    The collector reads None as "the code never sees `ctx`" too (`_Collector.ctx_unseen`):
    a FunctionNode's own, not a subclass's, whose `call` or `run` may use it.
    """
    if record.child is None and type(node) is FunctionNode and not node.takes_ctx:
        return None
    return DynamicRuns(record, invocation, run_child)


async def _settle(children: DynamicRuns | None, *, cancel: bool) -> list[str]:
    """`children.settle(cancel=...)` for a run that may have none (see `_child_runs`)."""
    return [] if children is None else await children.settle(cancel=cancel)


def _delegates_output(children: DynamicRuns | None) -> bool:
    """Whether a dynamic child's output stands for the run's (`use_as_output`)."""
    return children is not None and children.delegates_output


async def _retried(
    node: Node,
    record: RunRecord,
    invocation: InvocationContext,
    error: Exception,
    last_author: str | None,
) -> bool:
    """Whether the node's retry_config retries the attempt `error` ended: then the error
    is committed (signed per `_failure_author`) and the delay before the next attempt
    waited out."""
    retry = node.retry_config
    if not retry or not retry.should_retry(error, record.attempt):
        return False
    await _commit_attempt_error(node, record, invocation, error, last_author)
    await asyncio.sleep(retry.delay(record.attempt))
    return True


async def _run_once(
    node: Node, ctx: Context, record: RunRecord, collector: _Collector, *, own_code: bool
) -> None:
    """Run the node's code once (`own_code`: not a run that only schedules children)."""
    invocation = collector.invocation
    if own_code:
        if invocation.land_held is not None:
            await invocation.land_held()  # a finished step lands before this node's code runs
        invocation.running_code += 1
    try:
        # Most nodes: one read tells that no schemas, timeout or generator are involved.
        quick = node.quick_call if type(node) is FunctionNode else None
        schemas = None if quick is not None else getattr(node, "schemas", None)
        node_input: NodeInput = record.input
        if schemas is not None:
            checked = message_value(record.input) if record.message_input else record.input
            node_input = check_node_data(schemas[0], checked, node=node.name, what="input")
        elif record.message_input and own_code:
            node_input = Content.model_validate(record.input)
        # A run that only schedules children (a workflow's) gets the user's message as its
        # JSON, which it hands its first nodes as it is (`Workflow.run`). Speed: not made a
        # Content to be dumped back, on every start and resume (38k instructions, ~2% of
        # a PostgreSQL resume); each node that reads the message still gets a Content.
        if quick is not None or (
            node.timeout is None and isinstance(node, FunctionNode) and node.returns_once
        ):
            # One call, one result, no generator to drive or close.
            if collector.children is not None:
                # It gets `ctx`: the steps of nodes it calls hand over while its code waits.
                await own_task()
            call = quick or cast(FunctionNode, node).call  # `quick` tells it is one too
            collector.add(await call(ctx, node_input))  # commits at the end
        else:
            if own_code or node.timeout is not None:
                # Its steps hand over while its code is under way, or a timeout spans them
                # (a workflow without one needs no task: see `Workflow.run`).
                await own_task()
            await _drive(node, ctx, node_input, collector)
        if schemas is not None and ctx.output is not None:
            _check_output(node.name, schemas[1], ctx, collector)
    finally:
        if own_code:
            invocation.running_code -= 1


def _check_output(
    name: str, schema: SchemaType | None, ctx: Context, collector: _Collector
) -> None:
    """The output checked (and coerced) before the step commits, in its event too."""
    output = to_json_value(ctx.output, what=f"the output of node '{name}'")
    checked = check_node_data(schema, output, node=name, what="output")
    for event in collector.events:
        if event.output is not None:
            event.output = checked
    ctx.output = checked


def _carry(ctx: Context, record: RunRecord, waiting: list[str]) -> None:
    """Dynamic children's open interrupts are this run's too: it waits until they are answered."""
    for iid in waiting:
        if iid not in ctx.open_interrupts:
            ctx.open_interrupts[iid] = carried_interrupt(ctx.invocation_context, record, iid)


def run_stopper(error: BaseException) -> Exception | None:
    """The store outage or lost lease under `error` (itself, or inside task groups'
    exception groups), or None.

    Such an error under a step of this run (a child's, arriving through task groups) is
    not the node's failure, which would be recorded as such once the database is back,
    but the invocation's stop.
    """
    if isinstance(error, StoreUnavailableError | LeaseLostError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for each in cast(BaseExceptionGroup[BaseException], error).exceptions:
            found = run_stopper(each)
            if found is not None:
                return found
    return None


async def run_child(
    node: Node, record: RunRecord, invocation: InvocationContext, finish: Finish
) -> None:
    """Bring one child run forward: execute it, complete it from its answers, or leave it
    waiting, as its status and answers say."""
    decision = wants_execution(node, record)
    if decision is True:
        await execute_run(node, record, invocation, finish)
    elif decision is None:
        await complete_with_answers(node, record, invocation, finish)


def message_value(message: Content | JsonValue) -> JsonValue:
    """What a user's message (`Content`, or as JSON) says as a value: its text read as
    JSON, or the text itself, as the reference hands it to a typed parameter."""
    text = (message if isinstance(message, Content) else Content.model_validate(message)).text
    try:
        return json.loads(text)
    except ValueError:
        return text


async def _drive(node: Node, ctx: Context, node_input: NodeInput, collector: _Collector) -> None:
    timeout = node.timeout
    if timeout is None:
        await _consume(node.run(ctx, node_input), collector)
        return
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            await _consume(node.run(ctx, node_input), collector)
    except TimeoutError as error:
        if scope.expired():
            raise NodeTimeoutError(node.name, timeout) from error
        raise


async def _consume(items: AsyncIterator[object], collector: _Collector) -> None:
    try:
        async for item in items:
            await collector.take(item)
    except (Exception, ChildInterrupted, asyncio.CancelledError):
        # Stopped at a yield by our own error, or cancelled (the run's consumer closed
        # it, a timeout): let the node's `finally` blocks run now, so the tasks it owns
        # (a model turn's calls) end with it rather than when it is garbage collected.
        await _close(items)
        raise


async def _close(items: AsyncIterator[object]) -> None:
    aclose = getattr(items, "aclose", None)
    if aclose is not None:
        await aclose()


def _failure_author(node: Node, last_author: str | None) -> str:
    """Who signs the event of a failed run of `node`, as the reference signs it.

    A workflow signs its own failure (`signs_own_failure`). An agent's is signed by the
    author of the last event the agent yielded (`last_author`: itself, or a sub-agent it
    handed over to), by its enclosing workflow if it yielded none; any other node's, as
    its events are.
    """
    if getattr(node, "signs_own_failure", False):
        return node.name
    if last_author and getattr(node, "authors_own_events", False):
        return last_author
    return current_workflow.get() or node.name


def _error_event(
    node: Node,
    record: RunRecord,
    invocation: InvocationContext,
    error: BaseException,
    last_author: str | None,
) -> Event:
    event = Event(
        invocation_id=invocation.invocation_id,
        author=_failure_author(node, last_author),
        node_info=NodeInfo(path=record.path, run_id=record.run_id),
        error_code=_error_code(error),
        error_message=str(error),
    )
    _put_on_branch(event, record)
    return event


def _error_code(error: BaseException) -> str:
    """The error's own status when it names one (an API error's "PERMISSION_DENIED"),
    else its class's name, as the reference codes it; a numeric `.status` (an HTTP
    client's) is no code."""
    status = getattr(error, "status", None)
    if isinstance(status, str):
        return status
    return error.error_type if isinstance(error, NodeFailedError) else type(error).__name__


def _output_event(
    output: JsonValue,
    record: RunRecord,
    invocation_id: str,
    author: str,
    state_delta: dict[str, JsonValue] | None = None,
    artifact_delta: dict[str, int] | None = None,
) -> Event:
    """The event of a run's output the engine makes, placed as `_Collector.place` places
    a node's own, but assembled placed: no copy of its node info to change it after.
    `state_delta` and `artifact_delta` become the event's own (none: empty)."""
    output_for: list[str] | None = None
    branch = record.branch
    if output is not None and record.output_for:
        output_for = [record.path, *record.output_for]
        branch = record.output_branch
    elif output is not None and record.terminal_of:
        output_for = [record.path, *record.terminal_of]
    return _of_output(
        output,
        invocation_id=invocation_id,
        author=author,
        path=record.path,
        run_id=record.run_id,
        output_for=output_for,
        branch=branch,
        state_delta=state_delta,
        artifact_delta=artifact_delta,
    )


def _put_on_branch(event: Event, record: RunRecord) -> None:
    """The event on its run's conversation branch, unless it names one of its own."""
    if record.branch is not None and event.branch is None:
        event.branch = record.branch


async def _commit_attempt_error(
    node: Node,
    record: RunRecord,
    invocation: InvocationContext,
    error: Exception,
    last_author: str | None,
) -> None:
    event = _error_event(node, record, invocation, error, last_author)
    # The attempt's failed children (a workflow's, or dynamic ones) run again in the
    # next attempt: marked so with the decision, in one step.
    await invocation.commit(StepParts(events=(event,)), lambda: rerun_failed(record))


async def _commit_failure(
    node: Node,
    record: RunRecord,
    invocation: InvocationContext,
    error: BaseException,
    finish: Finish,
    *,
    last_author: str | None = None,
    said: bool = False,
) -> None:
    """Commit the run failed with `error`, with its error event unless one `said` it
    already (a child's, whose failure this run took on)."""
    events = () if said else (_error_event(node, record, invocation, error, last_author),)

    def mutate() -> None:
        record.status = RunStatus.FAILED
        record.error = described(error)
        record.error_classes = error_class_names(error)
        finish(record)

    await invocation.commit(StepParts(events=events), mutate)


async def _fail_unanswered(
    node: Node, record: RunRecord, invocation: InvocationContext, finish: Finish
) -> None:
    """Fail a run whose question's deadline passed with no `on_timeout` answer.

    Raises:
        NodeRunFailedError: always, after the failure and its error event committed.
    """
    asked = ", ".join(f"'{iid}'" for iid in record.expired)
    error = InputTimeoutError(
        f"node '{node.name}' asked {asked} and nobody answered before the deadline, which "
        "had no on_timeout answer. Continue the invocation to ask again, or give the "
        "RequestInput an on_timeout= answer."
    )
    record.expired = []
    await _commit_failure(node, record, invocation, error, finish)
    raise NodeRunFailedError(record.path, error)


def _commit_end(
    node: Node, ctx: Context, record: RunRecord, collector: _Collector, finish: Finish
) -> Awaitable[None]:
    """The run's last step, built now; await the result to land it.

    Speed: not a coroutine of its own around the commit's (its only await, the last
    thing it does): one frame fewer to make on every node run, and for each step's
    hand-over to pass through twice (`baton.workflow.handover.park`).
    """
    if ctx.output is not None and not collector.has_output:
        ctx.output = to_json_value(ctx.output, what=f"the output of node '{node.name}'")
    carried = ctx.output == record.output  # an output from an earlier execution was emitted then
    earlier = record.yielded
    replayed, rewritten = collector.drop_replayed(earlier) if earlier else _NOTHING_REPLAYED
    # Noted for a run that waits and executes again on resume, before the engine adds
    # events of its own: what the node yielded.
    yielded = (
        collector.said(earlier, replayed)
        if ctx.open_interrupts and _reruns(node, record, collector)
        else None
    )
    deferred: Event | None = None
    if (
        ctx.output is not None
        and not collector.has_output
        and not carried
        and getattr(node, "emits_output", True)
        and not _delegates_output(collector.children)
    ):
        deferred = _output_event(ctx.output, record, collector.invocation_id, event_author(node))
        collector.events.append(deferred)
    unseen = collector.ctx_unseen  # nothing left over, nothing saved
    if not unseen:
        collector.flush_leftovers(deferred)
    if rewritten:
        collector.carry_rewrites(rewritten)
    parts = collector.parts(pending_taken=True)
    saved = None if unseen else ctx.take_artifact_delta()
    if not parts.events and saved:
        # A run that only saved artifacts still tells the session so, as the reference does.
        parts.events = (collector.state_event({}),)
    if saved:
        last = parts.events[-1].actions
        last.artifact_delta = {**last.artifact_delta, **saved}
    route = ctx.route
    routes = list(route) if isinstance(route, list) else [] if route is None else [route]
    children = collector.children

    def mutate() -> None:
        # Copies only of what is there: an empty literal costs no call (most runs have
        # no questions, agent states or routes; every run's last step).
        record.interrupts = list(ctx.open_interrupts) if ctx.open_interrupts else []
        record.status = _WAITING if record.interrupts else _COMPLETED
        record.output = ctx.output
        record.waits_for_output = children is not None and children.waits_for_output
        record.routes = routes
        record.fresh = []
        record.error = None
        record.agent_states = dict(ctx.agent_states) if ctx.agent_states else {}
        record.ended_agents = sorted(ctx.ended_agents) if ctx.ended_agents else []
        if yielded is not None:
            record.yielded = yielded
        finish(record)

    parts.joinable = True
    return collector.invocation.commit(parts, mutate)


def _reruns(node: Node, record: RunRecord, collector: _Collector) -> bool:
    """Whether the run, waiting, executes again from the top on resume (see
    `wants_execution`), yielding again what it yielded: an agent, which commits each
    event as it comes, goes on from its own checkpoint instead."""
    return (node.rerun_on_resume or record.child is not None) and not collector.commits_each_event


def _said(event: Event) -> str:
    """A digest of what `event` says: all of it but what each execution makes anew (its
    id and time), so a rerun's replay of an event has the digest the event had."""
    data = event.model_dump(mode="json", exclude={"id", "timestamp"}, exclude_none=True)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _is_bare(event: Event) -> bool:
    """Whether an event carries nothing once its output is taken out."""
    actions = event.actions
    return (
        event.content is None
        and not actions.state_delta
        and not actions.artifact_delta
        and actions.route is None
        and not event.long_running_tool_ids
        and not actions.render_ui_widgets
    )


def _show_widgets(actions: EventActions, widgets: list[UiWidget]) -> None:
    """Put a node run's rendered widgets on one of its events, after any it carries."""
    actions.render_ui_widgets = [*(actions.render_ui_widgets or ()), *widgets]


def _declared_assignee(event: Event, call_id: str) -> str | None:
    """Who a long-running tool declared must answer `call_id` (see ASSIGNEES_KEY)."""
    assignees = (event.custom_metadata or {}).get(ASSIGNEES_KEY)
    assignee = assignees.get(call_id) if isinstance(assignees, dict) else None
    return assignee if isinstance(assignee, str) else None


def _declared_schema(event: Event, call_id: str) -> dict[str, JsonValue] | None:
    """The answer schema a long-running tool declared for `call_id` (see RESPONSE_SCHEMAS_KEY)."""
    schemas = (event.custom_metadata or {}).get(RESPONSE_SCHEMAS_KEY)
    schema = schemas.get(call_id) if isinstance(schemas, dict) else None
    return schema if isinstance(schema, dict) else None
