"""LlmAgent: a model with tools, in a function-calling loop that resumes without redoing work.

Every model turn and every tool result is an event committed on its own. On a
resumed run the agent reads its run's events back and continues from the first
missing piece: a turn whose calls all have results goes back to the model; a
turn with unanswered calls runs only the calls without a result; a final turn
ends the agent. The model is never asked again for a turn that was recorded.
Long-running tools run once and leave their call open (`long_running_tool_ids`)
until a FunctionResponse with the call's id arrives.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import uuid
import warnings
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Mapping,
    MutableMapping,
    Sequence,
)
from contextlib import aclosing
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, Final, Literal, cast

from pydantic import (
    BaseModel,
    Field,
    InstanceOf,
    JsonValue,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from baton.agents.artifact_text import artifact_texts
from baton.agents.base_agent import BaseAgent, answer_text
from baton.agents.call_relay import CallRelay
from baton.agents.callbacks import (
    CallbackContext,
    Callbacks,
    chain,
    llm_response,
    result_after_tool,
    result_before_tool,
    run_callbacks,
    tool_result,
)
from baton.agents.context import AgentContext, as_agent_context
from baton.agents.conversation import conversation, input_text, is_visible, match_responses
from baton.agents.delegation import SingleTurnAgentTool
from baton.agents.handover import Handover, agent_to_continue
from baton.agents.instructions import (
    StaticInstruction,
    artifact_placeholders,
    as_instruction_turn,
    fill_instruction,
    static_paragraphs,
    with_turn_before_users,
)
from baton.agents.state import BaseAgentState
from baton.agents.structured import SET_MODEL_RESPONSE, ReplyFormat, SetModelResponseTool
from baton.agents.task import (
    FINISH_TASK,
    FINISHED,
    FinishTaskTool,
    TaskAgentTool,
    answers,
    finished_call,
    hide_task_replies,
)
from baton.agents.transfer import (
    TRANSFER_FUNCTION,
    AgentTransferTool,
    TransferRules,
    transfer_instruction,
    transfer_targets,
    why_not,
)
from baton.agents.turn_writes import TurnWrites, unmarked
from baton.code_executors import BuiltInCodeExecutor
from baton.context import Context, InvocationContext
from baton.errors import BatonError, WorkflowChangedError
from baton.events import (
    ASSIGNEES_KEY,
    RESPONSE_SCHEMAS_KEY,
    Event,
    EventActions,
    NodeInfo,
    task_question_id,
    task_reply,
)
from baton.function_signature import InvalidArgumentsError
from baton.models import BaseLlm, GenerateContentConfig, LlmRequest, LlmResponse, resolve_model
from baton.planners import BasePlanner, BuiltInPlanner
from baton.plugins.manager import PluginManager
from baton.readonly_context import ReadonlyContext
from baton.run_config import apply_run_config
from baton.schemas import SchemaType, check_node_data
from baton.sessions.compacted import compacted
from baton.threads import run_sync
from baton.tools import BaseTool, FunctionTool, ToolContext, to_function_response
from baton.tools.base_toolset import BaseToolset
from baton.tools.confirmation import (
    ToolConfirmation,
    answered_credentials,
    asked_confirmation,
    call_keys,
    confirmation_id,
    credential_id,
    credential_request_event,
    credential_requests,
    is_person_request,
    request_event,
    request_ids,
    requested_calls,
)
from baton.types import Content, FunctionCall, FunctionResponse, Part
from baton.workflow.execution import message_value
from baton.workflow.nodes import NodeInput
from baton.workflow.workers import ParallelWorker

__all__ = [
    "AGENT_NAME_LABEL",
    "Agent",
    "AgentMode",
    "InstructionProvider",
    "LlmAgent",
    "LlmAgentState",
    "ModelCallError",
]

_log = logging.getLogger("baton")

AGENT_NAME_LABEL: Final = "adk_agent_name"
"""The label naming the agent in each model request's `config.labels` (the reference's
key, for billing reports per agent); a label of that name already there is kept."""

_ROUTING_READ = 16  # earlier events read at first to find who answers a new message

_GLOBAL_INSTRUCTION_DEPRECATED = (
    "global_instruction is deprecated, as in google-adk 2.13.0, and will be removed; it "
    "still applies to every agent under the root agent that sets it. Put the text in each "
    "agent's instruction (or static_instruction) instead."
)

AgentMode = Literal["chat", "task", "single_turn"]
"""How an LlmAgent takes part in a conversation (see `LlmAgent.mode`)."""

InstructionProvider = Callable[[InvocationContext], str | Awaitable[str]]
"""Computes the instruction from the agent's ctx (no `{key}` templating is applied)."""


class ModelCallError(BatonError, RuntimeError):
    """The model answered with an error; resuming the invocation asks it again."""


class LlmAgentState(BaseAgentState):
    """An LlmAgent's checkpoint: where its run began (after the event `run_start`), and
    the long-running calls started."""

    run_start: str
    started_calls: list[str] = Field(default_factory=list[str])
    # Results of a turn's calls that ended while others still ran (call id -> the result
    # event), until the turn's results are recorded together in one event.
    finished_calls: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])

    @model_serializer(mode="wrap")
    def _without_no_finished_calls(
        self, serialize: SerializerFunctionWrapHandler
    ) -> dict[str, JsonValue]:
        """`finished_calls` only when some are: most checkpoints stay as small as before it,
        and readable by a process of the release before it (whose state refuses a key
        it does not know) while a rolling upgrade runs both."""
        data: dict[str, JsonValue] = serialize(self)
        if not self.finished_calls:
            data.pop("finished_calls", None)
        return data


@dataclass(frozen=True)
class _Progress:
    """What the agent's run has recorded so far."""

    run_start: str  # the id of the session's last event before the run ('' for none)
    current: list[Event]  # the run's events (this agent's, and answers to its calls)
    turn: Event | None  # the last recorded model turn
    tools: dict[str, BaseTool]  # the tools offered, by name (see `LlmAgent.tools_for`)

    def after_turn(self) -> list[Event]:
        """The run's events after the last model turn (all of them before the first turn)."""
        if self.turn is None:
            return []
        start = next(i for i, e in enumerate(self.current) if e is self.turn)
        return self.current[start + 1 :]

    def answered_since_turn(self) -> bool:
        """Whether one of the run's long-running calls was answered (by the client) after
        the last model turn; answers to other agents' calls are theirs."""
        waiting = {
            i for e in self.current if e.author != "user" for i in e.long_running_tool_ids or ()
        }
        return any(
            e.author == "user"
            and e.content
            and any(r.id in waiting for r in e.content.function_responses)
            for e in self.after_turn()
        )

    def has_interim_result(self, lro_ids: set[str]) -> bool:
        """Whether a long-running tool returned a value (its interim result) after the turn."""
        return any(
            e.author != "user"
            and e.content
            and any(r.id in lro_ids for r in e.content.function_responses)
            for e in self.after_turn()
        )

    def responses(self, lro_ids: set[str]) -> list[tuple[int, FunctionResponse]]:
        """(position of its event, response) of the responses after the turn so far, oldest
        first: a long-running call's from the client only (its tool's interim result does
        not end it)."""
        return [
            (at, r)
            for at, e in enumerate(self.after_turn())
            if e.content
            for r in e.content.function_responses
            if r.id and (e.author == "user" or r.id not in lro_ids)
        ]


@dataclass
class _Transfer:
    """What a run of the agent leaves to do: the hand-over to the sub-agent its model
    transferred to."""

    handover: Handover | None = None


class LlmAgent(BaseAgent):
    """An agent that asks a model, runs the tools it calls, and repeats until it answers.

    Args:
        model: a `BaseLlm`, or a model string resolved by `baton.models.resolve_model`
            (e.g. "openai/gpt-4o-mini"); empty: the nearest ancestor LlmAgent's model.
        instruction: the system instruction; `{key}` is replaced by `state[key]`
            (`{key?}` may be missing), `{artifact.name}` by the artifact's text
            (`{artifact.name?}` may be missing). Or a function of the ctx returning it. With a
            `static_instruction`, it goes in the conversation instead, as a turn before
            the user's latest messages, marked as the system's.
        global_instruction: (deprecated, as in the reference; warns when used) on the
            root agent, put first in the system instruction of every LlmAgent of the
            tree; templated as `instruction` is.
        static_instruction: text put in the system instruction as it is (no `{key}` is
            filled): a string, or a Content, Part or list of strings and Parts holding
            text.
        tools: `BaseTool`s (FunctionTool, LongRunningFunctionTool), plain functions and
            `BaseToolset`s (whose tools are listed once per invocation, see `tools_for`).
        output_key: save the final text to this state key.
        include_contents: "default" shows the session's history; "none" only this run.
        generate_content_config: sampling options passed to the model.
        max_llm_calls: the most model calls in one run of the agent.
        before_model_callback, after_model_callback: called around each model call; a
            returned LlmResponse is used instead of the model's (see
            `baton.agents.callbacks`).
        before_tool_callback, after_tool_callback: called around each tool call; a
            returned dict is used as the tool's result.
        on_model_error_callback: called (callback_context, llm_request, error) when the
            model call raises; a returned LlmResponse is used instead of the error.
        on_tool_error_callback: called (tool, args, tool_context, error) when a tool
            raises; a returned dict is the tool's result instead of the error.
        disallow_transfer_to_parent: its model may not transfer the conversation back to
            its parent agent (see `baton.agents.transfer`); nor does a new message come
            back to it once it replied (the root answers it).
        disallow_transfer_to_peers: its model may not transfer to its parent's other
            sub-agents.
        mode: "chat": its model sees the conversation (the session's history on its
            branch); "single_turn": its model sees only its input, as a user turn, and
            its own turns, and nobody answers it; "task": it talks with the user until
            its model calls `finish_task`, whose arguments are its output (see
            `baton.agents.task`). Unset, it is "chat" as the root agent, as a sub-agent
            or with sub-agents, and "single_turn" as a node of a workflow (see
            `effective_mode`). A chat agent in a workflow may only follow START. A
            single-turn or task sub-agent is a tool of its parent's model, not a
            transfer target (see `baton.agents.delegation`).
        output_schema: a task agent's result schema: the parameters of its
            `finish_task` call. With another mode (and tools), the schema of its final
            reply, given through the `set_model_response` tool (see
            `baton.agents.structured`).
        input_schema: the arguments of the agent called as a tool (`AgentTool`, a
            single-turn sub-agent): the tool's parameters instead of one `request`
            text; a call's arguments are validated against it and given to the agent
            as its input message, in JSON (see `baton.agents.delegation`).
        planner: a `baton.planners` planner: `BuiltInPlanner(thinking_config=...)` puts its
            thinking config in each request instead of generate_content_config's;
            another's planning instruction is added to the system instruction (after the
            agent's identity), the model's earlier thoughts are shown to it as plain text,
            and its `process_planning_response` reworks each response's parts (after the
            after-model callbacks), as `PlanReActPlanner` splits a tagged reply into
            thoughts and the answer.
        code_executor: the reference's `BuiltInCodeExecutor`, which no baton model runs:
            the agent's first model request fails with a ValueError saying so.

    Raises:
        ValueError: two tools have the same name; an output_schema without
            mode="task" nor tools, or with a tool named `set_model_response`; a task
            agent with a tool named `finish_task`; a
            static_instruction part that is not text.
        TypeError: a plain function cannot be described to the model (see FunctionTool).
    """

    model: str | InstanceOf[BaseLlm] = ""
    instruction: str | InstructionProvider = ""
    tools: Sequence[InstanceOf[BaseTool] | InstanceOf[BaseToolset] | Callable[..., object]] = ()
    output_key: str | None = None
    include_contents: Literal["default", "none"] = "default"
    generate_content_config: GenerateContentConfig | None = None
    max_llm_calls: int = Field(default=100, ge=1)
    before_model_callback: Callbacks = None
    after_model_callback: Callbacks = None
    before_tool_callback: Callbacks = None
    after_tool_callback: Callbacks = None
    on_model_error_callback: Callbacks = None
    on_tool_error_callback: Callbacks = None
    disallow_transfer_to_parent: bool = False
    disallow_transfer_to_peers: bool = False
    mode: AgentMode | None = None
    output_schema: SchemaType | None = None
    input_schema: type[BaseModel] | None = None
    planner: InstanceOf[BasePlanner] | None = None
    code_executor: InstanceOf[BuiltInCodeExecutor] | None = None
    global_instruction: str | InstructionProvider = ""
    static_instruction: StaticInstruction | None = None

    ends_quietly: ClassVar[bool] = False  # the reference's LlmAgent ends with an event

    DEFAULT_MODEL: ClassVar[str] = "gemini-3.5-flash"
    """The model of agents that have none (nor an ancestor LlmAgent with one), as the
    reference's; baton reaches it through Gemini's OpenAI-compatible endpoint, which
    needs GEMINI_API_KEY (or GOOGLE_API_KEY). Change it with `set_default_model`."""
    _default_model: ClassVar[str | BaseLlm] = DEFAULT_MODEL

    parallel_worker: bool | None = None
    _worker: ParallelWorker | None = PrivateAttr(default=None)
    _llm: BaseLlm | None = PrivateAttr(default=None)
    _tools: dict[str, BaseTool] = PrivateAttr(default_factory=dict[str, BaseTool])
    _transfer: AgentTransferTool | None = PrivateAttr(default=None)
    _reply_format: ReplyFormat | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        delegated = [_sub_agent_tool(a) for a in self.sub_agents if a.runs_as_tool()]
        own = [t for t in self.tools if not isinstance(t, BaseToolset)]
        self._tools = _index_tools([*own, *delegated], agent=self.name)
        self._transfer = AgentTransferTool(lambda: self)
        _check_generate_content_config(self.name, self.generate_content_config)
        static_paragraphs(self.static_instruction, agent=self.name)  # refuses media early
        if self.output_schema is not None and self.mode != "task":
            self._add_set_model_response(self.output_schema)
        if self.mode == "task":
            if FINISH_TASK in self._tools:
                raise ValueError(
                    f"LlmAgent '{self.name}' has a tool named '{FINISH_TASK}', the name of the "
                    "tool a task agent ends its task with; rename the tool "
                    "(FunctionTool(func, name=...))."
                )
            self._tools[FINISH_TASK] = FinishTaskTool(self.output_schema)
        if self.parallel_worker:
            # Copied last, so the item agent has the tools and reply format built above
            # (a copy does not run model_post_init).
            each = self.model_copy(update={"parallel_worker": False})
            self._worker = ParallelWorker(node=each)

    def _add_set_model_response(self, output_schema: SchemaType) -> None:
        """How its model gives its structured reply (see `baton.agents.structured`): as
        JSON text in the schema without tools, else by calling `set_model_response`. A
        text reply is checked against the schema either way."""
        self._reply_format = ReplyFormat(output_schema, agent=self.name)
        if not self.tools:
            return
        if SET_MODEL_RESPONSE in self._tools:
            raise ValueError(
                f"LlmAgent '{self.name}' has a tool named '{SET_MODEL_RESPONSE}', the name of "
                "the tool an agent with an output_schema gives its reply with; rename the "
                "tool (FunctionTool(func, name=...))."
            )
        self._tools[SET_MODEL_RESPONSE] = SetModelResponseTool(output_schema)

    def runs_as_tool(self) -> bool:
        return self.mode in ("single_turn", "task")

    def tool_input_schema(self) -> type[BaseModel] | None:
        return self.input_schema

    def node_value(self, ctx: Context, node_input: NodeInput) -> JsonValue:
        """As a node of a workflow, the input checked against `input_schema` (a message's
        text read as JSON), coerced as the reference does; the root agent's is not, as the
        reference documents the schema for an agent called as a tool.

        Raises:
            NodeSchemaError: the input does not fit `input_schema`.
        """
        if self.input_schema is None or "/" not in ctx.node_path:
            return super().node_value(ctx, node_input)
        value = message_value(node_input) if isinstance(node_input, Content) else node_input
        return check_node_data(self.input_schema, value, node=self.name, what="input")

    def task_result(self, event: Event, earlier: Sequence[Event]) -> tuple[JsonValue] | None:
        finish = self._tools.get(FINISH_TASK)
        if event.author != self.name or not isinstance(finish, FinishTaskTool):
            return None
        turn = next(
            (e for e in reversed(earlier) if e.author == self.name and e.function_calls), None
        )
        call = finished_call([event], self.name, turn)
        return None if call is None else (finish.result(call.args or {}),)

    @property
    def only_after_start(self) -> bool:
        """Whether, as a workflow node, only START may precede it: a chat agent answers
        the conversation, not a predecessor's output."""
        return self.mode == "chat"

    def effective_mode(self, ctx: InvocationContext) -> AgentMode:
        """The mode this agent runs in under `ctx`: its `mode`; unset, "chat" as the
        root agent (or driven directly), as a sub-agent or with sub-agents, else
        "single_turn" (a node of a workflow, or a node a node runs)."""
        if self.mode is not None:
            return self.mode
        is_node = "/" in as_agent_context(ctx).node_path
        if self.parent_agent is not None or self.sub_agents or not is_node:
            return "chat"
        return "single_turn"

    async def is_waiting(self, ctx: InvocationContext) -> bool:
        """True when an interrupt of this agent, one below it, or an agent it calls as a
        tool (an `AgentTool`'s, its own or a toolset's, not in its tree) is still open."""
        if await super().is_waiting(ctx):
            return True
        return await as_agent_context(ctx).asks_below_calls(self.name)

    def transfer_rules(self) -> TransferRules | None:
        if self.runs_as_tool():
            # It answers its caller (its result, when a task), not the conversation.
            return None
        return TransferRules(
            to_parent=not self.disallow_transfer_to_parent,
            to_peers=not self.disallow_transfer_to_peers,
        )

    def reply_is_output(self, ctx: InvocationContext) -> bool:
        """A task agent's replies are questions to the user; finish_task gives its output."""
        return self.effective_mode(ctx) != "task"

    @property
    def canonical_model(self) -> BaseLlm:
        """The model object (resolved once): the agent's, else its nearest ancestor
        LlmAgent's, else the default (`DEFAULT_MODEL`, or `set_default_model`'s).

        Raises:
            ValueError: the model string cannot be used (UnknownModelError, or a
                Gemini model without its key); for the default, saying how to pick one.
        """
        if self._llm is None:
            agent: BaseAgent | None = self
            while isinstance(agent, LlmAgent) and not agent.model:
                agent = agent.parent_agent
            if isinstance(agent, LlmAgent):
                self._llm = resolve_model(agent.model)
            else:
                self._llm = self._resolve_default_model()
        return self._llm

    def _resolve_default_model(self) -> BaseLlm:
        default = type(self)._default_model
        try:
            return resolve_model(default)
        except ValueError as error:
            raise ValueError(
                f"LlmAgent '{self.name}' has no model, nor an ancestor LlmAgent with one, so "
                f"it takes the default model {default!r}, which cannot be used: {error} Pass "
                "model= (a BaseLlm or a string such as 'openai/gpt-4o-mini'), or set the "
                "default with LlmAgent.set_default_model(...)."
            ) from error

    @classmethod
    def set_default_model(cls, model: str | BaseLlm) -> None:
        """Set the model of the agents (of this class and its subclasses) that have none,
        nor an ancestor LlmAgent with one, as the reference's; agents that already
        resolved theirs keep it.

        Args:
            model: a BaseLlm, or a model string `baton.models.resolve_model` takes.

        Raises:
            TypeError: `model` is neither a string nor a BaseLlm.
            ValueError: `model` is an empty string.
        """
        if not isinstance(model, str | BaseLlm):  # pyright: ignore[reportUnnecessaryIsInstance] -- user input
            raise TypeError(
                f"LlmAgent.set_default_model takes a model string or a BaseLlm, got {model!r}."
            )
        if not model:
            raise ValueError("LlmAgent.set_default_model: the model string is empty; name one.")
        cls._default_model = model

    async def canonical_instruction(self, ctx: ReadonlyContext) -> tuple[str, bool]:
        """The agent's instruction for `ctx`, and whether it came from a provider (then
        no `{key}` templating applies to it), as the reference's."""
        return await _canonical(self.instruction, ctx)

    async def canonical_global_instruction(self, ctx: ReadonlyContext) -> tuple[str, bool]:
        """The agent's (deprecated) global instruction for `ctx`, and whether it came
        from a provider, as the reference's."""
        return await _canonical(self.global_instruction, ctx)

    @property
    def toolsets(self) -> list[BaseToolset]:
        """The toolsets among `tools` (a Runner closes them when it closes)."""
        return [t for t in self.tools if isinstance(t, BaseToolset)]

    async def canonical_tools(self, ctx: ReadonlyContext | None = None) -> list[BaseTool]:
        """The tools of `tools`, in their order, as the reference's: plain functions
        wrapped in FunctionTool, each toolset's listed for `ctx` (a toolset whose
        listing raises gives none, logged). Tools baton adds (`transfer_to_agent`, a
        sub-agent's, `set_model_response`, `finish_task`) are not among them."""
        own = iter(self._tools.values())  # begins with `tools`' own, in their order
        tools: list[BaseTool] = []
        for item in self.tools:
            if isinstance(item, BaseToolset):
                # The reference hands a toolset the caller's context as it is, None too.
                tools += await _list_tools(self.name, item, ctx)
            else:
                tools.append(next(own))
        return tools

    @property
    def tools_by_name(self) -> dict[str, BaseTool]:
        """The tools by name (plain functions wrapped in FunctionTool), with
        `transfer_to_agent` when the agent may transfer somewhere (and no tool of its own
        has that name), without those of its toolsets (see `tools_for`). Its targets
        depend on the tree, complete only once built."""
        if self._transfer is None or TRANSFER_FUNCTION in self._tools:
            return self._tools
        if not transfer_targets(self):
            return self._tools
        return {**self._tools, TRANSFER_FUNCTION: self._transfer}

    async def tools_for(self, ctx: AgentContext) -> dict[str, BaseTool]:
        """The tools its model is offered in `ctx`'s run: `tools_by_name` with those its
        toolsets list for the invocation, in the order of `tools`. A toolset whose
        listing raises is left out, the error logged, as the reference does: the run
        goes on without its tools.

        Raises:
            ValueError: a toolset lists a tool named as another of the agent's tools.
        """
        toolsets = self.toolsets
        if not toolsets:
            return self.tools_by_name
        readonly = ReadonlyContext(ctx, agent_name=self.name)
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_list_tools(self.name, t, readonly)) for t in toolsets]
        listed = iter([task.result() for task in tasks])
        # tools_by_name begins with the agent's own tools, in the order of `tools`.
        own = iter(self.tools_by_name.values())
        groups = [next(listed) if isinstance(t, BaseToolset) else [next(own)] for t in self.tools]
        tools: dict[str, BaseTool] = {}
        for tool in [*(t for group in groups for t in group), *own]:
            if tool.name in tools:
                raise ValueError(
                    f"a toolset of agent '{self.name}' lists a tool named '{tool.name}', as "
                    f"another of its tools is named; give the toolset a tool_name_prefix or "
                    f"a tool_filter that leaves it out. Tools: {', '.join([*tools, tool.name])}."
                )
            tools[tool.name] = tool
        return tools

    @property
    def item_node(self) -> LlmAgent | None:
        """With `parallel_worker`, the agent each item runs through (it goes into the
        workflow's fingerprint as a worker's item does); None without."""
        return None if self._worker is None else cast(LlmAgent, self._worker.item_node)

    def run(self, ctx: Context, node_input: NodeInput) -> AsyncIterator[object]:
        """Run as one node run; with `parallel_worker`, once per item of the input list
        (each item's run a child of this one), the output the list of their outputs."""
        # Hands over the chosen generator itself rather than re-yielding it from one
        # more generator, whose frame every event and await of the run passed through.
        if self._worker is None:
            return super().run(ctx, node_input)
        return self._worker.run(ctx, node_input)

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        agent_ctx = as_agent_context(ctx)
        state = self._load_agent_state(ctx, LlmAgentState)
        if state is None and self.sub_agents and self._is_app_root(agent_ctx):
            owner = await self._owner(agent_ctx)
            if owner is not self:
                handover = Handover(self, agent_ctx, owner, 0)
                async for event in handover.run():
                    yield event
                if not handover.came_back:
                    return
        async with aclosing(self._runs(ctx, agent_ctx, state)) as events:
            async for event in events:
                yield event

    async def _owner(self, ctx: AgentContext) -> BaseAgent:
        """The agent a new message goes to: the one the conversation was left with.

        Routing reads only earlier invocations, so a resumed run routes the same way; it
        reads back from the newest of them until one event decides, not the history.
        """
        limit = _ROUTING_READ
        while True:
            earlier, everything = await ctx.log.before_invocation(limit)
            owner = agent_to_continue(self, earlier)
            if owner is not None or everything:
                return owner or self
            limit *= 8

    def _is_app_root(self, ctx: AgentContext) -> bool:
        """Whether this agent is the App's root agent (not a node of a workflow)."""
        return self.parent_agent is None and ctx.agent_name == self.name

    async def _runs(
        self, ctx: InvocationContext, agent_ctx: AgentContext, state: LlmAgentState | None
    ) -> AsyncGenerator[Event, None]:
        """This agent's current run (a fresh one without `state`), then a fresh run each
        time a sub-agent it transferred to hands the conversation back.

        A fresh run checkpoints where it begins on its first event, the first model turn:
        it emits no content-less event of its own, as the reference emits none, and the
        checkpoint is stored but not shown (the reference's LlmAgent writes none).
        """
        while True:
            checkpoint: JsonValue = None
            if state is None:
                fresh = LlmAgentState(run_start=await self._run_start(agent_ctx))
                state, checkpoint = fresh, fresh.model_dump(mode="json")
            transfer = _Transfer()
            async with aclosing(self._turns(ctx, agent_ctx, state, transfer)) as events:
                async for event in events:
                    if checkpoint is not None and event.author == self.name:
                        event.actions.agent_state, checkpoint = checkpoint, None
                        agent_ctx.invocation_context.private_checkpoints.add(event.id)
                    yield event
            if transfer.handover is None:
                return
            async for event in transfer.handover.run():
                yield event
            if not transfer.handover.came_back:
                return
            state = None

    async def _turns(
        self,
        ctx: InvocationContext,
        agent_ctx: AgentContext,
        state: LlmAgentState,
        transfer: _Transfer,
    ) -> AsyncGenerator[Event, None]:
        """Model turns and tool calls until the model answers, a call waits, or the model
        transferred the conversation (to a sub-agent: `transfer.handover` carries it out)."""
        calls = 0
        while True:
            pending: list[FunctionCall] = []
            progress = await self._progress(agent_ctx, state)
            turn = progress.turn
            if turn is not None and not turn.function_calls:
                if not progress.answered_since_turn() and not self._replied(agent_ctx, progress):
                    agent_ctx.last_response = self._output_of(agent_ctx, turn)
                    return
                # A long-running call answered after the model's reply (a progress update
                # or its final result): the model gets another turn, as in the reference.
            else:
                lro_ids = set(turn.long_running_tool_ids or ()) if turn else set[str]()
                pending, confirming = self._pending(agent_ctx, progress, lro_ids)
                if self._stops_here(agent_ctx, progress, pending, confirming):
                    self._hand_result_up(agent_ctx, progress)
                    return
                if not pending and await self._transferred(agent_ctx, progress, transfer):
                    return
                if any(not self._started(agent_ctx, state, c, lro_ids) for c in pending):
                    waiting: set[str] = set()
                    keys = _call_keys(turn.function_calls if turn else [])
                    calls_run = self._run_calls(
                        agent_ctx, state, pending, lro_ids, waiting, progress.tools, keys=keys
                    )
                    async with aclosing(calls_run) as events:
                        async for event in events:
                            yield event
                    # A sub-agent it called as a tool waits for input, or a tool ended the
                    # agent's run (`end_invocation`): no model turn follows.
                    if waiting or agent_ctx.end_invocation:
                        return
                    state = self._load_agent_state(ctx, LlmAgentState) or state
                    continue
                if pending and not progress.has_interim_result(lro_ids):
                    return  # waits for the long-running calls' results
                # Only long-running calls wait, and one returned an interim result (its
                # status): the model gets a turn with it now, then the run waits for them.
            event, calls = await self._next_turn(agent_ctx, progress, pending, calls)
            yield event

    async def _next_turn(
        self, ctx: AgentContext, progress: _Progress, pending: list[FunctionCall], calls: int
    ) -> tuple[Event, int]:
        """The agent's next turn, and the run's model calls then: its structured reply
        (see `_structured_reply`), else its model's next turn (one more model call)."""
        reply = self._structured_reply(ctx, progress, pending)
        if reply is not None:
            return reply, calls
        calls = self._count_model_call(calls)
        return await self._ask_model(ctx, progress), calls

    def _count_model_call(self, calls: int) -> int:
        """One more model call in this run.

        Raises:
            ModelCallError: that would be more than `max_llm_calls`.
        """
        if calls + 1 > self.max_llm_calls:
            raise ModelCallError(
                f"agent '{self.name}' called its model {self.max_llm_calls} times in one run "
                "without a final answer; raise max_llm_calls or check the tools' results."
            )
        return calls + 1

    async def _progress(self, ctx: AgentContext, state: LlmAgentState) -> _Progress:
        """The run's events so far: its invocation's, from the first carrying its checkpoint
        (none yet on a fresh start). The session's history is not read for this."""
        events = await ctx.log.invocation_events()
        start = next(
            (i for i, e in enumerate(events) if _starts_run(e, self.name, state.run_start)),
            len(events),
        )
        current = [
            e
            for e in events[start:]
            if is_visible(e, ctx.branch) and (e.author == self.name or e.author == "user")
        ]
        tools = await self.tools_for(ctx)
        tasks = {n for n, t in tools.items() if isinstance(t, TaskAgentTool)}
        if tasks:
            current = hide_task_replies(current, self.name, tasks)
        turns = [e for e in current if e.author == self.name and _is_model_turn(e)]
        return _Progress(
            run_start=state.run_start,
            current=current,
            turn=turns[-1] if turns else None,
            tools=tools,
        )

    async def _run_start(self, ctx: AgentContext) -> str:
        """The id of the session's last event: a fresh run begins after it ('' in an empty
        session). With the default contents the first request reads the session's events
        anyway; with "none", in single-turn mode, or for a task handed over by a call,
        only the last one is read."""
        whole = self.effective_mode(ctx) != "single_turn" and ctx.task_call is None
        if self.include_contents == "default" and whole and ctx.call_turn is None:
            events = await ctx.log.events()
            return events[-1].id if events else ""
        last = await ctx.log.last_event()
        return last.id if last else ""

    async def _before_run(self, ctx: AgentContext, run_start: str) -> list[Event]:
        """The events the model sees before the run: the session's up to the run's start
        ("default"), or the current turn up to it ("none", see `_current_turn`; read
        without the history when it is in the run's invocation).

        Raises:
            ValueError: the run's start is no longer in the session.
        """
        if not run_start or ctx.task_call is not None:
            # The run began in an empty session, or it works on a task handed to it by a
            # call: its model sees the task (the call's arguments) and what came after.
            return []
        if ctx.call_turn is not None:
            # Called as a tool: the conversation is what came after the call.
            own = await ctx.log.invocation_events()
            call = _position(own, ctx.call_turn)
            since = own if call is None else own[call + 1 :]
            start = _position(since, run_start)
            if start is None:
                return []  # the run began right after the call
            return (
                since[: start + 1]
                if self.include_contents == "default"
                else _current_turn(since, start, self.name)
            )
        if self.include_contents == "none":
            own = await ctx.log.invocation_events()
            start = _position(own, run_start)
            if start is not None:
                return _current_turn(own, start, self.name)
        events = await ctx.log.events()
        start = _position(events, run_start)
        if start is None:
            raise ValueError(
                f"the start of agent '{self.name}''s run (event '{run_start}') is not in "
                "the session; the session's events were removed while the run was paused."
            )
        if self.include_contents == "default":
            # The summaries stored before the run stand for the events they cover.
            return compacted(events[: start + 1], agent=self.name)
        return _current_turn(events, start, self.name)

    async def _run_tool(
        self,
        tool: BaseTool,
        args: dict[str, JsonValue],
        tool_context: ToolContext,
        plugins: PluginManager,
    ) -> JsonValue:
        before = chain(plugins.tool_hooks("before"), self.before_tool_callback)
        after = chain(plugins.tool_hooks("after"), self.after_tool_callback)
        error = chain(plugins.tool_hooks("error"), self.on_tool_error_callback)
        if before is None and after is None and error is None:
            return await tool.run(args, tool_context)
        return await tool_result(tool, args, tool_context, before=before, after=after, error=error)

    def _pending(
        self, ctx: AgentContext, progress: _Progress, lro_ids: set[str]
    ) -> tuple[list[FunctionCall], set[str]]:
        """The last turn's calls still to run, and the ids of those waiting for a
        person's answer (a confirmation, a credential). Calls sharing an id are told apart
        (see `match_responses`): one may wait for its confirmation, or run once confirmed,
        after the other ended; each is asked under its own key (see `confirmation_id`)."""
        if progress.turn is None:
            return [], set()
        calls = progress.turn.function_calls
        requested = requested_calls(progress.current, self.name)
        credentials = credential_requests(progress.current, self.name)
        keys = _call_keys(calls)
        asks = [
            [
                r
                for r in request_ids(keys[id(c)], requested.keys() | credentials)
                if r in credentials or _is_same_call(c, requested[r])
            ]
            for c in calls
        ]
        requests = {r for ids in asks for r in ids}
        matched = match_responses(calls, progress.responses(lro_ids), asked=requests)
        pending: list[FunctionCall] = []
        confirming: set[str] = set()
        for call, response, ids in zip(calls, matched, asks, strict=True):
            if response is not None:
                continue
            if any(r not in ctx.resume_inputs for r in ids):
                confirming.add(call.id or "")
            else:
                pending.append(call)
        return pending, confirming

    def _stops_here(
        self,
        ctx: AgentContext,
        progress: _Progress,
        pending: list[FunctionCall],
        confirming: set[str],
    ) -> bool:
        """The run stops without asking the model: a tool result ended the turn (e.g.
        exit_loop), finish_task ended the task, or a call waits for a person to confirm
        (or reject) it."""
        if progress.turn is not None and not pending and self._skips_summary(progress):
            return True
        if progress.turn is not None and not pending and self._finished(ctx, progress):
            return True
        return bool(confirming) and not pending

    def _hand_result_up(self, ctx: AgentContext, progress: _Progress) -> None:
        """A finished task sub-agent's result is its node agent's last response, as a
        reply would be (see `BaseAgent.run`), also when its result event was committed
        before a crash. A delegated task's result answers its parent's call instead."""
        if ctx.task_call is not None or ctx.node_agent == self.name:
            return
        if self.effective_mode(ctx) != "task":
            return
        call = finished_call(progress.after_turn(), self.name, progress.turn)
        if call is not None:
            ctx.last_response = self.finish_tool.result(call.args or {})

    def _finished(self, ctx: AgentContext, progress: _Progress) -> bool:
        """Whether a task agent's last turn called finish_task with arguments that fit."""
        if self.effective_mode(ctx) != "task":
            return False
        return finished_call(progress.after_turn(), self.name, progress.turn) is not None

    def _replied(self, ctx: AgentContext, progress: _Progress) -> bool:
        """Whether the user answered a task agent's question (its last turn)."""
        if self.effective_mode(ctx) != "task":
            return False
        return any(
            e.author == "user" and e.content is not None and task_reply(e.content)
            for e in progress.after_turn()
        )

    def _structured_reply(
        self, ctx: AgentContext, progress: _Progress, pending: list[FunctionCall]
    ) -> Event | None:
        """The agent's reply once every call of its last turn was answered and one called
        `set_model_response` with arguments that fit: the value as JSON text, and
        `output_key`'s value, as the reference ends. A crash before this reply was
        committed gives it on resume (the call's answer is committed)."""
        tool = self._tools.get(SET_MODEL_RESPONSE)
        if not isinstance(tool, SetModelResponseTool) or progress.turn is None or pending:
            return None
        call = next(
            (
                c
                for c in progress.turn.function_calls
                if c.name == SET_MODEL_RESPONSE and tool.problem(c.args or {}) is None
            ),
            None,
        )
        if call is None:
            return None
        value = tool.result(call.args or {})
        event = Event(
            invocation_id=ctx.invocation_id,
            author=self.name,
            branch=ctx.branch,
            content=Content(role="model", parts=[Part(text=json.dumps(value, ensure_ascii=False))]),
        )
        if self.output_key:
            event.actions.state_delta[self.output_key] = value
        return event

    def _output_of(self, ctx: AgentContext, turn: Event) -> JsonValue:
        """What the agent's reply gives the nodes after it: its answer, parsed and checked
        when it has an output_schema, as the reference outputs the validated value.

        Raises:
            OutputSchemaError: the answer is not JSON that fits the schema.
        """
        text = answer_text(turn)
        if self._reply_format is None or self.effective_mode(ctx) == "task" or not text.strip():
            return text
        return self._reply_format.value_of(text)

    def _skips_summary(self, progress: _Progress) -> bool:
        """Whether a tool result of the last turn asked to end without the model's summary."""
        return any(
            e.author == self.name and e.actions.skip_summarization for e in progress.after_turn()
        )

    async def _transferred(
        self, ctx: AgentContext, progress: _Progress, transfer: _Transfer
    ) -> bool:
        """Whether the last turn's calls transferred the conversation (now, or before a
        pause or crash). To a sub-agent: `transfer.handover` is set to carry it out, from
        after the transfer in the session's events; to the parent or a peer, the parent's
        handover runs it once this agent ends.

        Raises:
            WorkflowChangedError: that agent is no longer a sub-agent, the parent or a
                peer of this one (the tree changed since the transfer).
        """
        after = progress.after_turn()
        event = next(
            (e for e in reversed(after) if e.author == self.name and e.actions.transfer_to_agent),
            None,
        )
        if event is None:
            return False
        name = event.actions.transfer_to_agent
        parent = self.parent_agent
        related = [*self.sub_agents, *([parent, *parent.sub_agents] if parent else [])]
        target = next((a for a in related if a.name == name and a is not self), None)
        if target is None:
            raise WorkflowChangedError(
                f"agent '{self.name}' transferred to '{name}', which is no longer its "
                "sub-agent, parent or peer. Resume with the code the run started with, or "
                "start a new run."
            )
        if target in self.sub_agents:
            events = await ctx.log.invocation_events()  # the transfer is the run's own
            at = next(i for i in range(len(events) - 1, -1, -1) if events[i].id == event.id)
            transfer.handover = Handover(self, ctx, target, at + 1)
        return True

    # --- the model ---------------------------------------------------------------------

    async def _ask_model(self, ctx: AgentContext, progress: _Progress) -> Event:
        request = await self._request(ctx, progress)
        callback_context = CallbackContext(
            state=ctx.state,
            agent_name=self.name,
            artifacts=await ctx.artifacts_for(f"{self.name}/model"),
            memory=ctx.memory_scope(),
            invocation_context=ctx,
        )
        plugins = ctx.plugins
        response = llm_response(
            self.name,
            await run_callbacks(
                chain(plugins.model_hooks("before"), self.before_model_callback),
                callback_context=callback_context,
                llm_request=request,
            ),
        )
        if response is None:
            # Counted before the call, as the reference does (a callback's reply is not a
            # call); the limit's refusal is not the model's error, so no callback answers it.
            ctx.count_llm_call(self.name)
            # As the reference labels it, after the callbacks (which see the request without it).
            labels = request.config.labels = dict(request.config.labels or {})
            labels.setdefault(AGENT_NAME_LABEL, self.name)
            response = await self._generate_or_recover(request, callback_context, ctx)
        replaced = llm_response(
            self.name,
            await run_callbacks(
                chain(plugins.model_hooks("after"), self.after_model_callback),
                callback_context=callback_context,
                llm_response=response,
            ),
        )
        response = self._planned(callback_context, replaced or response)
        event = self._turn_event(ctx, response, progress.tools)
        # The callbacks' writes land with the turn, so a committed turn never calls them again.
        event.actions.state_delta = {
            **callback_context.actions.state_delta,
            **event.actions.state_delta,
        }
        event.actions.artifact_delta = {
            **callback_context.actions.artifact_delta,
            **event.actions.artifact_delta,
        }
        widgets = callback_context.actions.render_ui_widgets
        if widgets:
            event.actions.render_ui_widgets = [*widgets, *(event.actions.render_ui_widgets or ())]
        return event

    async def _generate_or_recover(
        self, request: LlmRequest, callback_context: CallbackContext, ctx: AgentContext
    ) -> LlmResponse:
        """The model's response; when the call fails, the first model-error callback's
        response instead (plugins first), or the error when none answers."""
        try:
            return await self._generate(request, callback_context, ctx)
        except Exception as error:
            callbacks = chain(ctx.plugins.model_hooks("error"), self.on_model_error_callback)
            if callbacks is None:
                raise
            recovered = llm_response(
                self.name,
                await run_callbacks(
                    callbacks, callback_context=callback_context, llm_request=request, error=error
                ),
            )
            if recovered is None:
                raise
            return recovered

    async def _generate(
        self, request: LlmRequest, callback_context: CallbackContext, ctx: AgentContext
    ) -> LlmResponse:
        """The model's complete response; when the call streams (`StreamingMode.SSE`),
        each partial chunk is shown to the caller as it arrives (through the planner, as
        the reference passes every chunk), and never stored: the complete response is
        the turn that commits."""
        llm = self.canonical_model
        response: LlmResponse | None = None
        streaming = ctx.current_run_config.is_streaming
        generated = (
            llm.generate_content_async(request, stream=True)
            if streaming
            else llm.generate_content_async(request)
        )
        async with aclosing(generated) as responses:
            async for item in responses:
                if not item.partial:
                    response = item
                elif streaming:
                    chunk = self._planned(callback_context, item)
                    await ctx.stream_partial(self._partial_event(ctx, chunk))
        if response is None or (response.error_code and response.content is None):
            detail = f"{response.error_code}: {response.error_message}" if response else "nothing"
            raise ModelCallError(
                f"model '{llm.model}' of agent '{self.name}' answered with {detail}; resume the "
                "invocation (by its invocation_id) to ask again."
            )
        return response

    async def _request(self, ctx: AgentContext, progress: _Progress) -> LlmRequest:
        llm = self.canonical_model
        # The agent's config is copied (the request's is changed below); a new one is not:
        # a deep copy of its empty fields costs more than making one again.
        own = self.generate_content_config
        config = GenerateContentConfig() if own is None else own.model_copy(deep=True)
        apply_run_config(config, ctx.current_run_config)
        contents = _with_input_context(ctx, await self._contents(ctx, progress))
        request = LlmRequest(model=llm.model, contents=contents, config=config)
        paragraphs, instruction_turn = await self._instructions(ctx)
        request.append_instructions(paragraphs)
        if instruction_turn is not None:
            request.contents = with_turn_before_users(request.contents, instruction_turn)
        if self.effective_mode(ctx) != "single_turn":
            request.append_instructions([self._identity()])
        self._plan(ctx, request)
        # With tools, the structured reply is a call to set_model_response instead.
        reply_format = None if SET_MODEL_RESPONSE in self._tools else self._reply_format
        if reply_format is not None and self.effective_mode(ctx) != "task":
            reply_format.apply(request)
        targets = transfer_targets(self)
        if targets:
            parent = self.parent_agent if self.parent_agent in targets else None
            others = [t for t in targets if t is not parent]
            request.append_instructions([transfer_instruction(others, parent)])
        request.append_tools(_declared(progress.tools))
        await self._let_tools_shape(ctx, request, progress.tools)
        if self.code_executor is not None:
            self.code_executor.process_llm_request(request)
        return request

    def _plan(self, ctx: AgentContext, request: LlmRequest) -> None:
        """The planner's part of the request: a built-in planner's thinking config, or
        another's instruction."""
        if self.planner is None:
            return
        if isinstance(self.planner, BuiltInPlanner):
            self.planner.apply_thinking_config(request)
            return
        readonly = ReadonlyContext(ctx, agent_name=self.name)
        instruction = self.planner.build_planning_instruction(readonly, request)
        if instruction:
            request.append_instructions([instruction])

    def _planned(self, callback_context: CallbackContext, response: LlmResponse) -> LlmResponse:
        """The response with the parts the planner keeps of it."""
        if self.planner is None or response.content is None or not response.content.parts:
            return response
        parts = self.planner.process_planning_response(
            callback_context, list(response.content.parts)
        )
        if not parts:
            return response
        content = response.content.model_copy(update={"parts": parts})
        return response.model_copy(update={"content": content})

    def _identity(self) -> str:
        """Who the model is, told every agent but a single-turn one (as the reference tells
        them, in baton's words)."""
        said = f'You are the agent named "{self.name}".'
        if self.description:
            said += f' You are described as "{self.description}".'
        return said

    async def _let_tools_shape(
        self, ctx: AgentContext, request: LlmRequest, tools: dict[str, BaseTool]
    ) -> None:
        """Each toolset's `process_llm_request`, then each tool's (preload_memory adds what
        memory recalls)."""
        tool_context = ToolContext(
            state=ctx.state,
            agent_name=self.name,
            app_name=ctx.app_name,
            user_id=ctx.user_id,
            session_id=ctx.session.id,
            memory=ctx.memory_scope(),
            artifact_service=ctx.artifact_service,
            invocation_context=ctx,
        )
        for toolset in self.toolsets:
            await toolset.process_llm_request(tool_context=tool_context, llm_request=request)
        for tool in tools.values():
            await tool.process_llm_request(tool_context=tool_context, llm_request=request)

    async def _contents(self, ctx: AgentContext, progress: _Progress) -> list[Content]:
        """What the model is shown: in single-turn mode, the node's input and the run's
        own turns (with their calls' results); else the conversation up to the run
        (`include_contents`) and the run, with the node's input where it came in."""
        if self.effective_mode(ctx) == "single_turn":
            text = input_text(ctx.node_input)
            own = [e for e in progress.current if e.author == self.name or _answers_calls(e)]
            at = None if text is None else (0, text)
            own = self._with_plans_shown(own)
            return conversation(own, agent=self.name, branch=ctx.branch, node_input=at)
        thoughts = ctx.current_run_config.include_thoughts_from_other_agents
        events = [*await self._before_run(ctx, progress.run_start), *progress.current]
        events = self._with_plans_shown(events)
        if ctx.call_turn is not None:
            text = input_text(ctx.node_input)
            at = None if text is None else (0, text)  # the request opens the call's conversation
        else:
            at = self._node_input(ctx, events)
            if at and self.include_contents == "none" and _is_users_message(ctx, at[1]):
                at = None  # the user's message is history to this turn, as the reference has it
        return conversation(
            events, agent=self.name, branch=ctx.branch, node_input=at, include_thoughts=thoughts
        )

    def _with_plans_shown(self, events: list[Event]) -> list[Event]:
        """With a planner other than the built-in one, the agent's own thoughts (its plans
        and reasoning) as plain text, so its model sees them, as in the reference."""
        if self.planner is None or isinstance(self.planner, BuiltInPlanner):
            return events
        return [_without_thought_marks(e) if e.author == self.name else e for e in events]

    def _node_input(self, ctx: AgentContext, events: Sequence[Event]) -> tuple[int, str] | None:
        """Where the node's input goes in the conversation: before the node run's first event
        (stamped with its node path by the engine; when driven directly, unstamped, the
        first the run recorded in its log).

        Not when it is the user's message of this invocation, which is already there.
        """
        text = input_text(ctx.node_input)
        if text is None:
            return None
        said = [
            e.content.text
            for e in events
            if e.author == "user" and e.invocation_id == ctx.invocation_id and e.content
        ]
        if text in said:
            return None
        mine = ctx.log.first_committed()
        first = next(
            (
                i
                for i, e in enumerate(events)
                if e.id == mine or (e.node_info and e.node_info.path == ctx.node_path)
            ),
            len(events),
        )
        return first, text

    async def _instructions(self, ctx: AgentContext) -> tuple[list[str], Content | None]:
        """The system instruction's paragraphs (the root's global instruction, the static
        one, else the instruction), and the instruction as a turn when a static one
        takes its place, as the reference builds them."""
        paragraphs: list[str] = []
        read = ctx.invocation_context.take_first_artifacts()
        root = self.root_agent
        if isinstance(root, LlmAgent) and root.global_instruction:
            warnings.warn(_GLOBAL_INSTRUCTION_DEPRECATED, DeprecationWarning, stacklevel=2)
            paragraphs.append(
                await _resolved(root.global_instruction, ctx, agent=root.name, read=read)
            )
        paragraphs += static_paragraphs(self.static_instruction, agent=self.name)
        if not self.instruction:
            return paragraphs, None
        instruction = await _resolved(self.instruction, ctx, agent=self.name, read=read)
        if self.static_instruction is None:
            return [*paragraphs, instruction], None
        return paragraphs, as_instruction_turn(instruction)

    def _partial_event(self, ctx: AgentContext, chunk: LlmResponse) -> Event:
        """A streamed chunk as the caller sees it: its calls are not run (the complete
        response's are), and it names its node run as the whole turn will, as in the
        reference."""
        content = chunk.content.model_copy(update={"role": "model"}) if chunk.content else None
        return Event(
            invocation_id=ctx.invocation_id,
            author=self.name,
            branch=ctx.branch,
            node_info=NodeInfo(path=ctx.node_path, run_id=ctx.run_id),
            content=content,
            partial=True,
            turn_complete=chunk.turn_complete,
            custom_metadata=chunk.custom_metadata,
        )

    def _turn_event(
        self, ctx: AgentContext, response: LlmResponse, tools: dict[str, BaseTool]
    ) -> Event:
        parts = list(response.content.parts or []) if response.content else []
        for part in parts:
            call = part.function_call
            if call is not None and not call.id:
                call.id = f"baton-{uuid.uuid4().hex}"
        content = Content(role="model", parts=parts)
        calls = content.function_calls
        event = Event(
            invocation_id=ctx.invocation_id,
            author=self.name,
            branch=ctx.branch,
            content=content,
            long_running_tool_ids={c.id for c in calls if c.id and _pauses(c, tools)} or None,
            error_code=response.error_code,
            error_message=response.error_message,
            turn_complete=response.turn_complete,
            custom_metadata=response.custom_metadata,
            finish_reason=response.finish_reason,
            usage_metadata=response.usage_metadata,
        )
        _declare_answers(event, tools)
        if not calls and self.effective_mode(ctx) == "task" and not ctx.answers_a_call:
            # A question to the user: the run waits for their next message.
            event.long_running_tool_ids = {task_question_id(event.id)}
        elif not calls and self.output_key:
            # Thoughts (a thinking model's, a planner's) are not the answer, as in the reference.
            answer = "".join(p.text for p in parts if p.text and not p.thought)
            if self._reply_format is None:
                event.actions.state_delta[self.output_key] = answer
            elif answer.strip():  # an empty reply (a stream's last chunk) is not checked
                value = self._reply_format.value_of(answer)
                event.actions.state_delta[self.output_key] = value
        return event

    # --- the tools ---------------------------------------------------------------------

    async def _run_calls(
        self,
        ctx: AgentContext,
        state: LlmAgentState,
        pending: list[FunctionCall],
        lro_ids: set[str],
        waiting: set[str],
        tools: dict[str, BaseTool],
        *,
        keys: dict[int, str],
    ) -> AsyncGenerator[Event, None]:
        """Run the calls without a result at once, as the reference does: the tools'
        (a long-running tool's unless it started) and the single-turn sub-agents' (an
        `AgentTool`'s among them), whose events come as they are committed (see
        `CallRelay`). Their results are one event, in the turn's order (see `_Batch`).
        Then each task agent's call, its events, then its result. The ids of those whose
        sub-agent waits for input (a task agent: for the user's reply) go to `waiting`.
        `keys` names each call of the turn (see `_call_keys`).

        A sub-agent waiting for input holds the task agents' calls: the user talks with
        one task at a time (each reply goes to the one question open)."""
        together = [
            c
            for c in pending
            if keys[id(c)] in state.finished_calls
            or (_runs_together(c, tools) and not self._started(ctx, state, c, lro_ids))
        ]
        relay = CallRelay()

        async def run_call(
            call: FunctionCall, key: str, writes: MutableMapping[str, JsonValue], sync: asyncio.Lock
        ) -> Event | None:
            tool = tools.get(call.name or "")
            if isinstance(tool, SingleTurnAgentTool):
                return await self._delegate(ctx, call, tool, waiting, relay)
            return await self._call_tool(
                ctx,
                call,
                tools,
                key=key,
                interim=call.id in lro_ids,
                shared_writes=writes,
                sync_tools=sync,
            )

        if together:
            keyed = [keys[id(c)] for c in together]
            batch = _Batch(
                ctx, state, together, keyed, run_call, author=self.name, long_running=lro_ids
            )
            # Closed with the run: the calls still running are cancelled then and there.
            async with aclosing(batch.run(relay)) as events:
                async for event in events:
                    yield event
        if waiting:
            return
        tasks = [c for c in pending if isinstance(tools.get(c.name or ""), TaskAgentTool)]
        async for event in self._delegate_tasks(ctx, tasks, waiting, tools):
            yield event

    async def _delegate_tasks(
        self,
        ctx: AgentContext,
        calls: list[FunctionCall],
        waiting: set[str],
        tools: dict[str, BaseTool],
    ) -> AsyncGenerator[Event, None]:
        """Run the calls of task agents, one after another (see `_run_calls`)."""
        for call in calls:
            tool = tools.get(call.name or "")
            if not isinstance(tool, TaskAgentTool):
                continue
            answered = False
            async for event in tool.delegate(ctx, call):
                answered = answered or answers(event, call)
                yield event
            if not answered:
                waiting.add(call.id or "")
                return

    async def _delegate(
        self,
        ctx: AgentContext,
        call: FunctionCall,
        tool: SingleTurnAgentTool,
        waiting: set[str],
        relay: CallRelay,
    ) -> Event | None:
        """A call of a single-turn sub-agent, run as one of its turn's calls: its events
        go through `relay`, its result is returned (see `_delegated`). None while it waits
        for input (its id goes to `waiting`). Two calls of one agent run at once too, each
        with checkpoints of its own (see `baton.context.agent_key`)."""
        event = await self._delegated(ctx, call, tool, relay)
        if event is None:
            waiting.add(call.id or "")
        return event

    async def _delegated(
        self, ctx: AgentContext, call: FunctionCall, tool: SingleTurnAgentTool, relay: CallRelay
    ) -> Event | None:
        """The before-tool callbacks (a result of theirs stands for the sub-agent's run),
        the sub-agent's run, its events sent through `relay` (resumed where it was, or
        not run again once it ended), then its reply through the after-tool callbacks, as
        the call's result event; None while the sub-agent waits for input."""
        tool_context = self._tool_context(ctx, call)
        args = call.args or {}
        started, reply = await tool.progress(ctx, call)
        before = chain(ctx.plugins.tool_hooks("before"), self.before_tool_callback)
        result = None if started else await result_before_tool(before, tool, args, tool_context)
        if result is None and not started:
            result = tool.unfit(args)  # arguments its input_schema refuses: the model retries
        if result is None:
            if reply is None:
                async with aclosing(tool.run_agent(ctx, call)) as events:
                    async for event in events:
                        await relay.send(event)
                _, reply = await tool.progress(ctx, call)
            if reply is None:
                return None
            result = reply
            state, artifacts = await tool.forwarded_writes(ctx, call)
            tool_context.actions.state_delta.update(state)
            tool_context.actions.artifact_delta.update(artifacts)
        after = chain(ctx.plugins.tool_hooks("after"), self.after_tool_callback)
        result = await result_after_tool(after, tool, args, tool_context, result)
        return self._delegated_result(ctx, call, tool, tool_context, result)

    def _delegated_result(
        self,
        ctx: AgentContext,
        call: FunctionCall,
        tool: SingleTurnAgentTool,
        tool_context: ToolContext,
        result: JsonValue,
    ) -> Event:
        """The result event of a sub-agent's call."""
        response = to_function_response(call, result)
        parts = [Part(function_response=response)]
        if tool.skip_summarization:
            # The reply ends the turn: shown as text too, for clients that show no results.
            tool_context.actions.skip_summarization = True
            shown = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
            if shown and "error" not in (response.response or {}):
                parts.append(Part(text=shown))
        return Event(
            invocation_id=ctx.invocation_id,
            author=self.name,
            branch=ctx.branch,
            actions=tool_context.actions,
            content=Content(role="user", parts=parts),
        )

    @property
    def finish_tool(self) -> FinishTaskTool:
        """A task agent's finish_task tool.

        Raises:
            LookupError: the agent is not in task mode.
        """
        tool = self._tools.get(FINISH_TASK)
        if not isinstance(tool, FinishTaskTool):
            raise LookupError(f"LlmAgent '{self.name}' has mode={self.mode!r}, not 'task'.")
        return tool

    @staticmethod
    def _started(
        ctx: AgentContext, state: LlmAgentState, call: FunctionCall, lro_ids: set[str]
    ) -> bool:
        """Whether a long-running call's tool ran (or a response came before it could);
        a plain call has not started while it is pending."""
        return call.id in lro_ids and (
            call.id in state.started_calls or call.id in ctx.resume_inputs
        )

    def _tool_context(
        self,
        ctx: AgentContext,
        call: FunctionCall,
        *,
        key: str | None = None,
        shared_writes: MutableMapping[str, JsonValue] | None = None,
        sync_tools: asyncio.Lock | None = None,
    ) -> ToolContext:
        """The context a tool (and its callbacks) gets for one call (`shared_writes` and
        `sync_tools`: see `ToolContext`); `key` names the call in its idempotency key
        and its confirmation request's id (its id unless calls of its turn share it, see
        `_call_keys`)."""
        key = key or call.id or ""
        answer = ctx.resume_inputs.get(confirmation_id(key))
        return ToolContext(
            state=ctx.state,
            function_call_id=call.id,
            agent_name=self.name,
            idempotency_key=f"{ctx.idempotency_key}/{key}",
            tool_confirmation=None if answer is None else ToolConfirmation.from_answer(answer),
            artifact_service=ctx.artifact_service,
            app_name=ctx.app_name,
            user_id=ctx.user_id,
            session_id=ctx.session.id,
            memory=ctx.memory_scope(),
            shared_writes=shared_writes,
            sync_tools=sync_tools,
            invocation_context=ctx,
            auth_responses=_auth_responses(ctx.resume_inputs, key),
        )

    async def _call_tool(
        self,
        ctx: AgentContext,
        call: FunctionCall,
        tools: dict[str, BaseTool],
        *,
        key: str | None = None,
        interim: bool = False,
        shared_writes: MutableMapping[str, JsonValue] | None = None,
        sync_tools: asyncio.Lock | None = None,
    ) -> Event:
        """Run one call; its result (a long-running tool's status: when not falsy) as an event."""
        tool_context = self._tool_context(
            ctx, call, key=key, shared_writes=shared_writes, sync_tools=sync_tools
        )
        tool = tools.get(call.name or "")
        if tool is None:
            known = ", ".join(tools) or "none"
            result: JsonValue = {"error": f"tool '{call.name}' does not exist; tools: {known}."}
        else:
            run = self._run_tool(tool, call.args or {}, tool_context, ctx.plugins)
            result = await (_run_waitable(run) if tool_context.may_request_tokens else run)
            result = self._checked_transfer(tool_context, result)
        event = Event(
            invocation_id=ctx.invocation_id,
            author=self.name,
            branch=ctx.branch,
            actions=tool_context.actions,
        )
        asked = asked_confirmation(call.id or "", tool_context.actions.requested_tool_confirmations)
        if asked is not None and tool_context.tool_confirmation is None:
            # The result waits for a person.
            return request_event(call, asked, event, key=key or call.id or "")
        credential = tool_context.actions.requested_auth_configs.get(call.id or "")
        if credential is not None:
            # The result waits for the user's credential; a tool given one that asks again
            # asks a new question.
            key = key or call.id or ""
            attempt = answered_credentials(key, ctx.resume_inputs)
            return credential_request_event(
                credential, event, call_id=call.id or "", request_id=credential_id(key, attempt)
            )
        # A long-running tool's falsy return ({}, "", 0, [], None) is no interim result, as
        # in the reference: the call's response comes later.
        if not (interim and not result):
            response = to_function_response(call, result)
            event.content = Content(role="user", parts=[Part(function_response=response)])
        else:
            # No result yet, so none to end the turn with: the answer that comes later gets
            # a model turn (get_user_choice asks for it), as in the reference, whose
            # long-running call without a result leaves no event.
            event.actions.skip_summarization = None
        if isinstance(tool, FinishTaskTool) and result == FINISHED:
            self._give_result(ctx, event, tool.result(call.args or {}))
        return event

    def _checked_transfer(self, tool_context: ToolContext, result: JsonValue) -> JsonValue:
        """The result of a call that asked to transfer (`actions.transfer_to_agent`, e.g.
        the reference's `transfer_to_agent` function listed as a tool): an agent this one
        may not transfer to is answered with why and what it may choose, as its own
        transfer tool answers, and nothing is transferred."""
        name = tool_context.actions.transfer_to_agent
        if name is None or name in {t.name for t in transfer_targets(self)}:
            return result
        tool_context.actions.transfer_to_agent = None
        tool_context.actions.transfer_reason = None
        return {"error": why_not(self, name)}

    def _give_result(self, ctx: AgentContext, event: Event, result: JsonValue) -> None:
        """The task's result on the event that ended the task: `output_key`'s value, and
        its node run's output when the node runs this agent (a sub-agent's is the tool
        result of the call that handed it the task, or just its run's end)."""
        if self.output_key:
            event.actions.state_delta[self.output_key] = result
        if ctx.task_call is not None or ctx.node_agent != self.name:
            return  # the parent's call gets it (see TaskAgentTool.delegate)
        event.output = result
        path = ctx.node_path
        event.node_info = NodeInfo(path=path, run_id=ctx.run_id, output_for=[path])


class _Batch:
    """A turn's calls, run at once, as the reference runs them.

    The calls share their state writes as they make them (`writes`), as the reference's
    share the session's state: a call builds on what another wrote, and the turn's result
    holds a list or dict key's latest value (see `_with_latest_writes`). Sync (`def`) tools
    run one at a time (`sync_tools`), as the reference runs them on its event loop, so their
    read-modify-writes of the state do not interleave in worker threads. A sub-agent's
    call (an `AgentTool`'s) runs among them, its events yielded as it makes them (see
    `CallRelay`). A call that ends while others still run is recorded in the agent's
    checkpoint (an event of baton's own, not shown), so that neither a crash nor a
    sibling's failure runs it again; when a call fails, the others still running are
    cancelled, as in the reference, and the failure is raised once the calls that ended
    are recorded. Once every call has ended, their results are one event in the turn's
    order (a long-running tool's interim result among them; one that returned nothing
    has no part, a sub-agent waiting for input none either), and the requests of calls
    that wait for a person's confirmation follow it. The first of these events carries the
    checkpoint that names the long-running calls as started (when it holds only that, the
    run's checkpoint keeps it, see `InvocationContext.row_only_checkpoints`).
    """

    def __init__(
        self,
        ctx: AgentContext,
        state: LlmAgentState,
        calls: list[FunctionCall],
        keys: list[str],
        run_call: Callable[
            [FunctionCall, str, MutableMapping[str, JsonValue], asyncio.Lock],
            Coroutine[Any, Any, Event | None],
        ],
        *,
        author: str,
        long_running: set[str],
    ) -> None:
        self.ctx, self.state, self.calls, self.run_call = ctx, state, calls, run_call
        self.author, self.long_running = author, long_running
        self.keys = keys
        recorded = {i: Event.model_validate(e) for i, e in state.finished_calls.items()}
        self.writes = TurnWrites()
        self.writes.restore(recorded)
        self.finished = {i: unmarked(e) for i, e in recorded.items()}
        self.sync_tools = asyncio.Lock()  # the turn's sync (`def`) tools run one at a time

    async def run(self, relay: CallRelay) -> AsyncGenerator[Event, None]:
        """The sub-agents' events (sent through `relay`) and the checkpoints of calls that
        end early as they come, then the turn's results."""
        todo = [
            (k, c) for k, c in zip(self.keys, self.calls, strict=True) if k not in self.finished
        ]
        # A TaskGroup cannot span a `yield` of an async generator (PEP 789): the tasks are
        # owned here, and cancelled and awaited however the generator ends.
        tasks = {
            asyncio.create_task(self.run_call(c, k, self.writes.of_call(k), self.sync_tools)): k
            for k, c in todo
        }
        receiving = asyncio.create_task(relay.receive())
        try:
            running: set[asyncio.Task[Event | None]] = set(tasks)
            while running:
                done, _ = await asyncio.wait(
                    {*running, receiving}, return_when=asyncio.FIRST_COMPLETED
                )
                if receiving in done:
                    event, yielded = receiving.result()
                    yield event
                    # Committed: its sender goes on. The future is still pending: only a
                    # cancelled sender would have cancelled it, and only this generator
                    # cancels the call tasks, past this line for good (it then raises, or
                    # is closed at the `yield` above, which never comes back here).
                    yielded.set_result(None)
                    receiving = asyncio.create_task(relay.receive())
                ended = {t for t in running if t in done}
                running -= ended
                error = self._take(ended, tasks)
                if error is not None:
                    await _cancel(running)
                    if self.finished.keys() != self.state.finished_calls.keys():
                        yield self._checkpoint()
                    raise error
                if running and self.finished.keys() != self.state.finished_calls.keys():
                    yield self._checkpoint()
        finally:
            await _cancel({*tasks, receiving})
        async for event in self._results():
            yield event

    def _take(
        self, done: set[asyncio.Task[Event | None]], tasks: dict[asyncio.Task[Event | None], str]
    ) -> BaseException | None:
        """Keep the results of the calls that ended (a waiting sub-agent's call has none);
        the first failure among them."""
        errors = [e for t in done if (e := t.exception()) is not None]
        for task in done:
            if task.exception() is None and (result := task.result()) is not None:
                self.finished[tasks[task]] = result
        return errors[0] if errors else None

    def _checkpoint(self) -> Event:
        """The agent's checkpoint with the results of the calls that ended so far."""
        marked = self.writes.mark(self.finished)
        recorded = {i: e.model_dump(mode="json") for i, e in marked.items()}
        self.state = self.state.model_copy(update={"finished_calls": recorded})
        event = Event(invocation_id=self.ctx.invocation_id, author=self.author)
        event.branch = self.ctx.branch
        event.actions.agent_state = self.state.model_dump(mode="json")
        self.ctx.invocation_context.private_checkpoints.add(event.id)
        return event

    async def _results(self) -> AsyncGenerator[Event, None]:
        ordered = [self.finished[k] for k in self.keys if k in self.finished]
        requests = [e for e in ordered if e.function_calls]  # waiting for a confirmation
        results = [e for e in ordered if not e.function_calls]
        events = [self._with_latest_writes(_merged(results))] if results else []
        events += requests
        # A long-running call that asked for a confirmation has not started: it runs
        # once confirmed.
        started = [
            c.id
            for c, k in zip(self.calls, self.keys, strict=True)
            if c.id in self.long_running
            and c.id not in self.state.started_calls
            and k in self.finished
            and not self.finished[k].function_calls
        ]
        if self.state.finished_calls or started:
            update: dict[str, JsonValue] = {
                "finished_calls": {},
                "started_calls": [*self.state.started_calls, *started],
            }
            self.state = self.state.model_copy(update=update)
            first = events[0]
            first.actions.agent_state = self.state.model_dump(mode="json")
            self.ctx.invocation_context.private_checkpoints.add(first.id)
            if first.is_checkpoint_only():
                self.ctx.invocation_context.row_only_checkpoints.add(first.id)
        for event in events:
            yield event

    def _with_latest_writes(self, merged: Event) -> Event:
        """The merged result with the latest value written to each list or dict key (deep
        merged into the calls' merge, for a dict), as the reference re-applies them: a
        call that read another's write built on it, which merging in the turn's order
        could drop. A scalar key keeps the turn's order: the later call's write wins,
        whichever was made last, as in the reference."""
        delta = merged.actions.state_delta
        latest = {
            key: value
            for key, value in self.writes.values.items()
            if key in delta and isinstance(value, dict | list)
        }
        if latest:
            merged.actions.state_delta = _deep_merged(dict(delta), latest)
        return merged


def _without_thought_marks(event: Event) -> Event:
    """The event with its thoughts as plain parts (a copy: the stored event keeps them)."""
    parts = event.content.parts or [] if event.content else []
    if not any(p.thought for p in parts):
        return event
    unmarked = [p.model_copy(update={"thought": None}) if p.thought else p for p in parts]
    content = event.content.model_copy(update={"parts": unmarked}) if event.content else None
    return event.model_copy(update={"content": content})


def _auth_responses(answers: Mapping[str, JsonValue], key: str) -> dict[str, JsonValue]:
    """The credentials answered to the credential requests of the call keyed `key`, by
    credential key (a later answer for a key stands)."""
    found: dict[str, JsonValue] = {}
    for attempt in range(answered_credentials(key, answers)):
        answer = answers[credential_id(key, attempt)]
        if isinstance(answer, dict) and isinstance(answer.get("credentialKey"), str):
            found[cast(str, answer["credentialKey"])] = answer.get("exchangedAuthCredential")
    return found


async def _run_waitable(run: Coroutine[Any, Any, JsonValue]) -> JsonValue:
    """A tool call whose `get_auth_response` may ask a token endpoint (see
    `ToolContext.may_request_tokens`), run so that the request waits on the loop
    instead of holding it (see `baton.loop_waits`)."""
    # Here, not at the top: greenlet loads only for such a call.
    from baton.loop_waits import run_waitable

    return await run_waitable(run)


def _is_same_call(call: FunctionCall, other: FunctionCall) -> bool:
    return (call.id, call.name, call.args or {}) == (other.id, other.name, other.args or {})


def _call_keys(calls: list[FunctionCall]) -> dict[int, str]:
    """Each call's key in its turn (see `call_keys`), by the call object's `id()`."""
    return {id(call): key for call, key in zip(calls, call_keys(calls), strict=True)}


async def _cancel(tasks: set[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _merged(results: list[Event]) -> Event:
    """The results of one turn's calls as one event, as the reference merges them: their
    parts in the turn's order, their actions merged (a later call's write wins, their
    widgets all kept), the
    first one's time; and a task's result, when finish_task was one of the calls. Calls
    without a result (long-running tools that returned nothing) add their actions only;
    with none, the event has no content."""
    if len(results) == 1:
        return results[0]
    first = results[0]
    actions: dict[str, Any] = {}
    for event in results:
        actions = _deep_merged(actions, event.actions.model_dump(exclude_none=True))
    # Every call's widgets, in the turn's order (a merge would keep the last call's list).
    widgets = [w for e in results for w in e.actions.render_ui_widgets or ()]
    if widgets:
        actions["render_ui_widgets"] = widgets
    parts = [p for e in results if e.content for p in e.content.parts or ()]
    merged = Event(
        invocation_id=first.invocation_id,
        author=first.author,
        branch=first.branch,
        timestamp=first.timestamp,
        content=Content(role="user", parts=parts) if parts else None,
        actions=EventActions.model_validate(actions),
    )
    finishing = next((e for e in results if e.output is not None), None)
    if finishing is not None:
        merged.output, merged.node_info = finishing.output, finishing.node_info
    return merged


def _deep_merged(into: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    for key, value in more.items():
        if isinstance(into.get(key), dict) and isinstance(value, dict):
            into[key] = _deep_merged(dict(into[key]), cast(dict[str, Any], value))
        else:
            into[key] = value
    return into


def _starts_run(event: Event, agent: str, run_start: str) -> bool:
    """Whether `event` is the first of `agent`'s run that began after `run_start`: the
    run's checkpoint rides on its first event (later ones carry the same start)."""
    state = event.actions.agent_state
    return event.author == agent and isinstance(state, dict) and state.get("run_start") == run_start


async def _resolved(
    instruction: str | InstructionProvider,
    ctx: AgentContext,
    *,
    agent: str,
    read: dict[str, str | None],
) -> str:
    """An instruction's text: a provider's result as it is, a string with `{key}` filled.
    The artifacts it names are read once for the request: `read` holds the texts read
    already, by name, and takes those read here."""
    if not callable(instruction):
        unread = artifact_placeholders(instruction) - read.keys()
        if unread:
            read |= await artifact_texts(
                ctx.artifact_service,
                unread,
                app_name=ctx.app_name,
                user_id=ctx.user_id,
                session_id=ctx.session.id,
                agent=agent,
            )
        return fill_instruction(instruction, ctx.state, agent=agent, artifacts=read)
    return await _provided(instruction, ctx)


async def _provided(provider: InstructionProvider, ctx: AgentContext | ReadonlyContext) -> str:
    """What an instruction provider gives for `ctx`."""
    # The type names the run's context; the reference's callers hand a ReadonlyContext.
    context = cast(InvocationContext, ctx)
    if inspect.iscoroutinefunction(provider):
        return await provider(context)
    made = await run_sync(partial(provider, context))  # a plain provider never holds the loop
    return await made if inspect.isawaitable(made) else made


def _is_users_message(ctx: AgentContext, text: str) -> bool:
    """Whether `text` is the text of the message that started the invocation."""
    return ctx.user_content is not None and ctx.user_content.text == text


def _position(events: Sequence[Event], event_id: str) -> int | None:
    """The index of the event `event_id` in `events` (searched from the newest), or None."""
    return next((i for i in range(len(events) - 1, -1, -1) if events[i].id == event_id), None)


def _current_turn(events: Sequence[Event], start: int, agent: str) -> list[Event]:
    """With `include_contents="none"`, what the model sees before the run, whose start is
    `events[start]`: from the last message of the user or of another agent up to it, as
    the reference starts the current turn (after a sequence's earlier agent, its reply)."""
    said = (i for i in range(start, -1, -1) if _starts_turn(events[i], agent))
    return list(events[next(said, start) : start + 1])


def _starts_turn(event: Event, agent: str) -> bool:
    """A message of the user's (not a tool's result posted back) or another agent's
    reply (its text, not its calls or a transfer)."""
    content = event.content
    if content is None or not content.parts:
        return False
    if event.author == "user":
        return not content.function_responses
    return event.author != agent and any(p.text and not p.thought for p in content.parts)


def _declared(tools: dict[str, BaseTool]) -> list[BaseTool]:
    """The tools in the order the model is offered them: `set_model_response` first, as
    the reference declares it, then the agent's."""
    first = tools.get(SET_MODEL_RESPONSE)
    if not isinstance(first, SetModelResponseTool):
        return list(tools.values())
    return [first, *(tool for name, tool in tools.items() if name != SET_MODEL_RESPONSE)]


def _sub_agent_tool(agent: BaseAgent) -> BaseTool:
    """The tool that runs a sub-agent its parent's model calls as a tool."""
    if isinstance(agent, LlmAgent) and agent.mode == "task":
        return TaskAgentTool(agent, agent.finish_tool)
    return SingleTurnAgentTool(agent)


def _index_tools(
    tools: Sequence[BaseTool | Callable[..., object]], *, agent: str
) -> dict[str, BaseTool]:
    """The tools by name, plain functions wrapped in FunctionTool.

    Raises:
        ValueError: two tools have the same name (the model could not tell them apart).
    """
    index: dict[str, BaseTool] = {}
    for item in tools:
        tool = item if isinstance(item, BaseTool) else FunctionTool(item)
        if tool.name in index:
            raise ValueError(
                f"agent '{agent}' has two tools named '{tool.name}'; give one another name "
                f"(FunctionTool(func, name=...)). Tools: {', '.join([*index, tool.name])}."
            )
        index[tool.name] = tool
    return index


def _declare_answers(event: Event, tools: dict[str, BaseTool]) -> None:
    """Carry the answer schema and assignee of each paused call's tool, for the
    interrupt index."""
    schemas: dict[str, JsonValue] = {}
    assignees: dict[str, JsonValue] = {}
    for call in event.function_calls:
        tool = tools.get(call.name or "")
        if call.id not in (event.long_running_tool_ids or ()) or tool is None:
            continue
        if tool.response_schema:
            schemas[call.id or ""] = tool.response_schema
        if tool.assignee:
            assignees[call.id or ""] = tool.assignee
    if schemas:
        event.custom_metadata = {**(event.custom_metadata or {}), RESPONSE_SCHEMAS_KEY: schemas}
    if assignees:
        event.custom_metadata = {**(event.custom_metadata or {}), ASSIGNEES_KEY: assignees}


def _pauses(call: FunctionCall, tools: dict[str, BaseTool]) -> bool:
    """A call to a long-running tool with valid arguments (invalid ones get an error)."""
    tool = tools.get(call.name or "")
    if tool is None or not tool.is_long_running:
        return False
    if isinstance(tool, FunctionTool):
        try:
            tool.signature.bind(call.args or {})
        except InvalidArgumentsError:
            return False
    return True


def _runs_together(call: FunctionCall, tools: dict[str, BaseTool]) -> bool:
    """A call of a tool (long-running or not) or of a single-turn sub-agent: the turn's
    calls run at once, as the reference's; a task agent's runs after them (see
    `LlmAgent._run_calls`)."""
    return not isinstance(tools.get(call.name or ""), TaskAgentTool)


async def _canonical(
    instruction: str | InstructionProvider, ctx: ReadonlyContext
) -> tuple[str, bool]:
    """An instruction field's text for `ctx`, and whether a provider gave it."""
    if isinstance(instruction, str):
        return instruction, False
    return await _provided(instruction, ctx), True


async def _list_tools(
    agent: str, toolset: BaseToolset, readonly: ReadonlyContext | None
) -> list[BaseTool]:
    """The toolset's tools for the run; none when listing them raises (logged)."""
    try:
        return await toolset.get_tools_with_prefix(readonly)
    except Exception:  # the run goes on without them, as the reference's does
        prefix = f" (prefix {toolset.tool_name_prefix!r})" if toolset.tool_name_prefix else ""
        _log.exception(
            "agent %s runs without the tools of toolset %s%s, whose listing failed",
            agent,
            type(toolset).__name__,
            prefix,
        )
        return []


def _answers_calls(event: Event) -> bool:
    """Whether a person's event carries function responses (answers to calls)."""
    return (
        event.author == "user"
        and event.content is not None
        and bool(event.content.function_responses)
    )


def _is_model_turn(event: Event) -> bool:
    if event.content is None or event.content.role != "model":
        return False
    # A confirmation request is the agent's own call to the client, not the model's turn.
    return not any(is_person_request(c.name) for c in event.function_calls)


def _check_generate_content_config(agent: str, config: GenerateContentConfig | None) -> None:
    """Refuse in an agent's `generate_content_config` what the agent sets itself, as the
    reference does: its tools, instruction and output schema each have their field. A
    `response_json_schema` is taken and sent to the model, as the reference's is."""
    if config is None:
        return
    for field, home in (
        ("tools", "tools=[...]"),
        ("system_instruction", "instruction=..."),
        ("response_schema", "output_schema=..."),
    ):
        if getattr(config, field):
            raise ValueError(
                f"LlmAgent '{agent}' sets generate_content_config.{field}; an agent sets it "
                f"itself: give it as LlmAgent({home}) instead."
            )


def _with_input_context(ctx: AgentContext, contents: list[Content]) -> list[Content]:
    """The call's `RunConfig.model_input_context` (never stored) put before the user's
    message of the invocation, as the reference does (first, when it is not there)."""
    extra = ctx.current_run_config.model_input_context
    if not extra:
        return contents
    message = ctx.user_content
    at = next((i for i in range(len(contents) - 1, -1, -1) if contents[i] == message), 0)
    return [*contents[:at], *(c.model_copy(deep=True) for c in extra), *contents[at:]]


Agent = LlmAgent
"""The reference's other name for `LlmAgent`."""
