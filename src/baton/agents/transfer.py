"""Agent transfer: which agents an LlmAgent may hand the conversation to, and the tool it
calls to do so.

An LlmAgent may transfer to its sub-agents, to its parent and to its peers (the
parent's other sub-agents), as in the reference: the parent and the peers only when
the parent takes transfers too (an LlmAgent), and each unless the agent's
`disallow_transfer_to_parent` / `disallow_transfer_to_peers` says otherwise. Its
model is offered the `transfer_to_agent(agent_name)` tool, the names limited to those
targets. A call records the transfer in the tool result's `actions.transfer_to_agent`,
committed like any tool result. A name outside the targets is answered with an error
the model can act on (the reference fails the whole invocation instead), so nothing
runs in an agent the app did not allow. How a committed transfer is carried out and
resumed is `baton.agents.handover`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, final

from pydantic import JsonValue

from baton.models.llm import FunctionDeclaration
from baton.tools.base import BaseTool, string_parameters
from baton.tools.tool_context import ToolContext

if TYPE_CHECKING:  # only for annotations: base_agent imports this module
    from baton.agents.base_agent import BaseAgent

__all__ = [
    "TRANSFER_FUNCTION",
    "AgentTransferTool",
    "TransferRules",
    "transfer_instruction",
    "transfer_targets",
    "why_not",
]

TRANSFER_FUNCTION: Final = "transfer_to_agent"


@dataclass(frozen=True)
class TransferRules:
    """Where an agent that takes part in transfer may hand the conversation, besides its
    sub-agents."""

    to_parent: bool = True
    to_peers: bool = True


def transfer_targets(agent: BaseAgent) -> list[BaseAgent]:
    """The agents `agent` may transfer to: its sub-agents, then its parent, then its peers;
    not those its parent's model calls as tools (`BaseAgent.runs_as_tool`).

    An agent without transfer rules (not an LlmAgent, or a single-turn one) transfers
    nowhere.
    """
    rules = agent.transfer_rules()
    if rules is None:
        return []
    targets = [a for a in agent.sub_agents if not a.runs_as_tool()]
    parent = agent.parent_agent
    if parent is None or parent.transfer_rules() is None:
        return targets
    if rules.to_parent:
        targets.append(parent)
    if rules.to_peers:
        targets.extend(p for p in parent.sub_agents if p is not agent and not p.runs_as_tool())
    return targets


def why_not(agent: BaseAgent, name: object) -> str:
    """Why `agent` may not transfer to `name`, and what it may do instead."""
    allowed = ", ".join(t.name for t in transfer_targets(agent)) or "none"
    parent = agent.parent_agent
    if name == agent.name:
        reason = f"agent '{agent.name}' cannot transfer to itself"
    elif parent is not None and name == parent.name:
        reason = (
            f"agent '{agent.name}' may not transfer to its parent '{parent.name}' "
            "(disallow_transfer_to_parent is set)"
        )
    elif parent is not None and any(p.name == name for p in parent.sub_agents):
        reason = (
            f"agent '{agent.name}' may not transfer to its peer {name!r} "
            "(disallow_transfer_to_peers is set)"
        )
    else:
        reason = f"there is no agent {name!r} that '{agent.name}' can transfer to"
    return f"{reason}; choose one of: {allowed}."


@final
class AgentTransferTool(BaseTool):
    """The `transfer_to_agent` tool, its `agent_name` limited to an agent's targets.

    Args:
        agent: the agent whose model calls it (its targets are read when the tool is
            described and called, so a tree assembled later is seen whole).
    """

    def __init__(self, agent: Callable[[], BaseAgent]) -> None:
        super().__init__(
            name=TRANSFER_FUNCTION,
            description=(
                "Hands the conversation to another agent: call it when, by its description, "
                "one of the agents offered suits the user's request better than you do."
            ),
        )
        self._agent = agent

    @property
    def agent_names(self) -> list[str]:
        """The names the model may pass."""
        return [t.name for t in transfer_targets(self._agent())]

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters=string_parameters(
                agent_name={
                    "description": "the name of the agent to hand the conversation to.",
                    "enum": list(self.agent_names),
                }
            ),
        )

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """Record the transfer; a name outside the targets is answered with an error the
        model can fix, and nothing is transferred."""
        name = args.get("agent_name")
        if name not in self.agent_names:
            return {"error": why_not(self._agent(), name)}
        tool_context.actions.transfer_to_agent = str(name)
        return None


def transfer_instruction(targets: Sequence[BaseAgent], parent: BaseAgent | None) -> str:
    """The instruction telling the model which agents it may transfer to.

    Args:
        targets: the agents it may transfer to.
        parent: its parent, when it may transfer there.
    """
    listed = "\n".join(f"- {t.name}: {t.description}" for t in targets)
    text = (
        "You can transfer the conversation to one of these agents when it is better suited "
        f"to answer, by calling {TRANSFER_FUNCTION}(agent_name=...):\n{listed}"
    )
    if parent is not None:
        text += (
            f"\nWhen neither you nor these agents suit the question, transfer to your parent "
            f"agent {parent.name}."
        )
    return text
