"""exit_loop: the reference's tool that lets an LlmAgent end the LoopAgent it runs in."""

from __future__ import annotations

from baton.tools.tool_context import ToolContext

__all__ = ["exit_loop"]


def exit_loop(tool_context: ToolContext) -> None:
    """Exits the loop.

    Call this function only when you are instructed to do so.
    """
    # Escalating ends the enclosing LoopAgent; skipping the summary ends the agent's turn
    # with this result, without asking the model again (as in the reference).
    tool_context.actions.escalate = True
    tool_context.actions.skip_summarization = True
