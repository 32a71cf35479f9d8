"""BaseLlm, the request a model receives and the responses it yields.

A model is a pydantic class with a `model` name that turns an `LlmRequest` into
an async stream of `LlmResponse`s. Custom models subclass `BaseLlm` and
implement `generate_content_async`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Iterable
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from baton.gemini_fields import GeminiResponseFields
from baton.types import (
    Content,
    FinishReasonValue,
    FunctionDeclaration,
    GenerateContentConfig,
    Tool,
    UsageMetadata,
    WireModel,
)

__all__ = [
    "BaseLlm",
    "DeclaresFunction",
    "FunctionDeclaration",
    "GenerateContentConfig",
    "LlmRequest",
    "LlmResponse",
    "Tool",
    "UsageMetadata",
]


class DeclaresFunction(Protocol):
    """Anything that can declare itself to a model (every `BaseTool` does)."""

    @property
    def name(self) -> str:
        """The function name the model calls."""
        ...

    def declaration(self) -> FunctionDeclaration | None:
        """The declaration to send, or None when the model should not see it."""
        ...


class LlmRequest(WireModel):
    """What a model is asked: the conversation so far and the config to answer with."""

    model: str | None = None
    contents: list[Content] = Field(default_factory=list[Content])
    config: GenerateContentConfig = Field(default_factory=GenerateContentConfig)

    def append_instructions(self, instructions: Iterable[str]) -> None:
        """Add paragraphs to the system instruction (separated by a blank line).

        Args:
            instructions: the paragraphs to add, in order.
        """
        paragraphs = [self.config.system_instruction or "", *instructions]
        self.config.system_instruction = "\n\n".join(p for p in paragraphs if p) or None

    def append_tools(self, tools: Iterable[DeclaresFunction]) -> None:
        """Declare tools to the model (tools without a declaration are skipped).

        Args:
            tools: the tools, e.g. `FunctionTool`s.

        Raises:
            ValueError: two tools declare the same function name.
        """
        declarations = (tool.declaration() for tool in tools)
        self.append_function_declarations(d for d in declarations if d is not None)

    def append_function_declarations(self, declarations: Iterable[FunctionDeclaration]) -> None:
        """Declare functions to the model.

        Args:
            declarations: the declarations to add.

        Raises:
            ValueError: a name is already declared (the model could not tell them apart).
        """
        for declaration in declarations:
            known = [d.name for d in self.config.function_declarations]
            if declaration.name in known:
                raise ValueError(
                    f"function '{declaration.name}' is declared twice in one request "
                    f"(declared: {', '.join(known)}); give each tool a unique name."
                )
            self._function_group().append(declaration)

    def _function_group(self) -> list[FunctionDeclaration]:
        """The declarations of the first tool that holds functions (created when none does)."""
        if all(t.function_declarations is None for t in self.config.tools):
            self.config.tools.append(Tool(function_declarations=[]))
        return next(
            t.function_declarations
            for t in self.config.tools
            if t.function_declarations is not None
        )


class LlmResponse(GeminiResponseFields, WireModel):
    """One response (or, when streaming, one chunk of it) from a model.

    `partial=True` marks a streamed chunk whose content the final response repeats;
    `error_code` / `error_message` report a failure the model call ended with.
    """

    content: Content | None = None
    partial: bool | None = None
    turn_complete: bool | None = None
    finish_reason: FinishReasonValue | None = None
    error_code: str | None = None
    error_message: str | None = None
    usage_metadata: UsageMetadata | None = None
    custom_metadata: dict[str, JsonValue] | None = None


class BaseLlm(BaseModel, ABC):
    """Base class of every model: subclass it and implement `generate_content_async`.

    Args:
        model: the model's name (e.g. "gpt-4o-mini"); the registry resolves
            strings such as "openai/gpt-4o-mini" to a model class.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True)  # see WireModel

    model: str

    @classmethod
    def supported_models(cls) -> list[str]:
        """Regular expressions of the model strings this class serves (see `register_model_class`).

        Returns:
            The patterns; none by default.
        """
        return []

    @abstractmethod
    def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Answer a request, as an async generator of responses.

        Implement it as `async def ...: yield LlmResponse(...)`.

        Args:
            llm_request: the conversation, system instruction and tool declarations.
            stream: yield `partial=True` chunks before the final response when the model can.

        Returns:
            The responses: without streaming usually one; when streaming, partial
            chunks followed by the complete response.
        """
        ...
