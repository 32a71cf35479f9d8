"""BaseAgent: a pydantic model that runs as an async generator of events, and a node.

An agent tree runs inside one node run. Its events are committed one by one
(`commits_each_event`), so a finished sub-agent, tool call or checkpoint is
durable before the next one starts; on resume the node run is executed again
with the agents' last checkpoints (`ctx.agent_states`) and ended marks.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, ClassVar, Self, TypeVar, cast, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    InstanceOf,
    JsonValue,
    PrivateAttr,
    SkipValidation,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from baton.agents.callbacks import CallbackContext, Callbacks, chain, run_callbacks
from baton.agents.context import AgentContext, as_agent_context
from baton.agents.direct import run_directly
from baton.agents.replay import count_replays
from baton.agents.state import BaseAgentState, parse_agent_state
from baton.agents.transfer import TransferRules
from baton.artifacts import ArtifactScope
from baton.context import Context, InvocationContext, agent_key, call_scope
from baton.errors import WorkflowChangedError
from baton.events import Event, EventActions, NodeInfo, RequestInput, is_task_question
from baton.types import Content
from baton.workflow.nodes import NodeInput, RetryConfig, check_version

__all__ = ["BaseAgent", "answer_text"]

StateT = TypeVar("StateT", bound=BaseAgentState)


def _shallow_copy(value: object) -> object:
    # A list field (tools, callbacks) is the clone's own list, as in the reference.
    return list(cast(list[object], value)) if isinstance(value, list) else value


def _rebound(value: object, agent: BaseAgent, copy: BaseAgent) -> object:
    """`value` with methods of `agent` (alone or in a list) bound to `copy` instead."""
    if isinstance(value, list):
        items = cast(list[object], value)
        return [_rebound(item, agent, copy) for item in items]
    if inspect.ismethod(value) and value.__self__ is agent:
        return value.__func__.__get__(copy)
    return value


class BaseAgent(BaseModel):
    """Base class of every agent: subclass it and implement `_run_async_impl(ctx)`.

    Subclasses declare their own fields (sub-agents, settings) as pydantic fields.
    An agent is a node: it can be an App's `root_agent` or a node of a Workflow.

    Args:
        name: the agent's name (a Python identifier, unique in its agent tree).
        description: what the agent does.
        sub_agents: the agents it runs; each gets this agent as `parent_agent`.
        rerun_on_resume: as a node, re-execute with the answers when resumed (default).
        retry_config: as a node, in-process retries of the whole agent run.
        timeout: as a node, seconds one run may take.
        before_agent_callback: called when the agent starts (not when it resumes); a
            returned Content is its reply and the agent does not run. See
            `baton.agents.callbacks`.
        after_agent_callback: called when the agent finishes; a returned Content is
            added as a reply, in the event that ends the agent.
        wait_for_output: as a node of a workflow, a run that ends without output or
            route triggers nothing (its successors wait for a run that gives one).
        state_schema: a pydantic model every state write of the agent's tree (its
            callbacks', tools') must fit, in place of its workflow's (StateSchemaError,
            nothing stored); see `baton.schemas`.
        version: the agent's code version (e.g. of its instruction or tools), part of
            the workflow's fingerprint: change it so that runs started before the
            change are refused on resume (WorkflowChangedError) instead of continuing.

    Raises:
        ValueError: a bad name, a name used twice in the tree, a sub-agent that
            already belongs to another parent, or a timeout that is not positive.
        TypeError: the class does not implement `_run_async_impl`.
    """

    # defer_build: see WireModel.
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)

    commits_each_event: ClassVar[bool] = True
    # An agent signs its own events, in a workflow too (function nodes' carry the workflow's
    # name), and its reply is its output: the engine adds no output event of its own.
    authors_own_events: ClassVar[bool] = True
    schedules_only: ClassVar[bool] = False
    emits_output: ClassVar[bool] = False
    # The reference ends only its own agent classes with an event; a custom agent that
    # returns is ended for it, quietly (the event is stored, its end mark shown to no
    # caller: `InvocationContext.private_checkpoints`).
    ends_quietly: ClassVar[bool] = True

    name: str
    description: str = ""
    sub_agents: list[BaseAgent] = Field(default_factory=list["BaseAgent"])
    rerun_on_resume: bool = True
    retry_config: InstanceOf[RetryConfig] | None = None
    timeout: float | None = Field(default=None, gt=0)
    before_agent_callback: Callbacks = None
    after_agent_callback: Callbacks = None
    version: StrictStr | StrictInt | None = None  # strict: True is not version 1
    wait_for_output: bool = False
    state_schema: SkipValidation[type[BaseModel] | None] = None

    _parent: BaseAgent | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _no_worker_flag(cls, data: Any) -> Any:
        if (
            isinstance(data, dict)
            and "parallel_worker" in data
            and "parallel_worker" not in cls.model_fields
        ):
            raise ValueError(
                f"{cls.__name__} takes no parallel_worker (as in the reference, only an LlmAgent "
                "does); to run it once per item of a list, make it the node of "
                "ParallelWorker(node=...) (baton.workflow.workers) in the workflow's edges."
            )
        return cast(object, data)

    @field_validator("state_schema")
    @classmethod
    def _schema_is_a_model(cls, schema: object) -> object:
        if schema is not None and not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise TypeError(
                f"an agent's state_schema must be a pydantic model class, got {schema!r}."
            )
        return schema

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        if not name.isidentifier():
            raise ValueError(
                f"agent name {name!r} must be a Python identifier (letters, digits, _)."
            )
        if name == "user":
            raise ValueError(
                "'user' is reserved for the author of user messages; pick another name."
            )
        return name

    def model_post_init(self, context: Any, /) -> None:
        check_version(self.name, self.version)
        if type(self)._run_async_impl is BaseAgent._run_async_impl:
            raise TypeError(
                f"{type(self).__name__} '{self.name}' cannot run: it does not implement "
                "`async def _run_async_impl(self, ctx)`, the async generator of its events. Define "
                "it in the class, or use SequentialAgent, LoopAgent, ParallelAgent or LlmAgent."
            )
        for sub in self.sub_agents:
            if sub._parent is not None and sub._parent is not self:
                raise ValueError(
                    f"agent '{sub.name}' already has parent '{sub._parent.name}'; it cannot also "
                    f"be a sub-agent of '{self.name}'. Create a separate agent object."
                )
            sub._parent = self
        names = [agent.name for agent in self.walk()]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(
                f"agent names must be unique in the tree of '{self.name}' (checkpoints are kept "
                f"by name); used more than once: {', '.join(twice)}."
            )

    @property
    def parent_agent(self) -> BaseAgent | None:
        """The agent this one is a sub-agent of."""
        return self._parent

    @property
    def root_agent(self) -> BaseAgent:
        """The top of this agent's tree."""
        agent = self
        while agent._parent is not None:
            agent = agent._parent
        return agent

    def walk(self) -> Iterator[BaseAgent]:
        """This agent and every agent below it, depth first."""
        yield self
        for sub in self.sub_agents:
            yield from sub.walk()

    def find_agent(self, name: str) -> BaseAgent | None:
        """The agent called `name` in this agent's subtree (itself included), or None."""
        return next((a for a in self.walk() if a.name == name), None)

    def clone(self, update: Mapping[str, Any] | None = None) -> Self:
        """A copy of this agent, built again from its fields, with `update`'s values.

        As in the reference: its sub-agents are cloned too (unless `update` gives
        `sub_agents`), the copy has no parent, and a callback that is a method of this
        agent acts on the copy.

        Raises:
            ValueError: `update` names `parent_agent` or a field the class lacks.
        """
        changes = dict(update or {})
        fields = type(self).model_fields
        if "parent_agent" in changes:
            raise ValueError(
                "clone cannot set parent_agent: an agent gets its parent when it is given "
                "as a sub-agent; pass the clone in the parent's sub_agents=[...]."
            )
        unknown = sorted(set(changes) - set(fields))
        if unknown:
            raise ValueError(
                f"{type(self).__name__} has no field {', '.join(map(repr, unknown))} to "
                f"update in clone; its fields: {', '.join(fields)}."
            )
        given: dict[str, Any] = {
            name: _shallow_copy(getattr(self, name)) for name in self.model_fields_set
        }
        given["sub_agents"] = [sub.clone() for sub in self.sub_agents]
        copy = type(self)(**{**given, **changes})
        for name in fields.keys() - changes.keys() - {"sub_agents"}:
            value = getattr(copy, name)
            rebound = _rebound(value, self, copy)
            if rebound is not value:
                setattr(copy, name, rebound)
        return copy

    def find_sub_agent(self, name: str) -> BaseAgent | None:
        """The agent called `name` below this agent, or None."""
        return next((a for a in self.walk() if a.name == name and a is not self), None)

    def runs_as_tool(self) -> bool:
        """Whether its parent's model calls it as a tool (`baton.agents.delegation`)
        instead of transferring the conversation to it: an LlmAgent in single-turn mode."""
        return False

    def tool_input_schema(self) -> type[BaseModel] | None:
        """The parameters of this agent called as a tool (`AgentTool`, a single-turn
        sub-agent): its first sub-agent's, as in the reference; None for one `request`
        text."""
        return self.sub_agents[0].tool_input_schema() if self.sub_agents else None

    def node_value(self, ctx: Context, node_input: NodeInput) -> JsonValue:
        """The node's input as the agent reads it: the user's message as its text (a model
        turn), as in the reference."""
        return node_input.text if isinstance(node_input, Content) else node_input

    def reply_is_output(self, ctx: InvocationContext) -> bool:
        """Whether the agent's last reply is its node run's output (not for an agent that
        gives its output otherwise, such as an LlmAgent in task mode)."""
        del ctx
        return True

    def task_result(self, event: Event, earlier: Sequence[Event]) -> tuple[JsonValue] | None:
        """The result `event` gives (in a 1-tuple) when it ends this agent's task, its
        call among `earlier`; None otherwise (an agent in task mode overrides this)."""
        del event, earlier
        return None

    def tree_task_result(self, event: Event, earlier: Sequence[Event]) -> tuple[JsonValue] | None:
        """The result `event` gives (in a 1-tuple) when it ends the task of its author, an
        agent of this tree (see `task_result`); None otherwise."""
        agent = self.find_agent(event.author)
        return agent.task_result(event, earlier) if agent is not None else None

    def _last_given(self, events: Sequence[Event]) -> JsonValue:
        """The last reply given in `events` (the node run's), or task result of an agent
        of this tree (see `task_result`); None when there is none."""
        for index in reversed(range(len(events))):
            event = events[index]
            if _is_final_text(event) and not is_task_question(event):
                return answer_text(event)
            result = self.tree_task_result(event, events[:index])
            if result is not None:
                return result[0]
        return None

    def transfer_rules(self) -> TransferRules | None:
        """Where this agent may transfer the conversation besides its sub-agents, or None
        when it takes no part in transfer (only LlmAgent does, as in the reference)."""
        return None

    # --- running as a node -------------------------------------------------------------

    async def run(self, ctx: Context, node_input: NodeInput) -> AsyncIterator[object]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator is an AsyncIterator
        """Run the agent tree as one node run (the Node protocol)."""
        if self.state_schema is not None:
            ctx.state.check_writes_against(self.state_schema, f"agent '{self.name}'")
        text_input = self.node_value(ctx, node_input)
        agent_ctx = AgentContext(ctx, node_input=text_input, branch=ctx.branch)
        agent_ctx.node_agent = self.name
        if ctx.agent_states or ctx.ended_agents:
            _key_checkpoints_by_call(ctx, await _run_events(agent_ctx))
        if self.name in ctx.ended_agents:
            # It ended before a crash cut the node run short: only the output is missing.
            if ctx.output is None and self.reply_is_output(agent_ctx):
                ctx.output = self._last_given(await _run_events(agent_ctx))
            return
        if ctx.ended_agents:
            mine = await _run_events(agent_ctx)
            agent_ctx.replays.update(count_replays(self, ctx.ended_agents, mine))
            # Sub-agents that ended before a crash give nothing again: what they gave is
            # the last response until a later one gives more.
            agent_ctx.last_response = self._last_given(mine)
        explicit_output = False
        replies_give_output = self.reply_is_output(agent_ctx)
        async with aclosing(self.run_async(agent_ctx)) as events:
            async for event in events:
                if event.author == self.name and replies_give_output and _is_final_text(event):
                    _mark_as_output(event, ctx)
                yield event
                # The engine committed it while we were suspended at the yield.
                agent_ctx.log.add(event)
                explicit_output = explicit_output or event.output is not None
                if _is_final_text(event) and not is_task_question(event):
                    agent_ctx.last_response = answer_text(event)
        if not explicit_output and replies_give_output and self.name in ctx.ended_agents:
            ctx.output = agent_ctx.last_response

    # --- running as an agent -------------------------------------------------------------

    async def run_async(self, parent_context: InvocationContext) -> AsyncGenerator[Event, None]:
        """Run this agent (from a parent agent's `_run_async_impl`), yielding its events.

        An agent that ended before starts afresh; one with a checkpoint resumes. When
        `_run_async_impl` returns without ending the agent and nothing below it waits
        for input, the agent is ended for it. When a resumed parent re-executes a step
        whose call of this agent already ended (after the parent's last checkpoint),
        the call yields nothing: its events and state changes are already recorded.

        Args:
            parent_context: the ctx the calling agent received; or an InvocationContext
                the caller built, to drive the agent directly (see `baton.agents.direct`).

        Raises:
            TypeError: `parent_context` is not a context.
        """
        direct = isinstance(parent_context, InvocationContext)  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers pass anything
        if direct and not isinstance(parent_context, AgentContext):
            # Driven directly, with a context the caller built (as the reference's tests do).
            events = run_directly(self, parent_context)
        else:
            events = self._run_in(as_agent_context(parent_context))
        async with aclosing(events):
            async for event in events:
                yield event

    async def _run_in(self, ctx: AgentContext) -> AsyncGenerator[Event, None]:
        """Run this agent inside a node run (or a direct run), as `run_async` describes.

        While it runs, `ctx.agent` is this agent; `ctx.end_invocation` set then ends this
        agent only, as the reference's copy of the context for each agent does: its parent
        reads the values it had.
        """
        inherited, parent = ctx.end_invocation, ctx.agent
        ctx.agent = self
        try:
            async with aclosing(self._run_ending_here(ctx)) as events:
                async for event in events:
                    yield event
        finally:
            ctx.end_invocation, ctx.agent = inherited, parent

    async def _run_ending_here(self, ctx: AgentContext) -> AsyncGenerator[Event, None]:
        if self.name in ctx.ended_agents:
            if ctx.replays[self.name] > 0:
                ctx.replays[self.name] -= 1
                return
            ctx.reset_agent_states(a.name for a in self.walk())
        before = await self._before_event(ctx)
        if before is not None:
            yield before
            if before.actions.end_of_agent:
                return  # the callback answered for the agent, or ended its run
        try:
            async with aclosing(self._run_async_impl(ctx)) as events:
                async for item in events:
                    # A custom agent may ask a person directly, as a function node does.
                    is_ask = isinstance(item, RequestInput)
                    event = item.to_event(author=self.name) if is_ask else item
                    if ctx.branch is not None and event.branch is None:
                        event.branch = ctx.branch
                    yield event
        except Exception as error:
            if ctx.plugins:
                await ctx.plugins.on_agent_error(self, self._callback_context(ctx), error)
            raise
        closing = await self._closing_event(ctx)
        if closing is not None:
            yield closing

    async def _before_event(self, ctx: AgentContext) -> Event | None:
        """The before-agent callbacks' event, on a start (not a resume) of the agent."""
        callbacks = chain(ctx.plugins.agent_hooks("before", self), self.before_agent_callback)
        if callbacks is None or await self._has_started(ctx):
            return None
        return await self._callback_event(ctx, callbacks)

    async def _closing_event(self, ctx: AgentContext) -> Event | None:
        """After `_run_async_impl` returned: the end of the agent (unless it waits), with
        its after-callback's reply."""
        if self.name not in ctx.ended_agents:
            if await self.is_waiting(ctx):
                return None
            end = await self._end_event(ctx)
            if type(self).ends_quietly:
                # Stored (the agent resumes from it), not shown: see `ends_quietly`.
                ctx.invocation_context.private_checkpoints.add(end.id)
            return end
        callbacks = None if ctx.end_invocation else self._after_callbacks(ctx)
        if callbacks is None:
            return None
        # The agent ended itself: the callback's reply follows in an event of its own.
        return await self._callback_event(ctx, callbacks, ends=False)

    def _after_callbacks(self, ctx: AgentContext) -> Callbacks:
        return chain(ctx.plugins.agent_hooks("after", self), self.after_agent_callback)

    async def _has_started(self, ctx: AgentContext) -> bool:
        """Whether this call of the agent already began (a resume, not a start)."""
        if self.name in ctx.agent_states:
            return True
        scope = ctx.call_scope  # another call of this agent in the turn is not this one
        mine = [
            e
            for e in await _run_events(ctx)
            if e.author == self.name and call_scope(e.branch, ctx.base_branch) == scope
        ]
        return bool(mine) and not mine[-1].actions.end_of_agent

    async def _callback_event(
        self, ctx: AgentContext, callbacks: Callbacks, *, ends: bool = True
    ) -> Event | None:
        """Run agent callbacks; the event carrying their reply or state writes, if any.

        A reply from a before-callback ends the agent in the same event (`ends`).
        """
        callback_context = self._callback_context(
            ctx, await ctx.artifacts_for(f"{self.name}/agent")
        )
        reply = await run_callbacks(callbacks, callback_context=callback_context)
        actions = callback_context.actions
        ended = ends and ctx.end_invocation
        widgets = actions.render_ui_widgets
        if reply is None and not actions.state_delta and not actions.artifact_delta and not widgets:
            return self._quiet_end(ctx) if ended else None
        event = self._create_agent_state_event(
            ctx, end_of_agent=ends and (reply is not None or ended)
        )
        event.actions.state_delta = dict(actions.state_delta)
        event.actions.artifact_delta = dict(actions.artifact_delta)
        event.actions.render_ui_widgets = widgets
        if reply is not None:
            event.content = _reply_content(self.name, reply)
        return event

    def _callback_context(
        self, ctx: AgentContext, artifacts: ArtifactScope | None = None
    ) -> CallbackContext:
        return CallbackContext(
            state=ctx.state,
            agent_name=self.name,
            artifacts=artifacts,
            memory=ctx.memory_scope(),
            invocation_context=ctx,
        )

    def _quiet_end(self, ctx: AgentContext) -> Event:
        """The end of the agent, stored (it resumes from it) but not shown."""
        end = self._create_agent_state_event(ctx, end_of_agent=True)
        ctx.invocation_context.private_checkpoints.add(end.id)
        return end

    async def _end_event(self, ctx: AgentContext) -> Event:
        """The event ending the agent, with its after-callback's reply and writes (none
        when the agent's run set `end_invocation`)."""
        end = self._create_agent_state_event(ctx, end_of_agent=True)
        callbacks = None if ctx.end_invocation else self._after_callbacks(ctx)
        if callbacks is not None:
            after = await self._callback_event(ctx, callbacks, ends=False)
            if after is not None:
                end.content = after.content
                end.actions.state_delta = after.actions.state_delta
                end.actions.artifact_delta = after.actions.artifact_delta
                end.actions.render_ui_widgets = after.actions.render_ui_widgets
        return end

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        """The agent's logic: yield events (sub-agents' included). Override it."""
        raise NotImplementedError(f"{type(self).__name__} must implement _run_async_impl(ctx).")
        yield  # pragma: no cover - makes this an async generator

    async def is_waiting(self, ctx: InvocationContext) -> bool:
        """True when an interrupt raised by this agent or one below it is still open."""
        agent_ctx = as_agent_context(ctx)
        owners = await agent_ctx.interrupt_owners()
        mine = {a.name for a in self.walk()}
        return any(
            author in mine and agent_ctx.reaches(branch) for author, branch in owners.values()
        )

    # --- checkpoints ---------------------------------------------------------------------

    @overload
    def _load_agent_state(
        self, ctx: InvocationContext, state_type: type[StateT]
    ) -> StateT | None: ...
    @overload
    def _load_agent_state(
        self, ctx: InvocationContext, state_type: type[enum.Enum]
    ) -> BaseAgentState | None: ...
    def _load_agent_state(self, ctx: InvocationContext, state_type: type) -> BaseAgentState | None:
        """This agent's last checkpoint in the current run, or None on a fresh start.

        Args:
            ctx: the agent's ctx.
            state_type: the BaseAgentState subclass to read it as (an enum is accepted
                too: the state's values are converted to it where they are members).

        Raises:
            WorkflowChangedError: the checkpoint does not fit `state_type` (the state
                class changed since the run started).
        """
        stored = as_agent_context(ctx).agent_states.get(self.name)
        if not isinstance(stored, dict):
            return None
        try:
            return parse_agent_state(stored, state_type)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'state'}: {e['msg']}" for e in exc.errors()
            )
            raise WorkflowChangedError(
                f"agent '{self.name}' has the checkpoint {stored}, which does not fit "
                f"{state_type.__name__} ({problems}): the state class changed since the run "
                "started. Resume with the code it started with, or start a new run."
            ) from exc

    def _create_agent_state_event(
        self,
        ctx: InvocationContext,
        agent_state: BaseAgentState | None = None,
        *,
        end_of_agent: bool = False,
    ) -> Event:
        """An event checkpointing this agent: its state, or that it ended.

        Yield it; once committed, a resumed run continues from it.

        Args:
            ctx: the agent's ctx.
            agent_state: the state to resume from.
            end_of_agent: the agent finished; a later run starts it afresh.
        """
        agent_ctx = as_agent_context(ctx)
        return Event(
            invocation_id=agent_ctx.invocation_id,
            author=self.name,
            branch=agent_ctx.branch,
            actions=EventActions(
                agent_state=agent_state.model_dump(mode="json") if agent_state else None,
                end_of_agent=True if end_of_agent else None,
            ),
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


async def _run_events(ctx: AgentContext) -> list[Event]:
    """The events this node run committed, oldest first."""
    events = await ctx.log.invocation_events()
    return [
        e
        for e in events
        if e.node_info and e.node_info.path == ctx.node_path and e.node_info.run_id == ctx.run_id
    ]


def _key_checkpoints_by_call(ctx: Context, events: list[Event]) -> None:
    """Key by their call the checkpoints and ended marks that a node run paused by an
    earlier baton kept by agent name for agents that ran in a delegated call (see
    `baton.context.agent_key`): a checkpoint moves to the key of the call that wrote its
    agent's last one, an ended mark to that of the call its agent last ended in (an
    earlier baton ran two calls of one agent one after the other, the later one's left
    under the name). Committed with the run's next event."""
    written: dict[str, str] = {}
    ended: dict[str, str] = {}
    outside: set[str] = set()  # agents that ran outside any call keep their name
    for event in events:
        key = agent_key(event.author, event.branch, ctx.branch)
        if key == event.author:
            outside.add(key)
        if event.actions.agent_state is not None:
            written[event.author] = key
        if event.actions.end_of_agent:
            ended[event.author] = key
    for name, key in written.items():
        if name not in outside and name in ctx.agent_states:
            ctx.agent_states[key] = ctx.agent_states.pop(name)
    for name, key in ended.items():
        if name not in outside and name in ctx.ended_agents:
            ctx.ended_agents.discard(name)
            ctx.ended_agents.add(key)


def _mark_as_output(event: Event, ctx: Context) -> None:
    """Mark the node's agent's reply as the node run's output (clients show it once)."""
    event.node_info = NodeInfo(
        path=ctx.node_path, run_id=ctx.run_id, output_for=[ctx.node_path], message_as_output=True
    )


def _reply_content(agent: str, reply: object) -> Content:
    """A callback's reply as the agent's content.

    Raises:
        TypeError: the callback returned something other than a Content (or None).
    """
    if not isinstance(reply, Content):
        raise TypeError(
            f"an agent callback of '{agent}' returned {type(reply).__name__}; return a "
            "types.Content to answer for the agent, or None to let it run."
        )
    return reply if reply.role else reply.model_copy(update={"role": "model"})


def _is_final_text(event: Event) -> bool:
    """A model's reply that ends its turn: text, no calls, not partial. Not
    `is_final_response()`, which also counts a long-running call's or an error's event."""
    content = event.content
    return bool(
        content is not None
        and content.role == "model"
        and not event.partial
        and not content.function_calls
        and not content.function_responses
        and answer_text(event)
    )


def answer_text(event: Event) -> str:
    """The event's answer: its text without thoughts (a thinking model's, a planner's)."""
    parts = event.content.parts if event.content else None
    return "".join(p.text for p in parts or [] if p.text and not p.thought)
