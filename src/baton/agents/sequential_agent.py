"""SequentialAgent: runs its sub-agents one after another, resuming after the last finished."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import final

from baton.agents.base_agent import BaseAgent
from baton.agents.context import as_agent_context
from baton.agents.state import SequentialAgentState
from baton.context import InvocationContext
from baton.errors import WorkflowChangedError
from baton.events import Event

__all__ = ["SequentialAgent", "index_of"]


@final
class SequentialAgent(BaseAgent):
    """Runs `sub_agents` in order.

    It checkpoints the sub-agent it starts, so a resumed run skips every sub-agent
    that finished and resumes the current one. When a sub-agent waits for input,
    the sequence pauses there; once the input arrives the sub-agent finishes and
    the sequence goes on with the next one.
    """

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        agent_ctx = as_agent_context(ctx)
        state = self._load_agent_state(ctx, SequentialAgentState)
        start = 0
        if state is not None:
            start = index_of(self, state.current_sub_agent)
            if state.current_sub_agent in agent_ctx.ended_agents:
                start += 1  # it finished; the crash came before we moved on
        for sub in self.sub_agents[start:]:
            if state is None or state.current_sub_agent != sub.name:
                # Committed with the checkpoint: the sub-agent's earlier marks are gone.
                agent_ctx.reset_agent_states(a.name for a in sub.walk())
                state = SequentialAgentState(current_sub_agent=sub.name)
                yield self._create_agent_state_event(ctx, state)
            async for event in sub.run_async(ctx):
                yield event
            if sub.name not in agent_ctx.ended_agents:
                return  # it waits for input
        yield self._create_agent_state_event(ctx, end_of_agent=True)


def index_of(agent: BaseAgent, name: str) -> int:
    """The position of sub-agent `name`.

    Raises:
        WorkflowChangedError: no such sub-agent (the agent tree changed since the checkpoint).
    """
    for index, sub in enumerate(agent.sub_agents):
        if sub.name == name:
            return index
    raise WorkflowChangedError(
        f"agent '{agent.name}' was checkpointed at sub-agent '{name}', which it no longer has "
        f"(sub-agents: {', '.join(s.name for s in agent.sub_agents) or 'none'}). Resume with "
        "the code the run started with, or start a new run."
    )
