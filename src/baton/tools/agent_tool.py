"""`AgentTool`, where the reference's code imports it from (`...tools.agent_tool`)."""

from baton.agents.delegation import AgentTool

__all__ = ["AgentTool"]
