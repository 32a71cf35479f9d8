"""Task mode: an LlmAgent that talks with the user until its model calls `finish_task`.

A task agent (`LlmAgent(mode="task")`) gets the `finish_task` tool. Its parameters are
the agent's `output_schema` (an object schema as it is, any other wrapped as
`{"result": ...}`), or `{"result": <a string>}` without one. A call whose arguments fit
is answered "Task completed." and ends the agent, its (validated) arguments being the
task's result: the node's output as a workflow node or the root agent (and
`output_key`'s value), or the tool result its parent's model gets when the parent
delegated the task to it (`TaskAgentTool`). Arguments that do not fit are answered with
the errors, and the model tries again.

A reply of the agent that calls no tool is a question to the user: the run waits for
the user's next message, as an open interrupt of the invocation (see
`baton.events.TASK_REPLY_FUNCTION`), and that message, sent like any message (or as an
answer to that interrupt), continues the same invocation in that agent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from jsonschema import Draft202012Validator
from pydantic import JsonValue, TypeAdapter, ValidationError

from baton.events import Event
from baton.models.llm import FunctionDeclaration, LlmRequest
from baton.schemas import SchemaType
from baton.tools.base import BaseTool
from baton.tools.tool_context import ToolContext
from baton.types import FunctionCall

__all__ = [
    "FINISHED",
    "FINISH_TASK",
    "FinishTaskTool",
    "TaskAgentTool",
    "finished_call",
    "task_request_text",
]

FINISH_TASK: Final = "finish_task"
FINISHED: Final = "Task completed."  # the result of a finish_task call that ended the task
_WRAPPER: Final = "result"  # the parameter holding a result that is not an object

_DEFAULT_OUTPUT: Final[dict[str, JsonValue]] = {
    "type": "object",
    "properties": {
        _WRAPPER: {"type": "string", "description": "What the task achieved, in brief."}
    },
    "required": [_WRAPPER],
}
_DEFAULT_INPUT: Final[dict[str, JsonValue]] = {
    "type": "object",
    "properties": {
        "request": {
            "type": "string",
            "description": "What the task agent is to do, with the context it needs.",
        }
    },
    "required": ["request"],
}
_INSTRUCTION: Final = (
    "You work on a task. Call `finish_task` only once the task is completely done, "
    "after using your tools for every part of it; ask the user when something about "
    "the task is unclear. When it is done, call `finish_task` alone, without text."
)


class FinishTaskTool(BaseTool):
    """The `finish_task` tool of a task agent.

    Args:
        output_schema: the task's result (a pydantic class, a Python type, or a JSON
            schema dict); None for a short text under "result".
    """

    def __init__(self, output_schema: SchemaType | None) -> None:
        description = "Report that the task is done, ending your work on it."
        if output_schema is not None:
            description += " Give the task's result as the parameters."
        super().__init__(name=FINISH_TASK, description=description)
        self.output_schema = output_schema
        schema = _json_schema(output_schema) if output_schema is not None else _DEFAULT_OUTPUT
        self.wraps = schema.get("type") != "object"
        self.parameters = _wrapped(schema) if self.wraps else schema

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=self.name, description=self.description, parameters=self.parameters
        )

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        llm_request.append_instructions([_INSTRUCTION])

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """ "Task completed." when the arguments fit, else {"error": what is wrong}."""
        problem = self.problem(args)
        if problem is None:
            return FINISHED
        return {
            "error": f"`{FINISH_TASK}` was called with arguments that do not fit: {problem}. "
            "Call it again with every required parameter, of the right type."
        }

    def result(self, args: dict[str, JsonValue]) -> JsonValue:
        """The task's result from a call's arguments that fit (validated, as JSON)."""
        value = args.get(_WRAPPER) if self.wraps else args
        if self.output_schema is None or isinstance(self.output_schema, dict):
            return value
        adapter = _adapter(self.output_schema)
        return adapter.dump_python(adapter.validate_python(value), mode="json")

    def problem(self, args: dict[str, JsonValue]) -> str | None:
        """What is wrong with a call's arguments (None: they fit)."""
        value = args.get(_WRAPPER) if self.wraps else args
        if self.wraps and _WRAPPER not in args:
            return f"the parameter '{_WRAPPER}' is missing"
        schema = self.output_schema
        if schema is None or isinstance(schema, dict):
            errors = list(Draft202012Validator(schema or _DEFAULT_OUTPUT).iter_errors(value))  # pyright: ignore[reportUnknownMemberType] -- the stubs leave `instance` untyped
            if not errors:
                return None
            where = "/".join(str(p) for p in errors[0].absolute_path) or "the value"
            return f"{where}: {errors[0].message}"
        try:
            _adapter(schema).validate_python(value)
        except ValidationError as error:
            return "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'the value'}: {e['msg']}"
                for e in error.errors()
            )
        return None


class TaskAgentTool(BaseTool):
    """What a parent LlmAgent's model calls to hand a task to its task sub-agent.

    The parent carries the call out itself (the sub-agent talks with the user until it
    finishes), so `run` is never called.

    Args:
        name: the task agent's name (the function the model calls).
        description: the task agent's description.
    """

    def __init__(self, name: str, description: str) -> None:
        note = "This hands the work to an agent of its own; call it alone, not with other tools."
        super().__init__(name=name, description=f"{description}\n{note}".strip())

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=self.name, description=self.description, parameters=_DEFAULT_INPUT
        )

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        raise NotImplementedError("the parent agent runs its task sub-agent itself")


def task_request_text(call: FunctionCall) -> str:
    """The delegating call's arguments, as the task agent's first user turn."""
    return json.dumps(call.args or {})


def finished_call(events: Sequence[Event], agent: str, turn: Event | None) -> FunctionCall | None:
    """The finish_task call of `turn` (the agent's last model turn) that ended the task:
    answered "Task completed." by one of `events`; None when there is none (yet)."""
    if turn is None:
        return None
    calls = {c.id: c for c in turn.function_calls if c.name == FINISH_TASK and c.id}
    for event in events:
        if event.author != agent or event.content is None:
            continue
        for response in event.content.function_responses:
            if response.id in calls and (response.response or {}).get(_WRAPPER) == FINISHED:
                return calls[response.id]
    return None


def _adapter(schema: type[Any]) -> TypeAdapter[Any]:
    adapter: TypeAdapter[Any] = TypeAdapter(schema)  # pyright: ignore[reportArgumentType, reportUnknownVariableType] -- pyright 1.1.391 predates pydantic's TypeForm parameter
    return adapter


def _json_schema(schema: SchemaType) -> dict[str, JsonValue]:
    if isinstance(schema, dict):
        return dict(schema)
    generated: dict[str, JsonValue] = _adapter(schema).json_schema()
    return generated


def _wrapped(schema: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """`schema` as the one property of an object, its definitions kept at the top."""
    inner = dict(schema)
    wrapped: dict[str, JsonValue] = {
        "type": "object",
        "properties": {_WRAPPER: inner},
        "required": [_WRAPPER],
    }
    defs = inner.pop("$defs", None)
    if defs is not None:
        wrapped["$defs"] = defs
    return wrapped
