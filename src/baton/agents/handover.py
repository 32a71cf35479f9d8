"""Carrying out transfers: the agents a conversation is handed to run one after another in
the node run, and a new message goes to the agent the conversation was left with.

An agent that transfers to a sub-agent runs it in place (a `Handover`). When that
sub-agent ends by transferring on, to a peer (another sub-agent of the same agent) or
back to its parent, the agent that started the hand-over runs the next one, or, handed
the conversation back, asks its own model again in a fresh run of itself. Each step is
read from committed events (a transfer is a committed tool result, an agent's end a
committed mark), so a resumed run follows the same steps: the agents that ended are
skipped (`baton.agents.replay`) and the one that waits resumes from its checkpoint.

On a new message the App's root LlmAgent picks who answers as the reference does: the
last agent that replied (or was transferred to), when every agent from it up to the
root may transfer to its parent; else the root itself.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import final

from baton.agents.base_agent import BaseAgent
from baton.agents.context import AgentContext
from baton.agents.transfer import transfer_targets
from baton.errors import WorkflowChangedError
from baton.events import Event

__all__ = ["Handover", "agent_to_continue", "find_handoff"]


@final
class Handover:
    """The conversation handed from `owner` to `first`, and on from agent to agent, until
    an agent answers, waits for input, or hands it back to `owner`.

    Args:
        owner: the agent handing over; `first` is in its subtree.
        ctx: the owner's ctx.
        first: the agent that gets the conversation first.
        start: the position in the invocation's events where `first`'s run begins.
    """

    def __init__(self, owner: BaseAgent, ctx: AgentContext, first: BaseAgent, start: int) -> None:
        self.owner = owner
        self.ctx = ctx
        self.first = first
        self.start = start
        self.came_back = False  # set when the conversation was handed back to the owner

    async def run(self) -> AsyncGenerator[Event, None]:
        """Run the agents the conversation is handed to, yielding their events."""
        current, cursor = self.first, self.start
        while True:
            async for event in current.run_async(self.ctx):
                yield event
            if current.name not in self.ctx.ended_agents:
                return  # it waits for input
            events = await self.ctx.log.invocation_events()  # hand-overs are the run's own
            name, cursor = find_handoff(events, current, cursor)
            if name is None:
                return
            if name == self.owner.name:
                self.came_back = True
                return
            current = self._agent(name, current)

    def _agent(self, name: str, source: BaseAgent) -> BaseAgent:
        """The agent called `name` in the owner's subtree.

        Raises:
            WorkflowChangedError: there is none (the tree changed since the transfer).
        """
        agent = self.owner.find_sub_agent(name)
        if agent is None:
            raise WorkflowChangedError(
                f"agent '{source.name}' transferred to '{name}', which is no longer an agent "
                f"under '{self.owner.name}'. Resume with the code the run started with, or "
                "start a new run."
            )
        return agent


def find_handoff(events: Sequence[Event], agent: BaseAgent, start: int) -> tuple[str | None, int]:
    """Where `agent`'s run that began at `start` handed the conversation when it ended.

    Returns:
        The agent it transferred to outside its own subtree (its transfers to its
        sub-agents it carried out itself), or None; and the position after its end.
    """
    end = next(
        (
            i
            for i in range(start, len(events))
            if events[i].author == agent.name and events[i].actions.end_of_agent
        ),
        len(events),
    )
    names = [
        e.actions.transfer_to_agent
        for e in events[start:end]
        if e.author == agent.name and e.actions.transfer_to_agent
    ]
    name = names[-1] if names else None
    if name is not None and agent.find_sub_agent(name) is not None:
        name = None
    return name, end + 1


def agent_to_continue(root: BaseAgent, events: Sequence[Event]) -> BaseAgent | None:
    """The agent that answers a new message in a session with these events (the newest of
    them, at least), or None when none of them decides (the root answers when they are
    all the session's).

    The latest event that is a reply (an agent's turn or tool result) decides: a transfer
    in it names the agent, else its author is; that agent answers when it and every agent
    above it may transfer to its parent (so the conversation could still come back up).
    Otherwise the search goes on to earlier events.
    """
    for event in reversed(events):
        if not _is_reply(event):
            continue
        source = root.find_agent(event.author)
        target = event.actions.transfer_to_agent
        if source is not None and target:
            agent = next((t for t in transfer_targets(source) if t.name == target), None)
            if agent is not None and _can_climb_to_root(agent):
                return agent
        if event.author == root.name:
            return root
        if source is not None and _can_climb_to_root(source):
            return source
    return None


def _is_reply(event: Event) -> bool:
    """An agent's turn or tool result; not the user's, nor an end mark or a bare checkpoint
    (baton's checkpoints ride on turns, so a turn carrying one is still a reply)."""
    if event.author == "user" or event.actions.end_of_agent:
        return False
    return bool(event.content and event.content.parts)


def _can_climb_to_root(agent: BaseAgent) -> bool:
    """Whether `agent` and every agent above it may transfer to its parent."""
    current: BaseAgent | None = agent
    while current is not None:
        rules = current.transfer_rules()
        if rules is None or not rules.to_parent:
            return False
        current = current.parent_agent
    return True
