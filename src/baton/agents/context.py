"""AgentContext: what an agent's `_run_async_impl(ctx)` receives.

It is an `InvocationContext` (so code annotated with it type-checks and reads
`ctx.session.state`, `ctx.invocation_id`), bound to the node run that executes
the agent tree: its state, answers, agent checkpoints, and a view of the
session's events that grows as the agents' events commit.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from pydantic import BaseModel, JsonValue

from baton.artifacts import ArtifactScope
from baton.context import Context, InvocationContext, State, agent_key, call_scope
from baton.events import Event
from baton.memory import MemoryScope
from baton.run_config import RunConfig
from baton.sessions.store import Interrupt, Session

__all__ = ["AgentContext", "EventLog", "as_agent_context"]


class _View:
    """Events loaded once by `load`, then extended with the events committed since."""

    def __init__(self, load: Callable[[], Awaitable[list[Event]]]) -> None:
        self._load = load
        self.events: list[Event] | None = None
        self.ids: set[str] = set()
        self._lock = asyncio.Lock()

    async def read(self, committed: list[Event]) -> list[Event]:
        """The loaded events, with those of `committed` (this run's) the load missed."""
        async with self._lock:
            if self.events is None:
                loaded = await self._load()
                ids = {e.id for e in loaded}
                self.events = [*loaded, *(e for e in committed if e.id not in ids)]
                self.ids = {e.id for e in self.events}
        return self.events

    def add(self, event: Event) -> None:
        if self.events is not None and event.id not in self.ids:  # a load may have read it
            self.ids.add(event.id)
            self.events.append(event)


class EventLog:
    """The session's events as a node run reads them, each view loaded on first use and
    extended as the run's events commit.

    A run's own bookkeeping reads its invocation's events (`invocation_events`), by
    index, however long the session; only what needs the whole conversation (a
    model's contents, memory) reads the session's events (`events`).
    """

    def __init__(self, invocation: InvocationContext, *, stored: bool = True) -> None:
        """`stored`: the run's events are committed to a store (not only to this log, as
        when an agent is driven directly)."""
        self._invocation = invocation
        self._stored = stored
        self._session = _View(invocation.load_history)
        self._own = _View(invocation.load_invocation_events)
        self._committed: list[Event] = []  # by this node run, in order

    async def events(self) -> list[Event]:
        """All committed events of the session, oldest first (loaded on first use)."""
        return await self._session.read(self._committed)

    async def invocation_events(self) -> list[Event]:
        """The committed events of this invocation, oldest first (loaded on first use)."""
        return await self._own.read(self._committed)

    async def last_event(self) -> Event | None:
        """The session's last committed event (None in an empty session)."""
        recent = await self.recent_events(1)
        return recent[-1] if recent else None

    async def recent_events(self, limit: int) -> list[Event]:
        """The session's newest `limit` committed events, oldest first (without reading
        the rest unless the session's events are loaded already)."""
        if self._session.events is None and self._stored:
            return await self._invocation.load_recent_events(limit)
        return (await self.events())[-limit:]

    async def before_invocation(self, limit: int) -> tuple[list[Event], bool]:
        """Some of the newest events before this invocation's first (before now, when it
        has none), oldest first, reading about `limit` besides the invocation's; and
        whether they are all the session has before it.

        Other runs' events interleaved with this invocation's can leave its first one
        out of what was read: then nothing comes back (read again with a larger limit).
        """
        own = await self.invocation_events()
        recent = await self.recent_events(len(own) + limit)
        everything = len(recent) < len(own) + limit
        mine = self._invocation.invocation_id
        if not everything and sum(e.invocation_id == mine for e in recent) < len(own):
            return [], False
        start = next((i for i, e in enumerate(recent) if e.invocation_id == mine), len(recent))
        return recent[:start], everything

    def first_committed(self) -> str | None:
        """The id of the first event this node run committed here (None before one)."""
        return self._committed[0].id if self._committed else None

    def add(self, event: Event) -> None:
        """Record an event that has just been committed."""
        self._committed.append(event)
        self._session.add(event)
        self._own.add(event)


class AgentContext(InvocationContext):
    """The invocation as an agent sees it, bound to the node run executing the agent.

    Args:
        run: the node run's Context.
        node_input: what the node received (a predecessor's output, or the user's text).
        log: the session's events, shared by every agent of the run.
        branch: the conversation branch (set by ParallelAgent for each sub-agent).
    """

    def __init__(
        self,
        run: Context,
        *,
        node_input: JsonValue = None,
        log: EventLog | None = None,
        branch: str | None = None,
    ) -> None:
        ic = run.invocation_context
        super().__init__(
            invocation_id=ic.invocation_id,
            app_name=ic.app_name,
            user_id=ic.user_id,
            session=ic.session,
            user_content=ic.user_content,
            is_resumable=ic.is_resumable,
            load_history=ic.load_history,
            commit=ic.commit,
            agent_name=ic.agent_name,
            artifact_service=ic.artifact_service,
            memory_service=ic.memory_service,
            credential_service=ic.credential_service,
            plugins=ic.plugins,
            session_service=ic.session_service,
            # Read through `invocation_context` (see `run_config`): checked already.
            run_config=ic.current_run_config,
        )
        self.stream_partial = ic.stream_partial
        self.abort_signal = ic.abort_signal
        self.custom_metadata = ic.custom_metadata  # one dict per call, as in the reference
        self.run = run
        self.node_input = node_input
        self.log = log or EventLog(ic)
        self.branch = branch
        # The branch the node run's agent tree starts on: agents on a delegated call's
        # branch below it keep checkpoints of their own (see `agent_key`).
        self.base_branch = branch
        # The last reply given in the node run, or a task sub-agent's result after it.
        self.last_response: JsonValue = None
        # Runs to skip, by agent: they ended after the step being re-executed began.
        self.replays: Counter[str] = Counter()
        # The id of the call that handed a task sub-agent its task (see baton.agents.task).
        self.task_call: str | None = None
        # The agent the node runs (the top of the tree running in this node run).
        self.node_agent: str | None = None
        # For an agent called as a tool: the id of its caller's turn that made the call.
        # Its conversation begins after it (see `for_call`).
        self.call_turn: str | None = None
        # The state as an agent called as a tool sees it (None: the run's, see `state`).
        self.call_state: State | None = None

    def with_branch(self, branch: str) -> AgentContext:
        """The same run seen from a conversation branch."""
        child = AgentContext(self.run, node_input=self.node_input, log=self.log, branch=branch)
        child.base_branch = self.base_branch
        child.replays = self.replays
        child.node_agent = self.node_agent
        child.call_turn = self.call_turn
        child.call_state = self.call_state
        return child

    def for_call(
        self, branch: str, request: str | None, turn: str, *, state: State | None = None
    ) -> AgentContext:
        """The run as an agent called as a tool sees it: on a branch of its own, with the
        call's `request` as its input. Its conversation begins after its caller's `turn`
        (the event with the call), as in the reference, which runs it in a session of its
        own holding only the request: its model does not see the caller's conversation.
        `state`: the state it sees (its caller's when None)."""
        child = AgentContext(self.run, node_input=request, log=self.log, branch=branch)
        child.base_branch = self.base_branch
        child.call_turn = turn
        child.call_state = self.call_state if state is None else state
        return child

    def for_task(self, branch: str, call_id: str, request: str) -> AgentContext:
        """The run as a task sub-agent sees it: on a branch of its own, with the call
        that handed it the task, whose arguments (`request`) are its input."""
        child = AgentContext(self.run, node_input=request, log=self.log, branch=branch)
        child.base_branch = self.base_branch
        child.replays = self.replays
        child.task_call = call_id
        child.node_agent = self.node_agent
        child.call_turn = self.call_turn
        child.call_state = self.call_state
        return child

    @property
    def answers_a_call(self) -> bool:
        """Whether the agent runs for an `AgentTool`'s call (in its own state view): what
        it says ends its run as the call's result, a task agent's question too, as in the
        reference, which runs it without a user to answer."""
        return self.call_state is not None

    @property
    def invocation_context(self) -> InvocationContext:
        """The invocation's own context (shared by every node run)."""
        return self.run.invocation_context

    @property
    def run_config(self) -> RunConfig:
        """The invocation's (one per call, shared by every node run)."""
        return self.run.invocation_context.run_config

    @run_config.setter
    def run_config(self, value: RunConfig) -> None:
        self.run.invocation_context.run_config = value

    @property
    def current_run_config(self) -> RunConfig:
        """The invocation's (see `InvocationContext.current_run_config`)."""
        return self.run.invocation_context.current_run_config

    def count_llm_call(self, agent: str) -> None:
        """Counted on the invocation's own context: the limit is the call's, over every
        agent and node run."""
        self.run.invocation_context.count_llm_call(agent)

    @property
    def state(self) -> State:
        """Session state: committed values overlaid with this run's pending writes (as an
        agent called as a tool sees them, see `call_state`)."""
        return self.run.state if self.call_state is None else self.call_state

    @property
    def resume_inputs(self) -> dict[str, Any]:
        """Answers received for this run's interrupts, by interrupt (function call) id."""
        return self.run.resume_inputs

    @property
    def open_interrupts(self) -> dict[str, Interrupt]:
        """This run's interrupts that still wait for an answer."""
        return self.run.open_interrupts

    def agent_key(self, name: str) -> str:
        """The key of agent `name`'s checkpoint and ended mark on this context's branch."""
        return agent_key(name, self.branch, self.base_branch)

    @property
    def call_scope(self) -> str:
        """The delegated call this context's agents run for ("" outside one)."""
        return call_scope(self.branch, self.base_branch)

    @property
    def agent_states(self) -> dict[str, JsonValue]:
        """The last checkpoint of each agent that has not ended, by agent name (in a
        delegated call: a copy holding the call's own)."""
        scope = self.call_scope
        if not scope:
            return self.run.agent_states
        prefix = f"{scope}/"
        return {
            k[len(prefix) :]: v for k, v in self.run.agent_states.items() if k.startswith(prefix)
        }

    @property
    def ended_agents(self) -> set[str]:
        """Names of agents whose current run ended (`end_of_agent`) (in a delegated call:
        a copy holding the call's own)."""
        scope = self.call_scope
        if not scope:
            return self.run.ended_agents
        prefix = f"{scope}/"
        return {k[len(prefix) :] for k in self.run.ended_agents if k.startswith(prefix)}

    @property
    def end_of_agents(self) -> dict[str, bool]:
        """The reference's spelling of `ended_agents`."""
        return dict.fromkeys(self.ended_agents, True)

    @property
    def idempotency_key(self) -> str:
        """Stable across retries and crash recovery of this node run."""
        return self.run.idempotency_key

    @property
    def node_path(self) -> str:
        return self.run.node_path

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def node_run(self) -> Context:
        return self.run

    async def artifacts_for(self, saver: str) -> ArtifactScope:
        """The artifacts a callback of this run reaches. Its saves are keyed by `saver`
        and by how many events the invocation had committed when it ran, which is the
        same when the run executes again after a crash (a committed callback is not
        rerun)."""
        committed = len(await self.log.invocation_events())
        return ArtifactScope(
            self.artifact_service,
            app_name=self.app_name,
            user_id=self.user_id,
            session_id=self.session.id,
            saver=f"{self.idempotency_key}/{saver}@{committed}",
        )

    def memory_scope(self) -> MemoryScope:
        """The user's memory; `add_session_to_memory` adds the session as committed so far
        (this run's events included)."""

        async def committed() -> Session:
            return self.session.model_copy(update={"events": list(await self.log.events())})

        return MemoryScope(
            self.memory_service,
            app_name=self.app_name,
            user_id=self.user_id,
            session_id=self.session.id,
            load_session=committed,
        )

    def reset_agent_states(self, names: Iterable[str]) -> None:
        """Forget the checkpoints and ended marks of these agents (before running them anew).

        The change is committed with the next event the run yields.
        """
        for name in names:
            self.run.agent_states.pop(self.agent_key(name), None)
            self.run.ended_agents.discard(self.agent_key(name))
            self.replays.pop(name, None)

    def set_agent_state(
        self,
        agent_name: str,
        *,
        agent_state: BaseModel | None = None,
        end_of_agent: bool = False,
    ) -> None:
        """As `InvocationContext.set_agent_state`, on this node run's checkpoints."""
        key = self.agent_key(agent_name)
        if end_of_agent:
            self.run.agent_states.pop(key, None)
            self.run.ended_agents.add(key)
        elif agent_state is not None:
            self.run.agent_states[key] = agent_state.model_dump(mode="json")
            self.run.ended_agents.discard(key)
        else:
            self.reset_agent_states([agent_name])

    def should_pause_invocation(self, event: Event) -> bool:
        """True when `event` asks for input that has not been given yet."""
        ids = event.long_running_tool_ids or set()
        return any(i not in self.run.resume_inputs for i in ids)

    async def interrupt_owners(self) -> dict[str, tuple[str, str | None]]:
        """The author of each still-open interrupt and the branch it asked on, by
        interrupt id."""
        open_ids = set(self.run.open_interrupts)
        if not open_ids:
            return {}
        owners: dict[str, tuple[str, str | None]] = {}
        for event in await self.log.invocation_events():  # the run's questions are its own
            for iid in (event.long_running_tool_ids or set()) & open_ids:
                owners[iid] = (event.author, event.branch)
        return owners

    def reaches(self, branch: str | None) -> bool:
        """Whether an agent on `branch` runs in this context's delegated call or in one
        made below it, not in another call (of the same agent, say) beside it."""
        scope = self.call_scope
        if not scope:
            return True
        theirs = call_scope(branch, self.base_branch)
        return theirs == scope or theirs.startswith(f"{scope}.")

    async def asks_below_calls(self, agent: str) -> bool:
        """Whether a question is still open on the branch of one of `agent`'s calls on this
        branch (`<agent called>@<call id>`): an agent it called as a tool waits for an
        answer, whichever tool ran it (a toolset's too)."""
        open_ids = set(self.run.open_interrupts)
        if not open_ids:
            return False
        events = await self.log.invocation_events()
        calls = {
            c.id
            for e in events
            if e.author == agent and e.branch == self.branch
            for c in e.function_calls
            if c.id
        }
        prefix = f"{self.branch}." if self.branch else ""
        return any(
            e.branch.startswith(prefix)
            and e.branch[len(prefix) :].split(".")[0].partition("@")[2] in calls
            for e in events
            if e.branch and (e.long_running_tool_ids or set()) & open_ids
        )


def as_agent_context(ctx: object) -> AgentContext:
    """The AgentContext an agent method was given.

    Raises:
        TypeError: `ctx` is not the context an agent receives.
    """
    if isinstance(ctx, AgentContext):
        return ctx
    raise TypeError(
        f"agents run with the context baton passes to `_run_async_impl(ctx)`; got "
        f"{type(ctx).__name__}. Run the agent through a Runner (or as a workflow node) "
        "and pass that ctx on to sub-agents, or drive it with an InvocationContext you "
        "build (see baton.agents.direct)."
    )
