"""Model strings to model objects: "openai/gpt-4o-mini" -> OpenAiModel(...).

"gemini-..." strings, as the reference's examples write them, go to Google's
OpenAI-compatible endpoint through the same adapter.

Two hooks add more: `register_model_prefix` maps a prefix to a factory, and
`register_model_class` serves a `BaseLlm` subclass for its `supported_models()`
patterns.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TypeAlias, TypeVar

from baton.errors import UnknownModelError
from baton.models.llm import BaseLlm
from baton.models.openai import OpenAiModel

__all__ = [
    "GEMINI_OPENAI_URL",
    "ModelFactory",
    "UnknownModelError",
    "gemini_model",
    "register_model_class",
    "register_model_prefix",
    "resolve_model",
]

ModelFactory: TypeAlias = Callable[[str], BaseLlm]
"""Builds a model from the full model string (prefix included)."""

LlmClass = TypeVar("LlmClass", bound=type[BaseLlm])


GEMINI_OPENAI_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"
"""Google's OpenAI-compatible endpoint for Gemini models."""


def gemini_model(name: str) -> BaseLlm:
    """A Gemini model string ("gemini-2.5-flash", as the reference's examples write it),
    served through Google's OpenAI-compatible endpoint by the chat-completions adapter.

    The key comes from $GEMINI_API_KEY (or $GOOGLE_API_KEY); $GEMINI_BASE_URL replaces
    the endpoint (a proxy, a gateway, a test server).

    Raises:
        ValueError: no key is set; the message names the variables.
        ExtraNotInstalledError: the `openai` extra is missing.
    """
    key = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
    if not key:
        raise ValueError(
            f"model '{name}' is served by Google's OpenAI-compatible endpoint and needs a "
            "key: set GEMINI_API_KEY (or GOOGLE_API_KEY), or pass a BaseLlm instance."
        )
    base_url = os.environ.get("GEMINI_BASE_URL") or GEMINI_OPENAI_URL
    return OpenAiModel(model=name, base_url=base_url, api_key=key)


_prefixes: dict[str, ModelFactory] = {
    "openai/": lambda name: OpenAiModel(model=name),
    "gemini-": gemini_model,
}
_classes: list[type[BaseLlm]] = []


def register_model_prefix(prefix: str, factory: ModelFactory) -> None:
    """Resolve model strings that start with `prefix` through `factory`.

    Args:
        prefix: e.g. "ollama/"; a later registration of the same prefix replaces it.
        factory: called with the full model string.
    """
    _prefixes[prefix] = factory


def register_model_class(cls: LlmClass) -> LlmClass:
    """Resolve the strings that fully match `cls.supported_models()` to `cls(model=...)`.

    Usable as a class decorator.

    Args:
        cls: a BaseLlm subclass whose `supported_models()` returns regex patterns.

    Returns:
        `cls`, unchanged.

    Raises:
        ValueError: the class declares no patterns.
    """
    if not cls.supported_models():
        raise ValueError(
            f"{cls.__name__}.supported_models() returns no patterns; return the regexes "
            "of the model strings it serves."
        )
    if cls not in _classes:
        _classes.append(cls)
    return cls


def resolve_model(model: str | BaseLlm) -> BaseLlm:
    """The model object for a model string (a BaseLlm is returned as is).

    Longest matching prefix first, then registered classes in registration order.

    Args:
        model: a BaseLlm, or a string such as "openai/gpt-4o-mini".

    Returns:
        The model.

    Raises:
        UnknownModelError: no prefix or class matches; the message lists the known ones.
    """
    if isinstance(model, BaseLlm):
        return model
    for prefix in sorted(_prefixes, key=len, reverse=True):
        if model.startswith(prefix):
            return _prefixes[prefix](model)
    for cls in _classes:
        if any(re.fullmatch(pattern, model) for pattern in cls.supported_models()):
            return cls(model=model)
    raise UnknownModelError(_unknown_message(model))


def _unknown_message(model: str) -> str:
    prefixes = ", ".join(f"'{p}<model>'" for p in sorted(_prefixes))
    classes = "".join(f", {c.__name__} ({' | '.join(c.supported_models())})" for c in _classes)
    return (
        f"model '{model}' is not known (known: {prefixes}{classes}). Use a known prefix, "
        "e.g. 'openai/<model>' for any OpenAI-compatible server (set OPENAI_BASE_URL for "
        "vLLM or Ollama), pass a BaseLlm instance, or call register_model_prefix()."
    )
