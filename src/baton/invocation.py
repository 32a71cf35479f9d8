"""An executing invocation: it lands each step, streams its events and keeps its lease.

The Runner decides what a call means (a `RunPlan`) and claims the invocation; an
`InvocationRun` then does the work: the first step (the new message, or the answers),
the root node's run, and the invocation's status, each as one atomic commit.
"""

from __future__ import annotations

import asyncio
import enum
import types
from collections import deque
from collections.abc import Awaitable, Callable, Generator, Iterable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from pydantic import JsonValue

from baton.aborting import ABORTED_CODE, ABORTED_MESSAGE
from baton.artifacts import BaseArtifactService
from baton.context import InvocationContext, StepParts
from baton.errors import (
    AlreadyAnsweredError,
    InvocationBusyError,
    StaleVersionError,
    StoreUnavailableError,
)
from baton.events import REQUEST_CREDENTIAL_FUNCTION, Event, EventActions
from baton.memory import BaseMemoryService
from baton.plugins.manager import NO_PLUGINS, PluginManager
from baton.run_config import RunConfig
from baton.sessions.rewind import live_events
from baton.sessions.store import (
    Interrupt,
    Invocation,
    InvocationStatus,
    Lease,
    Session,
    SessionKey,
    StepCommit,
    Store,
    drop_temp_keys,
    ends_run,
    has_temp_keys,
)
from baton.threads import bound_run_threads
from baton.tracing import end_invocation_span, invocation_span, is_tracing
from baton.turns import Turns
from baton.types import Content, InterruptId, InvocationId
from baton.workflow.checkpoint import RunRecord, RunStatus, find_chain
from baton.workflow.execution import (
    NodeRunFailedError,
    complete_with_answers,
    execute_run,
    failure_text,
    run_stopper,
    wants_execution,
)
from baton.workflow.handover import EngineDriver, park, parks
from baton.workflow.nodes import Node

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from opentelemetry.trace import Span

    from baton.auth.credential_service import BaseCredentialService

__all__ = ["InvocationRun", "PlanKind", "RunEvents", "RunPlan", "RunSettings", "held_here"]


class PlanKind(enum.Enum):
    """What a call does: start a run, answer its interrupts, continue it, or expire a
    question whose deadline passed with no `on_timeout` answer (its node fails)."""

    START = "start"
    ANSWER = "answer"
    CONTINUE = "continue"
    EXPIRE = "expire"


@dataclass(frozen=True)
class RunPlan:
    """A checked call: what it does, to which invocation, with which inputs."""

    kind: PlanKind
    key: SessionKey
    session: Session
    invocation_id: InvocationId
    message: Content | None = None
    answers: tuple[tuple[Interrupt, JsonValue], ...] = ()
    state_delta: dict[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    # Answered with `will_continue` (a progress update): the interrupt stays open.
    continuing: frozenset[str] = frozenset()
    # The lease and invocation an answer's checks claimed as they read (see
    # `Store.claim_answering`); None when the Runner is still to claim them.
    claimed: tuple[Lease, Invocation] | None = None
    # The claimed invocation's events, when its claim read them (`Answering.events`).
    claimed_events: Callable[[], list[Event]] | None = None
    # A new run in a session that does not exist yet, which the Runner creates once the
    # call's checks pass (`Runner(auto_create_session=True)`); `session` is it unstored.
    creates_session: bool = False


_STATUS_OF: Final = {
    RunStatus.COMPLETED: InvocationStatus.COMPLETED,
    RunStatus.WAITING: InvocationStatus.PAUSED,
    RunStatus.FAILED: InvocationStatus.FAILED,
}


def _shown(event: Event, *, resumable: bool, private: set[str]) -> Event | None:
    """The event as the caller is shown it: a non-resumable run's without agent checkpoints,
    as in the reference (baton stores them all the same: its agents resume from them in
    either mode), and in either mode without the checkpoints the reference's agents do
    not write (an LlmAgent's own, see `InvocationContext.private_checkpoints`); None for
    an event that holds nothing else."""
    if resumable and event.id not in private:
        return event
    return event.without_checkpoints()


@dataclass(frozen=True)
class RunSettings:
    """What an InvocationRun needs of its Runner."""

    store: Store
    root: Node
    fingerprint: str
    is_resumable: bool
    lease_ttl: timedelta
    artifact_service: BaseArtifactService | None = None
    memory_service: BaseMemoryService | None = None
    credential_service: BaseCredentialService | None = None
    plugins: PluginManager = NO_PLUGINS
    # The Runner's, for the reference's `ctx._invocation_context.session_service`.
    session_service: object = None


class InvocationRun:
    """One executing invocation: lands its steps, streams their events, keeps its lease."""

    def __init__(
        self,
        settings: RunSettings,
        plan: RunPlan,
        lease: Lease,
        root: RunRecord,
        version: int,
        *,
        run_config: RunConfig | None = None,
        run_config_in_force: RunConfig | None = None,
    ) -> None:
        self.settings = settings
        self.store = settings.store
        self.plan = plan
        self.lease = lease
        self.root = root
        self.version = version
        self.turns = Turns()  # steps land one at a time
        # Read on every step: a PluginManager's plugins are a tuple, fixed for the run.
        self.has_plugins = bool(settings.plugins)
        self.outbox = _Outbox()
        self.error: BaseException | None = None
        # The invocation's status as of the root run's last step, landed with that step,
        # and, when the root failed, the failure's text (landed with it too: a process
        # stopped right after that step leaves the failed invocation saying why).
        self.final_status: InvocationStatus | None = None
        self.final_error: str | None = None
        self.landed_error: str | None = None
        self.status_landed = False
        # The run's last step gave the lease up (see StepCommit.release).
        self.released = False
        self.committing = False  # a step's commit is under way (see `stop`)
        self.stop_asked = False
        # A joinable step held back to land with the next one: its parts, status, answerer.
        self._held: _Held | None = None
        self._renewal: _Renewal | None = None
        self._driver: EngineDriver | None = None
        # What the context reads of the store: an object of its own, not the run's
        # methods, so that the context points back at the run only through what
        # `_let_go` cuts.
        self._reads = _EventReads(self.store, plan)
        self.user_event: Event | None = None
        self.invocation = InvocationContext(
            invocation_id=plan.invocation_id,
            app_name=plan.key.app_name,
            user_id=plan.key.user_id,
            session=plan.session,
            user_content=plan.message if plan.kind is not PlanKind.ANSWER else None,
            is_resumable=settings.is_resumable,
            load_history=self._reads.history,
            load_invocation_events=self._reads.invocation_events,
            load_recent_events=self._reads.recent_events,
            commit=self._land,
            agent_name=settings.root.name,
            artifact_service=settings.artifact_service,
            memory_service=settings.memory_service,
            credential_service=settings.credential_service,
            plugins=settings.plugins,
            session_service=settings.session_service,
            run_config=run_config,
            run_config_in_force=run_config_in_force,
        )
        self.invocation.stream_partial = self._stream_partial
        # Merged into every event of the call (the reference's RunConfig.custom_metadata).
        self._metadata = self.invocation.current_run_config.custom_metadata

    async def begin(self, answered_by: str | None) -> None:
        await self._offer_user_message()
        plan = self.plan
        if plan.kind is PlanKind.START:
            await self._land(
                self._user_parts(),
                lambda: None,
                status=InvocationStatus.RUNNING,
                fingerprint=self.settings.fingerprint,
            )
        elif plan.kind is PlanKind.ANSWER:
            await self._record_answers(answered_by)
        elif plan.kind is PlanKind.EXPIRE:
            await self._record_expiry(answered_by)
        elif plan.state_delta or plan.message is not None:
            await self._land(self._user_parts(), lambda: None)

    async def _offer_user_message(self) -> None:
        """Plugins may replace a text message that starts or continues the run (answers,
        which are checked against their questions, are not offered)."""
        plan = self.plan
        if not self.settings.plugins or plan.message is None or plan.kind is PlanKind.ANSWER:
            return
        replaced = await self.settings.plugins.on_user_message(self.invocation, plan.message)
        if replaced is not None:
            self.plan = replace(plan, message=replaced)
            self.invocation.user_content = replaced

    def _user_parts(self) -> StepParts:
        plan = self.plan
        if plan.message is None and not plan.state_delta:
            return StepParts()
        message = plan.message
        if message is not None and message.role != "user":
            # A copy only to set the role: one already the user's is taken as it is (a
            # copy would share its parts with the caller's anyway).
            message = message.model_copy(update={"role": "user"})
        if message is not None and not plan.state_delta:
            self.user_event = Event.of_message(message, invocation_id=plan.invocation_id)
        else:
            self.user_event = Event(
                invocation_id=plan.invocation_id,
                author="user",
                content=message,
                actions=EventActions(state_delta=dict(plan.state_delta)),
            )
        return StepParts(events=(self.user_event,), state_delta=dict(plan.state_delta))

    def _open_chains(self) -> list[tuple[list[RunRecord], str, JsonValue]]:
        """Each answered interrupt's records from the root down to the run that asked."""
        chains: list[tuple[list[RunRecord], str, JsonValue]] = []
        for row, value in self.plan.answers:
            chain = find_chain(self.root, row.node_path)
            if chain is None or row.interrupt_id not in chain[-1].interrupts:
                raise AlreadyAnsweredError(
                    f"interrupt '{row.interrupt_id}' is no longer open in invocation "
                    f"'{row.invocation_id}' (answered meanwhile); nothing was changed."
                )
            chains.append((chain, row.interrupt_id, value))
        return chains

    async def _record_expiry(self, answered_by: str | None) -> None:
        """Close the expired questions (answered by nobody) and mark their runs to fail."""
        chains = self._open_chains()

        def mutate() -> None:
            for chain, iid, _ in chains:
                chain[-1].expired.append(iid)
                for record in chain:
                    if iid in record.interrupts:
                        record.interrupts.remove(iid)
                for record in chain[:-1]:
                    record.fresh.append(iid)

        expired = tuple((row.interrupt_id, None) for row, _ in self.plan.answers)
        await self._land(
            StepParts(answered=expired),
            mutate,
            status=InvocationStatus.RUNNING,
            answered_by=answered_by,
        )

    async def _record_answers(self, answered_by: str | None) -> None:
        chains = self._open_chains()

        continuing = self.plan.continuing

        def mutate() -> None:
            for chain, iid, value in chains:
                chain[-1].answers[iid] = value
                for record in chain:
                    if iid in record.interrupts and iid not in continuing:
                        record.interrupts.remove(iid)
                    record.fresh.append(iid)

        parts = self._user_parts()
        answered = tuple(
            (row.interrupt_id, value)
            for row, value in self.plan.answers
            if row.interrupt_id not in continuing
        )
        # A credential answer is the user's secret: no webhook receiver gets it.
        private = frozenset(
            row.interrupt_id
            for row, _ in self.plan.answers
            if row.function_name == REQUEST_CREDENTIAL_FUNCTION
        )
        # Joinable: a run completing from its answers lands them with its output.
        await self._land(
            StepParts(
                events=parts.events,
                state_delta=parts.state_delta,
                answered=answered,
                private_answers=private,
                joinable=True,
            ),
            mutate,
            status=InvocationStatus.RUNNING,
            answered_by=answered_by,
        )

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
        if self._metadata and parts.events:
            _add_metadata(parts.events, self._metadata)
        if self.has_plugins and parts.events:
            parts = await self._offer_events(parts)
        waiting = self.turns.take()
        if waiting is not None:
            await self.turns.wait(waiting)
        try:
            mutate()
            if status is None and self.final_status is not None:
                status, self.final_status = self.final_status, None
                if error is None:
                    error, self.final_error = self.final_error, None
            held = self._held
            if held is not None:
                self._unhold()
                if _reopens(held[0], parts):  # one write would answer the new asking
                    await self._commit(*held)
                else:
                    parts, status, answered_by = _joined(held, parts, status, answered_by)
            if self._holds(parts, status):
                self._held = (parts, status, answered_by)
                self.invocation.land_held = self._land_held
                return
            await self._commit(parts, status, answered_by, fingerprint, error)
        finally:
            self.turns.give_back()
        if parts.events:
            # The caller gets the step's events before the next step starts; one that
            # stops reading holds the run here, one that closes the stream cancels it here.
            await self.outbox.handed_over()

    async def _stream_partial(self, event: Event) -> None:
        """Hand the caller a partial event (a streamed model chunk) now, between commits:
        it is never stored, so never checkpointed nor shown again on resume."""
        if self._metadata:
            _add_metadata((event,), self._metadata)
        self.outbox.put_all((event,))
        await self.outbox.handed_over()

    def _holds(self, parts: StepParts, status: InvocationStatus | None) -> bool:
        """Whether to hold a step back to land with the next one: a joinable step (a run's
        end, or answers) while no node's code is under way, so none can run ahead of it
        (each node run lands what is held before its code starts: `land_held`), and
        while its workflow has no more runs queued (those would land it at once anyway).

        Speed: a run's last node lands with the run's status (and gives the lease up in
        the same write), and answers land with the output of the run they complete: a
        resume of `a -> ask -> b` is two commits instead of four. Not with plugins, whose
        callbacks are code of the user's that runs between steps.

        Not fewer: held past `b`'s start (to land with `b`'s output), the answers would
        be durable only once `b` is done, so a crash while `b` runs would lose an answer
        `b` already acted on, and the person would be asked again; committed without
        waiting for its flush, a database crash could do the same (unlike the claim
        before them, which no code acts on before a durable commit: see
        `baton.sessions.sql.answering`).
        """
        invocation = self.invocation
        return (
            parts.joinable
            and (status is None or status is InvocationStatus.RUNNING)
            and invocation.running_code == 0
            and not invocation.work_queued
            and not self.has_plugins
        )

    async def _land_held(self) -> None:
        waiting = self.turns.take()
        if waiting is not None:
            await self.turns.wait(waiting)
        try:
            held = self._held
            if held is None:
                return
            self._unhold()
            await self._commit(*held)
        finally:
            self.turns.give_back()
        if held[0].events:
            await self.outbox.handed_over()

    def _unhold(self) -> None:
        self._held = None
        self.invocation.land_held = None

    async def _commit(
        self,
        parts: StepParts,
        status: InvocationStatus | None,
        answered_by: str | None,
        fingerprint: str | None = None,
        error: str | None = None,
    ) -> None:
        """Commit one step (its turn held): the checkpoint as the tree stands now."""
        # The run's last step gives the lease up: it paused, or it ended.
        release = status is not None and (
            status is InvocationStatus.PAUSED or ends_run(status, error)
        )
        if release and self._renewal is not None:
            await self._renewal.stop()  # a renewal must not find the lease given up
        if parts.state_delta and has_temp_keys(parts.state_delta):
            drop_temp_keys(parts.events)
        # Positional, in StepCommit's field order: a class called with keywords packs them
        # into a dict and unpacks it again, a fifth of the cost of this call, every step.
        step = StepCommit(
            self.plan.key,  # session
            self.plan.invocation_id,
            self.version,  # expected_version
            parts.events,
            parts.state_delta,
            self.root.to_json(),  # checkpoint
            status,
            fingerprint,
            error,
            parts.opened,
            tuple((InterruptId(i), v) for i, v in parts.answered) if parts.answered else (),
            answered_by,
            self.lease,
            release,
        )
        if parts.private_answers:
            private = frozenset(InterruptId(i) for i in parts.private_answers)
            step = replace(step, private_answers=private)
        self.committing = True
        try:
            self.version = await self.store.commit_step(step)
        except StoreUnavailableError as unavailable:
            self.version = await self._commit_again(step, unavailable)
        finally:
            self.committing = False
            if self.stop_asked and self._driver is not None and not self._driver.done():
                self._driver.cancel()  # stopped while it committed: see `stop`
        self.released = release
        if self.plan.claimed_events is not None:
            self._reads.committed += parts.events
        if status is not None:
            self.status_landed = status is not InvocationStatus.RUNNING
        if error is not None:
            self.landed_error = error
        if parts.state_delta:
            self.invocation.session.state.update(parts.state_delta)
        self.outbox.put_all(parts.events)

    async def _offer_events(self, parts: StepParts) -> StepParts:
        """Plugins may replace each event (but the user's message) before it is stored."""
        offered: list[Event] = []
        for event in parts.events:
            replaced = None
            if event is not self.user_event:
                replaced = await self.settings.plugins.on_event(self.invocation, event)
            offered.append(event if replaced is None else replaced)
        return StepParts(
            events=tuple(offered),
            state_delta=parts.state_delta,
            opened=parts.opened,
            answered=parts.answered,
            private_answers=parts.private_answers,
        )

    async def _commit_again(self, step: StepCommit, unavailable: StoreUnavailableError) -> int:
        """Commit `step`, whose first attempt found the database unreachable: retry with
        backoff for up to the lease's time to live (after that another runner may own
        the run anyway).

        A retry may find that the lost attempt did land (the connection broke after the
        commit): the invocation is then one version ahead and the fence still passed,
        so nobody else claimed it in between: only this run could have written it.
        """
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.settings.lease_ttl.total_seconds()
        delay = _RETRY_FIRST
        while True:
            if loop.time() + delay > give_up:
                raise unavailable
            self.committing = False  # nothing under way: a stop need not wait
            await asyncio.sleep(delay)
            self.committing = True
            delay = min(delay * 2, _RETRY_MOST)
            try:
                return await self.store.commit_step(step)
            except StoreUnavailableError as again:
                unavailable = again
            except StaleVersionError as stale:
                if stale.actual == step.expected_version + 1:
                    return stale.actual
                raise

    def events(self, yield_user_message: bool) -> RunEvents:
        """The run's events as its caller is shown them: `async with` starts the run,
        `async for` reads them (see `RunEvents`)."""
        return RunEvents(self, yield_user_message)

    def start(self) -> None:
        """Start the driver and the lease renewal: the caller now reads the outbox."""
        # The engine runs in the caller's task, stepped by its reads of the outbox, until
        # it needs a task of its own (see `baton.workflow.handover`). The driver and the
        # renewal are stopped and awaited in `stop`, which the caller's `async with`
        # (RunEvents) always reaches.
        driver = EngineDriver(self._drive(), lambda: self.committing)
        self.outbox.attach(driver)
        self._driver = driver
        self._renewal = _Renewal(self, driver)

    async def stop(self) -> None:
        """Stop the driver (if still running; once the step it commits, if any, landed or
        failed) and the renewal, and wait for both."""
        driver, renewal = self._driver, self._renewal
        if driver is None:
            return
        self.stop_asked = True
        if not driver.done() and not self.committing:
            # Not while a step is being committed: cancelled half way, the commit may land
            # in the database all the same, unknown to the run (whose seal, after an abort,
            # would then be refused as stale). The step's commit ends, is recorded, and
            # cancels the driver then (`_commit`).
            driver.cancel()
        if renewal is not None:
            await renewal.stop()
        await driver.ended()
        self._let_go()

    def _let_go(self) -> None:
        """Cut the run's reference cycles once its engine has ended (a seal still lands).

        The run points at its context, driver, renewal and outbox, and each of them back
        at the run (its methods, or the driver's check of `committing`): cycles, which
        only the garbage collector frees. Some fifty objects a call waited for it, and
        its passes over everything young to find them were ~1% of a server's
        instructions per request (callgrind, `bench/http_profile.py`). Cut, reference
        counting frees the run and all it holds as soon as its caller lets it go, and
        a server serving HITL runs collects no more (none in 1,845 requests, where
        there was one every ~74).
        """
        self._driver = None
        self._renewal = None
        self.outbox.detach()
        invocation = self.invocation
        invocation.commit = _run_ended
        invocation.stream_partial = _run_ended
        invocation.land_held = None

    async def _drive(self) -> None:
        pool = self.invocation.current_run_config.tool_thread_pool_config
        if pool is not None:
            bound_run_threads(pool.max_workers)
        if not is_tracing():
            await self._run_to_a_stop()
            return
        with invocation_span(self._span_attributes()) as traced:
            if traced is not None:
                self.invocation.tracer = traced[1]
            try:
                await self._run_to_a_stop()
            finally:
                if traced is not None:
                    self._end_span(traced[0])

    async def _run_to_a_stop(self) -> None:
        try:
            if not await self._ended_by_plugin():
                await self._execute_root()
                await self._finish()
        except NodeRunFailedError as failure:
            self.error = failure.error
            if self.landed_error != str(failure):  # not landed with the root's failure
                await self._land(
                    StepParts(), lambda: None, status=InvocationStatus.FAILED, error=str(failure)
                )
        except Exception as broken:
            # The store failed (or the lease was lost): nothing more can be recorded, so
            # the invocation stays as its last commit left it, resumable by its id.
            self.error = _cause(broken)
        finally:
            try:
                await self._tell_plugins()
            except Exception as broken:
                # A plugin's failure is the caller's once it read the run's events, as the
                # reference raises it (unless the run failed first: that error stands).
                if self.error is None:
                    self.error = broken
            finally:
                self.outbox.close()  # else the caller's stream would wait for good

    async def _ended_by_plugin(self) -> bool:
        """A plugin's before-run reply ends the run: it lands as the run's last event."""
        plugins = self.settings.plugins
        reply = await plugins.before_run(self.invocation) if plugins else None
        if reply is None:
            return False
        event = Event(invocation_id=self.plan.invocation_id, author="model", content=reply)
        await self._land(
            StepParts(events=(event,)), lambda: None, status=InvocationStatus.COMPLETED
        )
        return True

    async def _tell_plugins(self) -> None:
        plugins = self.settings.plugins
        if not plugins:
            return
        error = self.error
        if isinstance(error, Exception):
            await plugins.on_run_error(self.invocation, error)
        else:
            await plugins.after_run(self.invocation)

    def _span_attributes(self) -> dict[str, str]:
        key = self.plan.key
        return {
            "baton.app": key.app_name,
            "baton.user": key.user_id,
            "baton.session": key.session_id,
            "baton.invocation": self.plan.invocation_id,
            "baton.call": self.plan.kind.value,
        }

    def _end_span(self, span: Span) -> None:
        status = _STATUS_OF.get(self.root.status, InvocationStatus.RUNNING)
        end_invocation_span(span, status.value, self.error)

    async def _execute_root(self) -> None:
        root_node = self.settings.root
        decision = wants_execution(root_node, self.root)
        if decision is True:
            await execute_run(root_node, self.root, self.invocation, self._root_finished)
        elif decision is None:
            await complete_with_answers(root_node, self.root, self.invocation, self._root_finished)

    def _root_finished(self, root: RunRecord) -> None:
        """Called inside the root run's last step: that step lands the invocation's status
        (and a failure's text, as the failure is reported)."""
        self.final_status = _STATUS_OF.get(root.status)
        if root.status is RunStatus.FAILED:
            self.final_error = failure_text(root)

    async def _finish(self) -> None:
        if self.status_landed:
            return
        # The root did not run (e.g. continuing a paused run with nothing answered).
        status = _STATUS_OF.get(self.root.status, InvocationStatus.RUNNING)
        await self._land(StepParts(), lambda: None, status=status)

    async def seal_aborted(self) -> Event | None:
        """Seal a run its caller aborted, once stopped: one event with the reference's
        `INVOCATION_ABORTED` code lands with the invocation failed, so no worker continues
        it; `run_async(invocation_id=...)` still does, re-running the interrupted node.
        None when the run had ended (or paused) before the abort took effect."""
        if self.status_landed or self.released:
            return None
        event = Event(
            invocation_id=self.plan.invocation_id,
            author=self.settings.root.name,
            error_code=ABORTED_CODE,
            error_message=ABORTED_MESSAGE,
        )
        await self._land(
            StepParts(events=(event,)),
            lambda: None,
            status=InvocationStatus.FAILED,
            error=ABORTED_MESSAGE,
        )
        return event

    def lost_lease(self, error: InvocationBusyError) -> None:
        self.error = error
        self.outbox.close()


class RunEvents:
    """An invocation run's events as its caller is shown them, in commit order.

    `async with` starts the run and, on the way out (the events read, the caller's
    stream closed, or the caller cancelled), stops it; `async for` reads the events,
    and raises the run's error, if any, after the last one.

    Speed: an iterator of its own, read by the Runner's `run_async` directly, not an
    async generator inside that one: one generator layer fewer on every event.
    """

    def __init__(self, run: InvocationRun, yield_user_message: bool) -> None:
        self._run = run
        self._yield_user_message = yield_user_message
        self._resumable = run.settings.is_resumable
        self._private = run.invocation.private_checkpoints  # added to, never replaced

    async def __aenter__(self) -> RunEvents:
        self._run.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._run.stop()

    def __aiter__(self) -> RunEvents:
        return self

    async def __anext__(self) -> Event:
        run = self._run
        while (item := await run.outbox.get()) is not None:
            if item is run.user_event and not self._yield_user_message:
                continue
            shown = _shown(item, resumable=self._resumable, private=self._private)
            if shown is not None:
                return shown
        if run.error is not None:
            raise run.error
        raise StopAsyncIteration


_RETRY_FIRST: Final = 0.1
_RETRY_MOST: Final = 2.0


_Held: TypeAlias = tuple[StepParts, InvocationStatus | None, str | None]


def _reopens(held: StepParts, parts: StepParts) -> bool:
    """Whether `parts` asks again a question the held step answers."""
    if not held.answered or not parts.opened:
        return False
    answered = {interrupt_id for interrupt_id, _ in held.answered}
    return any(row.interrupt_id in answered for row in parts.opened)


def _joined(
    held: _Held, parts: StepParts, status: InvocationStatus | None, answered_by: str | None
) -> _Held:
    """The held step followed by `parts`, as one step."""
    first, held_status, held_by = held
    joined = StepParts(
        events=first.events + parts.events,
        state_delta={**first.state_delta, **parts.state_delta},
        opened=first.opened + parts.opened,
        answered=first.answered + parts.answered,
        private_answers=first.private_answers | parts.private_answers,
        joinable=parts.joinable,
    )
    return joined, status or held_status, held_by or answered_by


def _add_metadata(events: Iterable[Event], metadata: dict[str, JsonValue]) -> None:
    """The call's custom metadata under each event's own (whose keys win)."""
    for event in events:
        event.custom_metadata = {**metadata, **(event.custom_metadata or {})}


def _cause(error: Exception) -> Exception:
    """The error to report for a run that could not go on: a lost lease or an unreachable
    database wrapped in task groups' exception groups comes out as itself."""
    return run_stopper(error) or error


class _EventReads:
    """What a run's context reads of the store: the session's events, the newest of
    them, and the invocation's own."""

    __slots__ = ("_claimed", "_invocation_id", "_key", "_store", "committed")

    def __init__(self, store: Store, plan: RunPlan) -> None:
        self._store = store
        self._key = plan.key
        self._invocation_id = plan.invocation_id
        self._claimed = plan.claimed_events
        # The events this call committed, when the claim read the invocation's earlier
        # ones (`invocation_events`).
        self.committed: list[Event] = []

    async def history(self) -> list[Event]:
        session = await self._store.get_session(self._key)
        return live_events(session.events) if session else []

    async def invocation_events(self) -> list[Event]:
        # A running invocation is not rewound: all of its events are live.
        claimed = self._claimed
        if claimed is None:
            return await self._store.list_events(self._key, self._invocation_id)
        # Read with the claim, and nobody else writes the invocation while this call
        # holds it: those, then the ones this call committed since.
        return [*claimed(), *self.committed]

    async def recent_events(self, limit: int) -> list[Event]:
        session = await self._store.get_session(self._key, event_limit=limit)
        events = session.events if session else []
        if any(e.actions.rewind_before_invocation_id for e in events):
            # A rewind among them annuls events before it, maybe older than these: the
            # live ones are known from the whole history. (An older rewind annuls only
            # older events.)
            return (await self.history())[-limit:]
        return events


async def _run_ended(*_: object) -> None:
    """A context's `commit` and `stream_partial` once its run has ended."""
    raise RuntimeError(
        "this invocation's run has ended: nothing more can be committed or streamed "
        "through its context"
    )


# The invocations whose runs keep their leases in this process, by renewal (a run each,
# so two runs of one invocation, one fenced out, are two entries). One dict operation as a
# run starts and one as it stops, each atomic under the GIL (a sync Runner's loop thread).
_HELD: Final[dict[object, str]] = {}


def held_here() -> frozenset[str]:
    """The invocations runs of this process hold: each stays in until its run stops, even
    when its lease lapsed meanwhile (renewals stalled). A worker of this process claims
    none of them: that would run it a second time here."""
    return frozenset(_HELD.values())


class _Renewal:
    """Renews the run's lease every third of its time to live, from a timer.

    A timer, not a sleeping task: most calls end long before the first renewal, and
    a timer costs nothing to cancel. A renewal that finds the lease taken stops the
    run; one that fails otherwise (the store is briefly unreachable) is retried at
    the next tick, while the lease is still valid.
    """

    def __init__(self, run: InvocationRun, driver: EngineDriver) -> None:
        self._run = run
        self._driver = driver
        self._interval = run.settings.lease_ttl.total_seconds() / 3
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        _HELD[self] = run.lease.invocation_id
        self._schedule()

    def _schedule(self) -> None:
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self._interval, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._task = asyncio.create_task(self._renew())

    async def _renew(self) -> None:
        run = self._run
        try:
            run.lease = await run.store.renew(run.lease, run.settings.lease_ttl)
        except InvocationBusyError as lost:
            self._driver.cancel()
            run.lost_lease(lost)
            return
        except Exception:  # the store hiccupped: the lease still holds; try again next tick
            pass
        self._schedule()

    async def stop(self) -> None:
        _HELD.pop(self, None)
        if self._timer is not None:
            self._timer.cancel()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


@types.coroutine
def _pass_nothing() -> Generator[None, None, None]:
    """Done as soon as awaited: a hand-over with nothing to wait for."""
    return
    yield  # a generator, so that `types.coroutine` makes it awaitable


@types.coroutine
def _pass_turn() -> Generator[None, None, None]:
    """Let every other ready task run once, as `asyncio.sleep(0)` does (its own bare
    yield), without the `sleep` coroutine around it: one frame fewer on every step."""
    yield


class _Outbox:
    """Events on their way from the driver task to the caller, in commit order.

    Once the caller's stream is attached, a step that put events waits in
    `handed_over` until the caller has taken them all and asked for the next one:
    the run never runs ahead of its caller (back-pressure), and a caller that closes
    the stream finds the run at a step boundary. An asyncio.Queue would do, at
    several times the cost per event: a step puts its events in one call.
    """

    def __init__(self) -> None:
        self._items: deque[Event] = deque()
        self._closed = False
        self._attached = False
        self._waiter: asyncio.Future[None] | None = None  # the caller, waiting for events
        self._polling = False  # the caller asked for more and looks again next iteration
        self._taken: list[asyncio.Future[None]] = []  # steps, waiting for the caller
        self._driver: EngineDriver | None = None  # steps the engine in the caller's task

    def attach(self, driver: EngineDriver) -> None:
        """A caller reads from now on: steps wait for it to take their events; while
        `driver` runs the engine in the caller's task, a read steps it."""
        self._attached = True
        self._driver = driver

    def detach(self) -> None:
        """The driver has ended: forget it (see `InvocationRun._let_go`)."""
        self._driver = None

    def put_all(self, events: Iterable[Event]) -> None:
        self._items.extend(events)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> None:
        """No more events: `get` returns None once the buffer is drained."""
        self._closed = True
        self.put_all(())
        self._release()

    def handed_over(self) -> Awaitable[None]:
        """Await the result to wait until the caller has taken every buffered event and
        asked for more.

        Speed: not a coroutine of its own. In the caller's task (the common case) the
        engine awaits `park` itself: a frame fewer to make on every step, and for the
        step's hand-over to pass through twice.
        """
        if not self._attached or self._closed or not self._items:
            return _pass_nothing()
        if parks():
            return park()  # in the caller's task: back when the caller asks for more
        return self._taken_by_caller()

    async def _taken_by_caller(self) -> None:
        """Wait, in a task of the engine's own, until the caller has taken every buffered
        event and asked for more."""
        # Speed: one bare yield first. `put_all` already scheduled a waiting caller, so it
        # runs ahead of this step in the next loop iteration; when it has taken everything
        # and waits again by then (the common case), the step goes on in that same
        # iteration, where a future would cost another one (~4 us a step).
        await _pass_turn()
        if self._closed or (not self._items and (self._waiter is not None or self._polling)):
            return
        # A future per waiting step: cancelling one step (a failed sibling) leaves the others.
        taken = asyncio.get_running_loop().create_future()
        self._taken.append(taken)
        await taken

    async def get(self) -> Event | None:
        driver = self._driver
        if not self._items and driver is not None and driver.task is None and not driver.done():
            # The caller asks for more: the engine goes on, here, to the next hand-over.
            waiting = driver.advance()
            if waiting is not None:
                await waiting
        if not self._items and not self._closed:
            self._release()  # the caller asks for more: whatever it was given is taken
            # Speed: one bare yield before a future, as `handed_over` does. The step that
            # handed its events over resumes in this loop iteration, finds them taken and
            # runs the next node, whose events are here by the next iteration (the common
            # case): no future to make, wait on and resolve per event (~3% of a step).
            self._polling = True
            try:
                await _pass_turn()
            finally:
                self._polling = False
        while not self._items:
            self._release()  # the caller asks for more: whatever it was given is taken
            if self._closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()

    def _release(self) -> None:
        if not self._taken:
            return
        waiting, self._taken = self._taken, []
        for taken in waiting:
            if not taken.done():
                taken.set_result(None)
