"""The instructions a new run fills first, filled before the user's message is stored, so
a `{key}` or `{artifact.name}` the session does not have refuses the call with nothing
changed instead of failing the run after it began."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pydantic import JsonValue

from baton.agents.artifact_text import artifact_texts
from baton.agents.base_agent import BaseAgent
from baton.agents.handover import agent_to_continue
from baton.agents.instructions import artifact_placeholders, fill_instruction
from baton.agents.llm_agent import LlmAgent
from baton.agents.loop_agent import LoopAgent
from baton.agents.parallel_agent import ParallelAgent
from baton.agents.sequential_agent import SequentialAgent
from baton.artifacts import BaseArtifactService
from baton.sessions.store import Session, Store

__all__ = ["check_first_instructions"]

_ROUTING_READ = 16  # newest events read at first to find the agent a new message goes to


async def check_first_instructions(
    root: object,
    session: Session,
    state_delta: Mapping[str, JsonValue],
    artifact_service: BaseArtifactService | None,
    store: Store,
) -> dict[str, str | None]:
    """Fill the text instructions of the agents that call their model first in a run of
    `root` (the agent the new message goes to: the root LlmAgent, or the sub-agent the
    conversation was left with; a sequence's or loop's first agent; each of a parallel
    agent's), against the session's state with the call's `state_delta`, as they will be
    filled then. Agents whose `before_agent_callback` (or an enclosing agent's) may change
    the state first are left to their run, and so are instruction providers.

    Returns:
        The texts of the artifacts the instructions name, by name, when one agent makes
        the run's first model request before anything else of the run could save one
        (none runs beside it): that request fills its instruction with them instead of
        reading them again (see `InvocationContext.first_artifacts`). Otherwise {}.

    Raises:
        MissingStateKeyError, MissingArtifactError: as filling the instruction in the run
            would; ValueError: it names an artifact and the Runner has none.
    """
    state = {**session.state, **state_delta}
    answering = await _answering(root, session, store)
    read: dict[str, str | None] = {}
    for agent in _first_agents(answering):
        for template, owner in _templates(agent):
            unread = artifact_placeholders(template) - read.keys()
            if unread:
                read |= await artifact_texts(
                    artifact_service,
                    unread,
                    app_name=session.app_name,
                    user_id=session.user_id,
                    session_id=session.id,
                    agent=owner,
                )
            fill_instruction(template, state, agent=owner, artifacts=read)
    return read if _asks_alone(answering) else {}


async def _answering(root: object, session: Session, store: Store) -> object:
    """The agent a new message to `root` goes to, as the root LlmAgent picks it in the run
    (`agent_to_continue`), reading the session's newest events until one decides."""
    if not isinstance(root, LlmAgent) or not root.sub_agents or root.before_agent_callback:
        return root
    limit = _ROUTING_READ
    while True:
        found = await store.get_session(session.key, event_limit=limit)
        events = found.events if found is not None else []
        owner = agent_to_continue(root, events)
        if owner is not None or len(events) < limit:
            return owner or root
        limit *= 8


def _first_agents(node: object) -> Iterator[LlmAgent]:
    """The LlmAgents that fill an instruction before anything of the run can write state."""
    if not isinstance(node, BaseAgent) or node.before_agent_callback:
        return
    if isinstance(node, LlmAgent):
        yield node
    elif isinstance(node, SequentialAgent | LoopAgent) and node.sub_agents:
        if not (isinstance(node, LoopAgent) and node.max_iterations == 0):
            yield from _first_agents(node.sub_agents[0])
    elif isinstance(node, ParallelAgent):
        for sub in node.sub_agents:
            yield from _first_agents(sub)


def _asks_alone(node: object) -> bool:
    """Whether the run's first model request is one LlmAgent's, with nothing of the run
    beside it: down a sequence's or loop's first agent, no parallel agent."""
    while isinstance(node, SequentialAgent | LoopAgent) and node.sub_agents:
        node = node.sub_agents[0]
    return isinstance(node, LlmAgent)


def _templates(agent: LlmAgent) -> Iterator[tuple[str, str]]:
    """The agent's text instructions with the agent each belongs to: the root's global
    instruction, then its own."""
    root = agent.root_agent
    if isinstance(root, LlmAgent) and isinstance(root.global_instruction, str):
        yield root.global_instruction, root.name
    if isinstance(agent.instruction, str):
        yield agent.instruction, agent.name
