"""ParallelAgent: runs its sub-agents concurrently, each on its own conversation branch."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import TypeAlias, final

from baton.agents.base_agent import BaseAgent
from baton.agents.context import AgentContext, as_agent_context
from baton.agents.state import ParallelAgentState
from baton.context import InvocationContext
from baton.events import Event

__all__ = ["ParallelAgent", "merge_streams"]


@final
class ParallelAgent(BaseAgent):
    """Runs `sub_agents` at the same time.

    Each sub-agent runs on the branch `[<parent branch>.]<name>.<sub-agent>` and sees
    only its own branch's events besides the shared history (a run started before
    6f16d2b keeps the branches it was started on, see `_branch_prefix`). A resumed
    run starts only the sub-agents that had not finished; the agent ends when all have,
    or at once when one of them escalates (the others stop where they are).
    """

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        agent_ctx = as_agent_context(ctx)
        resuming = self._load_agent_state(ctx, ParallelAgentState) is not None
        if not resuming:
            agent_ctx.reset_agent_states(a.name for sub in self.sub_agents for a in sub.walk())
            yield self._create_agent_state_event(ctx, ParallelAgentState())
        escalated = resuming and await self._escalated_since_checkpoint(agent_ctx)
        if not escalated:
            prefix = await self._branch_prefix(agent_ctx, resuming=resuming)
            pending = [s for s in self.sub_agents if s.name not in agent_ctx.ended_agents]
            streams = [s.run_async(agent_ctx.with_branch(f"{prefix}.{s.name}")) for s in pending]
            async with aclosing(merge_streams(streams)) as events:
                async for event in events:
                    yield event
                    if self._is_exit(event):
                        # As the reference: a sub-agent's escalation ends this agent at
                        # once; closing the merge stops the other branches where they are.
                        escalated = True
                        break
        if escalated or all(s.name in agent_ctx.ended_agents for s in self.sub_agents):
            yield self._create_agent_state_event(ctx, end_of_agent=True)

    def _is_exit(self, event: Event) -> bool:
        """An escalation by one of its own sub-agents (a deeper one's is its parent's)."""
        return bool(event.actions.escalate) and any(s.name == event.author for s in self.sub_agents)

    async def _escalated_since_checkpoint(self, ctx: AgentContext) -> bool:
        """Whether a sub-agent escalated after this agent's last checkpoint (a crash came
        before its end was committed)."""
        for event in reversed(await ctx.log.invocation_events()):
            if event.author == self.name and event.actions.agent_state is not None:
                return False
            if self._is_exit(event):
                return True
        return False

    async def _branch_prefix(self, ctx: AgentContext, *, resuming: bool) -> str:
        """What its sub-agents' branches start with.

        As the reference names them: the agent's own name joins its branch, so a
        parallel agent inside the branch 'par.inner' runs 'z' on 'par.inner.par2.z'.
        baton before 6f16d2b ran it on 'par.inner.z' (the branch alone, inside another
        branch): a run that started then and resumes now keeps that naming, found in its
        events, so its branches see their own earlier events and are not run again.
        """
        if ctx.branch is None:
            return self.name  # both namings agree at the top
        if resuming and await self._named_before_6f16d2b(ctx):
            return ctx.branch
        return f"{ctx.branch}.{self.name}"

    async def _named_before_6f16d2b(self, ctx: AgentContext) -> bool:
        """Whether this run's sub-agents wrote events on the branches named as before
        6f16d2b ('<branch>.<sub>'; now that holds no sub-agent of this agent's)."""
        old = [f"{ctx.branch}.{sub.name}" for sub in self.sub_agents]
        return any(
            e.branch is not None and any(e.branch == b or e.branch.startswith(f"{b}.") for b in old)
            for e in await ctx.log.invocation_events()
        )


_Item: TypeAlias = tuple[Event, asyncio.Event] | BaseException | None
"""An event and its "consumed" flag, a branch's failure, or None: a branch finished."""


async def merge_streams(
    streams: Sequence[AsyncGenerator[Event, None]],
) -> AsyncGenerator[Event, None]:
    """Interleave event streams; each stream continues only after its event was consumed.

    The consumer (ultimately the engine) commits an event before asking for the
    next one, so every branch's event is durable before that branch goes on.
    A failed branch does not stop its siblings: they run on to their end (or their
    pause), so their work is kept, and then the first failure is raised. A retry
    then runs only the branch that failed.
    """
    queue: asyncio.Queue[_Item] = asyncio.Queue()

    async def pump(stream: AsyncGenerator[Event, None]) -> None:
        try:
            async with aclosing(stream):
                async for event in stream:
                    consumed = asyncio.Event()
                    queue.put_nowait((event, consumed))
                    await consumed.wait()
        except Exception as error:  # handed to the consumer, which raises it
            queue.put_nowait(error)
            return
        queue.put_nowait(None)

    # Plain tasks, not a TaskGroup: a group spanning this generator's yields would
    # cancel the consumer's task (mid-commit) when a branch fails (PEP 789).
    tasks = [asyncio.create_task(pump(stream)) for stream in streams]
    failure: BaseException | None = None
    try:
        running = len(tasks)
        while running:
            item = await queue.get()
            if item is None:
                running -= 1
            elif isinstance(item, BaseException):
                running -= 1
                failure = failure or item
            else:
                event, consumed = item
                yield event
                consumed.set()
        if failure is not None:
            raise failure
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
