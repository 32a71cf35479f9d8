"""Notifications: what a step commit tells the outside world, recorded in its transaction.

A step that opens a question, answers one (a person, or its deadline) or ends a run,
and a rewind, records one notification per such change in the store's outbox,
atomically with the change itself: a crash never loses a notification of something that
happened, nor records one of something that did not. A `Notifier` (see `baton.notifier`) delivers
them later, in order, at least once, each with its own id for deduplication.
"""

from __future__ import annotations

import enum
from typing import Any

from pydantic import JsonValue

from baton.events import Event, new_event_id
from baton.sessions.store import (
    TIMEOUT_ANSWERER,
    InterruptStatus,
    InvocationStatus,
    Notification,
    StepCommit,
    ends_run,
)

__all__ = ["NotificationKind", "may_notify", "notifications_of"]


class NotificationKind(enum.StrEnum):
    QUESTION_OPENED = "question.opened"
    QUESTION_ANSWERED = "question.answered"
    QUESTION_EXPIRED = "question.expired"
    RUN_COMPLETED = "run.completed"
    RUN_FAILED = "run.failed"
    SESSION_REWOUND = "session.rewound"


_FINAL = {
    InvocationStatus.COMPLETED: NotificationKind.RUN_COMPLETED,
    InvocationStatus.FAILED: NotificationKind.RUN_FAILED,
}


def may_notify(commit: StepCommit) -> bool:
    """Whether `commit` can record notifications at all: a step outside runs, or one that
    answers, asks or sets the status. Speed: most of a run's steps do none of those, and
    a store skips `notifications_of` and its empty list for them."""
    return (
        commit.status is not None
        or bool(commit.opened)
        or bool(commit.answered)
        or commit.invocation_id is None
    )


def notifications_of(commit: StepCommit, now: float) -> list[Notification]:
    """The notifications `commit` records, in the order its changes happened: answers
    (and expiries) first, then questions opened, then the run's end; a commit outside
    runs records one per rewind event it carries."""
    if commit.invocation_id is None:
        return [_rewound(commit, event, now) for event in commit.events if _rewinds(event)]
    found: list[Notification] = []
    expired = commit.answered_by == TIMEOUT_ANSWERER
    for interrupt_id, answer in commit.answered:
        kind = NotificationKind.QUESTION_EXPIRED if expired else NotificationKind.QUESTION_ANSWERED
        question: dict[str, JsonValue] = {"interruptId": interrupt_id}
        if (not expired or answer is not None) and interrupt_id not in commit.private_answers:
            question["answer"] = answer
        question["answeredBy"] = commit.answered_by
        found.append(_notification(commit, kind, now, question=question))
    for row in commit.opened:
        if row.status is not InterruptStatus.OPEN:
            continue  # a copied answered question (a fork) is not asked now
        question = {
            "interruptId": row.interrupt_id,
            "occurrence": row.occurrence,
            "nodePath": row.node_path,
            "functionName": row.function_name,
            "message": row.message,
            "payload": row.payload,
            "responseSchema": row.response_schema,
            "assignee": row.assignee,
            "expiresAt": None if row.timeout is None else now + row.timeout,
        }
        found.append(
            _notification(commit, NotificationKind.QUESTION_OPENED, now, question=question)
        )
    # Of a failing run's two FAILED steps, the one with the failure's text tells why.
    if commit.status is not None and not commit.copied and ends_run(commit.status, commit.error):
        run: dict[str, JsonValue] = {"status": commit.status.value, "error": commit.error}
        found.append(_notification(commit, _FINAL[commit.status], now, run=run))
    return found


def _rewinds(event: Event) -> bool:
    return event.actions.rewind_before_invocation_id is not None


def _rewound(commit: StepCommit, event: Event, now: float) -> Notification:
    """`session.rewound`: the runs from `before` on no longer count (see `baton.rewinding`);
    its invocation id is the rewind event's own."""
    rewind: dict[str, JsonValue] = {
        "beforeInvocationId": event.actions.rewind_before_invocation_id,
        "eventId": event.id,
        "stateDelta": event.actions.state_delta,
    }
    notification = _notification(commit, NotificationKind.SESSION_REWOUND, now, rewind=rewind)
    notification.body["invocationId"] = event.invocation_id
    return notification


def _notification(
    commit: StepCommit, kind: NotificationKind, now: float, **details: Any
) -> Notification:
    # 32 random hex digits, from the events' batch of OS randomness: as unique as a uuid4's
    # hex, without building a UUID object (most resumes record two notifications).
    ident = new_event_id()
    body: dict[str, JsonValue] = {
        "id": ident,
        "type": kind.value,
        "createdAt": now,
        "appName": commit.session.app_name,
        "userId": commit.session.user_id,
        "sessionId": commit.session.session_id,
        "invocationId": commit.invocation_id,
        **details,
    }
    return Notification(ident, body, now)
