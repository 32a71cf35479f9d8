"""What only Gemini's own protocol carries, refused by baton's chat-completions models
before anything is sent: Gemini's built-in tools (`types.Tool(google_search=...)`, which
the model runs itself) and a function declaration's `response` schema and NON_BLOCKING
`behavior`. A model of the user's that speaks Gemini's protocol receives them as given."""

from __future__ import annotations

from typing import Final

from baton.models.llm import LlmRequest
from baton.types import Behavior, FunctionDeclaration

__all__ = ["is_gemini_model", "refuse_gemini_only", "unsupported_built_in"]

# How an error names a built-in tool: the reference's words for those its ADK tools add.
_LABELS: Final = {
    "google_search": "Google search tool",
    "url_context": "Url context tool",
    "enterprise_web_search": "Enterprise Web Search tool",
    "code_execution": "Gemini code execution tool",
}


def is_gemini_model(model: str | None) -> bool:
    """Whether `model` names a Gemini model ("gemini-2.5-flash", ".../models/gemini-...")."""
    return (model or "").rsplit("/", 1)[-1].startswith("gemini-")


def unsupported_built_in(what: str, model: str | None) -> ValueError:
    """The error for a Gemini built-in `what` asked of `model`, saying what to do instead."""
    return ValueError(
        f"{what} is not supported for model {model}: it is a Gemini built-in the model runs "
        "itself, and baton sends model requests over the OpenAI chat-completions protocol, "
        "which has no place for it. Remove it from the agent, or give the agent a "
        "FunctionTool that does the same through an API of your own."
    )


def refuse_gemini_only(request: LlmRequest, model: str) -> None:
    """Refuse a request a chat-completions model cannot honour.

    Args:
        request: the request about to be sent.
        model: the model's name, as the error names it.

    Raises:
        ValueError: the config's tools hold a Gemini built-in tool, or a function
            declaration has a `response` schema or NON_BLOCKING `behavior`.
    """
    for tool in request.config.tools:
        for name in tool.built_ins:
            label = _LABELS.get(name, f"Gemini built-in tool Tool({name}=...)")
            raise unsupported_built_in(label, model)
    for declaration in request.config.function_declarations:
        _refuse_declaration_fields(declaration, model)


def _refuse_declaration_fields(declaration: FunctionDeclaration, model: str) -> None:
    if declaration.response is not None or declaration.response_json_schema is not None:
        raise ValueError(
            f"function '{declaration.name}' declares a response schema, which model {model} "
            "cannot be sent: the OpenAI chat-completions protocol has no place for it. "
            "Leave out response / response_json_schema (describe the result in the "
            "description instead)."
        )
    if declaration.behavior is Behavior.NON_BLOCKING:
        raise ValueError(
            f"function '{declaration.name}' has behavior NON_BLOCKING, which model {model} "
            "cannot honour: it is Gemini's live API's, and a chat-completions model waits "
            "for every function's result. Leave behavior out (or BLOCKING), or make the "
            "tool long-running (LongRunningFunctionTool)."
        )
