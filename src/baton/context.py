"""InvocationContext (one per invocation) and Context (one per node run).

A node sees its Context: the session state, the answers to its interrupts
(`resume_inputs`), its run id and a stable idempotency key. Writes to
`ctx.state` stay pending until the node's step commits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NoReturn, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, JsonValue

from baton.artifacts import ArtifactMethods, ArtifactScope, BaseArtifactService
from baton.auth.auth_credential import AuthCredential
from baton.auth.auth_tool import AuthConfig, checked_config
from baton.auth.credential_service.base_credential_service import (
    load_from_service,
    save_to_service,
)
from baton.auth.token_requests import fresh_stored_credential
from baton.errors import LlmCallsLimitExceededError
from baton.events import Event, RouteValue
from baton.memory import BaseMemoryService, MemoryMethods, MemoryScope
from baton.node_actions import NodeActions
from baton.plugins.manager import NO_PLUGINS, PluginManager
from baton.readonly_context import (
    ReadonlyContext,
    refuse_confirmation,
    refuse_credential_request,
)
from baton.run_config import RunConfig, own_copy
from baton.run_config import run_config_in_force as _in_force
from baton.sessions.state import State
from baton.sessions.store import Interrupt, Session, SessionKey
from baton.types import Content, InvocationId
from baton.ui_widget import UiWidget, add_ui_widget

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from opentelemetry.trace import Tracer

    from baton.auth.credential_service import BaseCredentialService

    # Only a type here: baton.tools builds on this module.
    from baton.tools.confirmation import ToolConfirmation
    from baton.workflow.nodes import Node

__all__ = [
    "ChildRuns",
    "CommitFn",
    "Context",
    "InvocationContext",
    "NamedOutcome",
    "NamedRun",
    "State",
    "StepParts",
    "agent_key",
    "call_scope",
    "current_node_run",
    "current_workflow",
]

current_workflow: Final[ContextVar[str | None]] = ContextVar("baton_current_workflow", default=None)
"""The name of the workflow whose children run in this task (None outside any workflow):
the author of their events, which a node's `ctx.event_author` reads."""

current_node_run: Final[ContextVar[Context | None]] = ContextVar(
    "baton_current_node_run", default=None
)
"""The context of the node run whose children run in this task (a workflow's, or a node's
calling `ctx.run_node`; None for the invocation's root run): their `ctx.parent_ctx`."""


def call_scope(branch: str | None, base: str | None) -> str:
    """The delegated call an agent on `branch` runs for, in a node run on branch `base`:
    `branch` up to its last `<agent>@<call id>` part below `base` ("" outside any call).
    Two calls of one agent in a model turn run at once, each on a branch of its own, so
    their agents' checkpoints are kept apart by it."""
    branch = branch or ""
    prefix = f"{base}." if base else ""
    if not branch.startswith(prefix) or branch == base:
        return ""
    parts = branch[len(prefix) :].split(".")
    calls = [i for i, part in enumerate(parts) if "@" in part]
    return prefix + ".".join(parts[: calls[-1] + 1]) if calls else ""


def agent_key(name: str, branch: str | None, base: str | None) -> str:
    """The key of agent `name`'s checkpoint and ended mark in a node run on branch
    `base` (`agent_states`, `ended_agents`) when it runs on `branch`: its name, prefixed
    with its call's scope inside a delegated call (see `call_scope`)."""
    scope = call_scope(branch, base)
    return f"{scope}/{name}" if scope else name


@runtime_checkable
class AgentTree(Protocol):
    """What `reset_sub_agent_states` reads of the running agent (a BaseAgent)."""

    name: str

    @property
    def sub_agents(self) -> Sequence[AgentTree]: ...

    def find_agent(self, name: str) -> AgentTree | None: ...

    def walk(self) -> Iterator[AgentTree]: ...


@dataclass(slots=True)  # not frozen: a frozen init costs a microsecond per step
class StepParts:
    """What a step adds besides the checkpoint: events, state, interrupt index changes."""

    events: tuple[Event, ...] = ()
    # Plain `list`/`dict` factories: calling an alias like `list[str]` costs 10x, every step.
    state_delta: dict[str, JsonValue] = field(default_factory=dict)
    opened: tuple[Interrupt, ...] = ()
    answered: tuple[tuple[str, JsonValue], ...] = ()
    # The answered ids whose answer holds a user's secret (see `StepCommit`).
    private_answers: frozenset[str] = frozenset()
    # The step may land together with the invocation's next one, as long as no node's
    # own code runs in between (see `InvocationContext.land_held`).
    joinable: bool = False


CommitFn: TypeAlias = Callable[[StepParts, Callable[[], None]], Awaitable[None]]
"""Lands a step: runs the checkpoint mutation, then commits it with the parts atomically."""


class InvocationContext:
    """What every node run of one invocation shares.

    The engine builds one per invocation. A caller may build one too, as the
    reference's tests do, to drive an agent directly with `agent.run_async(ctx)`:
    `InvocationContext(invocation_id=..., agent=agent, session=session,
    session_service=service, resumability_config=ResumabilityConfig(is_resumable=True))`.
    Such a run keeps its events and checkpoints in memory (nothing is stored, as in
    the reference): `ctx.agent_states` and `ctx.end_of_agents` show where it stands, and
    a second `agent.run_async(ctx)` resumes from them.

    Args:
        invocation_id: the invocation's id.
        session: the session it runs in.
        app_name, user_id: default to the session's.
        user_content: the message that started it.
        is_resumable: the app is resumable (default: `resumability_config.is_resumable`).
        load_history: loads the session's committed events (default: `session.events`).
        load_invocation_events: loads this invocation's committed events (default: those
            of `load_history`); what an agent resuming its run reads.
        load_recent_events: loads the session's newest `limit` committed events, oldest
            first (default: the last of `load_history`).
        commit: lands a step (default: none; a caller-built context stores nothing).
        artifact_service: where `save_artifact` / `load_artifact` keep files.
        memory_service: the user's memory (`search_memory`, `add_session_to_memory`).
        credential_service: where `save_credential` / `load_credential` keep users'
            credentials (`Runner(credential_service=...)`).
        plugins: the Runner's plugins.
        run_config: what the call asked for (a `RunConfig`; default `RunConfig()`).
        run_config_in_force: `run_config_in_force(run_config)`, when the caller already
            has it (baton's Runner, which checks it first): `ADK_MAX_LLM_CALLS` is then
            not read a second time for the call (~9k instructions).
        agent, session_service: kept for code written for the reference.
        resumability_config: a `ResumabilityConfig`.
        agent_states, end_of_agents: agents' checkpoints and ended marks to resume from.
        branch: the conversation branch.

    Raises:
        TypeError: `run_config` is not a baton `RunConfig`.
        RunConfigError: it asks for `StreamingMode.BIDI`.
    """

    def __init__(
        self,
        *,
        invocation_id: str,
        session: Session,
        app_name: str = "",
        user_id: str = "",
        user_content: Content | None = None,
        is_resumable: bool | None = None,
        load_history: Callable[[], Awaitable[list[Event]]] | None = None,
        load_invocation_events: Callable[[], Awaitable[list[Event]]] | None = None,
        load_recent_events: Callable[[int], Awaitable[list[Event]]] | None = None,
        commit: CommitFn | None = None,
        agent_name: str = "",
        artifact_service: BaseArtifactService | None = None,
        memory_service: BaseMemoryService | None = None,
        credential_service: BaseCredentialService | None = None,
        plugins: PluginManager = NO_PLUGINS,
        tracer: Tracer | None = None,
        agent: object = None,
        session_service: object = None,
        resumability_config: object = None,
        run_config: RunConfig | None = None,
        run_config_in_force: RunConfig | None = None,
        agent_states: dict[str, JsonValue] | None = None,
        end_of_agents: dict[str, bool] | None = None,
        branch: str | None = None,
    ) -> None:
        self.invocation_id = InvocationId(invocation_id)
        self.session = session
        self.app_name = app_name or session.app_name
        self.user_id = user_id or session.user_id
        self.user_content = user_content
        if is_resumable is None:
            is_resumable = bool(getattr(resumability_config, "is_resumable", False))
        self.is_resumable = is_resumable
        self.load_history = load_history or self._session_events
        self.load_invocation_events = load_invocation_events or self._invocation_events
        self.load_recent_events = load_recent_events or self._recent_events
        self.commit: CommitFn = commit or _store_nothing
        self.agent = agent
        self.agent_name = agent_name or str(getattr(agent, "name", ""))
        self.artifact_service = artifact_service
        self.memory_service = memory_service
        self.credential_service = credential_service
        self.plugins = plugins
        self.session_service = session_service
        self.resumability_config = resumability_config
        # What the run goes by (see `current_run_config`), and the run's own config: the
        # caller's, or a copy of the default that `run_config` makes when first read.
        self._current_run_config = (
            _in_force(run_config) if run_config_in_force is None else run_config_in_force
        )
        self._run_config = None if run_config is None else self._current_run_config
        # Set by an agent's own code, a tool or a callback to end the running agent's run
        # where the reference ends it (see `BaseAgent.run_async`); its parent goes on.
        self.end_invocation = False
        metadata = self._current_run_config.custom_metadata
        self.custom_metadata: dict[str, JsonValue] = dict(metadata or {})
        # Model calls made so far by this call (see `count_llm_call`).
        self.llm_calls = 0
        # Shows the caller a partial event (a streamed model chunk) at once, without
        # storing it; set by the engine. A caller-built context shows nothing.
        self.stream_partial: Callable[[Event], Awaitable[None]] = _show_nothing
        # The caller's `run_async(abort_signal=...)`, set by the Runner (see `is_aborted`).
        self.abort_signal: asyncio.Event | None = None
        # Set while an OpenTelemetry provider records: node runs then get spans (see tracing).
        self.tracer = tracer
        self.branch = branch
        # Set while a `joinable` step waits to land with the next one: a node run calls it
        # before its own code runs, so that code never runs ahead of a finished step.
        self.land_held: Callable[[], Awaitable[None]] | None = None
        # How many node runs have their own code under way (workflows' runs don't count:
        # they only schedule children). A step is held only while none has.
        self.running_code = 0
        # Set by a workflow inside a child's commit: more of its runs are queued, so the
        # child's step would only wait for the next one's code (see `land_held`).
        self.work_queued = False
        # Ids of events whose checkpoint is bookkeeping the reference's agents do not
        # write (an LlmAgent's run start and started calls, a custom agent's implicit
        # end): stored with the event, since baton's agents resume from it, and left out
        # of what the caller is shown.
        self.private_checkpoints: set[str] = set()
        # Ids of private checkpoints that carry nothing else, kept in the run's checkpoint
        # only, not stored as events of their own: an LlmAgent's started long-running
        # calls whose tools returned nothing (the reference stores no event then).
        self.row_only_checkpoints: set[str] = set()
        # Artifact texts a new run's refusal check read for its first model request, set
        # by the Runner (see `take_first_artifacts`).
        self.first_artifacts: dict[str, str | None] = {}
        self._agent_states: dict[str, JsonValue] = agent_states if agent_states is not None else {}
        self._end_of_agents: dict[str, bool] = end_of_agents if end_of_agents is not None else {}

    @property
    def run_config(self) -> RunConfig:
        """What the call asked for: its `RunConfig`, or the run's own `RunConfig()` (a
        change to it is this run's only)."""
        if self._run_config is None:
            self._run_config = self._current_run_config = own_copy(self._current_run_config)
        return self._run_config

    @run_config.setter
    def run_config(self, value: RunConfig) -> None:
        self._run_config = self._current_run_config = value

    @property
    def current_run_config(self) -> RunConfig:
        """`run_config` for baton's own reads: the run's config once `run_config` gave it
        out, else the default shared by every run, never to be changed nor given out.

        Speed: a run whose code never reads `run_config` copies no default (20k
        instructions per call)."""
        return self._current_run_config

    async def _session_events(self) -> list[Event]:
        return list(self.session.events)

    async def _invocation_events(self) -> list[Event]:
        return [e for e in await self.load_history() if e.invocation_id == self.invocation_id]

    async def _recent_events(self, limit: int) -> list[Event]:
        return (await self.load_history())[-limit:]

    def take_first_artifacts(self) -> dict[str, str | None]:
        """The artifact texts, by name, read for the instructions of the invocation's first
        model request before it began (see `check_first_instructions`), once: the request
        that takes them reads them no more, a later one reads what is saved by then."""
        taken, self.first_artifacts = self.first_artifacts, {}
        return taken

    def count_llm_call(self, agent: str) -> None:
        """Count one model call of this call of `run_async`, before it is made.

        Raises:
            LlmCallsLimitExceededError: the call would pass `run_config.max_llm_calls`.
        """
        self.llm_calls += 1
        limit = self.current_run_config.max_llm_calls
        if 0 < limit < self.llm_calls:
            raise LlmCallsLimitExceededError(
                f"agent '{agent}' would make model call {self.llm_calls} of invocation "
                f"'{self.invocation_id}', over RunConfig(max_llm_calls={limit}); raise "
                "max_llm_calls (0 or less: no limit), then resume the invocation by its id."
            )

    def increment_llm_call_count(self) -> None:
        """The reference's name for counting one model call (see `count_llm_call`): code
        that calls a model itself counts it against the same `run_config.max_llm_calls`
        as the agents' calls.

        Raises:
            LlmCallsLimitExceededError: the call would pass `run_config.max_llm_calls`.
        """
        self.count_llm_call(self.agent_name or "unknown")

    @property
    def plugin_manager(self) -> PluginManager:
        """The reference's name for the Runner's plugins (`plugins`)."""
        return self.plugins

    @property
    def node_path(self) -> str | None:
        """The path of the node run this context belongs to (an agent's context has one;
        the invocation's own has none)."""
        return None

    @property
    def node_run(self) -> Context | None:
        """The node run this context belongs to (an agent's context has one; the
        invocation's own has none)."""
        return None

    @property
    def is_aborted(self) -> bool:
        """Whether the caller set the run's abort signal (the run stops at its next step)."""
        return self.abort_signal is not None and self.abort_signal.is_set()

    @property
    def session_key(self) -> SessionKey:
        return self.session.key

    @property
    def state(self) -> Mapping[str, Any]:
        """The session's state (an agent's ctx overlays its run's pending writes)."""
        return self.session.state

    @property
    def resume_inputs(self) -> dict[str, Any]:
        """Answers to the current node run's interrupts (an agent's ctx has them)."""
        return {}

    @property
    def session_id(self) -> str:
        return self.session.id

    def memory_scope(self) -> MemoryScope:
        """The user's memory; `add_session_to_memory` adds the session as committed."""

        async def committed() -> Session:
            return self.session.model_copy(update={"events": await self.load_history()})

        return MemoryScope(
            self.memory_service,
            app_name=self.app_name,
            user_id=self.user_id,
            session_id=self.session.id,
            load_session=committed,
        )

    @property
    def agent_states(self) -> dict[str, JsonValue]:
        """Each agent's last checkpoint (its `agent_state`), by agent name."""
        return self._agent_states

    @property
    def end_of_agents(self) -> dict[str, bool]:
        """The agents whose run ended (`end_of_agent`), by agent name."""
        return self._end_of_agents

    def set_agent_state(
        self,
        agent_name: str,
        *,
        agent_state: BaseModel | None = None,
        end_of_agent: bool = False,
    ) -> None:
        """Set agent `agent_name`'s checkpoint (`agent_state`, a `BaseAgentState`), or
        mark it ended (`end_of_agent`, its checkpoint dropped), or with neither forget
        both so it runs afresh; as the reference's. In a run, committed with the next
        event the run yields."""
        key = agent_key(agent_name, self.branch, self.branch)
        if end_of_agent:
            self._agent_states.pop(key, None)
            self._end_of_agents[key] = True
        elif agent_state is not None:
            self._agent_states[key] = agent_state.model_dump(mode="json")
            self._end_of_agents[key] = False
        else:
            self._agent_states.pop(key, None)
            self._end_of_agents.pop(key, None)

    def reset_sub_agent_states(self, agent_name: str) -> None:
        """Forget the checkpoints and ended marks of every agent below `agent_name` in
        the running agent's tree (not in it: nothing), so they run afresh."""
        tree = self.agent if isinstance(self.agent, AgentTree) else None
        agent = tree.find_agent(agent_name) if tree is not None else None
        for below in [a for sub in agent.sub_agents for a in sub.walk()] if agent else []:
            self.set_agent_state(below.name)

    def populate_invocation_agent_states(self) -> None:
        """Read this invocation's checkpoints back from the session's events, as the
        reference does: the last `agent_state` of each agent, and which agents ended."""
        for event in self.session.events:
            if event.invocation_id != self.invocation_id:
                continue
            key = agent_key(event.author, event.branch, self.branch)
            if event.actions.end_of_agent:
                self._end_of_agents[key] = True
                self._agent_states.pop(key, None)
            elif event.actions.agent_state is not None:
                self._agent_states[key] = event.actions.agent_state
                self._end_of_agents.pop(key, None)


async def _show_nothing(event: Event) -> None:
    """A caller-built context's `stream_partial`: nobody reads its events as they come."""


async def _store_nothing(parts: StepParts, mutate: Callable[[], None]) -> None:
    """A caller-built context's commit: apply the checkpoint change, store nothing."""
    mutate()


@dataclass(frozen=True, slots=True)
class NamedRun:
    """What a `NodeRunner` asks of one child run (see `ChildRuns.run_named`)."""

    node_input: Any = None
    resume_inputs: dict[str, Any] = field(default_factory=dict)
    prior_output: Any = None
    prior_interrupt_ids: frozenset[str] = frozenset()
    use_as_output: bool = False
    use_sub_branch: bool = False
    override_branch: str | None = None
    caller: Context | None = None  # the child's parent_ctx


@dataclass(frozen=True, slots=True)
class NamedOutcome:
    """Where a `NodeRunner`'s child run stands once brought forward."""

    path: str
    output: JsonValue
    routes: list[RouteValue]
    interrupts: list[str]  # empty once it completed
    answers: dict[str, JsonValue]
    branch: str | None


class ChildRuns(Protocol):
    """Runs a node run's dynamic children (the engine's `baton.workflow.dynamic`)."""

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
        """Run `node` as a checkpointed child run and return its output; `caller` is the
        calling run's context (the child's `parent_ctx`)."""
        ...

    async def run_named(self, node: Any, run_id: str, request: NamedRun) -> NamedOutcome:
        """Run `node` as the child `<name>@<run_id>`, found again by that key (see
        `baton.workflow.node_runner.NodeRunner`)."""
        ...

    @property
    def delegates_output(self) -> bool:
        """Whether a child's output stands for this run's (`use_as_output`)."""
        ...

    @property
    def waits_for_output(self) -> bool:
        """Whether a call stopped this run at a child still waiting (`raise_on_wait`)."""
        ...


class Context(ReadonlyContext, ArtifactMethods, MemoryMethods):
    """One node run's view of the invocation: state, answers, ids, and what it produced.

    A `ReadonlyContext` (ids, session, user's message, `is_aborted`), as in the
    reference, whose state it may write.

    Its artifact methods (`save_artifact`, `load_artifact`, `list_artifacts`,
    `get_artifact_version`) reach the Runner's artifact service in this session, its
    memory methods (`search_memory`, `add_session_to_memory`, ...) its memory service.
    """

    # Set only on the context a `NodeRunner` returns for a child run that failed: the
    # child's exception and the path of the run it failed in (class defaults, so the
    # engine's contexts cost nothing more to make).
    error: BaseException | None = None
    error_node_path: str = ""
    # The node this run runs (the reference's `ctx.node`); set by whoever makes the
    # context for a run (a class default: None for a context made outside a run).
    node: Node | None = None
    # The reference's scope tag of a run's events (internal there, and never set in
    # baton: `run_node` takes no `override_isolation_scope`).
    isolation_scope: str | None = None
    # A node run answers no function call: the reference's tool fields are empty here.
    function_call_id: str | None = None
    tool_confirmation: ToolConfirmation | None = None
    # The widgets this run rendered, and how many of them went on its events already
    # (class defaults: most runs render none, and a context is made for every run).
    _ui_widgets: list[UiWidget] | None = None
    _shown_widgets: int = 0
    # The context of the run this one runs inside (`parent_ctx`), once read or set (see
    # `pin_parent_ctx`); `ctx.actions`, made on first use; the author pinned on a context
    # that children read as their parent's (see `event_author`). Class defaults: a context
    # is made for every node run, and most never read them.
    _parent_ctx: Context | None = None
    _parent_known: bool = False
    _actions: NodeActions | None = None
    _author: str | None = None

    def __init__(
        self,
        invocation: InvocationContext,
        *,
        node_path: str,
        run_id: str,
        node_name: str,
        resume_inputs: dict[str, JsonValue] | None = None,
        open_interrupts: dict[str, Interrupt] | None = None,
        output: JsonValue = None,
        attempt_count: int = 1,
        agent_states: dict[str, JsonValue] | None = None,
        ended_agents: set[str] | None = None,
        children: ChildRuns | None = None,
        state_schema: type[BaseModel] | None = None,
        branch: str | None = None,
    ) -> None:
        # All a ReadonlyContext holds, set without its __init__: one call less per node run.
        self._invocation_context = invocation
        self._children = children
        # The conversation branch this run's events carry (a dynamic child's, see run_node).
        self.branch = branch
        self.node_path = node_path
        self.run_id = run_id
        self.node_name = node_name
        # Any, not JsonValue: answers are JSON, but typed code should read them without casts.
        # Copies only of what is there (`dict(x) if x else {}`, not `dict(x or {})`, which
        # makes two dicts for an empty one): a context is built for every node run.
        self.resume_inputs: dict[str, Any] = dict(resume_inputs) if resume_inputs else {}
        self.open_interrupts: dict[str, Interrupt] = (
            dict(open_interrupts) if open_interrupts else {}
        )
        self.output: Any = output
        self.route: RouteValue | list[RouteValue] | None = None
        self.attempt_count = attempt_count
        # The writer's name only goes into a schema's errors: made only where there is one.
        self._state = (
            State(invocation.session.state)
            if state_schema is None
            else State(invocation.session.state, schema=state_schema, writer=f"node '{node_name}'")
        )
        self.agent_states: dict[str, JsonValue] = dict(agent_states) if agent_states else {}
        self.ended_agents: set[str] = set(ended_agents) if ended_agents else set()
        self._artifact_scope: ArtifactScope | None = None

    @property
    def state(self) -> State:
        """The session state: committed values overlaid with this run's writes, which
        land with its step."""
        return self._state

    @property
    def artifact_scope(self) -> ArtifactScope:
        """This run's artifacts; made on first use, which most node runs never make."""
        if self._artifact_scope is None:
            ic = self._invocation_context
            self._artifact_scope = ArtifactScope(
                ic.artifact_service,
                app_name=ic.app_name,
                user_id=ic.user_id,
                session_id=ic.session.id,
                saver=f"{ic.invocation_id}/{self.node_path}@{self.run_id}",
            )
        return self._artifact_scope

    @property
    def memory_scope(self) -> MemoryScope:
        """The user's memory, as the Runner's memory service keeps it."""
        return self._invocation_context.memory_scope()

    def pending_artifact_delta(self) -> dict[str, int]:
        """Versions saved since the last event, as they stand (`ctx.actions.artifact_delta`)."""
        scope = self._artifact_scope
        return scope.delta if scope is not None else {}

    def take_artifact_delta(self) -> dict[str, int]:
        """Versions saved since the last event (they go on the next one)."""
        scope = self._artifact_scope
        return scope.take_delta() if scope is not None and scope.delta else {}

    def render_ui_widget(self, ui_widget: UiWidget) -> None:
        """Show `ui_widget` beside this run's next event (its output, a message it
        yields, or an event of its own when it yields none after this).

        Raises:
            TypeError: `ui_widget` is not a UiWidget.
            ValueError: this run already rendered a widget with its id.
        """
        if self._ui_widgets is None:
            self._ui_widgets = []
        add_ui_widget(self._ui_widgets, ui_widget, where=f"node run '{self.node_path}'")

    @property
    def pending_ui_widgets(self) -> tuple[UiWidget, ...]:
        """Widgets rendered since the last event (`ctx.actions.render_ui_widgets`)."""
        widgets = self._ui_widgets
        return tuple(widgets[self._shown_widgets :]) if widgets else ()

    def take_ui_widgets(self) -> list[UiWidget]:
        """Widgets rendered since the last event (they go on the next one)."""
        widgets = self._ui_widgets
        if widgets is None or len(widgets) == self._shown_widgets:
            return []
        new = widgets[self._shown_widgets :]
        self._shown_widgets = len(widgets)
        return new

    @property
    def custom_metadata(self) -> dict[str, JsonValue]:
        """The call's `RunConfig.custom_metadata` (the reference's `ctx.custom_metadata`):
        one dict per invocation call, shared by its node runs; writes stay in memory."""
        return self._invocation_context.custom_metadata

    @property
    def app_name(self) -> str:
        return self._invocation_context.app_name

    @property
    def event_author(self) -> str:
        """The author of this run's events when it is not the node's own name: the
        enclosing workflow's ("" at the top, where the node signs its events itself); a
        workflow's own context's is its name, as in the reference."""
        author = self._author
        return author if author is not None else current_workflow.get() or ""

    def pin_event_author(self, author: str | None = None) -> None:
        """Fix `event_author` to `author` (default: what it reads here), before children
        that read this context as their `parent_ctx` run in tasks of their own."""
        self._author = self.event_author if author is None else author

    @property
    def actions(self) -> NodeActions:
        """What this run's next event carries, as the reference's `ctx.actions`:
        `state_delta` (its state writes not yet on an event; writes go to `ctx.state`),
        `artifact_delta`, `route` (`ctx.route`). Setting an action only an agent or a
        tool takes (`escalate`, `transfer_to_agent`, `skip_summarization`, ...) raises
        `NodeActionError`, saying what a node does instead (see `baton.node_actions`)."""
        actions = self._actions
        if actions is None:
            actions = self._actions = NodeActions(self)
        return actions

    @property
    def parent_ctx(self) -> Context | None:
        """The context of the node run this one runs inside: the enclosing workflow's, or
        the node's that called `ctx.run_node` (or ran it with a `NodeRunner`). The root
        run's is the invocation's root context (no node, node path ""), whose own is None;
        a context made outside a run has none. A resumed run sees the same chain."""
        if not self._parent_known:
            self.pin_parent_ctx()
        return self._parent_ctx

    def pin_parent_ctx(self, parent: Context | None = None) -> None:
        """Fix `parent_ctx`: to `parent` when given, else (once) to the run this context's
        run runs inside, as its own task shows it (`current_node_run`).

        Speed: read on first use, not as the context is made (a context variable's read
        costs ~1k instructions a node run). Only in the run's own task does the variable
        name its parent, so a run whose context its children read pins it before they
        start (a workflow's, a `ctx.run_node` caller's).
        """
        if parent is None:
            if self._parent_known:
                return
            if self._children is not None:  # made by the engine for a run
                parent = current_node_run.get()
                if parent is None or parent._invocation_context is not self._invocation_context:
                    # The invocation's root run (whatever runs its Runner's caller).
                    parent = Context(
                        self._invocation_context, node_path="", run_id="", node_name=""
                    )
                    parent._parent_known = True
                    parent._author = ""
        self._parent_ctx = parent
        self._parent_known = True

    def get_invocation_context(self) -> InvocationContext:
        """The invocation this run belongs to (shared by all its node runs)."""
        return self._invocation_context

    def get_auth_response(self, auth_config: AuthConfig) -> AuthCredential | None:
        """The credential the user gave for `auth_config` (a node's `auth_config` puts
        the answer to its request in the state, see `baton.workflow.authorizing`), as
        the state holds it under `temp:<credential_key>` or `<credential_key>`; None
        when it holds none. An OAuth2 token that has expired is refreshed with its
        refresh token and kept back in the state (None when it cannot be).

        Raises:
            TypeError: `auth_config` is not an AuthConfig.
            ValueError: an expired token's scheme names no token endpoint.
        """
        config = checked_config(auth_config, "get_auth_response")
        return fresh_stored_credential(config, self.state)

    async def save_credential(self, auth_config: AuthConfig) -> None:
        """Keep `auth_config.exchanged_auth_credential` in the Runner's credential service,
        under `auth_config.credential_key`, for this user (as a tool's context does).

        Raises:
            TypeError: `auth_config` is not an AuthConfig.
            NoCredentialServiceError: the Runner has no credential service.
        """
        service = self._invocation_context.credential_service
        await save_to_service(service, auth_config, self)

    async def load_credential(self, auth_config: AuthConfig) -> AuthCredential | None:
        """The credential the Runner's credential service keeps under
        `auth_config.credential_key` for this user, or None; an OAuth2 token that has
        expired is refreshed first (see `load_fresh_credential`).

        Raises:
            TypeError: `auth_config` is not an AuthConfig.
            NoCredentialServiceError: the Runner has no credential service.
        """
        service = self._invocation_context.credential_service
        return await load_from_service(service, auth_config, self)

    def request_credential(self, auth_config: AuthConfig) -> NoReturn:
        """Only a tool call can ask for a credential; a node run answers no call (give the
        node an `auth_config` to ask before it runs).

        Raises:
            ValueError: always.
        """
        refuse_credential_request(type(self).__name__)

    def request_confirmation(
        self, *, hint: str | None = None, payload: JsonValue = None
    ) -> NoReturn:
        """Only a tool call can ask for confirmation; a node run answers no call.

        Raises:
            ValueError: always.
        """
        refuse_confirmation(type(self).__name__)

    @property
    def is_resumable(self) -> bool:
        return self._invocation_context.is_resumable

    @property
    def interrupt_ids(self) -> set[str]:
        """Ids of this run's interrupts that still wait for an answer."""
        return set(self.open_interrupts)

    @property
    def child_runs(self) -> ChildRuns | None:
        """The engine's keeper of this run's child runs; None for a context the engine did
        not make for a node run."""
        return self._children

    @property
    def delegates_output(self) -> bool:
        """Whether a child's output stands for this run's (`run_node(..., use_as_output=True)`):
        this run's own output then goes to the nodes after it, without an event of its own."""
        return self._children is not None and self._children.delegates_output

    @property
    def waits_for_output(self) -> bool:
        """Whether `run_node(..., raise_on_wait=True)` stopped this run at a child that
        ended without output while waiting for one: the run then ends without output and
        triggers nothing after it."""
        return self._children is not None and self._children.waits_for_output

    async def run_node(
        self,
        node: object,
        node_input: Any = None,
        *,
        use_as_output: bool = False,
        run_id: str | None = None,
        use_sub_branch: bool = False,
        override_branch: str | None = None,
        raise_on_wait: bool = False,
    ) -> Any:
        """Run a node (function, agent, workflow) as a child of this run; return its output.

        The call is checkpointed: when this run executes again (after an answer, a crash
        or a retry) a finished call returns its recorded output without running, and a
        waiting child resumes. Calls are matched by the order this code issues them, so
        several may run at once with `asyncio.gather`.

        Args:
            node: a node, an agent, a workflow or a function.
            node_input: the child's input (JSON, or a pydantic model).
            use_as_output: the child's output event stands for this run's output too
                (its `node_info.output_for` names this run), and this run emits no output
                event of its own; what this run returns still goes to the nodes after it.
                One call per run may pass it.
            run_id: a name for this call (letters required) instead of its number.
            use_sub_branch: the child's events go on a branch of their own
                (`<this run's branch>.<child>@<n>`), so agents outside it do not see them
                and an agent child sees only its branch and those above it.
            override_branch: the branch the child's events carry, instead of this run's.
            raise_on_wait: when the child ends without output while it waits for one (a
                workflow, or a node with wait_for_output=True, that produced none), stop
                this run there instead of returning None: it ends without output and
                triggers nothing after it (a later trigger runs it, and the child, again).

        Returns:
            The child's output.

        Raises:
            WorkflowChangedError: the code issued a different call than the one recorded
                at this position when the run executed before.
            RuntimeError: this context was not made by the engine for a node run.
            ValueError: a second call of this run passed use_as_output=True, or both
                use_sub_branch and override_branch were given.
        """
        if self._children is None:
            raise RuntimeError(
                f"ctx.run_node is available inside a node run; the context of "
                f"'{self.node_name}' was not made by the workflow engine."
            )
        if use_sub_branch and override_branch is not None:
            raise ValueError(
                f"ctx.run_node was given use_sub_branch=True and override_branch="
                f"{override_branch!r} in node run '{self.node_path}'; the child's branch is one "
                "or the other: pass only one of them."
            )
        return await self._children.run_node(
            node,
            node_input,
            run_id=run_id,
            use_as_output=use_as_output,
            use_sub_branch=use_sub_branch,
            override_branch=override_branch,
            raise_on_wait=raise_on_wait,
            caller=self,
        )

    @property
    def idempotency_key(self) -> str:
        """Stable across retries and crash recovery of this node run: dedupe side effects on it."""
        return f"{self.invocation_id}/{self.node_path}"
