"""Models: BaseLlm and its request/response types, the registry, and the built-in models.

Importing this package does not import the optional `openai` SDK; constructing an
`OpenAiModel` does.
"""

from baton.models.llm import (
    BaseLlm,
    FunctionDeclaration,
    GenerateContentConfig,
    LlmRequest,
    LlmResponse,
    Tool,
    UsageMetadata,
)
from baton.models.openai import OpenAiModel
from baton.models.registry import (
    UnknownModelError,
    register_model_class,
    register_model_prefix,
    resolve_model,
)
from baton.models.scripted import ScriptedModel

__all__ = [
    "BaseLlm",
    "FunctionDeclaration",
    "GenerateContentConfig",
    "LlmRequest",
    "LlmResponse",
    "OpenAiModel",
    "ScriptedModel",
    "Tool",
    "UnknownModelError",
    "UsageMetadata",
    "register_model_class",
    "register_model_prefix",
    "resolve_model",
]
