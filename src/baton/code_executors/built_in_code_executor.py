"""BuiltInCodeExecutor: the reference's executor that asks a Gemini model to run the code
it writes itself (`LlmAgent(code_executor=BuiltInCodeExecutor())`). baton's models speak
the OpenAI chat-completions protocol, which has no place for it: an agent given one fails
before its model is asked, where the reference fails for a model it does not support."""

from __future__ import annotations

from typing import final

from baton.models.llm import LlmRequest
from baton.tools.gemini_builtin import unsupported_built_in

__all__ = ["BuiltInCodeExecutor"]


@final
class BuiltInCodeExecutor:
    """Gemini's code execution, run by the model."""

    def process_llm_request(self, llm_request: LlmRequest) -> None:
        """Refuse the request before it is sent.

        Raises:
            ValueError: always (no baton model runs Gemini's code execution).
        """
        raise unsupported_built_in("Gemini code execution tool", llm_request.model)
