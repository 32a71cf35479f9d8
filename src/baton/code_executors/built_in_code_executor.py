"""BuiltInCodeExecutor: the reference's executor that asks a Gemini model to run the code
it writes itself (`LlmAgent(code_executor=BuiltInCodeExecutor())`): it adds
`types.Tool(code_execution=types.ToolCodeExecution())` to a Gemini model's request and
fails the run for another model, as the reference's does. baton's own models speak the
OpenAI chat-completions protocol, which has no place for it, and refuse the request
(`baton.models.gemini_only`); a model of the user's that speaks Gemini's receives it."""

from __future__ import annotations

from typing import final

from baton.models.llm import LlmRequest
from baton.tools.gemini_builtin import offer_built_in
from baton.types import Tool, ToolCodeExecution

__all__ = ["BuiltInCodeExecutor"]


@final
class BuiltInCodeExecutor:
    """Gemini's code execution, run by the model."""

    def process_llm_request(self, llm_request: LlmRequest) -> None:
        """Offer code execution to a Gemini model.

        Raises:
            ValueError: the model is not a Gemini one.
        """
        entry = Tool(code_execution=ToolCodeExecution())
        offer_built_in(entry, "Gemini code execution tool", llm_request)
