"""Driving an agent directly: `agent.run_async(ctx)` with an InvocationContext the caller built.

The reference's own tests drive agents this way (seed 003): no Runner, no store.
The agent tree runs as it would in a node run, but what the engine would commit
is applied in memory instead: each event joins the run's history (so an LlmAgent
sees its own turns), its state writes join the run's state, and its checkpoints
(`agent_state`, `end_of_agent`) land in `ctx.agent_states` / `ctx.end_of_agents`,
where the caller reads them and from where a second `run_async(ctx)` resumes.

The events shown are the reference's: checkpoints only for a resumable context,
and none of those only baton's agents write (see
`InvocationContext.private_checkpoints`): an LlmAgent's own, and the end of an
agent the reference does not end itself (a custom agent's implicit end).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Protocol

from baton.agents.context import AgentContext, EventLog
from baton.context import Context, InvocationContext, agent_key
from baton.events import Event
from baton.workflow.execution import open_interrupt

__all__ = ["run_directly"]


class _Agent(Protocol):
    @property
    def name(self) -> str: ...

    def run_async(self, parent_context: InvocationContext) -> AsyncGenerator[Event, None]: ...


async def run_directly(agent: _Agent, ic: InvocationContext) -> AsyncGenerator[Event, None]:
    """Run `agent` under a caller-built `ic`, yielding the events the reference yields."""
    run = Context(ic, node_path=f"{agent.name}@1", run_id="1", node_name=agent.name)
    # The caller's dicts themselves: a checkpoint lands where the caller reads it.
    run.agent_states = ic.agent_states
    run.ended_agents = {name for name, ended in ic.end_of_agents.items() if ended}
    text = ic.user_content.text if ic.user_content else None
    log = EventLog(ic, stored=False)
    agent_ctx = AgentContext(run, node_input=text or None, log=log, branch=ic.branch)
    async with aclosing(agent.run_async(agent_ctx)) as events:
        async for event in events:
            _apply(event, agent_ctx)
            ic.end_of_agents.clear()
            ic.end_of_agents.update(dict.fromkeys(sorted(run.ended_agents), True))
            shown = _shown(event, agent_ctx, resumable=ic.is_resumable)
            if shown is not None:
                yield shown


def _apply(event: Event, ctx: AgentContext) -> None:
    """What committing `event` does in a node run, in memory."""
    run = ctx.run
    for key, value in event.actions.state_delta.items():
        run.state[key] = value
    key = agent_key(event.author, event.branch, ctx.invocation_context.branch)
    if event.actions.agent_state is not None:
        run.agent_states[key] = event.actions.agent_state
    if event.actions.end_of_agent:
        run.agent_states.pop(key, None)
        run.ended_agents.add(key)
    for iid in sorted(event.long_running_tool_ids or ()):
        # The agent waits for this call's answer: it is not ended for it (`is_waiting`).
        if iid not in run.resume_inputs:
            run.open_interrupts[iid] = open_interrupt(ctx.invocation_context, ctx.node_path, iid)
    ctx.log.add(event)


def _shown(event: Event, ctx: AgentContext, *, resumable: bool) -> Event | None:
    """The event as the reference shows it: checkpoints only on a resumable context, and
    not the private ones (see `InvocationContext.private_checkpoints`)."""
    if resumable and event.id not in ctx.invocation_context.private_checkpoints:
        return event
    return event.without_checkpoints()
