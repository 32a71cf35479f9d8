"""Agent transfer: an LlmAgent hands the conversation to one of its sub-agents.

An LlmAgent with LlmAgent sub-agents offers its model the reference's
`transfer_to_agent(agent_name)` tool, the names limited to its sub-agents. A call
records the transfer in the tool result's `actions.transfer_to_agent`, committed
like any tool result; the agent then runs the named sub-agent in the same node run
and ends when it ends. A resumed agent finds the committed transfer and resumes
the sub-agent (from its own checkpoint) instead of asking its model again, so an
invocation paused inside a transferred-to agent resumes there, on either mode,
after a restart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, final

from pydantic import JsonValue

from baton.events import Event
from baton.models.llm import FunctionDeclaration
from baton.tools.base import BaseTool
from baton.tools.tool_context import ToolContext

__all__ = ["TRANSFER_FUNCTION", "TransferToAgentTool", "transfer_instruction", "transferred_to"]

TRANSFER_FUNCTION: Final = "transfer_to_agent"


@final
class TransferToAgentTool(BaseTool):
    """The `transfer_to_agent` tool, its `agent_name` limited to the given agents.

    Args:
        agent_names: the agents it may transfer to.
    """

    def __init__(self, agent_names: Sequence[str]) -> None:
        super().__init__(
            name=TRANSFER_FUNCTION,
            description=(
                "Transfer the query to another agent. Use this tool to hand off control to "
                "another agent that is more suitable to answer the user's query according to "
                "the agent's description."
            ),
        )
        self.agent_names = list(agent_names)

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {
                    "agent_name": {
                        "type": "string",
                        "description": "the agent name to transfer to.",
                        "enum": list(self.agent_names),
                    }
                },
                "required": ["agent_name"],
            },
        )

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """Record the transfer; an unknown name is answered with an error the model can fix."""
        name = args.get("agent_name")
        if name not in self.agent_names:
            known = ", ".join(self.agent_names)
            return {"error": f"there is no agent {name!r} to transfer to; choose one of: {known}."}
        tool_context.actions.transfer_to_agent = str(name)
        return None


def transfer_instruction(agents: Sequence[tuple[str, str]]) -> str:
    """The instruction telling the model which agents it may transfer to.

    Args:
        agents: (name, description) of each agent.
    """
    listed = "\n".join(f"- {name}: {description}" for name, description in agents)
    return (
        "You can transfer the conversation to one of these agents when it is better suited "
        f"to answer, by calling {TRANSFER_FUNCTION}(agent_name=...):\n{listed}"
    )


def transferred_to(events: Sequence[Event], agent: str) -> str | None:
    """The agent `agent` transferred to in these events (its last transfer), or None."""
    for event in reversed(events):
        if event.author == agent and event.actions.transfer_to_agent:
            return event.actions.transfer_to_agent
    return None
