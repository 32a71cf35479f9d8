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
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, final

from pydantic import JsonValue, TypeAdapter, ValidationError

from baton.agents.context import AgentContext
from baton.agents.delegation import ran_branch
from baton.events import Event, task_reply
from baton.models.llm import FunctionDeclaration, LlmRequest
from baton.schemas import SchemaType
from baton.tools.base import BaseTool, described, string_parameters, unfit_call
from baton.tools.tool_context import ToolContext
from baton.types import Content, FunctionCall, FunctionResponse, Part

if TYPE_CHECKING:  # only for annotations: base_agent imports what imports this module
    from baton.agents.base_agent import BaseAgent

__all__ = [
    "FINISHED",
    "FINISH_TASK",
    "FinishTaskTool",
    "TaskAgentTool",
    "answers",
    "finished_call",
    "hide_task_replies",
]

FINISH_TASK: Final = "finish_task"
FINISHED: Final = "Task completed."  # the result of a finish_task call that ended the task
_WRAPPER: Final = "result"  # the parameter holding a result that is not an object

_RESULT_KEYS: Final[dict[str, JsonValue]] = {"description": "What the task achieved, in brief."}
_DEFAULT_OUTPUT: Final = string_parameters(**{_WRAPPER: _RESULT_KEYS})
_DEFAULT_INPUT: Final = string_parameters(
    request={"description": "What the task agent is to do, with the context it needs."}
)
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
        self.parameters = _wrapped(schema, self.wrapper) if self.wraps else schema

    @property
    def wrapper(self) -> str:
        """The parameter holding a result that is not an object."""
        return _WRAPPER

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=self.name, description=self.description, parameters=self.parameters
        )

    instruction: ClassVar[str] = _INSTRUCTION
    """What the model is told about ending with this tool."""

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        llm_request.append_instructions([self.instruction])

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """ "Task completed." when the arguments fit, else {"error": what is wrong}."""
        problem = self.problem(args)
        return FINISHED if problem is None else self.unfit(problem)

    def unfit(self, problem: str) -> JsonValue:
        """The answer to a call whose arguments do not fit."""
        return unfit_call(self.name, problem)

    def result(self, args: dict[str, JsonValue]) -> JsonValue:
        """The task's result from a call's arguments that fit (validated, as JSON)."""
        value = args.get(self.wrapper) if self.wraps else args
        if self.output_schema is None or isinstance(self.output_schema, dict):
            return value
        adapter = _adapter(self.output_schema)
        return adapter.dump_python(adapter.validate_python(value), mode="json")

    def problem(self, args: dict[str, JsonValue]) -> str | None:
        """What is wrong with a call's arguments (None: they fit)."""
        value = args.get(self.wrapper) if self.wraps else args
        if self.wraps and self.wrapper not in args:
            return f"the parameter '{self.wrapper}' is missing"
        schema = self.output_schema
        if schema is None or isinstance(schema, dict):
            from jsonschema import Draft202012Validator  # read on first use: see answers.py

            errors = list(Draft202012Validator(schema or _DEFAULT_OUTPUT).iter_errors(value))  # pyright: ignore[reportUnknownMemberType] -- the stubs leave `instance` untyped
            if not errors:
                return None
            where = "/".join(str(p) for p in errors[0].absolute_path) or "the value"
            return f"{where}: {errors[0].message}"
        try:
            _adapter(schema).validate_python(value)
        except ValidationError as error:
            return described(error)
        return None


@final
class TaskAgentTool(BaseTool):
    """What a parent LlmAgent's model calls to hand a task to its task sub-agent.

    The parent carries the call out itself (`delegate`: the sub-agent talks with the
    user until it finishes), so `run` is never called.

    Args:
        agent: the task agent (its name and description are the tool's).
        finish: the task agent's finish_task tool, which reads its result.
    """

    def __init__(self, agent: BaseAgent, finish: FinishTaskTool) -> None:
        note = "This hands the work to an agent of its own; call it alone, not with other tools."
        super().__init__(name=agent.name, description=f"{agent.description}\n{note}".strip())
        self.agent = agent
        self.finish = finish

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=self.name, description=self.description, parameters=_DEFAULT_INPUT
        )

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        raise RuntimeError(  # pragma: no cover - LlmAgent delegates these calls itself
            f"task agent tool '{self.name}' runs through its parent LlmAgent."
        )

    async def delegate(self, ctx: AgentContext, call: FunctionCall) -> AsyncGenerator[Event, None]:
        """Carry out the parent's `call`: run the task agent (anew, or resumed from its
        checkpoint) on a branch of its own, then answer the call with its result (see
        `answers`); nothing more while it waits for the user's reply.

        A result committed before a crash is not worked for again: the call is answered
        with it.
        """
        task = self.agent
        events = await ctx.log.invocation_events()
        branch = ran_branch(ctx.branch, task.name, call.id or "", events)
        done = _result(events, task.name, branch, self.finish)
        task_ctx = ctx.for_task(branch, call.id or "", json.dumps(call.args or {}))
        if done is None:
            async for event in task.run_async(task_ctx):
                yield event
            done = _result(await ctx.log.invocation_events(), task.name, branch, self.finish)
            if done is None:
                return  # it waits for the user's reply
        elif task.name not in task_ctx.ended_agents:
            # Its result committed, then a crash came before its end: end it now.
            task_ctx.reset_agent_states(a.name for a in task.walk())
        yield _response_event(ctx, call, done[0])


def answers(event: Event, call: FunctionCall) -> bool:
    """Whether `event` is the answer to a parent's `call` handing over a task."""
    return (
        event.author == "user"
        and event.content is not None
        and any(r.id == call.id for r in event.content.function_responses)
    )


def hide_task_replies(events: Sequence[Event], agent: str, tasks: set[str]) -> list[Event]:
    """`agent`'s events without the user's messages to its task sub-agents (`tasks`):
    those sent while a call handing one its task was unanswered."""
    delegating: set[str] = set()
    shown: list[Event] = []
    for event in events:
        if event.author == agent:
            delegating |= {c.id for c in event.function_calls if c.name in tasks and c.id}
        elif event.content is not None:
            delegating -= {r.id for r in event.content.function_responses}
            if delegating and task_reply(event.content):
                continue
        shown.append(event)
    return shown


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


def _result(
    events: Sequence[Event], agent: str, branch: str, finish: FinishTaskTool
) -> tuple[JsonValue] | None:
    """The result of `agent`'s task on `branch` (in a 1-tuple), None while unfinished."""
    mine = [e for e in events if e.branch == branch]
    turns = [e for e in mine if e.author == agent and e.function_calls]
    for turn in reversed(turns):
        call = finished_call(mine, agent, turn)
        if call is not None:
            return (finish.result(call.args or {}),)
    return None


def _response_event(ctx: AgentContext, call: FunctionCall, result: JsonValue) -> Event:
    """The answer to the parent's call: the task's result (a value that is not an object
    under "output"), from the user's side, as in the reference."""
    response: dict[str, JsonValue] = result if isinstance(result, dict) else {"output": result}
    answer = FunctionResponse(id=call.id, name=call.name, response=response)
    return Event(
        invocation_id=ctx.invocation_id,
        author="user",
        branch=ctx.branch,
        content=Content(role="user", parts=[Part(function_response=answer)]),
    )


def _adapter(schema: type[Any]) -> TypeAdapter[Any]:
    adapter: TypeAdapter[Any] = TypeAdapter(schema)  # pyright: ignore[reportArgumentType, reportUnknownVariableType] -- pyright 1.1.391 predates pydantic's TypeForm parameter
    return adapter


def _json_schema(schema: SchemaType) -> dict[str, JsonValue]:
    if isinstance(schema, dict):
        return dict(schema)
    generated: dict[str, JsonValue] = _adapter(schema).json_schema()
    return generated


def _wrapped(schema: dict[str, JsonValue], wrapper: str) -> dict[str, JsonValue]:
    """`schema` as the one property of an object, its definitions kept at the top."""
    inner = dict(schema)
    wrapped: dict[str, JsonValue] = {
        "type": "object",
        "properties": {wrapper: inner},
        "required": [wrapper],
    }
    defs = inner.pop("$defs", None)
    if defs is not None:
        wrapped["$defs"] = defs
    return wrapped
