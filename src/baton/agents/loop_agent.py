"""LoopAgent: runs its sub-agents in a loop until one escalates or the iterations run out."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import final

from baton.agents.base_agent import BaseAgent
from baton.agents.context import AgentContext, as_agent_context
from baton.agents.sequential_agent import index_of
from baton.agents.state import LoopAgentState
from baton.context import InvocationContext
from baton.events import Event

__all__ = ["LoopAgent"]


@final
class LoopAgent(BaseAgent):
    """Runs `sub_agents` in order, again and again.

    It stops after a sub-agent yields an event with `EventActions(escalate=True)`
    (once that sub-agent finishes), or after `max_iterations` passes. It checkpoints
    the sub-agent and iteration it starts, so a resumed run continues there; a
    sub-agent waiting for input pauses the loop until the input arrives.

    Args:
        max_iterations: the most passes over the sub-agents (no limit when None; zero
            or less runs them no times at all, as in the reference).
    """

    max_iterations: int | None = None

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        agent_ctx = as_agent_context(ctx)
        state = self._load_agent_state(ctx, LoopAgentState)
        times = state.times_looped if state else 0
        start = index_of(self, state.current_sub_agent) if state else 0
        resuming = state is not None
        while self.sub_agents and (self.max_iterations is None or times < self.max_iterations):
            for sub in self.sub_agents[start:]:
                escalated = False
                if resuming and sub.name in agent_ctx.ended_agents:
                    escalated = await self._escalated_since_checkpoint(agent_ctx, sub)
                else:
                    if not resuming:
                        agent_ctx.reset_agent_states(a.name for a in sub.walk())
                        checkpoint = LoopAgentState(current_sub_agent=sub.name, times_looped=times)
                        yield self._create_agent_state_event(ctx, checkpoint)
                    async for event in sub.run_async(ctx):
                        yield event
                        escalated = escalated or bool(event.actions.escalate)
                    if sub.name not in agent_ctx.ended_agents:
                        return  # it waits for input
                    if resuming:
                        escalated = await self._escalated_since_checkpoint(agent_ctx, sub)
                resuming = False
                if escalated:
                    yield self._create_agent_state_event(ctx, end_of_agent=True)
                    return
            start = 0
            times += 1
        yield self._create_agent_state_event(ctx, end_of_agent=True)

    async def _escalated_since_checkpoint(self, ctx: AgentContext, sub: BaseAgent) -> bool:
        """Whether `sub` escalated after this loop's last checkpoint (read from the events)."""
        events = await ctx.log.invocation_events()
        names = {a.name for a in sub.walk()}
        for event in reversed(events):
            if event.author == self.name and event.actions.agent_state is not None:
                return False
            if event.author in names and event.actions.escalate:
                return True
        return False
