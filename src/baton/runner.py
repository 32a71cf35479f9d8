"""App, ResumabilityConfig and Runner: start a run, pause it, resume it, recover it.

Every call is checked before anything changes: the `CallPlanner` matches each answer
to an open interrupt through the index and validates it against its schema, the
invocation is leased so only one process executes it, and its workflow fingerprint
is compared with the code at hand. Only then does the first step commit.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
import time
import uuid
from collections.abc import AsyncGenerator, Collection, Iterator, Mapping, Sequence
from contextlib import aclosing, suppress
from datetime import timedelta
from functools import partial
from typing import Any, Final, Self, cast, final

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from baton.aborting import until_aborted
from baton.agents import BaseAgent, LlmAgent
from baton.agents.first_instructions import check_first_instructions
from baton.answering import answers_message
from baton.artifacts import BaseArtifactService
from baton.auth.credential_service import BaseCredentialService
from baton.blocking import LoopThread
from baton.compaction import (
    EventsCompactionConfig,
    check_summarizer,
    compact_session,
    summarizer_for,
)
from baton.database_memory import memory_in
from baton.debug_print import print_event
from baton.errors import (
    RunConfigError,
    StoreUnavailableError,
    WorkflowChangedError,
    WorkflowConfigurationError,
)
from baton.events import Event
from baton.forking import fork_session, read_history
from baton.invocation import InvocationRun, PlanKind, RunPlan, RunSettings
from baton.listings import invocations_page, pending_page, sessions_page
from baton.memory import BaseMemoryService, InMemoryMemoryService
from baton.planning import CallPlanner
from baton.plugins import BasePlugin, PluginManager
from baton.rewinding import Rewind, rewind_session
from baton.run_config import RunConfig, run_config_in_force
from baton.schemas import check_state_delta
from baton.sessions.checkpoints import Checkpoint, list_checkpoints
from baton.sessions.ids import check_id
from baton.sessions.paging import DEFAULT_PAGE, Page
from baton.sessions.services import BaseSessionService, InMemorySessionService
from baton.sessions.store import (
    TIMEOUT_ANSWERER,
    Claimed,
    Clock,
    Interrupt,
    InterruptStatus,
    Invocation,
    InvocationStatus,
    Lease,
    Session,
    SessionKey,
    Store,
)
from baton.tools.base_toolset import close_toolsets
from baton.types import Content, InvocationId, SessionId, UserContent
from baton.workflow.checkpoint import RunRecord, rerun_failed
from baton.workflow.fingerprint import describe_difference, resumes_into
from baton.workflow.fork_state import forked_checkpoint
from baton.workflow.graph import fingerprint_of
from baton.workflow.nodes import FunctionNode, JoinNode, Node, StartNode
from baton.workflow.scheduler import Workflow

__all__ = [
    "INCARNATION",
    "App",
    "EventsCompactionConfig",
    "InMemoryRunner",
    "ResumabilityConfig",
    "Runner",
    "check_worker_id",
    "default_worker_id",
    "own_prefix",
]


class ResumabilityConfig(BaseModel):
    """Whether runs resume at the interrupted node from their checkpoint."""

    model_config = ConfigDict(defer_build=True)  # see WireModel

    is_resumable: bool = False


_log = logging.getLogger("baton.runner")

_APP_NAME: Final = re.compile(r"[a-zA-Z][a-zA-Z0-9_-]*")


class App(BaseModel):
    """What a folder serves: a named root node (workflow or agent) and its settings.

    `name` defaults to the root agent's name.
    """

    # defer_build: see WireModel.
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)

    name: str = Field(default="", validate_default=True)
    root_agent: Any
    description: str = ""
    plugins: list[Any] = Field(default_factory=list[Any])
    events_compaction_config: EventsCompactionConfig | None = None
    context_cache_config: Any = None
    resumability_config: ResumabilityConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _name_from_root(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("name"):  # pyright: ignore[reportUnknownMemberType] -- raw input
            fields = cast(dict[str, Any], data)
            root = fields.get("root_agent")
            if isinstance(root, Node):
                return {**fields, "name": root.name}
        return cast(object, data)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        if not name:
            raise ValueError("an App needs a name: pass name=, or a root_agent to take it from.")
        if not _APP_NAME.fullmatch(name):
            raise ValueError(
                f"app name '{name}' must start with a letter and hold only letters, digits, "
                "'_' and '-'; pick another name=."
            )
        if name == "user":
            raise ValueError(
                "'user' is reserved for the author of user messages; pick another name."
            )
        return name

    @field_validator("root_agent")
    @classmethod
    def _is_node(cls, root: Any) -> Any:
        if not isinstance(root, Node):
            raise ValueError(
                f"root_agent must be a workflow, agent or node, got {type(root).__name__}."
            )
        return root

    @field_validator("context_cache_config")
    @classmethod
    def _no_context_cache(cls, config: Any) -> Any:
        if config is not None:
            raise ValueError(
                "context_cache_config asks for Gemini context caching, which baton's model "
                "adapters (OpenAI-compatible chat completions, the scripted model) cannot "
                "do; leave it out (an OpenAI-compatible server caches repeated prompt "
                "prefixes by itself)."
            )
        return config

    @model_validator(mode="after")
    def _can_summarize(self) -> Self:
        if self.events_compaction_config is not None:
            check_summarizer(self.events_compaction_config, self.root_agent)
        return self


class Runner:
    """Runs an app's root node against a session service.

    Args:
        app: the App to run (or give `agent`/`node` and `app_name`).
        app_name: the app's name when no App is given.
        agent: a root agent or workflow, when no App is given.
        node: a root node, when no App is given.
        session_service: where sessions, checkpoints and interrupts are kept.
        artifact_service: where `ctx.save_artifact` keeps files (None: saving raises,
            as in the reference). `BaseArtifactService(session_service.store)` keeps them
            in the session store, deleted with their session.
        memory_service: what `search_memory` / `add_session_to_memory` and the memory
            tools use. None: in the sessions' database when it is SQL
            (`baton.database_memory.SqlMemoryService`); with sessions in memory, none
            (the calls raise, as in the reference).
        credential_service: where tools' `save_credential` / `load_credential` keep the
            credentials users gave them (`baton.auth.credential_service`'s
            `InMemoryCredentialService`, `SessionStateCredentialService`, or your own
            `BaseCredentialService`). None: those calls raise, as in the reference.
        plugins: runner-wide callbacks (`baton.plugins.BasePlugin`), asked before the
            agents' own; or give them as `App(plugins=[...])`, not both.
        plugin_close_timeout: seconds each plugin's `close()` may take when the runner
            closes (5.0).
        auto_create_session: create a missing session instead of raising.
        lease_ttl: how long a crashed runner's lease blocks others before it expires.
        worker_id: this process's identity in lease owners (`worker_id/call`). A process
            restarted with the same id recovers its runs at once (see `Worker`); two
            live processes must not share one. Unique per Runner by default.
        clock: seconds since the epoch (deadlines are judged by it).
    """

    def __init__(
        self,
        *,
        app: App | None = None,
        app_name: str | None = None,
        agent: Node | None = None,
        node: Node | None = None,
        session_service: BaseSessionService,
        artifact_service: BaseArtifactService | None = None,
        plugins: Sequence[BasePlugin] | None = None,
        plugin_close_timeout: float = 5.0,
        memory_service: BaseMemoryService | None = None,
        credential_service: BaseCredentialService | None = None,
        auto_create_session: bool = False,
        lease_ttl: timedelta = timedelta(seconds=30),
        worker_id: str | None = None,
        clock: Clock = time.time,
    ) -> None:
        given = [x for x in (app, agent, node) if x is not None]
        if len(given) != 1:
            raise ValueError("Runner needs exactly one of app=, agent= or node=.")
        if app is None:
            root = agent or node
            assert root is not None  # one of them was given
            app = App(name=app_name or root.name, root_agent=root)
        self.app = app
        self.app_name = app_name or app.name
        self.session_service = session_service
        self.artifact_service = _checked_artifact_service(artifact_service)
        if plugins is not None and app.plugins:
            raise ValueError(
                "plugins were given to both the App and the Runner; give them to one (the "
                "reference takes them from App(plugins=[...]))."
            )
        if memory_service is not None and not isinstance(
            cast(object, memory_service), BaseMemoryService
        ):
            raise TypeError(
                f"memory_service must be a baton memory service (InMemoryMemoryService(), or "
                f"a BaseMemoryService subclass), got {type(memory_service).__name__}."
            )
        self.memory_service = (
            memory_service if memory_service is not None else memory_in(session_service.store)
        )
        self.credential_service = _checked_credential_service(credential_service)
        self.plugin_manager = PluginManager(
            plugins if plugins is not None else app.plugins, close_timeout=plugin_close_timeout
        )
        self.auto_create_session = auto_create_session
        self.lease_ttl = lease_ttl
        self.worker_id = default_worker_id() if worker_id is None else check_worker_id(worker_id)
        self.fingerprint = fingerprint_of(self.root)
        self.planner = CallPlanner(
            session_service.store,
            app_name=self.app_name,
            auto_create_session=auto_create_session,
            clock=clock,
            takes_replies=any(_may_run_task(n) for n in _tree(self.root)),
            reads_own_events=any(isinstance(n, BaseAgent) for n in _tree(self.root)),
            fingerprint=self.fingerprint,
        )
        self._agents_checked = False
        self._loop_thread = LoopThread(f"baton-runner-{self.app_name}")

    @property
    def root(self) -> Node:
        root: Node = self.app.root_agent
        return root

    @property
    def agent(self) -> Node:
        return self.root

    @property
    def state_schema(self) -> type[BaseModel] | None:
        """The root workflow's state_schema, if it has one."""
        root = self.root
        return root.state_schema if isinstance(root, Workflow) else None

    @property
    def resumability_config(self) -> ResumabilityConfig | None:
        """The app's `ResumabilityConfig` (None: not resumable); assigning one sets it for
        the runs this runner starts or resumes from then on, as in the reference."""
        return self.app.resumability_config

    @resumability_config.setter
    def resumability_config(self, config: ResumabilityConfig | None) -> None:
        if config is not None and not isinstance(config, ResumabilityConfig):  # pyright: ignore[reportUnnecessaryIsInstance] -- user input
            raise TypeError(
                f"Runner.resumability_config takes a ResumabilityConfig or None, got "
                f"{config!r}; write ResumabilityConfig(is_resumable=True)."
            )
        # A copy: the App given may be served by other runners too.
        self.app = self.app.model_copy(update={"resumability_config": config})

    @property
    def store(self) -> Store:
        return self.session_service.store

    @property
    def is_resumable(self) -> bool:
        config = self.app.resumability_config
        return bool(config and config.is_resumable)

    async def close(self) -> None:
        """Close the agents' toolsets, the plugins, the session service (and the loop
        thread of sync calls).

        Raises:
            RuntimeError: a toolset or plugin failed to close (the rest were closed).
        """
        try:
            toolsets = [t for n in _tree(self.root) if isinstance(n, LlmAgent) for t in n.toolsets]
            await close_toolsets(toolsets)
        finally:
            try:
                await self.plugin_manager.close()
            finally:
                await self.session_service.close()
                self._loop_thread.stop()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        """`async with Runner(...)`: closed (`close()`) at the end, errors passed on."""
        await self.close()

    async def run_async(
        self,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        session: Session | None = None,
        invocation_id: str | None = None,
        new_message: Content | None = None,
        state_delta: dict[str, JsonValue] | None = None,
        run_config: RunConfig | None = None,
        yield_user_message: bool = False,
        answered_by: str | None = None,
        occurrences: Mapping[str, str] | None = None,
        abort_signal: asyncio.Event | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Start a run, answer its interrupts, or continue it; yields events as they commit.

        Args:
            user_id: the session's user.
            session_id: the session.
            session: the session itself, instead of `user_id` and `session_id`.
            invocation_id: continue this invocation (after a crash, or to disambiguate).
                A text `new_message` given with it is recorded in that invocation
                before it continues.
            new_message: a user message starts a run; function responses whose ids are
                open interrupts answer them.
            state_delta: state changes recorded with the call.
            run_config: what the call asks for: `StreamingMode.SSE` streams model replies
                in `partial=True` events (never stored), `max_llm_calls` bounds the
                call's model calls, `custom_metadata` is merged into every event.
            yield_user_message: also yield the user's message event.
            answered_by: who answered, recorded with each answer. A question with an
                assignee accepts only an answer given as that user.
            occurrences: interrupt id -> the `occurrence` of the question the caller saw
                (from the pending list); an answer then never answers a later asking of
                the same id (AlreadyAnsweredError instead).
            abort_signal: once set, the run stops where it is (a node under way is
                cancelled) and is sealed with an `INVOCATION_ABORTED` error event, the
                last one yielded; the invocation is then failed, and
                `run_async(invocation_id=...)` continues it, running that node again.

        Raises:
            TypeError: `run_config` is not a baton `RunConfig`.
            RunConfigError: it asks for `StreamingMode.BIDI` (live mode).
            SessionNotFoundError, InvocationNotFoundError, UnknownInterruptError,
            AlreadyAnsweredError, InvalidResponseError, InvalidMessageError,
            InvocationFinishedError, InvocationWaitingError, InvocationBusyError,
            WorkflowChangedError: before anything changed. A node's own exception, after
            its error event was stored.
            MissingStateKeyError, MissingArtifactError: the instruction of an agent that
                calls its model first names a key or artifact the session does not have;
                before anything changed (see `check_first_instructions`).
        """
        # Refused before anything changes; handed to the run, which then reads no
        # environment variable again.
        in_force = run_config_in_force(run_config)
        key = self.planner.session_key(user_id, session_id, session)
        self._check_agents()
        # A write the app's state_schema refuses is refused before anything is stored.
        check_state_delta(self.state_schema, dict(state_delta or {}), "the caller's state_delta")
        # Each call is its own resumer, even when two share this Runner. Eight random hex
        # digits, as a uuid4's first eight are, without building the UUID (every call).
        owner = f"{own_prefix(self.worker_id)}{os.urandom(4).hex()}"
        plan = await self.planner.plan(
            key,
            new_message,
            invocation_id,
            dict(state_delta or {}),
            occurrences,
            answered_by,
            owner=owner,
            ttl=self.lease_ttl,
        )
        if plan.creates_session:
            plan = await self.planner.create_session(plan)
        first_artifacts: dict[str, str | None] = {}
        if plan.kind is PlanKind.START and not self.plugin_manager:
            # Plugins may write state before the first agent runs: then it fills its
            # instruction in the run, as always.
            try:
                first_artifacts = await check_first_instructions(
                    self.root, plan.session, plan.state_delta, self.artifact_service, self.store
                )
            except Exception:
                if plan.creates_session:
                    await self.planner.forget_session(plan)
                raise
        # Claim before loading the checkpoint (the claim returns it), so a second resumer
        # fails before it reads it. An answer's checks may have claimed it already.
        lease, invocation = await self._lease(plan, owner)
        run: InvocationRun | None = None
        seal: Event | None = None
        try:
            run = await self._open_run(plan, lease, answered_by, invocation, run_config, in_force)
            run.invocation.abort_signal = abort_signal
            run.invocation.first_artifacts = first_artifacts
            async with run.events(yield_user_message) as events:
                if abort_signal is None:
                    async for event in events:
                        yield event
                else:
                    async with aclosing(until_aborted(events, abort_signal)) as read:
                        async for event in read:
                            yield event
            # The run is stopped now: an abort that came first is sealed.
            seal = await run.seal_aborted() if abort_signal and abort_signal.is_set() else None
            if seal is not None:
                yield seal
        finally:
            await self._release(lease, run)
        if seal is None:
            await self._compact(plan.key)

    async def _compact(self, key: SessionKey) -> None:
        """Summarize the session's older events if the app's config says it is due."""
        config = self.app.events_compaction_config
        if config is not None:
            await compact_session(self.store, key, config, summarizer_for(config, self.root))

    async def run_debug(
        self,
        user_messages: str | Sequence[str],
        *,
        user_id: str = "debug_user_id",
        session_id: str = "debug_session_id",
        run_config: RunConfig | None = None,
        quiet: bool = False,
        verbose: bool = False,
    ) -> list[Event]:
        """Send each message in turn in one session (created when missing, continued
        when not) and print what the agents say, for trying an agent out; as the
        reference's `run_debug`, which also logs (INFO, logger `baton.runner`) each
        message sent as `User > ...` and whether the session was created or continued.
        Use `run_async` in an application.

        Args:
            user_messages: a message, or several sent one after another.
            user_id: the session's user.
            session_id: the session; the same id again continues the conversation.
            run_config: the runs' `RunConfig`.
            quiet: print and log nothing.
            verbose: print tool calls, tool results, code and files too, not only text.

        Returns:
            Every event of the runs, in order.
        """
        if (
            await self.session_service.get_session(
                app_name=self.app_name, user_id=user_id, session_id=session_id
            )
            is None
        ):
            await self.session_service.create_session(
                app_name=self.app_name, user_id=user_id, session_id=session_id
            )
            if not quiet:
                _log.info("Created new session: %s", session_id)
        elif not quiet:
            _log.info("Continue session: %s", session_id)
        events: list[Event] = []
        for message in [user_messages] if isinstance(user_messages, str) else user_messages:
            if not quiet:
                _log.info("User > %s", message)
            run = self.run_async(
                user_id=user_id,
                session_id=session_id,
                new_message=UserContent(message),
                run_config=run_config,
            )
            async with aclosing(run) as stream:
                async for event in stream:
                    if not quiet:
                        print_event(event, verbose=verbose)
                    events.append(event)
        return events

    def run_live(self, *_: object, **__: object) -> AsyncGenerator[Event, None]:
        """The reference's live (audio/video, `LiveRequestQueue`) mode, which baton has not.

        Raises:
            RunConfigError: always, at the call, before anything is stored (use
                `run_async`, with `StreamingMode.SSE` for streamed model replies).
        """
        raise RunConfigError(
            "Runner.run_live: baton has no live (bidirectional audio/video) mode; use "
            "run_async, with RunConfig(streaming_mode=StreamingMode.SSE) to stream model replies"
        )

    async def answer(
        self,
        *,
        user_id: str,
        session_id: str,
        answers: Mapping[str, JsonValue],
        invocation_id: str | None = None,
        answered_by: str | None = None,
        state_delta: dict[str, JsonValue] | None = None,
        yield_user_message: bool = False,
        occurrences: Mapping[str, str] | None = None,
        progress: Collection[str] = (),
    ) -> AsyncGenerator[Event, None]:
        """Answer open questions by interrupt id and resume the run; yields its events.

        The one door for answers: the server's respond route, the web inbox, `baton run`
        and `baton resume` call it, and so can your code. Each answer is the value the
        node receives (`{"approved": True}`), for a RequestInput or an agent's
        long-running tool alike; it is checked like a `run_async` answer, before
        anything changes.

        Args:
            user_id: the session's user.
            session_id: the session.
            answers: interrupt id -> answer; at least one.
            invocation_id: the run the questions belong to (when ids repeat across runs).
            answered_by: who answered, recorded with each answer (default: `user_id`). A
                question with an assignee accepts only its assignee's answer.
            state_delta: state changes recorded with the answers.
            yield_user_message: also yield the event holding the answers.
            occurrences: interrupt id -> the `occurrence` the answer is meant for.
            progress: ids of long-running tool calls whose answers here are progress
                updates (`will_continue`): the model gets a turn and the call stays open.

        Raises:
            InvalidMessageError: `answers` is empty.
            NotAssigneeError: a question is assigned to someone other than `answered_by`.
            UnknownInterruptError, AlreadyAnsweredError, InvalidResponseError, and the
                rest of `run_async`'s refusals, before anything changed.
        """
        message = answers_message(answers, progress=progress)
        events = self.run_async(
            user_id=user_id,
            session_id=session_id,
            invocation_id=invocation_id,
            new_message=message,
            state_delta=state_delta,
            yield_user_message=yield_user_message,
            answered_by=answered_by or user_id,
            occurrences=occurrences,
        )
        async with aclosing(events) as stream:
            async for event in stream:
                yield event

    async def pending(
        self,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        invocation_id: str | None = None,
        status: InterruptStatus | None = InterruptStatus.OPEN,
        assignee: str | None = None,
        include_assigned: bool = False,
    ) -> list[Interrupt]:
        """This app's questions (the open ones by default), oldest first, as filtered.

        Args:
            user_id: questions of this user's sessions.
            session_id: questions of this session.
            invocation_id: questions of this run.
            status: open (default) or answered questions; None for both.
            assignee: only the questions assigned to this user (`RequestInput(assignee=)`),
                in any user's session unless `user_id` is given too.
            include_assigned: with `user_id`, also the questions assigned to that user in
                other users' sessions: everything that person may see and answer.
        """
        return await self.store.list_interrupts(
            self.app_name,
            user_id,
            session_id=SessionId(session_id) if session_id else None,
            invocation_id=InvocationId(invocation_id) if invocation_id else None,
            status=status,
            assignee=assignee,
            include_assigned=include_assigned,
        )

    async def pending_page(
        self,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        invocation_id: str | None = None,
        status: InterruptStatus | None = InterruptStatus.OPEN,
        assignee: str | None = None,
        include_assigned: bool = False,
        limit: int = DEFAULT_PAGE,
        cursor: str | None = None,
    ) -> Page[Interrupt]:
        """A page of `pending` (same filters): at most `limit` questions after `cursor`
        (the `next_cursor` of the page before; None for the first page).

        Raises:
            InvalidLimitError: `limit` is not from 1 to 1000.
            InvalidCursorError: `cursor` is not one a pending page gave.
        """
        return await pending_page(
            self.store,
            self.app_name,
            user_id=user_id,
            session_id=session_id,
            invocation_id=invocation_id,
            status=status,
            assignee=assignee,
            include_assigned=include_assigned,
            limit=limit,
            cursor=cursor,
        )

    async def sessions_page(
        self, *, user_id: str | None = None, limit: int = DEFAULT_PAGE, cursor: str | None = None
    ) -> Page[Session]:
        """A page of this app's sessions (one user's, or everyone's), by user then id,
        without their events; pass `next_cursor` back as `cursor` for the next.

        Raises:
            InvalidLimitError, InvalidCursorError: as `pending_page`.
        """
        return await sessions_page(
            self.store, self.app_name, user_id=user_id, limit=limit, cursor=cursor
        )

    async def invocations(self, *, user_id: str, session_id: str) -> list[Invocation]:
        """The session's runs, oldest first, each with its status."""
        return await self.store.list_invocations(
            SessionKey(self.app_name, user_id, SessionId(session_id))
        )

    async def rewind_async(
        self,
        *,
        user_id: str,
        session_id: str,
        rewind_before_invocation_id: str,
        run_config: object | None = None,
    ) -> Event:
        """Rewind the session to before an invocation, as the reference does: one user
        event is appended carrying `rewind_before_invocation_id` and the state delta that
        restores the state as it was before that invocation (`app:`, `user:` and `temp:`
        keys untouched), plus, with an artifact service, the artifact delta of a new
        version restoring each session artifact as it was then (one created since loads
        as absent; `user:` artifacts untouched). Nothing is deleted; from then on that
        invocation and every event after it no longer count: agents do not see them,
        and the runs they belong to are marked rewound (their questions closed), so they
        can be neither answered nor continued. Returns the rewind event.

        Args:
            user_id: the session's user.
            session_id: the session.
            rewind_before_invocation_id: the first invocation to undo.
            run_config: accepted for compatibility; unused.

        Raises:
            SessionNotFoundError, InvocationNotFoundError (no event of that invocation in
            the session), InvocationRewoundError (already undone), InvocationBusyError (a
            run it would undo is executing): before anything changed.
        """
        del run_config
        key = self.planner.session_key(user_id, session_id, None)
        check_id("rewind_before_invocation_id", rewind_before_invocation_id)
        owner = f"{own_prefix(self.worker_id)}rewind-{uuid.uuid4().hex[:8]}"
        rewind = Rewind(
            key,
            InvocationId(rewind_before_invocation_id),
            owner,
            self.lease_ttl,
            artifacts=self.artifact_service,
        )
        return await rewind_session(self.store, rewind)

    async def checkpoints(self, *, user_id: str, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first: before each run (`start`: rewind or
        fork there), after each step of a workflow run that gave a node's result (`step`:
        fork there to re-run from it), at each question a run asked (`question`: fork
        there to answer it differently), after each run that ended (`end`). Rewound
        history has none.

        Raises:
            SessionNotFoundError: no such session.
        """
        key = self.planner.session_key(user_id, session_id, None)
        _, history = await read_history(self.store, key)
        return list_checkpoints(history)

    async def fork(
        self,
        *,
        user_id: str,
        session_id: str,
        checkpoint_id: str,
        new_session_id: str | None = None,
    ) -> Session:
        """A new session of the same user holding this one's history up to a checkpoint
        (`checkpoints` lists them), with the state as it was there; a run that was waiting
        at that question waits there again, to be answered differently. At a `step`, the
        run is left to continue from that step (`run_async(invocation_id=...)`, or a
        Worker's recovery): node runs that had their result by then are not run again,
        the rest run anew. This session is not changed.

        Raises:
            SessionNotFoundError, CheckpointNotFoundError, CheckpointUnavailableError (a
            run was executing at that point), SessionExistsError (`new_session_id` is
            taken): before anything was written.
        """
        key = self.planner.session_key(user_id, session_id, None)
        if new_session_id is not None:
            check_id("new_session_id", new_session_id)
        at_step = partial(forked_checkpoint, self.app.root_agent)
        return await fork_session(self.store, key, checkpoint_id, new_session_id, at_step=at_step)

    async def invocations_page(
        self, *, user_id: str, session_id: str, limit: int = DEFAULT_PAGE, cursor: str | None = None
    ) -> Page[Invocation]:
        """A page of `invocations`; pass `next_cursor` back as `cursor` for the next.

        Raises:
            InvalidLimitError, InvalidCursorError: as `pending_page`.
        """
        key = SessionKey(self.app_name, user_id, SessionId(session_id))
        return await invocations_page(self.store, key, limit=limit, cursor=cursor)

    async def recover(self, claimed: Claimed) -> None:
        """Continue an invocation whose lease a recovery claim took (see `Worker`): from
        its last commit, to its next pause or its end. Releases the lease after.

        Raises:
            WorkflowChangedError: the invocation started with other code.
            a node's own exception, after its error event was stored.
        """
        release = True
        run: InvocationRun | None = None
        try:
            plan = await self.planner.continuing(claimed.key, claimed.lease.invocation_id)
            if plan is not None:
                run = await self._open_run(plan, claimed.lease, None)
                await self._drain(run)
        except WorkflowChangedError:
            # Keep the claim until it lapses: a process running the code the invocation
            # started with may take it then, and this one does not retry it at once.
            release = False
            raise
        finally:
            if release:
                await self._release(claimed.lease, run)

    async def expire(self, row: Interrupt) -> None:
        """End a question whose deadline passed: answer it with its `on_timeout` (recorded
        as answered by `system:timeout`) and continue the run, or fail the node that asked
        with InputTimeoutError. Does nothing when it was answered meanwhile, or when its
        invocation ended (failed or completed): a deadline does not continue a run nobody
        asked to continue; a person's continuing it makes the deadline count again.

        Raises:
            InvocationBusyError: the invocation is executing elsewhere right now (retry).
            InputTimeoutError: the node failed for want of an answer (recorded).
        """
        owner = f"{own_prefix(self.worker_id)}expire-{uuid.uuid4().hex[:8]}"
        key = SessionKey(row.app_name, row.user_id, SessionId(row.session_id))
        lease, invocation = await self.store.claim_loaded(
            key, InvocationId(row.invocation_id), owner, self.lease_ttl
        )
        run: InvocationRun | None = None
        try:
            # Due when read, the invocation may have failed since (another branch's error).
            live = invocation.status in (InvocationStatus.RUNNING, InvocationStatus.PAUSED)
            plan = await self.planner.expiring(row) if live else None
            if plan is not None:
                run = await self._open_run(plan, lease, TIMEOUT_ANSWERER, invocation)
                await self._drain(run)
        finally:
            await self._release(lease, run)

    async def _lease(self, plan: RunPlan, owner: str) -> tuple[Lease, Invocation | None]:
        """The call's lease, and the invocation it resumes (None for a new one)."""
        if plan.claimed is not None:
            return plan.claimed
        if plan.kind is PlanKind.START:
            return self.store.lease_new(plan.invocation_id, owner, self.lease_ttl), None
        return await self.store.claim_loaded(plan.key, plan.invocation_id, owner, self.lease_ttl)

    @staticmethod
    async def _drain(run: InvocationRun) -> None:
        async with run.events(False) as events:
            async for _ in events:
                pass

    async def _release(self, lease: Lease, run: InvocationRun | None) -> None:
        if run is not None and run.released:
            return  # the run's last step gave it up
        # When the database is away the lease lapses by itself, and recovery continues a
        # run left running.
        with suppress(StoreUnavailableError):
            await self.store.release(lease)

    def run(
        self,
        *,
        user_id: str,
        session_id: str,
        new_message: Content | None = None,
        invocation_id: str | None = None,
        state_delta: dict[str, JsonValue] | None = None,
        run_config: RunConfig | None = None,
    ) -> Iterator[Event]:
        """`run_async` for code without an event loop: yields the same events, in order.

        The run happens on a loop thread of this Runner's own, one step per event the
        caller takes; leaving the loop early stops the run there, resumable by its id.

        Raises:
            Whatever `run_async` raises, on the calling thread.
        """
        events = self.run_async(
            user_id=user_id,
            session_id=session_id,
            new_message=new_message,
            invocation_id=invocation_id,
            state_delta=state_delta,
            run_config=run_config,
        )
        return self._loop_thread.iterate(events)

    def _check_agents(self) -> None:
        """Check the agents before the first call changes anything: every LlmAgent's
        model resolves, and the root is not an LlmAgent in single-turn mode.

        Raises:
            WorkflowConfigurationError: the root is an LlmAgent with mode='single_turn'.
            UnknownModelError, ExtraNotInstalledError: a model string cannot be used.
            ValueError: an LlmAgent has no model, nor an ancestor LlmAgent with one, and the
                default model cannot be used (a Gemini model without its key).
        """
        if self._agents_checked:
            return
        root = self.root
        if isinstance(root, LlmAgent) and root.mode == "single_turn":
            raise WorkflowConfigurationError(
                f"root agent '{root.name}' has mode='single_turn', which takes no user's "
                "messages; give the root agent mode='chat' (or leave it unset), or run this "
                "agent as a workflow node or as a sub-agent of an LlmAgent."
            )
        for node in _tree(self.root):
            if isinstance(node, LlmAgent):
                _ = node.canonical_model
        self._agents_checked = True

    async def _open_run(
        self,
        plan: RunPlan,
        lease: Lease,
        answered_by: str | None,
        invocation: Invocation | None = None,
        run_config: RunConfig | None = None,
        in_force: RunConfig | None = None,
    ) -> InvocationRun:
        if plan.kind is PlanKind.START:
            root = RunRecord(
                node=self.root.name,
                path=f"{self.root.name}@1",
                run_id="1",
                # The user's message, handed on as a Content (see Trigger.message).
                input=plan.message.model_dump(mode="json", exclude_none=True)
                if plan.message
                else None,
                message_input=plan.message is not None,
            )
            run = InvocationRun(
                self._settings(),
                plan,
                lease,
                root,
                version=0,
                run_config=run_config,
                run_config_in_force=in_force,
            )
            await run.begin(answered_by)
            return run
        if invocation is None:
            invocation = await self.planner.existing(plan.key, plan.invocation_id)
        else:
            invocation = self.planner.resumable(invocation)
        self._check_fingerprint(invocation)
        root = RunRecord.from_json(invocation.checkpoint)
        if invocation.status is InvocationStatus.FAILED:
            # A person continues a failed invocation: what failed runs again. (Under a
            # run still running, a failed run is one whose failure was committed but not
            # handed on, which continuing hands on: see `wants_execution`.)
            rerun_failed(root)
        run = InvocationRun(
            self._settings(),
            plan,
            lease,
            root,
            version=invocation.version,
            run_config=run_config,
            run_config_in_force=in_force,
        )
        await run.begin(answered_by)
        return run

    def _settings(self) -> RunSettings:
        return RunSettings(
            store=self.store,
            root=self.root,
            fingerprint=self.fingerprint,
            is_resumable=self.is_resumable,
            lease_ttl=self.lease_ttl,
            artifact_service=self.artifact_service,
            memory_service=self.memory_service,
            credential_service=self.credential_service,
            plugins=self.plugin_manager,
            session_service=self.session_service,
        )

    def _check_fingerprint(self, invocation: Invocation) -> None:
        if resumes_into(invocation.fingerprint, self.fingerprint):
            return
        difference = describe_difference(invocation.fingerprint, self.fingerprint)
        raise WorkflowChangedError(
            f"workflow '{self.root.name}' changed since invocation '{invocation.id}' started: "
            f"{difference}. Resume with the code it started with, or start a new run."
        )


INCARNATION: Final = uuid.uuid4().hex[:8]
"""This process's incarnation: every lease owner it writes is `worker_id/INCARNATION-...`,
so a restarted process (same worker id, new incarnation) reclaims its predecessor's runs
but never its own."""


def own_prefix(worker_id: str) -> str:
    """The lease owners of this process under `worker_id` start with this."""
    return f"{worker_id}/{INCARNATION}-"


MAX_WORKER_ID_LENGTH: Final = 200
"""The longest worker identity: lease owners `worker_id/...` must fit in 255 characters."""

_NOT_IN_WORKER_IDS: Final = re.compile(r"[/\x00-\x1f\x7f-\x9f]")


def check_worker_id(worker_id: str) -> str:
    """`worker_id` if it can name a process in lease owners, else a ValueError saying why.

    Lease owners are `worker_id/...`, and a restarted process takes back every lease
    whose owner starts with `worker_id/`: a `/` in an id would let one process take
    another's runs (`a` those of `a/b`)."""
    if not worker_id.strip():
        raise ValueError("a worker id may not be empty; leave it out for the default.")
    if len(worker_id) > MAX_WORKER_ID_LENGTH:
        raise ValueError(
            f"a worker id is at most {MAX_WORKER_ID_LENGTH} characters, got "
            f"{len(worker_id)}. Use a shorter one, e.g. HOST:PORT."
        )
    found = _NOT_IN_WORKER_IDS.search(worker_id)
    if found is not None:
        raise ValueError(
            f"worker id {worker_id!r} holds {found.group()!r}; a worker id may not hold '/' "
            "or control characters. Use e.g. HOST:PORT or web-1."
        )
    return worker_id


def default_worker_id() -> str:
    """A worker identity unique to this process (host, pid and a random part)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _may_run_task(node: object) -> bool:
    """Whether a run of `node` may be a task agent's, or start one (whose question the
    user's next message then answers): a task agent, or a node whose code gets `ctx` and
    so may run one with `ctx.run_node`. Agents and workflows start theirs as nodes of
    their own, which `_tree` walks."""
    if isinstance(node, LlmAgent):
        return node.mode == "task"
    if isinstance(node, FunctionNode):
        return node.takes_ctx
    return not isinstance(node, BaseAgent | Workflow | StartNode | JoinNode)


def _tree(root: object) -> Iterator[object]:
    """The root and every node, agent and sub-agent beneath it."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, Workflow):
            stack.extend(node.graph.nodes.values())
        if isinstance(node, BaseAgent):
            stack.extend(node.sub_agents)


@final
class InMemoryRunner(Runner):
    """A Runner with its own in-memory session service."""

    def __init__(
        self,
        agent: Node | None = None,
        *,
        node: Node | None = None,
        app_name: str | None = None,
        plugins: Sequence[BasePlugin] | None = None,
        app: App | None = None,
        plugin_close_timeout: float = 5.0,
    ) -> None:
        sessions = InMemorySessionService()
        super().__init__(
            app=app,
            agent=agent,
            node=node,
            app_name=app_name or (None if app else "InMemoryRunner"),
            session_service=sessions,
            # As the reference's: artifacts in memory too (here, in the sessions' store).
            artifact_service=BaseArtifactService(sessions.store),
            memory_service=InMemoryMemoryService(),
            plugins=plugins,
            plugin_close_timeout=plugin_close_timeout,
        )

    @property
    def session_service(self) -> InMemorySessionService:  # pyright: ignore[reportIncompatibleVariableOverride] -- narrower: the sync methods are there
        """The runner's own in-memory sessions (with the `*_sync` methods)."""
        return self._sessions

    @session_service.setter
    def session_service(self, service: BaseSessionService) -> None:
        assert isinstance(service, InMemorySessionService)
        self._sessions = service


def _checked_credential_service(service: object) -> BaseCredentialService | None:
    if service is None or isinstance(service, BaseCredentialService):
        return service
    raise TypeError(
        f"credential_service must be a baton credential service (InMemoryCredentialService(), "
        f"SessionStateCredentialService(), or a BaseCredentialService subclass from "
        f"baton.auth.credential_service), got {type(service).__name__}."
    )


def _checked_artifact_service(service: object) -> BaseArtifactService | None:
    if service is None or isinstance(service, BaseArtifactService):
        return service
    raise TypeError(
        f"artifact_service must be a baton artifact service (InMemoryArtifactService(), "
        f"SqliteArtifactService(path), DatabaseArtifactService(url)), got "
        f"{type(service).__name__}."
    )
