"""Delegation: a sub-agent its parent's model calls as a tool (a single-turn sub-agent).

An LlmAgent offers each of its sub-agents in single-turn mode to its model as a tool
named after the sub-agent, with one string argument, `request` (as the reference's
`mode="single_turn"` sub-agents). A call runs the sub-agent in the parent's node run,
on a branch of its own (`[<parent's branch>.]<sub-agent>@<call id>`): its model sees
the request as a user turn and its own turns, and its reply comes back to the parent
as the call's result (`{"result": <reply>}`). The parent's model never sees the
sub-agent's events, only the result.

Each of the sub-agent's events is committed as it comes, so a delegated call resumes
like any agent: a run that ended before a crash is not run again (its reply is read
back from its branch), one cut short continues from its checkpoint, and one waiting
for input (a long-running tool of its own) holds its parent until the answer comes.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import final

from pydantic import JsonValue

from baton.agents.base_agent import BaseAgent
from baton.agents.context import AgentContext
from baton.events import Event
from baton.models.llm import FunctionDeclaration
from baton.tools import BaseTool, ToolContext, to_function_response
from baton.tools.base import string_parameters
from baton.types import Content, FunctionCall, Part

__all__ = ["SingleTurnAgentTool", "call_branch"]


@final
class SingleTurnAgentTool(BaseTool):
    """The tool a parent LlmAgent's model calls to run a single-turn sub-agent.

    Args:
        agent: the sub-agent (its name and description are the tool's).
    """

    def __init__(self, agent: BaseAgent) -> None:
        super().__init__(name=agent.name, description=agent.description)
        self.agent = agent

    def declaration(self) -> FunctionDeclaration:
        parameters = string_parameters(request={})
        return FunctionDeclaration(
            name=self.name, description=self.description, parameters=parameters
        )

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """Not called: the parent runs the sub-agent itself (`delegate`), its events being
        committed one by one, which a tool's single result cannot do."""
        raise RuntimeError(  # pragma: no cover - LlmAgent delegates these calls itself
            f"sub-agent tool '{self.name}' runs through its parent LlmAgent."
        )

    async def delegate(
        self, ctx: AgentContext, call: FunctionCall, *, author: str
    ) -> AsyncGenerator[Event, None]:
        """Run the sub-agent for `call` (or resume it), yielding its events, then the call's
        result authored by the parent `author` once the sub-agent ended. Nothing follows
        its events while it waits for input."""
        branch = call_branch(ctx.branch, self.agent.name, call.id or "")
        request = (call.args or {}).get("request")
        sub_ctx = AgentContext(
            ctx.run,
            node_input=request if isinstance(request, str) else None,
            log=ctx.log,
            branch=branch,
        )
        reply = _reply(await ctx.log.invocation_events(), self.agent.name, branch)
        if reply is None:
            async for event in self.agent.run_async(sub_ctx):
                yield event
            if self.agent.name not in ctx.ended_agents:
                return  # it waits for input: the call has no result yet
            reply = _reply(await ctx.log.invocation_events(), self.agent.name, branch) or ""
        yield Event(
            invocation_id=ctx.invocation_id,
            author=author,
            branch=ctx.branch,
            content=Content(
                role="user", parts=[Part(function_response=to_function_response(call, reply))]
            ),
        )


def call_branch(branch: str | None, agent: str, call_id: str) -> str:
    """The branch a delegated call's sub-agent runs on, below the caller's `branch`."""
    own = f"{agent}@{call_id}"
    return f"{branch}.{own}" if branch else own


def _reply(events: Sequence[Event], agent: str, branch: str) -> str | None:
    """The sub-agent's last reply on its call's branch once its run there ended (its
    text, "" for none), or None while it has not ended."""
    mine = [e for e in events if e.author == agent and e.branch == branch]
    if not any(e.actions.end_of_agent for e in mine):
        return None
    texts = (e.content.text for e in reversed(mine) if e.content and e.content.role == "model")
    return next((t for t in texts if t), "")
