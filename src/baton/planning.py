"""Checking a `run_async` call before anything changes: what it does, and to what.

A call starts a run, answers open interrupts, or continues an invocation. Each
answer is matched to an open interrupt through the index (never a scan of the
session's history) and validated against its schema; an unknown session,
invocation or interrupt, a second answer, a malformed message, a finished run or
one that only waits for answers is refused here, so a refused call leaves the
store exactly as it was.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import cast, final

from pydantic import JsonValue

from baton.answers import unwrap_response, validate_answer
from baton.errors import (
    AlreadyAnsweredError,
    InputExpiredError,
    InvalidMessageError,
    InvocationFinishedError,
    InvocationNotFoundError,
    InvocationRewoundError,
    InvocationWaitingError,
    NotAssigneeError,
    SessionExistsError,
    SessionNotFoundError,
    StoreUnavailableError,
    UnknownInterruptError,
)
from baton.events import (
    ONE_ANSWER_FUNCTIONS,
    REQUEST_INPUT_FUNCTION,
    TASK_REPLY_FUNCTION,
    task_reply,
)
from baton.invocation import PlanKind, RunPlan
from baton.sessions.ids import check_depth, check_id, check_key, check_text
from baton.sessions.store import (
    TIMEOUT_ANSWERER,
    AnswerClaim,
    Clock,
    Interrupt,
    InterruptStatus,
    Invocation,
    InvocationStatus,
    Lease,
    Session,
    SessionKey,
    Store,
    busy_error,
)
from baton.types import Content, FunctionResponse, InterruptId, InvocationId, Part, SessionId

__all__ = ["CallPlanner"]


@final
class CallPlanner:
    """Turns a call into a checked `RunPlan` for one app's runner.

    Args:
        store: the runner's store.
        app_name: the app whose sessions the calls name.
        auto_create_session: create a missing session instead of refusing the call.
        clock: seconds since the epoch, to tell whether a question's deadline passed.
        takes_replies: the app may run task agents (it has one, or a node whose code
            gets `ctx` and may run one with `ctx.run_node`), whose questions a user's
            next message answers (see `baton.agents.task`). A message with text or media
            then reads the session's open task questions with the session itself.
        reads_own_events: a resumed run may read its invocation's events (the app has an
            agent, which learns from them how far its run got): an answer's claim then
            asks for them, which a store may read with it (`AnswerClaim.with_events`).
        fingerprint: the workflow fingerprint runs resume under (the runner's), which an
            answer's claim names (`AnswerClaim.fingerprint`).
    """

    def __init__(
        self,
        store: Store,
        *,
        app_name: str,
        auto_create_session: bool,
        clock: Clock = time.time,
        takes_replies: bool = False,
        reads_own_events: bool = True,
        fingerprint: str | None = None,
    ) -> None:
        self.store = store
        self.app_name = app_name
        self.auto_create_session = auto_create_session
        self.clock = clock
        self.takes_replies = takes_replies
        self.reads_own_events = reads_own_events
        self.fingerprint = fingerprint

    def session_key(
        self, user_id: str | None, session_id: str | None, session: Session | None
    ) -> SessionKey:
        """The session a call names, by ids or by the session itself.

        Raises:
            InvalidMessageError: neither given, or the two disagree.
            InvalidIdError: an id is too long or holds control characters.
        """
        if session is not None:
            if session.app_name != self.app_name:
                raise InvalidMessageError(
                    f"session '{session.id}' belongs to app '{session.app_name}', but this "
                    f"runner serves '{self.app_name}'; use that app's runner."
                )
            given = {"user_id": (user_id, session.user_id), "session_id": (session_id, session.id)}
            for name, (value, own) in given.items():
                if value is not None and value != own:
                    raise InvalidMessageError(
                        f"{name} '{value}' contradicts session= (whose {name} is '{own}'); "
                        "pass one or the other."
                    )
            check_key(session.key)
            return session.key
        if user_id is None or session_id is None:
            raise InvalidMessageError(
                "run_async needs user_id= and session_id= (or session=) to know which "
                "session to run in."
            )
        key = SessionKey(self.app_name, user_id, SessionId(session_id))
        check_key(key)
        return key

    async def plan(
        self,
        key: SessionKey,
        message: Content | None,
        invocation_id: str | None,
        state_delta: dict[str, JsonValue],
        occurrences: Mapping[str, str] | None = None,
        answered_by: str | None = None,
        *,
        owner: str,
        ttl: timedelta,
    ) -> RunPlan:
        """What the call does (start, answer, continue), checked; nothing is written,
        except that an answer's checks claim its invocation for `owner` (for `ttl`) when
        they find it answerable (`RunPlan.claimed`); refused, it claims nothing.

        `occurrences` (interrupt id -> the occurrence the caller saw) makes an answer
        answer only that asking of its question: once it was answered and asked again,
        the answer is refused with AlreadyAnsweredError instead of answering the new one.
        A question with an assignee is answered only `answered_by` that user
        (NotAssigneeError otherwise).

        Raises:
            the refusals of `Runner.run_async` that need neither the lease nor the
            checkpoint (InvocationBusyError only for an answer whose run is executing
            right now; the lease claim and the fingerprint check come after).
        """
        _check_call(message, invocation_id, state_delta)
        responses = message.function_responses if message else []
        if responses:
            assert message is not None
            _check_answer_parts(message)
            answering = _Answering(occurrences or {}, answered_by, {})
            claim = answering.claim(
                responses[0],
                invocation_id,
                owner,
                ttl,
                with_events=self.reads_own_events,
                fingerprint=self.fingerprint,
            )
            return await self._plan_claimed(
                key, message, invocation_id, state_delta, answering, claim
            )
        if self.takes_replies and message is not None and task_reply(message):
            found, reply = await self._session_and_waiting_task(key, invocation_id)
            if reply is not None:
                return _reply_plan(
                    key, found or self._missing_session(key), message, reply, state_delta
                )
        else:
            found = await self.store.get_session(key, with_events=False)
        session = found or self._missing_session(key)
        if invocation_id:
            invocation = await self.existing(key, InvocationId(invocation_id))
            await self._fail_if_waiting(invocation)
            return RunPlan(
                PlanKind.CONTINUE,
                key,
                session,
                InvocationId(invocation.id),
                message=message if message is not None and message.parts else None,
                state_delta=state_delta,
            )
        new_id = InvocationId(f"e-{uuid.uuid4()}")
        return RunPlan(
            PlanKind.START,
            key,
            session,
            new_id,
            message=message,
            state_delta=state_delta,
            creates_session=found is None,
        )

    async def _plan_claimed(
        self,
        key: SessionKey,
        message: Content,
        invocation_id: str | None,
        state_delta: dict[str, JsonValue],
        answering: _Answering,
        claim: AnswerClaim,
    ) -> RunPlan:
        """The plan of an answer, checked, with the claim its checks' read took (if it
        took one); a claim whose answer the checks then refuse is released."""
        # The session and the first answer's question read together, with the claim of
        # its invocation when the rows let the answer through (one round trip).
        found = await self.store.claim_answering(key, claim)
        answering.read[claim.interrupt_id] = found.interrupts
        try:
            plan = await self._plan_answers(
                key,
                found.session or self._missing_session(key),
                message,
                invocation_id,
                state_delta,
                answering,
                found.claimed,
            )
        except BaseException:
            if found.claimed is not None:
                await self._release(found.claimed[0])
            raise
        # One open row let the answer through, so the plan's invocation is the claimed one.
        assert found.claimed is None or found.claimed[0].invocation_id == plan.invocation_id
        if found.claimed is not None and found.events is not None:
            return replace(plan, claimed_events=found.events)
        return plan

    async def _release(self, lease: Lease) -> None:
        # When the database cannot be reached, the lease lapses by itself.
        with suppress(StoreUnavailableError):
            await self.store.release(lease)

    async def _session(self, key: SessionKey) -> Session:
        session = await self.store.get_session(key, with_events=False)
        return session or self._missing_session(key)

    def _missing_session(self, key: SessionKey) -> Session:
        """The session a call names that does not exist, when the runner auto-creates
        sessions: as it will be, not stored (see `create_session`); the checks of a call
        that cannot start a run in it (an answer, a continue) refuse it as in an empty
        session, with nothing created. Without auto-creation, SessionNotFoundError."""
        if self.auto_create_session:
            return Session(id=key.session_id, app_name=key.app_name, user_id=key.user_id)
        raise SessionNotFoundError(
            f"session '{key.session_id}' of user '{key.user_id}' does not exist in app "
            f"'{key.app_name}'; create it first (session_service.create_session)."
        )

    async def create_session(self, plan: RunPlan) -> RunPlan:
        """The plan with the session it creates (`RunPlan.creates_session`) stored, holding
        the app's and the user's shared state as any new session of theirs. One a
        concurrent call created meanwhile is taken as it is, and is not this call's."""
        key = plan.key
        try:
            session = await self.store.create_session(
                key.app_name, key.user_id, session_id=key.session_id
            )
        except SessionExistsError:
            return replace(plan, session=await self._session(key), creates_session=False)
        return replace(plan, session=session)

    async def forget_session(self, plan: RunPlan) -> None:
        """Delete the session `create_session` stored for a call refused after it, so the
        refusal leaves nothing; kept once it holds an event (a concurrent call naming it
        began a run there)."""
        found = await self.store.get_session(plan.key, event_limit=1)
        if found is not None and not found.events:
            await self.store.delete_session(plan.key)

    async def existing(self, key: SessionKey, invocation_id: InvocationId) -> Invocation:
        """The invocation, unless it is unknown or already completed (each refused)."""
        invocation = await self.store.load_invocation(key, invocation_id)
        if invocation is None:
            raise InvocationNotFoundError(
                f"invocation '{invocation_id}' does not exist in session '{key.session_id}'; "
                "check the id (it is on every event as invocationId)."
            )
        return self.resumable(invocation)

    @staticmethod
    def resumable(invocation: Invocation) -> Invocation:
        """The invocation, unless it was rewound or already completed (each refused)."""
        invocation_id = invocation.id
        if invocation.status is InvocationStatus.REWOUND:
            raise InvocationRewoundError(
                f"invocation '{invocation_id}' was rewound; it can be neither answered nor "
                "continued. Send a new message to start a new run."
            )
        if invocation.status == InvocationStatus.COMPLETED:
            raise InvocationFinishedError(
                f"invocation '{invocation_id}' already completed; there is nothing to resume. "
                "Send a new message to start a new run."
            )
        return invocation

    async def _session_and_waiting_task(
        self, key: SessionKey, invocation_id: str | None
    ) -> tuple[Session | None, Interrupt | None]:
        """The session (None when there is none), and the newest task agent's question open
        in it (in `invocation_id`, when given): a text message is the user's reply to it.
        One read."""
        session, rows = await self.store.find_asking(key, TASK_REPLY_FUNCTION)
        if invocation_id:
            rows = [r for r in rows if r.invocation_id == invocation_id]
        waiting = max(rows, key=lambda r: r.created_at, default=None)
        return session, waiting

    async def _fail_if_waiting(self, invocation: Invocation) -> None:
        """Refuse to continue an invocation that has nothing to run until it is answered."""
        if invocation.status != InvocationStatus.PAUSED:
            return
        key = SessionKey(invocation.app_name, invocation.user_id, SessionId(invocation.session_id))
        rows = await self.store.list_interrupts(
            key.app_name,
            key.user_id,
            session_id=key.session_id,
            invocation_id=InvocationId(invocation.id),
        )
        listed = ", ".join(f"'{r.interrupt_id}'" for r in rows) or "none"
        if any(r.function_name == TASK_REPLY_FUNCTION for r in rows):
            raise InvocationWaitingError(
                f"invocation '{invocation.id}' is waiting for the user's reply to a task "
                f"agent's question ({listed}); send the user's reply as a new message."
            )
        raise InvocationWaitingError(
            f"invocation '{invocation.id}' is waiting for answers to its interrupts ({listed}); "
            "nothing runs until one is answered. Send a function response whose id is an "
            "open interrupt id."
        )

    async def _plan_answers(
        self,
        key: SessionKey,
        session: Session,
        message: Content,
        invocation_id: str | None,
        state_delta: dict[str, JsonValue],
        answering: _Answering,
        claimed: tuple[Lease, Invocation] | None,
    ) -> RunPlan:
        """The plan of the answers in `message`, with what their checks' read `claimed`."""
        answers: list[tuple[Interrupt, JsonValue]] = []
        continuing: set[str] = set()
        for response in message.function_responses:
            assert response.id  # _check_answer_parts
            row = await self._open_interrupt(
                key, InterruptId(response.id), invocation_id, answering.read.pop(response.id, None)
            )
            _check_occurrence(row, answering.occurrences.get(response.id))
            _check_assignee(row, answering.answered_by)
            if response.will_continue:
                _check_progress(row)
                continuing.add(row.interrupt_id)
            answers.append((row, validate_answer(row, unwrap_response(response.response))))
        owners = sorted({row.invocation_id for row, _ in answers})
        if len(owners) > 1:
            raise InvalidMessageError(
                f"the answers belong to several invocations ({', '.join(owners)}); answer each "
                "invocation in its own message."
            )
        return RunPlan(
            PlanKind.ANSWER,
            key,
            session,
            InvocationId(owners[0]),
            message=_as_reply(answers) or _named(message, answers),
            answers=tuple(answers),
            state_delta=state_delta,
            continuing=frozenset(continuing),
            claimed=claimed,
        )

    async def _open_interrupt(
        self,
        key: SessionKey,
        interrupt_id: InterruptId,
        invocation_id: str | None,
        rows: list[Interrupt] | None = None,
    ) -> Interrupt:
        """The open row `interrupt_id` answers (`rows`: its rows, when already read)."""
        if rows is None:
            rows = await self.store.find_interrupts(key, interrupt_id)
        if invocation_id:
            rows = [r for r in rows if r.invocation_id == invocation_id]
            if not rows:
                await self.existing(key, InvocationId(invocation_id))
        open_rows = [r for r in rows if r.status == InterruptStatus.OPEN]
        if len(open_rows) == 1:
            self._fail_if_expired(open_rows[0])
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
        latest = max(rows, key=lambda r: r.created_at, default=None)
        if latest is not None and latest.status is InterruptStatus.REWOUND:
            raise InvocationRewoundError(
                f"interrupt '{interrupt_id}' belongs to invocation '{latest.invocation_id}', "
                f"which was rewound; nothing was changed. Open interrupts in this session: "
                f"{listed}."
            )
        if rows:
            self._fail_if_expired(rows[0])
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
        held = await self.store.holder(invocation_id)
        if held is not None:
            raise busy_error(invocation_id, held.owner, held.expires_at, self.clock())

    def _fail_if_expired(self, row: Interrupt) -> None:
        """Refuse a person's answer to a question whose deadline passed."""
        expired = row.expires_at is not None and (
            row.answered_by == TIMEOUT_ANSWERER
            or (row.status is InterruptStatus.OPEN and row.expires_at <= self.clock())
        )
        if not expired:
            return
        assert row.expires_at is not None  # checked above
        when = datetime.fromtimestamp(row.expires_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        outcome = (
            "it is answered with its on_timeout answer (a failed invocation's once it is "
            "continued)"
            if row.answers_on_timeout
            else "its run fails with InputTimeoutError (continue the invocation to ask again)"
        )
        raise InputExpiredError(
            f"interrupt '{row.interrupt_id}' of invocation '{row.invocation_id}' expired at "
            f"{when}: {outcome}. Your answer was not recorded; nothing was changed."
        )

    async def continuing(self, key: SessionKey, invocation_id: InvocationId) -> RunPlan | None:
        """The plan of a recovery: continue the invocation (None when it no longer runs)."""
        invocation = await self.store.load_invocation(key, invocation_id)
        if invocation is None or invocation.status is not InvocationStatus.RUNNING:
            return None
        session = await self._session(key)
        return RunPlan(PlanKind.CONTINUE, key, session, invocation_id)

    async def expiring(self, row: Interrupt) -> RunPlan | None:
        """The plan that ends a question whose deadline passed: its `on_timeout` answer, or
        the failure of the node that asked (None when it was answered meanwhile)."""
        key = SessionKey(row.app_name, row.user_id, SessionId(row.session_id))
        rows = await self.store.find_interrupts(key, InterruptId(row.interrupt_id))
        current = next(
            (
                r
                for r in rows
                if r.invocation_id == row.invocation_id and r.status is InterruptStatus.OPEN
            ),
            None,
        )
        if current is None or current.expires_at is None or current.expires_at > self.clock():
            return None
        session = await self._session(key)
        invocation_id = InvocationId(current.invocation_id)
        if not current.answers_on_timeout:
            answers = ((current, cast(JsonValue, None)),)
            return RunPlan(PlanKind.EXPIRE, key, session, invocation_id, answers=answers)
        response = FunctionResponse(
            id=current.interrupt_id,
            name=current.function_name,
            response={"result": current.on_timeout},
        )
        message = Content(role="user", parts=[Part(function_response=response)])
        answers = ((current, current.on_timeout),)
        return RunPlan(
            PlanKind.ANSWER, key, session, invocation_id, message=message, answers=answers
        )


def _reply_plan(
    key: SessionKey,
    session: Session,
    message: Content,
    row: Interrupt,
    state_delta: dict[str, JsonValue],
) -> RunPlan:
    """The plan of a message that answers a task agent's question: the message is
    recorded as it is (the agent sees a user turn), and answers the question."""
    return RunPlan(
        PlanKind.ANSWER,
        key,
        session,
        InvocationId(row.invocation_id),
        message=message,
        answers=((row, task_reply(message)),),
        state_delta=state_delta,
    )


def _as_reply(answers: list[tuple[Interrupt, JsonValue]]) -> Content | None:
    """An answer to a task agent's question as the user's message (the agent sees a user
    turn); None when no answer is one.

    Raises:
        InvalidMessageError: the message answers other questions too.
    """
    replies = [value for row, value in answers if row.function_name == TASK_REPLY_FUNCTION]
    if not replies:
        return None
    if len(answers) > 1:
        listed = ", ".join(f"'{row.interrupt_id}'" for row, _ in answers)
        raise InvalidMessageError(
            f"the answers ({listed}) include a reply to a task agent's question; send that "
            "reply in a message of its own."
        )
    return Content(role="user", parts=[Part(text=str(replies[0]))])


def _named(message: Content, answers: list[tuple[Interrupt, JsonValue]]) -> Content:
    """The message, with each function response that has no name named after the
    function of the question it answers (`Runner.answer` leaves them for this)."""
    if all(response.name for response in message.function_responses):
        return message
    functions = {row.interrupt_id: row.function_name for row, _ in answers}
    # A new message sharing the caller's unchanged parts, not a deep copy of it: copying
    # every nested value cost more than the rest of planning an answer.
    parts = [_part_named(part, functions) for part in message.parts or []]
    return message.model_copy(update={"parts": parts})


def _part_named(part: Part, functions: Mapping[str, str]) -> Part:
    """`part`, or a copy whose function response is named after its question's function."""
    response = part.function_response
    if response is None or response.name or response.id is None:
        return part
    name = functions.get(response.id) or REQUEST_INPUT_FUNCTION
    return part.model_copy(update={"function_response": response.model_copy(update={"name": name})})


@dataclass(frozen=True)
class _Answering:
    """What a caller says about its answers: the occurrences it saw, and who it is;
    and the index rows already read for some of them (by interrupt id)."""

    occurrences: Mapping[str, str]
    answered_by: str | None
    read: dict[str, list[Interrupt]]

    def claim(
        self,
        first: FunctionResponse,
        invocation_id: str | None,
        owner: str,
        ttl: timedelta,
        *,
        with_events: bool,
        fingerprint: str | None,
    ) -> AnswerClaim:
        """The claim the read of the `first` answer's question takes, if it passes."""
        interrupt_id = first.id or ""
        return AnswerClaim(
            InterruptId(interrupt_id),
            owner,
            ttl,
            invocation_id=InvocationId(invocation_id) if invocation_id else None,
            occurrence=self.occurrences.get(interrupt_id),
            answered_by=self.answered_by,
            progress=bool(first.will_continue),
            with_events=with_events,
            fingerprint=fingerprint,
        )


def _check_answer_parts(message: Content) -> None:
    """Refuse a message of answers that also holds other parts, or an answer without id.

    Raises:
        InvalidMessageError: saying which.
    """
    if any(p.function_response is None for p in message.parts or []):
        raise InvalidMessageError(
            "a message cannot mix function responses with text or other parts; send the "
            "answers in one message and any text in another."
        )
    for response in message.function_responses:
        if not response.id:
            raise InvalidMessageError(
                f"function response '{response.name}' has no id; set it to the id of the "
                "function call it answers (the interrupt id)."
            )


def _check_progress(row: Interrupt) -> None:
    """Refuse `will_continue` for anything but an agent's long-running tool call.

    Raises:
        InvalidMessageError: the interrupt is a question, a confirmation or a credential
            request, which one answer settles.
    """
    if row.function_name in ONE_ANSWER_FUNCTIONS:
        raise InvalidMessageError(
            f"interrupt '{row.interrupt_id}' ({row.function_name}) takes one answer; "
            "will_continue (a progress update, more responses to follow) is for a "
            "long-running tool's call. Send the answer without will_continue."
        )


def _check_assignee(row: Interrupt, answered_by: str | None) -> None:
    """Refuse an answer to an assigned question from anyone but its assignee."""
    if row.assignee is None or answered_by == row.assignee:
        return
    given = f"as '{answered_by}'" if answered_by else "without answered_by"
    raise NotAssigneeError(
        f"interrupt '{row.interrupt_id}' of session '{row.session_id}' is assigned to "
        f"'{row.assignee}', and only they may answer it (this answer was given {given}); "
        f"nothing was changed. Answer as '{row.assignee}' (their API key, or "
        f"Runner.answer(..., answered_by='{row.assignee}'))."
    )


def _check_occurrence(row: Interrupt, seen: str | None) -> None:
    """Refuse an answer meant for an earlier asking of the question open now."""
    if seen is None or seen == row.occurrence:
        return
    raise AlreadyAnsweredError(
        f"interrupt '{row.interrupt_id}' was answered in the occurrence you answered ('{seen}') "
        f"and has been asked again since (occurrence '{row.occurrence}', by "
        f"'{row.node_path}'); nothing was changed. Read the question again and answer the "
        "open occurrence."
    )


def _check_call(
    message: Content | None, invocation_id: str | None, state_delta: dict[str, JsonValue]
) -> None:
    """Refuse ids, text and JSON no backend can store, before anything is read or written.

    Raises:
        InvalidIdError: the invocation id or an answered interrupt's id breaks a rule.
        InvalidMessageError: a text part holds NUL, or a value nests too deep.
    """
    if invocation_id:
        check_id("invocation_id", invocation_id)
    check_depth("state_delta", state_delta)
    for index, part in enumerate(message.parts or [] if message else []):
        if part.text is not None:
            check_text(f"new_message.parts[{index}].text", part.text)
        answer = part.function_response
        if answer is not None:
            where = f"new_message.parts[{index}].function_response"
            if answer.id is not None:
                check_id(f"{where}.id", answer.id)
            check_depth(f"{where}.response", answer.response)
