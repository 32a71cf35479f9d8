"""Structured output with tools: an LlmAgent (not a task agent) with both `tools` and an
`output_schema` gives its final reply by calling `set_model_response`.

Its model is offered the `set_model_response` tool, whose parameters are the schema (an
object schema as it is, any other wrapped as `{"response": ...}`), and told to end with
it. A call whose arguments fit is answered with the validated value and ends the agent:
its reply is that value as JSON text, and `output_key` gets the value itself, as
google-adk 2.13.0 does. Arguments that do not fit are answered with the errors, and the
model tries again.
"""

from __future__ import annotations

from typing import Final, final

from pydantic import JsonValue

from baton.agents.task import FinishTaskTool
from baton.models.llm import LlmRequest
from baton.schemas import SchemaType
from baton.tools.tool_context import ToolContext

__all__ = ["SET_MODEL_RESPONSE", "SetModelResponseTool"]

SET_MODEL_RESPONSE: Final = "set_model_response"
_INSTRUCTION: Final = (
    f"Your final answer must follow a set structure: give it by calling "
    f"`{SET_MODEL_RESPONSE}` with the answer as its parameters, never as plain text. "
    "Use your other tools first as the request needs, then make that call."
)


@final
class SetModelResponseTool(FinishTaskTool):
    """The `set_model_response` tool of an agent with tools and an output_schema."""

    def __init__(self, output_schema: SchemaType) -> None:
        super().__init__(output_schema)
        self.name = SET_MODEL_RESPONSE
        self.description = (
            "Give your final answer in the required structure, as the parameters, "
            "instead of replying with text."
        )

    @property
    def wrapper(self) -> str:
        return "response"

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        llm_request.append_instructions([_INSTRUCTION])

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """The validated answer when the arguments fit, else {"error": what is wrong}."""
        problem = self.problem(args)
        if problem is None:
            return self.result(args)
        return {
            "error": f"`{SET_MODEL_RESPONSE}` was called with arguments that do not fit: "
            f"{problem}. Call it again with every required parameter, of the right type."
        }
