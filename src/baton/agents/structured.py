"""Structured output: an LlmAgent (not a task agent) with an `output_schema` replies in
that structure.

Without tools, its model is asked for JSON in the schema (the request's response
schema), and the reply's text, once it fits, is what `output_key` gets, parsed
(`ReplyFormat`); a reply that does not fit fails the run, as in google-adk 2.13.0.

With tools, it gives its final reply by calling `set_model_response`; a text reply
that ignores the tool is checked as above (`ReplyFormat`), as in the reference.

Its model is offered the `set_model_response` tool, whose parameters are the schema (an
object schema as it is, any other wrapped as `{"response": ...}`), and told to end with
it. A call whose arguments fit is answered with the validated value and ends the agent:
its reply is that value as JSON text, and `output_key` gets the value itself, as
google-adk 2.13.0 does. Arguments that do not fit are answered with the errors, and the
model tries again.
"""

from __future__ import annotations

import json
import re
from typing import Final, final

from pydantic import JsonValue

from baton.agents.task import FinishTaskTool
from baton.models.llm import LlmRequest
from baton.schemas import SchemaType
from baton.tools.tool_context import ToolContext

__all__ = ["SET_MODEL_RESPONSE", "OutputSchemaError", "ReplyFormat", "SetModelResponseTool"]

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

    instruction = _INSTRUCTION

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """The validated answer when the arguments fit, else {"error": what is wrong}."""
        problem = self.problem(args)
        return self.result(args) if problem is None else self.unfit(problem)


class OutputSchemaError(ValueError):
    """An agent's reply did not fit its output_schema."""


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


@final
class ReplyFormat:
    """The structure an agent without tools replies in: the schema its model is asked
    for, and the check of the reply's text against it."""

    def __init__(self, output_schema: SchemaType, *, agent: str) -> None:
        self._fit = SetModelResponseTool(output_schema)
        self._agent = agent
        parameters = self._fit.parameters
        self.schema: dict[str, JsonValue] = (
            _unwrapped(parameters, self._fit.wrapper) if self._fit.wraps else parameters
        )

    def apply(self, request: LlmRequest) -> None:
        """Ask the model for JSON in the schema."""
        request.config.response_json_schema = self.schema

    def value_of(self, text: str) -> JsonValue:
        """The reply's value: its JSON text (a ```json fence allowed) parsed and checked.

        Raises:
            OutputSchemaError: the text is not JSON, or does not fit the schema.
        """
        fenced = _FENCE.match(text)
        try:
            value: JsonValue = json.loads(fenced.group(1) if fenced else text)
        except json.JSONDecodeError as error:
            raise OutputSchemaError(
                f"LlmAgent '{self._agent}' replied with text that is not JSON ({error}), "
                "though its output_schema asks for JSON in that structure."
            ) from error
        if self._fit.wraps:
            args: dict[str, JsonValue] = {self._fit.wrapper: value}
        elif isinstance(value, dict):
            args = value
        else:
            raise OutputSchemaError(
                f"LlmAgent '{self._agent}' replied with JSON that is not an object, though "
                "its output_schema asks for one."
            )
        problem = self._fit.problem(args)
        if problem is not None:
            raise OutputSchemaError(
                f"LlmAgent '{self._agent}' replied with JSON that does not fit its "
                f"output_schema: {problem}."
            )
        return self._fit.result(args)


def _unwrapped(parameters: dict[str, JsonValue], wrapper: str) -> dict[str, JsonValue]:
    properties = parameters["properties"]
    assert isinstance(properties, dict)
    inner = properties[wrapper]
    assert isinstance(inner, dict)
    defs = parameters.get("$defs")
    return {**inner, "$defs": defs} if defs is not None else dict(inner)
