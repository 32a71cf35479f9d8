"""Delegation: a sub-agent its parent's model calls as a tool (a single-turn sub-agent).

An LlmAgent offers each of its sub-agents in single-turn mode to its model as a tool
named after the sub-agent, with one string argument, `request` (as the reference's
`mode="single_turn"` sub-agents), or the sub-agent's `input_schema` as its parameters:
then a call's arguments are validated (a call they do not fit is answered with the
problem, and the agent does not run) and the sub-agent's input is them as JSON. A
call runs the sub-agent in the parent's node run, on a branch of its own
(`[<parent's branch>.]<sub-agent>@<call id>`): its model sees the request as a user
turn and what came after the call on its branch (its own turns), not its caller's
conversation, as in the reference, and its reply comes back to the parent as the call's result
(`{"result": <reply>}`). The parent's model never sees the sub-agent's events, only
the result. The parent's tool callbacks apply to the call as to any tool's: a
before-tool callback's result stands for the sub-agent's run.

Each of the sub-agent's events is committed as it comes, so a delegated call resumes
like any agent: a run that ended before a crash is not run again (its reply is read
back from its branch), one cut short continues from its checkpoint, and one waiting
for input (a long-running tool of its own) holds its parent until the answer comes.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import final

from pydantic import JsonValue, ValidationError

from baton.agents.base_agent import BaseAgent
from baton.agents.call_state import CallState
from baton.agents.context import AgentContext
from baton.agents.replay import count_replays
from baton.events import Event
from baton.models.llm import FunctionDeclaration
from baton.sessions.store import strip_temp_state
from baton.tools import BaseTool, ToolContext
from baton.tools.base import described, string_parameters, unfit_call
from baton.types import FunctionCall

__all__ = ["AgentTool", "SingleTurnAgentTool", "call_branch", "ran_branch"]


class SingleTurnAgentTool(BaseTool):
    """The tool a parent LlmAgent's model calls to run a single-turn sub-agent.

    Args:
        agent: the sub-agent (its name and description are the tool's).
    """

    skip_summarization: bool = False  # the agent's reply ends its caller's turn

    def __init__(self, agent: BaseAgent) -> None:
        super().__init__(name=agent.name, description=agent.description)
        self.agent = agent
        self.input_schema = agent.tool_input_schema()

    def declaration(self) -> FunctionDeclaration:
        schema = self.input_schema
        parameters = string_parameters(request={}) if schema is None else schema.model_json_schema()
        return FunctionDeclaration(
            name=self.name, description=self.description, parameters=parameters
        )

    def unfit(self, args: dict[str, JsonValue]) -> JsonValue:
        """The answer to a call whose arguments the agent's input_schema refuses (None
        when they fit, or there is no schema): the agent does not run."""
        if self.input_schema is None:
            return None
        try:
            self.input_schema.model_validate(args)
        except ValidationError as error:
            return unfit_call(self.name, described(error))
        return None

    def request(self, args: dict[str, JsonValue]) -> str | None:
        """What the agent is given as its input message: the arguments validated by its
        input_schema, as compact JSON (as the reference gives them), or the `request`."""
        if self.input_schema is not None:
            return self.input_schema.model_validate(args).model_dump_json(exclude_none=True)
        request = args.get("request")
        return request if isinstance(request, str) else None

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """Not called: the parent runs the sub-agent itself (`run_agent`), its events being
        committed one by one, which a tool's single result cannot do."""
        raise RuntimeError(  # pragma: no cover - LlmAgent delegates these calls itself
            f"sub-agent tool '{self.name}' runs through its parent LlmAgent."
        )

    async def progress(self, ctx: AgentContext, call: FunctionCall) -> tuple[bool, JsonValue]:
        """Whether the sub-agent's run for `call` began, and its reply once it ended (None
        before), read from the call's branch: the last reply of the agents that ran there
        (its own, or its sub-agents': a sequence's last, one it transferred to), its text
        parts but thoughts joined by newlines, as the reference's; "" for none. A task
        agent's reply is the result it gave `finish_task` (the reference's is "": the
        result would be lost to the caller's model)."""
        events = await ctx.log.invocation_events()
        branch = ran_branch(ctx.branch, self.agent.name, call.id or "", events)
        below = [e for e in events if _ran_for_call(e, branch)]
        mine = [e for e in below if e.author == self.agent.name and e.branch == branch]
        if not any(e.actions.end_of_agent for e in mine):
            return bool(mine), None
        for index in reversed(range(len(below))):
            event = below[index]
            content = event.content
            if content is not None and content.role == "model":
                text = "\n".join(p.text for p in content.parts or [] if p.text and not p.thought)
                if text:
                    return True, text
            result = self.agent.tree_task_result(event, below[:index])
            if result is not None:
                return True, result[0]
        return True, ""

    async def forwarded_writes(
        self, ctx: AgentContext, call: FunctionCall
    ) -> tuple[dict[str, JsonValue], dict[str, int]]:
        """The state writes and artifact saves of the agent's run for `call` that its
        caller's result event carries too (none: a single-turn sub-agent's are on its
        own events only, as in the reference)."""
        del ctx, call
        return {}, {}

    async def state_for(self, ctx: AgentContext, call: FunctionCall) -> CallState | None:
        """The state the agent sees on `call`: its caller's (None), as a single-turn
        sub-agent's in the reference, which runs it in its caller's session."""
        del ctx, call
        return None

    async def run_agent(self, ctx: AgentContext, call: FunctionCall) -> AsyncGenerator[Event, None]:
        """Run (or resume) the sub-agent on `call`'s request, yielding its events."""
        events = await ctx.log.invocation_events()
        made = (
            e.id for e in reversed(events) if e.branch == ctx.branch and call in e.function_calls
        )
        turn = next(made, events[-1].id)  # the caller's turn, committed before its calls run
        branch = ran_branch(ctx.branch, self.agent.name, call.id or "", events)
        state = await self.state_for(ctx, call)
        sub_ctx = ctx.for_call(branch, self.request(call.args or {}), turn, state=state)
        # Resumed, the agent re-executes its code from its last checkpoint: the runs of
        # its sub-agents that ended since are not run again (see baton.agents.replay).
        ran = [e for e in events if _ran_below(e, branch)]
        sub_ctx.replays.update(count_replays(self.agent, sub_ctx.ended_agents, ran))
        async for event in self.agent.run_async(sub_ctx):
            if state is not None:
                event.actions.state_delta = state.record_writes(event.actions.state_delta)
            yield event


def _ran_for_call(event: Event, branch: str) -> bool:
    """Whether `event` is of the agents run on a call's `branch`: on it, or below it but
    not on a call's branch of their own (an agent they called as a tool)."""
    if event.branch == branch:
        return True
    below = (event.branch or "").removeprefix(f"{branch}.")
    return below != (event.branch or "") and "@" not in below


def _ran_below(event: Event, branch: str) -> bool:
    """Whether `event` is of a call's run on `branch`: on it or on a branch below it."""
    return event.branch == branch or (event.branch or "").startswith(f"{branch}.")


def call_branch(branch: str | None, agent: str, call_id: str) -> str:
    """The branch a delegated call's sub-agent runs on, below the caller's `branch`.

    A branch's parts are separated by dots (`baton.context.call_scope` cuts it there),
    and a model's call id may hold some: they are written as `%2E` (and `%` as `%25`),
    so two calls whose ids share a part before a dot keep branches, and checkpoints, of
    their own. An id without either is written as it is."""
    own = f"{agent}@{call_id.replace('%', '%25').replace('.', '%2E')}"
    return f"{branch}.{own}" if branch else own


def ran_branch(branch: str | None, agent: str, call_id: str, events: Sequence[Event]) -> str:
    """The branch a delegated call's sub-agent runs on (`call_branch`), or, for a run an
    earlier baton started (before 7e5c830), the one it gave the call, its id as it is,
    when the invocation's `events` show the agent ran there and not on the other: its
    events and checkpoints are kept under that branch. Two calls whose ids shared a part
    before a dot share their checkpoints there, as they did in the earlier baton."""
    escaped = call_branch(branch, agent, call_id)
    written = f"{branch}.{agent}@{call_id}" if branch else f"{agent}@{call_id}"
    if written == escaped:  # most ids: neither '%' nor '.'
        return escaped
    ran = {e.branch for e in events if e.author == agent}
    return written if written in ran and escaped not in ran else escaped


@final
class AgentTool(SingleTurnAgentTool):
    """An agent its caller's model calls as a tool, as the reference's `AgentTool`: one
    string argument, `request`; the agent's reply is the call's result (`{"result":
    ...}`). It runs as a single-turn sub-agent does (see the module).

    Args:
        agent: the agent (its name and description are the tool's).
        skip_summarization: end the caller's turn with the agent's reply (the result
            event also carries it as text) instead of asking the caller's model again.
        include_plugins: must be True: the agent runs inside its caller's run, with its
            plugins.
        propagate_grounding_metadata: accepted for the reference's code; baton's models
            return no grounding metadata, so there is none to pass on.

    Raises:
        ValueError: `include_plugins=False`.
    """

    def __init__(
        self,
        agent: BaseAgent,
        skip_summarization: bool = False,
        *,
        include_plugins: bool = True,
        propagate_grounding_metadata: bool = False,
    ) -> None:
        if not include_plugins:
            raise ValueError(
                f"AgentTool for agent '{agent.name}': include_plugins=False is not supported: "
                "the agent runs inside its caller's run, whose plugins see all of it."
            )
        super().__init__(agent)
        self.skip_summarization = skip_summarization
        self.include_plugins = include_plugins
        self.propagate_grounding_metadata = propagate_grounding_metadata

    async def state_for(self, ctx: AgentContext, call: FunctionCall) -> CallState:
        """The state the agent sees on `call`: its caller's but `temp:` and `_adk` keys,
        its own `temp:` writes ending with the call (see `CallState`); resumed, it sees
        the keys it wrote before."""
        written, _ = await self.forwarded_writes(ctx, call)
        return CallState(ctx.state, written=written)

    async def forwarded_writes(
        self, ctx: AgentContext, call: FunctionCall
    ) -> tuple[dict[str, JsonValue], dict[str, int]]:
        """The state writes (but `temp:` ones) and artifact saves of the agent's run for
        `call`, the last value of each: the reference runs the agent in a session of its
        own and copies them onto the call's result event, where its users read them.
        They are on the agent's own events too, committed as it ran, so a crash loses none."""
        events = await ctx.log.invocation_events()
        branch = ran_branch(ctx.branch, self.agent.name, call.id or "", events)
        state: dict[str, JsonValue] = {}
        artifacts: dict[str, int] = {}
        for event in events:
            if _ran_below(event, branch):
                state.update(event.actions.state_delta)
                artifacts.update(event.actions.artifact_delta)
        return strip_temp_state(state), artifacts
