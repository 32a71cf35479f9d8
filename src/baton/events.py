"""Events (what a run produces), their actions, and RequestInput (how a node asks)."""

from __future__ import annotations

import functools
import math
import operator
import os
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any, Final, Self, TypeAlias, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    JsonValue,
    TypeAdapter,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticSerializationError, from_json, to_json, to_jsonable_python

from baton.gemini_fields import GeminiResponseFields
from baton.types import (
    Content,
    FinishReasonValue,
    FunctionCall,
    FunctionResponse,
    Part,
    StrictWireModel,
    UsageMetadata,
    WireModel,
)
from baton.ui_widget import UiWidget

__all__ = [
    "ASSIGNEES_KEY",
    "CONFIRMATION_SCHEMA",
    "JSON_SCALARS",
    "ONE_ANSWER_FUNCTIONS",
    "REQUEST_CONFIRMATION_FUNCTION",
    "REQUEST_CREDENTIAL_FUNCTION",
    "REQUEST_INPUT_FUNCTION",
    "RESPONSE_SCHEMAS_KEY",
    "TASK_REPLY_FUNCTION",
    "TASK_REPLY_SCHEMA",
    "Event",
    "EventActions",
    "EventCompaction",
    "NodeInfo",
    "RequestInput",
    "RouteValue",
    "UiWidget",
    "assemble",
    "check_assignee",
    "is_task_question",
    "new_event_id",
    "task_question_id",
    "task_reply",
    "to_json_value",
]

REQUEST_INPUT_FUNCTION: Final = "adk_request_input"
"""The function name under which a RequestInput reaches clients."""

RESPONSE_SCHEMAS_KEY: Final = "baton_response_schemas"
"""The `custom_metadata` key under which an agent's event carries the JSON schema each of
its long-running calls expects as an answer (call id -> schema), for the interrupt index."""

ASSIGNEES_KEY: Final = "baton_assignees"
"""The `custom_metadata` key under which an agent's event carries who must answer each of
its long-running calls (call id -> user id), for the interrupt index."""

REQUEST_CONFIRMATION_FUNCTION: Final = "adk_request_confirmation"
"""The function name under which a tool's confirmation request reaches clients."""

REQUEST_CREDENTIAL_FUNCTION: Final = "adk_request_credential"
"""The function name under which a tool's request for a user's credential reaches clients
(args `functionCallId` and `authConfig`, as the reference's)."""

ONE_ANSWER_FUNCTIONS: Final = (
    REQUEST_INPUT_FUNCTION,
    REQUEST_CONFIRMATION_FUNCTION,
    REQUEST_CREDENTIAL_FUNCTION,
)
"""Questions one answer settles: a progress update (`will_continue`) to them is refused."""

TASK_REPLY_FUNCTION: Final = "baton_task_reply"
"""The function name of the interrupt a task agent's question opens (a model reply that
calls no tool, marked with an id in `long_running_tool_ids` that no call has): it waits
for the user's next message, which the task agent gets as a user turn."""

TASK_REPLY_SCHEMA: Final[dict[str, JsonValue]] = {"type": "string", "minLength": 1}
"""What a task agent's question takes: the user's reply, a text (not empty: the agent
would take an empty one for no reply, and end without finishing its task)."""


def task_question_id(event_id: str) -> str:
    """The interrupt id of the question a task agent's reply (event `event_id`) asks."""
    return f"{event_id}-reply"


def is_task_question(event: Event) -> bool:
    """Whether `event` is a task agent's question to the user (see TASK_REPLY_FUNCTION)."""
    return task_question_id(event.id) in (event.long_running_tool_ids or ())


def task_reply(message: Content) -> str:
    """What a user's message says as the reply to a task agent's question (the answer its
    interrupt records): its text, else its media's types (`[image/png]`), as the agent
    gets the message itself; empty: the message is no reply."""
    if message.text:
        return message.text
    media = [part.inline_data or part.file_data for part in message.parts or []]
    return " ".join(f"[{m.mime_type or 'file'}]" for m in media if m is not None)


CONFIRMATION_SCHEMA: Final[dict[str, JsonValue]] = {
    "anyOf": [
        {
            "type": "object",
            "properties": {
                "confirmed": {"type": "boolean"},
                "hint": {"type": "string"},
                "payload": {},
            },
            "required": ["confirmed"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"response": {"type": "string"}},
            "required": ["response"],
            "additionalProperties": False,
        },
    ]
}
"""What an answer to a confirmation request must look like: a ToolConfirmation, or the
reference web client's `{"response": "<json>"}` wrapper (checked before it is stored)."""

RouteValue: TypeAlias = str | int | bool


def new_event_id() -> str:
    """A fresh, unique event id: 16 random bytes from the OS, in hex (as unique as a
    uuid4's hex, at a third of the cost)."""
    try:
        return _spare_ids.pop()
    except IndexError:  # none left (or another thread took the last one): draw a batch
        _draw_ids()
        return new_event_id()


# Speed: ids are drawn from the OS a batch at a time, one system call for _ID_BATCH events
# (a call per event was ~2% of an engine step's time). A forked child drops its parent's spares,
# so the two never hand out the same id.
_ID_BATCH: Final = 128
_spare_ids: Final[list[str]] = []
# Where each id lies in a batch's hex text, cut out by `map` in C: a Python loop slicing
# the batch was ~1k instructions a node.
_ID_SLICES: Final = tuple(slice(i, i + 32) for i in range(0, 32 * _ID_BATCH, 32))


def _draw_ids() -> None:
    drawn = os.urandom(16 * _ID_BATCH).hex()
    _spare_ids.extend(map(drawn.__getitem__, _ID_SLICES))


os.register_at_fork(after_in_child=_spare_ids.clear)


JSON_SCALARS: Final = frozenset({str, int, float, bool})
"""The types of JSON scalars: `to_json_value` keeps a value of one as it is."""
# A deadline further away than this is a mistake (milliseconds given as seconds, an
# "infinite" timedelta): it could not be shown as a date, nor ever fire.
_LONGEST_TIMEOUT: Final = 100 * 365 * 24 * 3600.0
_LONGEST_TIMEOUT_TEXT: Final = "100 years"
# A user id an API key can name (`USER:SECRET` splits at the first ':'), as stored ids are:
# at most 255 characters, none of them a control character.
_ASSIGNEE: Final = re.compile(r"[^\x00-\x1f\x7f-\x9f:]{1,255}")


def to_json_value(value: object, *, what: str = "value") -> JsonValue:
    """Convert a node's value (pydantic models, dataclasses, sets...) to plain JSON.

    Raises:
        TypeError: the value cannot be represented as JSON; names `what`.
    """
    if value is None or type(value) in JSON_SCALARS:
        return value  # pyright: ignore[reportReturnType] -- a str, int, float or bool
    try:
        converted: JsonValue = to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise TypeError(
            f"{what} of type {type(value).__name__} is not JSON-serializable; return plain "
            "data, a pydantic model or a dataclass so it can be checkpointed."
        ) from exc
    return converted


def _refuse_a_value(value: object, info: ValidationInfo) -> None:
    if value is None or (isinstance(value, dict | list | str) and not value):
        return None
    raise ValueError(
        f"EventActions.{info.field_name} is a field of the reference's EventActions that "
        "baton does not support (a forced model response); leave "
        "it out."
    )


# A field the reference's EventActions has and baton's does not: empty, it is accepted and
# not kept (the reference's session exports carry them empty on every event); with a
# value, it is refused by name. Any other unknown field is refused too.
_ReferenceOnly: TypeAlias = Annotated[
    None, BeforeValidator(_refuse_a_value), Field(exclude=True, repr=False)
]


class EventCompaction(StrictWireModel):
    """A summary that stands in for the session's events from `start_timestamp` to
    `end_timestamp` (both included) in what models are shown; the events stay stored."""

    start_timestamp: float
    end_timestamp: float
    compacted_content: Content

    @model_validator(mode="after")
    def _is_a_range(self) -> Self:
        start, end = self.start_timestamp, self.end_timestamp
        if not (math.isfinite(start) and math.isfinite(end) and start <= end):
            raise ValueError(
                f"a compaction covers the events from startTimestamp to endTimestamp, which "
                f"must be finite with start <= end; got {start!r} to {end!r}."
            )
        return self


class EventActions(StrictWireModel):
    """Side effects an event carries: state changes, routing, agent checkpoints."""

    skip_summarization: bool | None = None
    state_delta: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    artifact_delta: dict[str, int] = Field(default_factory=dict[str, int])
    transfer_to_agent: str | None = None
    transfer_reason: str | None = None  # why, when the transfer tool was given one
    escalate: bool | None = None
    end_of_agent: bool | None = None
    agent_state: dict[str, JsonValue] | None = None
    route: RouteValue | list[RouteValue] | None = None
    # {} when none was asked, as in the reference (code calls `.items()` on it); left out
    # of the serialized event then, as before, so stored events do not grow.
    requested_tool_confirmations: dict[str, JsonValue] = Field(
        default_factory=dict[str, JsonValue], exclude_if=operator.not_
    )
    # Set only on the event `Runner.rewind_async` appends: every event from this
    # invocation's first one up to the rewind event no longer counts (`live_events`).
    rewind_before_invocation_id: str | None = None
    # The credentials the event's tool calls asked for (`tool_context.request_credential`),
    # by call id: each an AuthConfig's JSON, without the agent's secrets.
    requested_auth_configs: dict[str, JsonValue] = Field(
        default_factory=dict[str, JsonValue], exclude_if=operator.not_
    )
    # Set only on the event a compaction appends (see `baton.compaction`).
    compaction: EventCompaction | None = None
    # Widgets a client shows beside the event (`render_ui_widget`), in the order rendered.
    render_ui_widgets: list[UiWidget] | None = None
    set_model_response: _ReferenceOnly = None


class NodeInfo(WireModel):
    """Where in the node tree an event came from."""

    path: str = ""
    run_id: str | None = None
    output_for: list[str] | None = None
    # The event's message is the node run's output (an agent's reply), as in the reference.
    message_as_output: bool | None = None

    @property
    def name(self) -> str:
        """The node's name: the last path segment without its `@run_id`."""
        return self.path.rsplit("/", 1)[-1].split("@", 1)[0]

    @property
    def parent_run_id(self) -> str | None:
        """The run id of the node this one runs inside, or None at the top."""
        segments = self.path.split("/")
        if len(segments) < 2:
            return None
        _, _, run_id = segments[-2].partition("@")
        return run_id or None


MessageValue: TypeAlias = Content | Part | str | Sequence[Part | str]
"""What `Event(message=)` takes: a Content as it is, or text and parts to make one of."""


def _message_content(message: MessageValue) -> Content:
    """`message` as a Content, with the reference's roles: a function call's Part given
    alone is the model's, any other text or parts the user's (whoever the author is)."""
    if isinstance(message, Content):
        return message
    if isinstance(message, Part):
        return Content(role="model" if message.function_call else "user", parts=[message])
    if isinstance(message, str):
        message = [message]
    return Content(role="user", parts=[Part(text=p) if isinstance(p, str) else p for p in message])


class Event(GeminiResponseFields, WireModel):
    """One thing that happened in a session: a message, an output, an interrupt, an error.

    Shortcuts accepted by the constructor: `message=` for `content` (a Content, or a
    text, a Part or a list of them, which become a user's Content, a function call's
    Part given alone a model's, as in the reference), `state=` for
    `actions.state_delta`, `route=` for `actions.route`.
    """

    id: str = Field(default_factory=new_event_id)
    invocation_id: str = ""
    author: str = ""
    timestamp: float = Field(default_factory=time.time)
    content: Content | None = None
    actions: EventActions = Field(default_factory=EventActions)
    output: JsonValue = None
    node_info: NodeInfo | None = None
    long_running_tool_ids: set[str] | None = None
    branch: str | None = None
    partial: bool | None = None
    turn_complete: bool | None = None
    error_code: str | None = None
    error_message: str | None = None
    custom_metadata: dict[str, JsonValue] | None = None
    finish_reason: FinishReasonValue | None = None
    usage_metadata: UsageMetadata | None = None

    if TYPE_CHECKING:  # pragma: no cover - the signature type checkers see

        def __init__(
            self,
            *,
            message: MessageValue | None = None,
            state: Mapping[str, object] | None = None,
            route: RouteValue | list[RouteValue] | None = None,
            output: object = None,
            id: str = ...,
            invocation_id: str = "",
            author: str = "",
            timestamp: float = ...,
            content: Content | None = None,
            actions: EventActions = ...,
            node_info: NodeInfo | None = None,
            long_running_tool_ids: set[str] | None = None,
            branch: str | None = None,
            partial: bool | None = None,
            turn_complete: bool | None = None,
            error_code: str | None = None,
            error_message: str | None = None,
            custom_metadata: dict[str, JsonValue] | None = None,
            finish_reason: FinishReasonValue | None = None,
            usage_metadata: UsageMetadata | None = None,
            **extra: Any,
        ) -> None: ...

    # At run time pydantic's own __init__: `model_fields_set` holds exactly the fields
    # the caller gave (the shortcuts count as the fields they stand for) and the id.

    @model_validator(mode="before")
    @classmethod
    def _expand_shortcuts(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields: dict[str, Any] = dict(data)  # pyright: ignore[reportUnknownArgumentType] -- raw input
        if not fields.get("id"):
            # Given here, not by the field's default: the id counts as set, as in the
            # reference (which assigns it after construction), so a dump of the set
            # fields (`exclude_unset`) keeps it.
            fields["id"] = new_event_id()
        message = fields.pop("message", None)
        if message is not None:
            if fields.get("content") is not None:
                raise ValueError(
                    "Event takes message= or content=, not both: they are one field "
                    "(message= is content= given as a text, parts or a Content)."
                )
            fields["content"] = _message_content(message)
        shortcut = {k: fields.pop(k) for k in ("state", "route") if k in fields}
        if shortcut:
            actions = fields.get("actions")
            merged: dict[str, Any] = (
                actions.model_dump(by_alias=False)
                if isinstance(actions, EventActions)
                else dict(actions or {})  # pyright: ignore[reportUnknownArgumentType] -- raw input
            )
            if "state" in shortcut:
                # A raw actions dict may spell the key either way; fold both into one.
                existing = {**merged.pop("stateDelta", {}), **merged.get("state_delta", {})}
                merged["state_delta"] = {**existing, **shortcut["state"]}
            if "route" in shortcut:
                merged["route"] = shortcut["route"]
            fields["actions"] = merged
        return fields

    @property
    def message(self) -> Content | None:
        """The event's `content`, by the name the constructor takes it (`message=`)."""
        return self.content

    @message.setter
    def message(self, value: MessageValue | None) -> None:
        self.content = None if value is None else _message_content(value)

    @property
    def isolation_scope(self) -> None:
        """Always None: the reference's internal scope of a delegated task's events;
        baton scopes them by branch."""
        return None

    @field_validator("output", mode="before")
    @classmethod
    def _jsonify_output(cls, value: object) -> JsonValue:
        return to_json_value(value, what="a node output")

    @field_serializer("long_running_tool_ids")
    def _sorted_ids(self, ids: set[str] | None) -> list[str] | None:
        return sorted(ids) if ids is not None else None

    @classmethod
    def of_output(
        cls,
        output: JsonValue,
        *,
        invocation_id: str,
        author: str,
        path: str,
        run_id: str,
        output_for: list[str] | None = None,
        branch: str | None = None,
        state_delta: dict[str, JsonValue] | None = None,
        artifact_delta: dict[str, int] | None = None,
    ) -> Event:
        """The event carrying a node run's output, as the engine makes it (once per node run).

        `output_for` is the runs the output stands for (`[path]` if not given), `branch`
        the conversation branch it is on (None: the root), `state_delta` and
        `artifact_delta` its actions' (taken as they are, the event's own; none: empty).

        Assembled without validation, at half the cost of `Event(...)`: `output` must
        already be JSON (`to_json_value`). tests/test_types.py checks that the result
        equals the validated construction.
        """
        # Copies of the all-None field dicts and of the fields-set, filled in place: a
        # dict literal merged into the defaults (`{**defaults, ...}`) inserts every key
        # again, ~5k instructions more an event (callgrind); this runs once per node run.
        actions = _copy_dict(_NO_ACTIONS)
        for name in _EMPTY_MAPS:
            actions[name] = {}
        if state_delta is not None:
            actions["state_delta"] = state_delta
        if artifact_delta is not None:
            actions["artifact_delta"] = artifact_delta
        node_info = _copy_dict(_NO_NODE_INFO)
        node_info["path"] = path
        node_info["run_id"] = run_id
        node_info["output_for"] = output_for or [path]
        fields = _copy_dict(_NO_FIELDS)
        fields["id"] = new_event_id()
        fields["invocation_id"] = invocation_id
        fields["author"] = author
        fields["timestamp"] = time.time()
        fields["actions"] = assemble(EventActions, actions, _copy_set(_DELTAS_SET))
        fields["output"] = output
        fields["node_info"] = assemble(NodeInfo, node_info, _copy_set(_NODE_INFO_SET))
        fields_set = _copy_set(_OUTPUT_SET)
        if branch is not None:
            fields["branch"] = branch
            fields_set.add("branch")
        return assemble(cls, fields, fields_set)

    @classmethod
    def of_message(cls, content: Content, *, invocation_id: str) -> Event:
        """The event recording a caller's message (or answers) without a state change, as
        `Event(invocation_id=..., author="user", content=content,
        actions=EventActions(state_delta={}))` makes it (once per call that brings one).

        Assembled without validation, at 40% of the cost (54k -> 22k instructions for an
        answer, callgrind; 2% of a PostgreSQL resume): `content` must be a validated
        Content, which validation would take as it is. tests/test_types.py checks that the
        result equals the validated construction.
        """
        empty = _copy_dict(_NO_ACTIONS)
        for name in _EMPTY_MAPS:
            empty[name] = {}
        actions = assemble(EventActions, empty, {"state_delta"})
        fields = {
            **_NO_FIELDS,
            "id": new_event_id(),
            "invocation_id": invocation_id,
            "author": "user",
            "timestamp": time.time(),
            "content": content,
            "actions": actions,
        }
        return assemble(cls, fields, {"id", "invocation_id", "author", "content", "actions"})

    @property
    def function_calls(self) -> list[FunctionCall]:
        """The function calls in this event's content."""
        return self.content.function_calls if self.content else []

    @property
    def node_name(self) -> str:
        """The name of the node whose run wrote the event ("" for an agent's checkpoint
        holding a state or its end, as in the reference, and for an event outside any node
        run). An event that carries a checkpoint with more (an LlmAgent's first model
        turn, as baton stores it) names its node."""
        info = self.node_info
        if info is None:
            return ""
        actions = self.actions
        if (actions.agent_state or actions.end_of_agent) and self.is_checkpoint_only():
            return ""
        return info.name

    def carries_result(self) -> bool:
        """True when the event holds its node run's result: an output, a route, or an
        agent's reply given as the node's output."""
        info = self.node_info
        return (
            self.output is not None
            or self.actions.route is not None
            or bool(info is not None and info.message_as_output)
        )

    def is_checkpoint_only(self) -> bool:
        """Whether the event only checkpoints an agent (`agent_state`, `end_of_agent`) and
        carries nothing else a reader of the run would see."""
        actions = self.actions
        if actions.agent_state is None and not actions.end_of_agent:
            return False
        return not (
            self.content
            or self.output is not None
            or self.error_code
            or self.long_running_tool_ids
            or actions.state_delta
            or actions.escalate
            or actions.transfer_to_agent
            or actions.render_ui_widgets
        )

    def without_checkpoints(self) -> Event | None:
        """The event as a caller is shown it when its agent checkpoints are not for the
        caller's eyes: without `agent_state` and `end_of_agent` (a copy; the event itself
        keeps them), None for an event that holds nothing else."""
        actions = self.actions
        if actions.agent_state is None and not actions.end_of_agent:
            return self
        if self.is_checkpoint_only():
            return None
        bare = actions.model_copy(update={"agent_state": None, "end_of_agent": None})
        return self.model_copy(update={"actions": bare})

    def is_final_response(self) -> bool:
        """True for the last event an agent gives the caller for a turn, as the reference
        counts it: a message with no pending calls and not partial, and also a tool's
        result the model is not to summarize (`skip_summarization`, as after
        `exit_loop`), a long-running call (the turn waits on it) and an error. A message
        ending in a code execution's result is not final: the model answers it next."""
        if self.actions.skip_summarization or self.long_running_tool_ids:
            return True
        if self.error_code and not self.partial and not self.function_calls:
            return True
        return (
            not self.partial
            and not self.function_calls
            and not self.get_function_responses()
            and not self.has_trailing_code_execution_result()
        )

    def has_trailing_code_execution_result(self) -> bool:
        """Whether the content's last part is a code execution's result (the reference's
        check; baton keeps such parts as a Gemini session recorded them)."""
        parts = self.content.parts if self.content else None
        return bool(parts) and parts[-1].code_execution_result is not None  # pyright: ignore[reportOptionalSubscript] -- bool(parts) checked it

    @staticmethod
    def new_id() -> str:
        """A fresh event id, as `Event()` draws one."""
        return new_event_id()

    def get_function_calls(self) -> list[FunctionCall]:
        """The function calls in this event's content (the reference's name for
        `function_calls`)."""
        return self.function_calls

    def get_function_responses(self) -> list[FunctionResponse]:
        """The function responses in this event's content."""
        return self.content.function_responses if self.content else []


class RequestInput(WireModel):
    """Yield or return this from a node to pause and ask a person for input.

    Args:
        interrupt_id: the id the answer must carry (a UUID when omitted).
        message: what to show the person.
        payload: any data to show with it (JSON-serializable).
        response_schema: the expected answer: a pydantic class, a Python type, or a
            JSON-schema dict. Answers are validated against it before anything is stored.
        timeout: how long a person has to answer (seconds, or a timedelta), counted from
            when the question opens. When it passes unanswered, a worker answers with
            `on_timeout` (recorded as answered by `system:timeout`), or, without one, the
            asking node fails with InputTimeoutError. baton's own addition.
        on_timeout: the answer given when the deadline passes; validated against
            `response_schema` here, when the request is made.
        assignee: the user id of the person who must answer (baton's own addition): the
            question is listed in their pending inputs and inbox too, only an answer
            given as them is accepted (`Runner.answer(..., answered_by=assignee)`; over
            HTTP their API key), and the session's owner sees whom the run waits on.
            None: the session's user answers, as usual.
    """

    interrupt_id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    message: str | None = None
    payload: Any = None
    response_schema: Any = None
    timeout: float | timedelta | None = None  # stored as seconds (see `_seconds`)
    on_timeout: Any = None
    assignee: str | None = None

    @field_validator("assignee", mode="before")
    @classmethod
    def _user_id(cls, value: Any) -> Any:
        return check_assignee(value)

    @field_validator("timeout", mode="before")
    @classmethod
    def _seconds(cls, value: Any) -> Any:
        if isinstance(value, timedelta):
            value = value.total_seconds()
        if value is None:
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(
                f"timeout must be a positive number of seconds or a timedelta, got {value!r}."
            )
        seconds = float(value) if abs(value) <= _LONGEST_TIMEOUT else math.inf
        if not (math.isfinite(seconds) and 0 < seconds <= _LONGEST_TIMEOUT):
            raise ValueError(
                f"timeout must be a positive number of seconds or a timedelta of at most "
                f"{_LONGEST_TIMEOUT_TEXT}, got {value!r}; leave timeout out for a question "
                "without a deadline."
            )
        return seconds

    @field_validator("interrupt_id")
    @classmethod
    def _check_interrupt_id(cls, value: str) -> str:
        # An answer's id obeys `check_id` (too long, a control character, padded with
        # spaces: refused), so a question's must too: asked, it would wait for an answer
        # nobody can give. Imported here: `baton.sessions` imports this module.
        from baton.sessions.ids import check_id

        check_id("interrupt_id", value)
        return value

    @model_validator(mode="after")
    def _check_on_timeout(self) -> RequestInput:
        if not self.answers_on_timeout:
            return self
        if self.timeout is None:
            raise ValueError("on_timeout= needs timeout= (when should it be given?).")
        self.on_timeout = to_json_value(self.on_timeout, what="on_timeout")
        schema = self.json_schema()
        if schema is not None:
            from jsonschema import Draft202012Validator  # read on first use: see answers.py
            from jsonschema.exceptions import ValidationError as SchemaMismatch

            problems: list[SchemaMismatch] = list(
                Draft202012Validator(schema).iter_errors(self.on_timeout)  # pyright: ignore[reportUnknownMemberType] -- the stubs leave `instance` untyped
            )
            if problems:
                raise ValueError(
                    f"on_timeout {self.on_timeout!r} does not match the response_schema of "
                    f"interrupt '{self.interrupt_id}': {problems[0].message}."
                )
        return self

    @property
    def timeout_seconds(self) -> float | None:
        """The deadline's delay in seconds (None: no deadline)."""
        timeout = self.timeout
        return timeout.total_seconds() if isinstance(timeout, timedelta) else timeout

    @property
    def answers_on_timeout(self) -> bool:
        """True when `on_timeout` was given (even as None): the deadline answers, not fails."""
        return "on_timeout" in self.model_fields_set

    def json_schema(self) -> dict[str, JsonValue] | None:
        """The response schema as a JSON-schema dict (None when any answer is accepted)."""
        return json_schema_of(self.response_schema)

    def to_event(self, *, author: str = "") -> Event:
        """The model event that carries this request to clients and pauses the run."""
        return Event(
            author=author,
            content=Content(role="model", parts=[Part(function_call=self.to_function_call())]),
            long_running_tool_ids={self.interrupt_id},
        )

    def to_function_call(self) -> FunctionCall:
        """The function call that carries this request to clients (with the deadline's
        `timeout` and `on_timeout` when set)."""
        args: dict[str, Any] = {
            "interruptId": self.interrupt_id,
            "payload": to_json_value(self.payload, what="a RequestInput payload"),
            "message": self.message,
            "response_schema": self.json_schema(),
        }
        if self.timeout is not None:
            args["timeout"] = self.timeout_seconds
        if self.answers_on_timeout:
            args["on_timeout"] = self.on_timeout
        if self.assignee is not None:
            args["assignee"] = self.assignee
        return FunctionCall(id=self.interrupt_id, name=REQUEST_INPUT_FUNCTION, args=args)


def check_assignee(value: object) -> str | None:
    """`value` as an assignee: None, or a user id an API key can name.

    Raises:
        ValueError: anything else; the message shows the value.
    """
    if value is None:
        return value
    if not isinstance(value, str) or not _ASSIGNEE.fullmatch(value):
        raise ValueError(
            f"assignee must be a user id (1 to 255 printable characters, no ':'), got "
            f"{value!r}; leave assignee out for a question the session's user answers."
        )
    return value


def json_schema_of(schema: object) -> dict[str, JsonValue] | None:
    """Turn a response_schema (model class, Python type or dict) into a JSON schema."""
    if schema is None:
        return None
    if isinstance(schema, dict):
        as_dict: dict[str, object] = schema  # pyright: ignore[reportUnknownVariableType] -- a user's dict
        return to_json_value(as_dict, what="a response_schema")  # pyright: ignore[reportReturnType] -- a dict stays a dict
    try:
        hash(schema)
    except TypeError:  # a type form that cannot be a cache key: derived each time
        return from_json(_type_schema(schema))
    # A fresh dict each time (the caller may change it): parsing is cheaper than deriving.
    return from_json(_cached_type_schema(schema))


def _type_schema(schema: object) -> bytes:
    """The JSON schema of a model class or Python type, as JSON text."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return to_json(schema.model_json_schema())
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(schema)  # pyright: ignore[reportArgumentType, reportUnknownVariableType] -- any type form is tried
        return to_json(adapter.json_schema())
    except Exception as exc:  # pydantic raises several types for unsupported annotations
        raise TypeError(
            f"response_schema {schema!r} is not a pydantic model, a Python type or a "
            "JSON-schema dict."
        ) from exc


# Derived once per type: every question a node asks would derive it again (a tenth of
# an HTTP server's CPU went there).
_cached_type_schema: Final = functools.lru_cache(maxsize=256)(_type_schema)


_Model = TypeVar("_Model", bound=BaseModel)
# The setters of BaseModel's four slots, called directly: what `object.__setattr__` (which
# bypasses BaseModel.__setattr__) ends up calling, without its name lookup and its check of
# the class's own __setattr__, a third cheaper each; 12 of them build an output event.
_set_dict: Final = BaseModel.__dict__["__dict__"].__set__
_set_fields_set: Final = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra: Final = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private: Final = BaseModel.__dict__["__pydantic_private__"].__set__
# What `cls.__new__` finds (no model defines one), at half the cost of finding it there.
_new_object: Final = object.__new__


def assemble(cls: type[_Model], fields: dict[str, Any], fields_set: set[str]) -> _Model:
    """A model instance from every field's known-good value, skipping validation (what
    pydantic's `model_construct` does, without its per-call inspection of the fields)."""
    instance = _new_object(cls)
    _set_dict(instance, fields)
    _set_fields_set(instance, fields_set)
    _set_extra(instance, None)
    _set_private(instance, None)
    return instance


_NO_FIELDS: Final[dict[str, Any]] = dict.fromkeys(Event.model_fields)
_NO_ACTIONS: Final[dict[str, Any]] = dict.fromkeys(EventActions.model_fields)
# The EventActions fields whose default is a new empty dict.
_EMPTY_MAPS: Final = (
    "state_delta",
    "artifact_delta",
    "requested_tool_confirmations",
    "requested_auth_configs",
)
_NO_NODE_INFO: Final[dict[str, Any]] = dict.fromkeys(NodeInfo.model_fields)
# The fields an output event (`Event.of_output`) and its parts are made with.
_OUTPUT_SET: Final[frozenset[str]] = frozenset(
    ("id", "invocation_id", "author", "timestamp", "actions", "output", "node_info")
)
_DELTAS_SET: Final[frozenset[str]] = frozenset(("state_delta", "artifact_delta"))
_NODE_INFO_SET: Final[frozenset[str]] = frozenset(("path", "run_id", "output_for"))
_copy_dict: Final[Callable[[dict[str, Any]], dict[str, Any]]] = dict[str, Any].copy
_copy_set: Final[Callable[[frozenset[str]], set[str]]] = set  # the members, in a set of its own
