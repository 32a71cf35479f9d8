"""OpenAiModel: any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama, ...).

Needs the `openai` extra. The package is imported when a model is constructed,
not when this module is, so `baton.models` imports without it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, final

from pydantic import PrivateAttr

from baton.errors import ExtraNotInstalledError
from baton.models.chat_completions import (
    RawToolCall,
    build_turn,
    extra_body_of,
    finish_reason_of,
    from_completion,
    to_completion_params,
    usage_of,
)
from baton.models.llm import BaseLlm, LlmRequest, LlmResponse
from baton.types import Content, HttpOptions, Part, UsageMetadata

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletionChunk
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall
    from openai.types.chat.completion_create_params import CompletionCreateParamsBase

__all__ = ["MODEL_PREFIX", "OpenAiModel", "load_openai"]

MODEL_PREFIX = "openai/"
"""Model strings "openai/<model>" resolve to an OpenAiModel."""

# Local servers (vLLM, Ollama) accept any key, but the SDK insists on one.
_PLACEHOLDER_KEY = "not-needed"


def load_openai() -> ModuleType:
    """Import the `openai` package.

    Returns:
        The module.

    Raises:
        ExtraNotInstalledError: the `openai` extra is not installed.
    """
    try:
        return importlib.import_module("openai")
    except ImportError as exc:
        raise ExtraNotInstalledError(
            "openai", "openai", "the OpenAI-compatible model adapter"
        ) from exc


@final
class OpenAiModel(BaseLlm):
    """A model served over the OpenAI chat-completions protocol.

    Args:
        model: "openai/<model>" or just "<model>"; the server gets "<model>".
        base_url: the server's URL, e.g. "http://localhost:11434/v1" for Ollama
            (default: $OPENAI_BASE_URL, else OpenAI's).
        api_key: the key (default: $OPENAI_API_KEY; optional when a base URL is set,
            since local servers ignore it).
        timeout: seconds per request (default: the SDK's).
        max_retries: retries of failed requests by the SDK.

    Raises:
        ExtraNotInstalledError: the `openai` package is missing.
        ValueError: no API key and no base URL, so the request could only fail.
    """

    base_url: str | None = None
    api_key: str | None = None
    timeout: float | None = None
    max_retries: int = 2
    _client: AsyncOpenAI = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        """Create the client (the SDK is imported here, not at module import)."""
        openai = load_openai()
        base_url = self.base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = self.api_key or os.environ.get("OPENAI_API_KEY") or None
        if api_key is None and base_url is None:
            raise ValueError(
                f"model '{self.model}' has no API key: pass api_key=... or set OPENAI_API_KEY; "
                "for a local server (vLLM, Ollama) set base_url=... or OPENAI_BASE_URL instead."
            )
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or _PLACEHOLDER_KEY,
            max_retries=self.max_retries,
            **({"timeout": self.timeout} if self.timeout is not None else {}),
        )

    @property
    def server_model(self) -> str:
        """The model name sent to the server (without the "openai/" prefix)."""
        return self.model.removeprefix(MODEL_PREFIX)

    async def aclose(self) -> None:
        """Close the HTTP client and its connections."""
        await self._client.close()

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Send the request and yield the model's answer.

        Args:
            llm_request: contents, system instruction, tools and options.
                `llm_request.model`, when set, overrides this model's name.
            stream: yield each text chunk as a `partial=True` response, then the
                complete turn (text and every tool call).

        Returns:
            The responses.

        Raises:
            ValueError: a function call or response in the contents has no id.
            openai.APIError: the server failed or refused the request.
        """
        model = (llm_request.model or self.model).removeprefix(MODEL_PREFIX)
        params = to_completion_params(llm_request, model)
        extra = extra_body_of(llm_request)
        client = self._client_for(llm_request.config.http_options)
        if not stream:
            completion = await client.chat.completions.create(**params, extra_body=extra)
            yield from_completion(completion)
            return
        async for response in self._stream(client, params, extra):
            yield response

    def _client_for(self, http: HttpOptions | None) -> AsyncOpenAI:
        """The client with a request's HTTP options: its headers, its timeout (ms), and
        its retry attempts (the first included; the SDK retries with its own backoff)."""
        if http is None:
            return self._client
        options: dict[str, Any] = {}
        if http.headers:
            options["default_headers"] = http.headers
        if http.timeout is not None:
            options["timeout"] = http.timeout / 1000
        attempts = http.retry_options.attempts if http.retry_options else None
        if attempts is not None:
            options["max_retries"] = max(0, attempts - 1)
        return self._client.with_options(**options) if options else self._client

    async def _stream(
        self,
        client: AsyncOpenAI,
        params: CompletionCreateParamsBase,
        extra: dict[str, object] | None,
    ) -> AsyncGenerator[LlmResponse, None]:
        params["stream_options"] = {"include_usage": True}  # the last chunk carries the usage
        chunks = await client.chat.completions.create(**params, stream=True, extra_body=extra)
        turn = _StreamedTurn()
        async with chunks:
            async for chunk in chunks:
                text = turn.add(chunk)
                if text:
                    content = Content(role="model", parts=[Part(text=text)])
                    yield LlmResponse(content=content, partial=True)
        yield turn.finish()


@dataclass
class _ToolCallDraft:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class _StreamedTurn:
    """What the chunks of one streamed completion add up to."""

    text: str = ""
    finish_reason: str | None = None
    usage: UsageMetadata | None = None
    calls: dict[int, _ToolCallDraft] = field(default_factory=dict[int, _ToolCallDraft])

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take in a chunk; return its new text."""
        self.usage = usage_of(chunk.usage) or self.usage
        if not chunk.choices:
            return ""
        choice = chunk.choices[0]
        self.finish_reason = choice.finish_reason or self.finish_reason
        for delta in choice.delta.tool_calls or []:
            self._add_call(delta)
        self.text += choice.delta.content or ""
        return choice.delta.content or ""

    def _add_call(self, delta: ChoiceDeltaToolCall) -> None:
        draft = self.calls.setdefault(delta.index, _ToolCallDraft())
        draft.id = delta.id or draft.id
        if delta.function is not None:
            draft.name += delta.function.name or ""
            draft.arguments += delta.function.arguments or ""

    def finish(self) -> LlmResponse:
        """The complete turn."""
        drafts = [self.calls[i] for i in sorted(self.calls)]
        raw: list[RawToolCall] = [(d.id, d.name, d.arguments) for d in drafts]
        response = build_turn(self.text or None, raw)
        response.finish_reason = finish_reason_of(self.finish_reason)
        response.usage_metadata = self.usage
        return response
