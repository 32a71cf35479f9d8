"""The reference's `transfer_to_agent` function and `TransferToAgentTool`, for agents that
list the transfer tool themselves (an LlmAgent with sub-agents, a parent or peers is
offered one of its own without it, see `baton.agents.transfer`)."""

from __future__ import annotations

from typing import cast

from pydantic import JsonValue

from baton.models.llm import FunctionDeclaration
from baton.tools.function_tool import FunctionTool
from baton.tools.tool_context import ToolContext

__all__ = ["TransferToAgentTool", "transfer_to_agent"]

_DESCRIPTION = (
    "Hands the conversation to another agent.\n\nCall it when, by its description, one "
    "of the agents offered suits the user's request better than you do.\n\nArgs:\n"
    "  agent_name: the name of the agent to hand the conversation to."
)
"""The description without `transfer_reason` (the docstring below, less that argument)."""


def transfer_to_agent(
    agent_name: str, tool_context: ToolContext, *, transfer_reason: str = ""
) -> None:
    """Hands the conversation to another agent.

    Call it when, by its description, one of the agents offered suits the user's
    request better than you do.

    Args:
        agent_name: the name of the agent to hand the conversation to.
        transfer_reason: why this agent is handed the conversation.
    """
    # The agent carries the transfer out once the result commits; a name it may not
    # transfer to is answered with an error instead (see LlmAgent).
    tool_context.actions.transfer_to_agent = agent_name
    tool_context.actions.transfer_reason = transfer_reason or None


class TransferToAgentTool(FunctionTool):
    """`transfer_to_agent` with its `agent_name` limited to the given names (an enum in
    the declaration, so the model does not invent one).

    Args:
        agent_names: the names the model may pass.
        include_transfer_reason: offer the `transfer_reason` argument too.
    """

    def __init__(self, agent_names: list[str], include_transfer_reason: bool = False) -> None:
        super().__init__(transfer_to_agent)
        self.agent_names = list(agent_names)
        self.include_transfer_reason = include_transfer_reason
        if not include_transfer_reason:
            self.description = _DESCRIPTION

    def declaration(self) -> FunctionDeclaration:
        declared = super().declaration()
        parameters = dict(declared.parameters or {})
        properties = dict(cast(dict[str, JsonValue], parameters.get("properties") or {}))
        agent_name = cast(dict[str, JsonValue], properties.get("agent_name") or {})
        properties["agent_name"] = {**agent_name, "enum": list(self.agent_names)}
        if not self.include_transfer_reason:
            properties.pop("transfer_reason", None)
        parameters["properties"] = properties
        return declared.model_copy(update={"parameters": parameters})
