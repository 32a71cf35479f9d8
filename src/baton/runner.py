"""App, ResumabilityConfig and Runner: start a run, pause it, resume it, recover it.

Every call is checked before anything changes: an answer is matched to an open
interrupt through the index and validated against its schema, the invocation is
leased so only one process executes it, and its workflow fingerprint is compared
with the code at hand. Only then does the first step commit.
"""

from __future__ import annotations

import asyncio
import enum
import os
import socket
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final, final

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from baton.answers import unwrap_response, validate_answer
from baton.context import InvocationContext, StepParts
from baton.errors import (
    AlreadyAnsweredError,
    InvalidMessageError,
    InvocationBusyError,
    InvocationFinishedError,
    InvocationNotFoundError,
    SessionNotFoundError,
    UnknownInterruptError,
    WorkflowChangedError,
)
from baton.events import Event, EventActions
from baton.sessions.services import BaseSessionService, InMemorySessionService
from baton.sessions.store import (
    Interrupt,
    InterruptStatus,
    Invocation,
    InvocationStatus,
    Lease,
    Session,
    SessionKey,
    StepCommit,
    Store,
)
from baton.types import Content, InterruptId, InvocationId, SessionId
from baton.workflow.checkpoint import RunRecord, RunStatus, find_chain
from baton.workflow.execution import (
    NodeRunFailedError,
    complete_with_answers,
    execute_run,
    wants_execution,
)
from baton.workflow.graph import describe_difference, fingerprint_of
from baton.workflow.nodes import Node

__all__ = ["App", "InMemoryRunner", "ResumabilityConfig", "Runner"]


class ResumabilityConfig(BaseModel):
    """Whether runs resume at the interrupted node from their checkpoint."""

    is_resumable: bool = False


class App(BaseModel):
    """What a folder serves: a named root node (workflow or agent) and its settings."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    name: str = Field(pattern=r"^[a-zA-Z][a-zA-Z0-9_-]*$")
    root_agent: Any
    description: str = ""
    plugins: list[Any] = Field(default_factory=list[Any])
    resumability_config: ResumabilityConfig | None = None

    @field_validator("name")
    @classmethod
    def _not_user(cls, name: str) -> str:
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


class _Kind(enum.Enum):
    START = "start"
    ANSWER = "answer"
    CONTINUE = "continue"


@dataclass(frozen=True)
class _Plan:
    kind: _Kind
    key: SessionKey
    session: Session
    invocation_id: InvocationId
    message: Content | None = None
    answers: tuple[tuple[Interrupt, JsonValue], ...] = ()
    state_delta: dict[str, JsonValue] = field(default_factory=dict[str, JsonValue])


_DONE: Final = object()

_STATUS_OF: Final = {
    RunStatus.COMPLETED: InvocationStatus.COMPLETED,
    RunStatus.WAITING: InvocationStatus.PAUSED,
    RunStatus.FAILED: InvocationStatus.FAILED,
}


class Runner:
    """Runs an app's root node against a session service.

    Args:
        app: the App to run (or give `agent`/`node` and `app_name`).
        app_name: the app's name when no App is given.
        agent: a root agent or workflow, when no App is given.
        node: a root node, when no App is given.
        session_service: where sessions, checkpoints and interrupts are kept.
        auto_create_session: create a missing session instead of raising.
        lease_ttl: how long a crashed runner's lease blocks others before it expires.
    """

    def __init__(
        self,
        *,
        app: App | None = None,
        app_name: str | None = None,
        agent: Node | None = None,
        node: Node | None = None,
        session_service: BaseSessionService,
        auto_create_session: bool = False,
        lease_ttl: timedelta = timedelta(seconds=30),
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
        self.auto_create_session = auto_create_session
        self.lease_ttl = lease_ttl
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.fingerprint = fingerprint_of(self.root)

    @property
    def root(self) -> Node:
        root: Node = self.app.root_agent
        return root

    @property
    def agent(self) -> Node:
        return self.root

    @property
    def store(self) -> Store:
        return self.session_service.store

    @property
    def is_resumable(self) -> bool:
        config = self.app.resumability_config
        return bool(config and config.is_resumable)

    async def close(self) -> None:
        """Close the session service."""
        await self.session_service.close()

    async def run_async(
        self,
        *,
        user_id: str,
        session_id: str,
        invocation_id: str | None = None,
        new_message: Content | None = None,
        state_delta: dict[str, JsonValue] | None = None,
        run_config: object | None = None,
        yield_user_message: bool = False,
        answered_by: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Start a run, answer its interrupts, or continue it; yields events as they commit.

        Args:
            user_id: the session's user.
            session_id: the session.
            invocation_id: continue this invocation (after a crash, or to disambiguate).
            new_message: a user message starts a run; function responses whose ids are
                open interrupts answer them.
            state_delta: state changes recorded with the call.
            run_config: accepted for compatibility; unused.
            yield_user_message: also yield the user's message event.
            answered_by: who answered, recorded with each answer.

        Raises:
            SessionNotFoundError, InvocationNotFoundError, UnknownInterruptError,
            AlreadyAnsweredError, InvalidResponseError, InvalidMessageError,
            InvocationFinishedError, InvocationBusyError, WorkflowChangedError: before
            anything changed. A node's own exception, after its error event was stored.
        """
        del run_config
        key = SessionKey(self.app_name, user_id, SessionId(session_id))
        plan = await self._plan(key, new_message, invocation_id, dict(state_delta or {}))
        # Claim before loading the checkpoint, so a second resumer fails before it reads it.
        # Each call is its own resumer, even when two share this Runner.
        owner = f"{self.owner}/{uuid.uuid4().hex[:8]}"
        lease = await self.store.claim(plan.invocation_id, owner, self.lease_ttl)
        try:
            run = await self._open_run(plan, lease, answered_by)
            async for event in run.stream(yield_user_message):
                yield event
        finally:
            await self.store.release(lease)

    async def _plan(
        self,
        key: SessionKey,
        message: Content | None,
        invocation_id: str | None,
        state_delta: dict[str, JsonValue],
    ) -> _Plan:
        session = await self._session(key)
        responses = message.function_responses if message else []
        if responses:
            assert message is not None
            return await self._plan_answers(key, session, message, invocation_id, state_delta)
        if invocation_id:
            if message is not None and message.text:
                raise InvalidMessageError(
                    f"a text message cannot continue invocation '{invocation_id}'; answer its "
                    "interrupts with function responses, or omit invocation_id to start a new run."
                )
            await self._existing(key, InvocationId(invocation_id))
            return _Plan(
                _Kind.CONTINUE, key, session, InvocationId(invocation_id), state_delta=state_delta
            )
        new_id = InvocationId(f"e-{uuid.uuid4()}")
        return _Plan(_Kind.START, key, session, new_id, message=message, state_delta=state_delta)

    async def _session(self, key: SessionKey) -> Session:
        session = await self.store.get_session(key, with_events=False)
        if session is not None:
            return session
        if self.auto_create_session:
            return await self.store.create_session(
                key.app_name, key.user_id, session_id=key.session_id
            )
        raise SessionNotFoundError(
            f"session '{key.session_id}' of user '{key.user_id}' does not exist in app "
            f"'{key.app_name}'; create it first (session_service.create_session)."
        )

    async def _existing(self, key: SessionKey, invocation_id: InvocationId) -> Invocation:
        invocation = await self.store.load_invocation(key, invocation_id)
        if invocation is None:
            raise InvocationNotFoundError(
                f"invocation '{invocation_id}' does not exist in session '{key.session_id}'; "
                "check the id (it is on every event as invocationId)."
            )
        if invocation.status == InvocationStatus.COMPLETED:
            raise InvocationFinishedError(
                f"invocation '{invocation_id}' already completed; there is nothing to resume. "
                "Send a new message to start a new run."
            )
        return invocation

    async def _plan_answers(
        self,
        key: SessionKey,
        session: Session,
        message: Content,
        invocation_id: str | None,
        state_delta: dict[str, JsonValue],
    ) -> _Plan:
        if any(p.function_response is None for p in message.parts or []):
            raise InvalidMessageError(
                "a message cannot mix function responses with text or other parts; send the "
                "answers in one message and any text in another."
            )
        answers: list[tuple[Interrupt, JsonValue]] = []
        for response in message.function_responses:
            if not response.id:
                raise InvalidMessageError(
                    f"function response '{response.name}' has no id; set it to the id of the "
                    "function call it answers (the interrupt id)."
                )
            row = await self._open_interrupt(key, InterruptId(response.id), invocation_id)
            answers.append((row, validate_answer(row, unwrap_response(response.response))))
        owners = sorted({row.invocation_id for row, _ in answers})
        if len(owners) > 1:
            raise InvalidMessageError(
                f"the answers belong to several invocations ({', '.join(owners)}); answer each "
                "invocation in its own message."
            )
        return _Plan(
            _Kind.ANSWER,
            key,
            session,
            InvocationId(owners[0]),
            message=message,
            answers=tuple(answers),
            state_delta=state_delta,
        )

    async def _open_interrupt(
        self, key: SessionKey, interrupt_id: InterruptId, invocation_id: str | None
    ) -> Interrupt:
        rows = await self.store.find_interrupts(key, interrupt_id)
        if invocation_id:
            rows = [r for r in rows if r.invocation_id == invocation_id]
        open_rows = [r for r in rows if r.status == InterruptStatus.OPEN]
        if len(open_rows) == 1:
            return open_rows[0]
        if len(open_rows) > 1:
            raise InvalidMessageError(
                f"interrupt '{interrupt_id}' is open in several invocations ("
                f"{', '.join(r.invocation_id for r in open_rows)}); pass invocation_id to choose."
            )
        still_open = await self.store.list_interrupts(
            key.app_name, key.user_id, session_id=key.session_id
        )
        listed = ", ".join(f"'{r.interrupt_id}'" for r in still_open) or "none"
        if rows:
            await self._fail_if_busy(InvocationId(rows[0].invocation_id))
            raise AlreadyAnsweredError(
                f"interrupt '{interrupt_id}' of invocation '{rows[0].invocation_id}' was already "
                f"answered; nothing was changed. Open interrupts in this session: {listed}."
            )
        scope = f"invocation '{invocation_id}'" if invocation_id else f"session '{key.session_id}'"
        raise UnknownInterruptError(
            f"interrupt '{interrupt_id}' is not open in {scope} (open: {listed}); answer one "
            "of the open ids."
        )

    async def _fail_if_busy(self, invocation_id: InvocationId) -> None:
        """Raise InvocationBusyError when another runner holds the invocation right now.

        An answered interrupt whose invocation is still executing means a concurrent
        resumer got there first: "busy" tells the caller more than "answered".
        """
        probe = f"{self.owner}/probe-{uuid.uuid4().hex[:8]}"
        lease = await self.store.claim(invocation_id, probe, self.lease_ttl)
        await self.store.release(lease)

    async def _open_run(self, plan: _Plan, lease: Lease, answered_by: str | None) -> _Run:
        if plan.kind is _Kind.START:
            root = RunRecord(
                node=self.root.name,
                path=f"{self.root.name}@1",
                run_id="1",
                input=plan.message.text if plan.message and plan.message.text else None,
            )
            run = _Run(self, plan, lease, root, version=0)
            await run.begin(answered_by)
            return run
        invocation = await self._existing(plan.key, plan.invocation_id)
        self._check_fingerprint(invocation)
        root = RunRecord.model_validate(invocation.checkpoint)
        run = _Run(self, plan, lease, root, version=invocation.version)
        await run.begin(answered_by)
        return run

    def _check_fingerprint(self, invocation: Invocation) -> None:
        if invocation.fingerprint == self.fingerprint:
            return
        difference = describe_difference(invocation.fingerprint, self.fingerprint)
        raise WorkflowChangedError(
            f"workflow '{self.root.name}' changed since invocation '{invocation.id}' started: "
            f"{difference}. Resume with the code it started with, or start a new run."
        )


class _Run:
    """One executing invocation: commits its steps and streams their events."""

    def __init__(
        self, runner: Runner, plan: _Plan, lease: Lease, root: RunRecord, version: int
    ) -> None:
        self.runner = runner
        self.store = runner.store
        self.plan = plan
        self.lease = lease
        self.root = root
        self.version = version
        self.lock = asyncio.Lock()
        self.outbox: asyncio.Queue[object] = asyncio.Queue()
        self.error: BaseException | None = None
        # The invocation's status as of the root run's last step, landed with that step.
        self.final_status: InvocationStatus | None = None
        self.status_landed = False
        self.user_event: Event | None = None
        self.invocation = InvocationContext(
            invocation_id=plan.invocation_id,
            app_name=plan.key.app_name,
            user_id=plan.key.user_id,
            session=plan.session,
            user_content=plan.message if plan.kind is _Kind.START else None,
            is_resumable=runner.is_resumable,
            load_history=self._history,
            commit=self.commit,
            agent_name=runner.root.name,
        )

    async def _history(self) -> list[Event]:
        session = await self.store.get_session(self.plan.key)
        return session.events if session else []

    async def begin(self, answered_by: str | None) -> None:
        plan = self.plan
        if plan.kind is _Kind.START:
            await self._land(
                self._user_parts(),
                lambda: None,
                status=InvocationStatus.RUNNING,
                fingerprint=self.runner.fingerprint,
            )
        elif plan.kind is _Kind.ANSWER:
            await self._record_answers(answered_by)
        elif plan.state_delta:
            await self.commit(self._user_parts(), lambda: None)

    def _user_parts(self) -> StepParts:
        plan = self.plan
        if plan.message is None and not plan.state_delta:
            return StepParts()
        message = plan.message.model_copy(update={"role": "user"}) if plan.message else None
        self.user_event = Event(
            invocation_id=plan.invocation_id,
            author="user",
            content=message,
            actions=EventActions(state_delta=dict(plan.state_delta)),
        )
        return StepParts(events=(self.user_event,), state_delta=dict(plan.state_delta))

    async def _record_answers(self, answered_by: str | None) -> None:
        chains: list[tuple[list[RunRecord], str, JsonValue]] = []
        for row, value in self.plan.answers:
            chain = find_chain(self.root, row.node_path)
            if chain is None or row.interrupt_id not in chain[-1].interrupts:
                raise AlreadyAnsweredError(
                    f"interrupt '{row.interrupt_id}' is no longer open in invocation "
                    f"'{row.invocation_id}' (answered meanwhile); nothing was changed."
                )
            chains.append((chain, row.interrupt_id, value))

        def mutate() -> None:
            for chain, iid, value in chains:
                chain[-1].answers[iid] = value
                for record in chain:
                    if iid in record.interrupts:
                        record.interrupts.remove(iid)
                    record.fresh.append(iid)

        parts = self._user_parts()
        answered = tuple((row.interrupt_id, value) for row, value in self.plan.answers)
        await self._land(
            StepParts(events=parts.events, state_delta=parts.state_delta, answered=answered),
            mutate,
            status=InvocationStatus.RUNNING,
            answered_by=answered_by,
        )

    async def commit(self, parts: StepParts, mutate: Any) -> None:
        await self._land(parts, mutate)

    async def _land(
        self,
        parts: StepParts,
        mutate: Any,
        *,
        status: InvocationStatus | None = None,
        fingerprint: str | None = None,
        answered_by: str | None = None,
        error: str | None = None,
    ) -> None:
        async with self.lock:
            mutate()
            if status is None and self.final_status is not None:
                status, self.final_status = self.final_status, None
            step = StepCommit(
                session=self.plan.key,
                invocation_id=self.plan.invocation_id,
                expected_version=self.version,
                events=parts.events,
                state_delta=parts.state_delta,
                checkpoint=self.root.model_dump(mode="json"),
                status=status,
                fingerprint=fingerprint,
                error=error,
                opened=parts.opened,
                answered=tuple((InterruptId(i), v) for i, v in parts.answered),
                answered_by=answered_by,
            )
            self.version = await self.store.commit_step(step)
            if status is not None:
                self.status_landed = status is not InvocationStatus.RUNNING
            self.invocation.session.state.update(parts.state_delta)
            for event in parts.events:
                self.outbox.put_nowait(event)

    async def stream(self, yield_user_message: bool) -> AsyncGenerator[Event, None]:
        # A TaskGroup cannot span a `yield` of an async generator (PEP 789): closing the
        # generator would throw into the group. The two tasks are owned and awaited here.
        driver = asyncio.create_task(self._drive())
        renewer = asyncio.create_task(self._renew(driver))
        try:
            while (item := await self.outbox.get()) is not _DONE:
                assert isinstance(item, Event)
                if item is not self.user_event or yield_user_message:
                    yield item
        finally:
            renewer.cancel()
            driver.cancel()
            await asyncio.gather(driver, renewer, return_exceptions=True)
        if self.error is not None:
            raise self.error

    async def _drive(self) -> None:
        try:
            await self._execute_root()
            await self._finish()
        except NodeRunFailedError as failure:
            self.error = failure.error
            await self._land(
                StepParts(), lambda: None, status=InvocationStatus.FAILED, error=str(failure)
            )
        except Exception as broken:
            # The store failed (or the lease was lost): nothing more can be recorded, so
            # the invocation stays as its last commit left it, resumable by its id.
            self.error = broken
        finally:
            self.outbox.put_nowait(_DONE)

    async def _execute_root(self) -> None:
        root_node = self.runner.root
        decision = wants_execution(root_node, self.root)
        if decision is True:
            await execute_run(root_node, self.root, self.invocation, self._root_finished)
        elif decision is None:
            await complete_with_answers(root_node, self.root, self.invocation, self._root_finished)

    def _root_finished(self, root: RunRecord) -> None:
        """Called inside the root run's last step: that step lands the invocation's status."""
        self.final_status = _STATUS_OF.get(root.status)

    async def _finish(self) -> None:
        if self.status_landed:
            return
        # The root did not run (e.g. continuing a paused run with nothing answered).
        status = _STATUS_OF.get(self.root.status, InvocationStatus.RUNNING)
        await self._land(StepParts(), lambda: None, status=status)

    async def _renew(self, driver: asyncio.Task[None]) -> None:
        ttl = self.runner.lease_ttl
        while True:
            await asyncio.sleep(ttl.total_seconds() / 3)
            try:
                self.lease = await self.store.renew(self.lease, ttl)
            except InvocationBusyError as lost:
                self.error = lost
                driver.cancel()
                self.outbox.put_nowait(_DONE)
                return


@final
class InMemoryRunner(Runner):
    """A Runner with its own in-memory session service."""

    def __init__(
        self,
        agent: Node | None = None,
        *,
        app_name: str | None = None,
        app: App | None = None,
    ) -> None:
        super().__init__(
            app=app,
            agent=agent if app is None else None,
            app_name=app_name or (None if app else "InMemoryRunner"),
            session_service=InMemorySessionService(),
        )
