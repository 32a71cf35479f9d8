"""Tool confirmation: a tool call that waits for a person's approval before it runs.

A tool asks for confirmation statically (`FunctionTool(require_confirmation=True)`,
or a function of the call's arguments) or from inside its body
(`tool_context.request_confirmation(...)`). The agent then does not answer the
model's call; it emits the reference's `adk_request_confirmation` function call
(args `originalFunctionCall` and `toolConfirmation`) as a long-running call, and
the run pauses. The answer is a FunctionResponse to that call with a
`ToolConfirmation` (`{"confirmed": true, "payload": ...}`; the reference's web
client wraps it as `{"response": "<json>"}`). The tool then runs again with
`tool_context.tool_confirmation` set: a confirmed call runs (once: its result is
committed), a rejected one answers the model with the rejection.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from typing import Any, Final, TypeAlias, final

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError
from pydantic.alias_generators import to_camel

from baton.errors import InvalidResponseError
from baton.events import (
    CONFIRMATION_SCHEMA,
    REQUEST_CONFIRMATION_FUNCTION,
    REQUEST_CREDENTIAL_FUNCTION,
    Event,
)
from baton.threads import run_sync
from baton.types import Content, FunctionCall, Part

__all__ = [
    "CONFIRMATION_SCHEMA",
    "REJECTED",
    "REQUIRED",
    "ConfirmationRule",
    "ToolConfirmation",
    "answered_credentials",
    "asked_confirmation",
    "call_keys",
    "check_rule",
    "confirmation_id",
    "credential_id",
    "credential_request_event",
    "credential_requests",
    "is_confirmation_call",
    "is_person_request",
    "needs_confirmation",
    "request_event",
    "request_ids",
    "requested_calls",
]

ConfirmationRule: TypeAlias = bool | Callable[..., Any]
"""Whether a call needs confirmation: always, or a (sync or async) function of its arguments."""

REQUIRED: Final[dict[str, JsonValue]] = {
    "error": "This tool call requires confirmation, please approve or reject."
}
REJECTED: Final[dict[str, JsonValue]] = {"error": "This tool call is rejected."}
"""What the model gets for a rejected call (the reference's words)."""


@final
class ToolConfirmation(BaseModel):
    """A confirmation asked for, or given: whether the call may run, and optional data.

    Args:
        hint: why the confirmation is needed, for the person.
        confirmed: whether the call is approved.
        payload: any JSON the person sends along (or the tool asked to be filled in).
    """

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        defer_build=True,  # see WireModel
    )

    hint: str = ""
    confirmed: bool = False
    # Any, not JsonValue: the answer is JSON, but tools should read it without casts.
    payload: Any = None

    @classmethod
    def from_answer(cls, answer: JsonValue) -> ToolConfirmation:
        """Read an answer: the object itself, or the `{"response": "<json>"}` wrapper.

        Raises:
            InvalidResponseError: the answer is not a confirmation.
        """
        value: Any = answer
        try:
            if isinstance(answer, dict) and answer.keys() == {"response"}:
                wrapped = answer["response"]
                value = json.loads(wrapped) if isinstance(wrapped, str) else wrapped
            return cls.model_validate(value)
        except (ValueError, ValidationError) as error:
            raise InvalidResponseError(
                f"a tool confirmation answer must be an object like "
                f'{{"confirmed": true, "payload": ...}}, got {answer!r}: {error}'
            ) from error

    def to_json(self) -> dict[str, JsonValue]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


def confirmation_id(call_key: str) -> str:
    """The id of the confirmation request for the model's call keyed `call_key` (stable on
    reruns): its id (`adk-confirm-c1`), or, for calls of one turn that share an id, each
    call's own key (`adk-confirm-c1#1` for the second), so each is answered on its own."""
    return f"adk-confirm-{call_key}"


def credential_id(call_key: str, attempt: int = 0) -> str:
    """The id of the `attempt`th credential request of the model's call keyed `call_key`
    (see `confirmation_id`): `adk-auth-c1`, then `adk-auth-c1~1` when the tool, given a
    credential, asks again (a new question, not the answered one reopened)."""
    return f"adk-auth-{call_key}" + (f"~{attempt}" if attempt else "")


def answered_credentials(call_key: str, answers: Mapping[str, object]) -> int:
    """How many of the call's credential requests (see `credential_id`) were answered."""
    attempt = 0
    while credential_id(call_key, attempt) in answers:
        attempt += 1
    return attempt


def request_ids(call_key: str, asked: Collection[str]) -> list[str]:
    """The ids in `asked` of the requests a person answers for the call keyed `call_key`:
    its confirmation request, its credential requests."""
    credentials = credential_id(call_key)
    return [
        r
        for r in asked
        if r in (confirmation_id(call_key), credentials) or r.startswith(f"{credentials}~")
    ]


def is_person_request(name: str | None) -> bool:
    """Whether a call of this name is the agent's request to a person about a tool call
    (a confirmation or a credential), not a call the model made."""
    return name in (REQUEST_CONFIRMATION_FUNCTION, REQUEST_CREDENTIAL_FUNCTION)


def call_keys(calls: Sequence[FunctionCall]) -> list[str]:
    """A key for each call of a turn: its id, told apart when calls share one (`c1`,
    `c1#1`), as a model may give two calls of a turn the same id and the reference runs
    both and keeps both results. It names each call's confirmation request (see
    `confirmation_id`), its idempotency key and its result in the agent's checkpoint, the
    same for the turn's calls whichever of them are still to run."""
    keys: list[str] = []
    for call in calls:
        key, n = call.id or "", 0
        while key in keys:
            n += 1
            key = f"{call.id or ''}#{n}"
        keys.append(key)
    return keys


def is_confirmation_call(call: FunctionCall) -> bool:
    return call.name == REQUEST_CONFIRMATION_FUNCTION


def request_event(
    call: FunctionCall, asked: ToolConfirmation, template: Event, *, key: str
) -> Event:
    """The confirmation request for `call` (keyed `key` in its turn, see `confirmation_id`):
    the tool's event, its response replaced by the reference's long-running
    `adk_request_confirmation` call."""
    request = FunctionCall(
        id=confirmation_id(key),
        name=REQUEST_CONFIRMATION_FUNCTION,
        args={
            "originalFunctionCall": call.model_dump(by_alias=True, exclude_none=True, mode="json"),
            "toolConfirmation": asked.to_json(),
        },
    )
    return template.model_copy(
        update={
            "content": Content(role="model", parts=[Part(function_call=request)]),
            "long_running_tool_ids": {request.id or ""},
        }
    )


def credential_request_event(
    request: JsonValue, template: Event, *, call_id: str, request_id: str
) -> Event:
    """The credential request for the call `call_id`: the tool's event, its response
    replaced by the reference's long-running `adk_request_credential` call (args
    `functionCallId`, `authConfig`)."""
    call = FunctionCall(
        id=request_id,
        name=REQUEST_CREDENTIAL_FUNCTION,
        args={"functionCallId": call_id, "authConfig": request},
    )
    return template.model_copy(
        update={
            "content": Content(role="user", parts=[Part(function_call=call)]),
            "long_running_tool_ids": {request_id},
        }
    )


def credential_requests(events: list[Event], agent: str) -> set[str]:
    """The ids of the credential requests `agent` made in these events."""
    return {
        call.id or ""
        for event in events
        if event.author == agent
        for call in event.function_calls
        if call.name == REQUEST_CREDENTIAL_FUNCTION
    }


def requested_calls(events: list[Event], agent: str) -> dict[str, FunctionCall]:
    """The model's calls that `agent` asked to be confirmed in these events, by the id of
    the request that asked."""
    asked: dict[str, FunctionCall] = {}
    for event in events:
        if event.author != agent:
            continue
        for call in event.function_calls:
            original = (call.args or {}).get("originalFunctionCall")
            if is_confirmation_call(call) and isinstance(original, dict):
                try:
                    asked[call.id or ""] = FunctionCall.model_validate(original)
                except ValidationError:
                    continue  # not a call: an imported session's event may hold anything
    return asked


def asked_confirmation(
    call_id: str, actions_requested: dict[str, JsonValue] | None
) -> ToolConfirmation | None:
    """The confirmation a tool asked for its call in this execution, if it did."""
    asked = (actions_requested or {}).get(call_id)
    return ToolConfirmation.model_validate(asked) if isinstance(asked, dict) else None


def check_rule(rule: object, owner: str) -> ConfirmationRule:
    """A `require_confirmation` as given, once it is a bool or a function.

    Args:
        rule: the value given.
        owner: what it was given to, for the message (e.g. "tool 'transfer'").

    Raises:
        TypeError: it is neither.
    """
    if not isinstance(rule, bool) and not callable(rule):
        raise TypeError(
            f"require_confirmation of {owner} must be a bool or a function of the call's "
            f"arguments, got {rule!r}."
        )
    return rule


async def needs_confirmation(
    rule: ConfirmationRule, arguments: Mapping[str, object], tool_context: object
) -> bool:
    """Whether this call needs a person's confirmation: the rule itself, or what the rule
    function says, given the call's arguments it names and `tool_context` (all of them when
    it takes **kwargs). A sync rule runs in a worker thread.

    Args:
        rule: a tool's `require_confirmation`.
        arguments: the call's arguments.
        tool_context: the call's ToolContext.
    """
    if isinstance(rule, bool):
        return rule
    wanted = inspect.signature(rule).parameters
    given = {**arguments, "tool_context": tool_context}
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in wanted.values())
    chosen = given if takes_all else {k: v for k, v in given.items() if k in wanted}
    if inspect.iscoroutinefunction(rule):
        return bool(await rule(**chosen))
    decided = await run_sync(partial(rule, **chosen))  # a plain rule never holds the loop
    return bool(await decided if inspect.isawaitable(decided) else decided)
