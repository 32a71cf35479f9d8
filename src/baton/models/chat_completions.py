"""The chat-completions wire format: LlmRequest -> request params, completion -> LlmResponse.

Pure conversions, no I/O; `openai.py` sends what this module builds. The openai
types are imported for type checking only, so importing this module does not
need the `openai` extra.
"""

from __future__ import annotations

import base64
import json
import mimetypes
from typing import TYPE_CHECKING, cast

from pydantic import JsonValue

from baton.models.gemini_only import refuse_gemini_only
from baton.models.llm import FunctionDeclaration, LlmRequest, LlmResponse, UsageMetadata
from baton.types import (
    Blob,
    Content,
    FileData,
    FunctionCall,
    FunctionCallingConfigMode,
    FunctionResponse,
    GenerateContentConfig,
    Part,
    ThinkingLevel,
)

if TYPE_CHECKING:
    from openai.types import CompletionUsage
    from openai.types.chat import (
        ChatCompletion,
        ChatCompletionAssistantMessageParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
        ChatCompletionToolMessageParam,
        ChatCompletionToolParam,
    )
    from openai.types.chat.completion_create_params import CompletionCreateParamsBase

__all__ = [
    "MALFORMED_FUNCTION_CALL",
    "RawToolCall",
    "build_turn",
    "extra_body_of",
    "finish_reason_of",
    "from_completion",
    "to_completion_params",
    "to_messages",
    "usage_of",
]

MALFORMED_FUNCTION_CALL = "MALFORMED_FUNCTION_CALL"
"""error_code of a response whose tool call arguments are not a JSON object."""

# OpenAI's finish reasons in the reference's vocabulary.
_FINISH_REASONS = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "function_call": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}

RawToolCall = tuple[str, str, str]
"""A tool call as received: (id, function name, JSON arguments text)."""


def to_completion_params(request: LlmRequest, model: str) -> CompletionCreateParamsBase:
    """The chat-completions request for an LlmRequest (unset options are left out).

    Args:
        request: the conversation, instruction, tools and sampling options.
        model: the model name the server knows (no "openai/" prefix).

    Returns:
        Keyword arguments for `client.chat.completions.create`.

    Raises:
        ValueError: a function call or response has no id (the protocol pairs them by id),
            or the request holds what only Gemini's protocol carries (see `gemini_only`).
    """
    refuse_gemini_only(request, request.model or model)
    config = request.config
    params: CompletionCreateParamsBase = {"model": model, "messages": to_messages(request)}
    if config.function_declarations:
        params["tools"] = [_tool_param(d) for d in config.function_declarations]
    if config.temperature is not None:
        params["temperature"] = config.temperature
    if config.top_p is not None:
        params["top_p"] = config.top_p
    if config.max_output_tokens is not None:
        params["max_tokens"] = config.max_output_tokens
    if config.stop_sequences:
        params["stop"] = config.stop_sequences
    if config.seed is not None:
        params["seed"] = config.seed
    if config.presence_penalty is not None:
        params["presence_penalty"] = config.presence_penalty
    if config.frequency_penalty is not None:
        params["frequency_penalty"] = config.frequency_penalty
    _response_format(config, params)
    _tool_choice(config, params)
    level = config.thinking_config.thinking_level if config.thinking_config else None
    if level is not None and level is not ThinkingLevel.THINKING_LEVEL_UNSPECIFIED:
        params["reasoning_effort"] = level.value.lower()  # pyright: ignore[reportGeneralTypeIssues]
    return params


def extra_body_of(request: LlmRequest) -> dict[str, object] | None:
    """Options the chat-completions protocol has no field for, sent in the request body
    as the servers that take them read them (vLLM, llama.cpp, Ollama: `top_k`); a server
    that does not know one refuses the request, so the option is never silently lost."""
    if request.config.top_k is None:
        return None
    return {"top_k": request.config.top_k}


def _response_format(config: GenerateContentConfig, params: CompletionCreateParamsBase) -> None:
    schema = config.response_schema or config.response_json_schema
    if schema is not None:
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": dict(schema)},
        }
    elif config.response_mime_type == "application/json":
        params["response_format"] = {"type": "json_object"}
    elif config.response_mime_type not in (None, "text/plain"):
        raise ValueError(
            f"response_mime_type {config.response_mime_type!r} cannot be asked of a "
            "chat-completions model: use 'application/json' or 'text/plain'."
        )


def _tool_choice(config: GenerateContentConfig, params: CompletionCreateParamsBase) -> None:
    """The reference's function-calling mode as a tool choice (AUTO is the default)."""
    calling = config.tool_config.function_calling_config if config.tool_config else None
    if calling is None or "tools" not in params:
        return
    allowed = calling.allowed_function_names
    if calling.mode is FunctionCallingConfigMode.NONE:
        params["tool_choice"] = "none"
    elif calling.mode in (FunctionCallingConfigMode.ANY, FunctionCallingConfigMode.VALIDATED):
        if allowed and len(allowed) == 1:
            params["tool_choice"] = {"type": "function", "function": {"name": allowed[0]}}
        else:
            params["tool_choice"] = "required"
    if allowed:
        declared = config.function_declarations
        params["tools"] = [_tool_param(d) for d in declared if d.name in allowed]


def to_messages(request: LlmRequest) -> list[ChatCompletionMessageParam]:
    """The chat messages for a request: system instruction first, then each content.

    Args:
        request: the request.

    Returns:
        The messages, in order.

    Raises:
        ValueError: a function call or response has no id.
    """
    messages: list[ChatCompletionMessageParam] = []
    if request.config.system_instruction:
        messages.append({"role": "system", "content": request.config.system_instruction})
    for index, content in enumerate(request.contents):
        messages.extend(_content_messages(content, index))
    return messages


def _content_messages(content: Content, index: int) -> list[ChatCompletionMessageParam]:
    # Thoughts are the model's own reasoning; they are not sent back.
    parts = [p for p in content.parts or [] if not p.thought]
    text = "".join(p.text for p in parts if p.text)
    calls = [p.function_call for p in parts if p.function_call]
    tools: list[ChatCompletionMessageParam] = [
        _tool_message(p.function_response, index) for p in parts if p.function_response
    ]
    if content.role in ("model", "assistant"):
        if any(p.inline_data or p.file_data for p in parts):
            raise ValueError(
                f"contents[{index}] is a model turn holding a file or bytes; a chat-completions "
                "assistant message carries only text and tool calls, so put the media in a "
                "user message."
            )
        assistant = [_assistant_message(text, calls, index)] if text or calls else []
        return [*assistant, *tools]
    if not any(p.inline_data or p.file_data for p in parts):
        user: list[ChatCompletionMessageParam] = [{"role": "user", "content": text}] if text else []
        return [*tools, *user]
    media = [piece for part in parts for piece in _user_pieces(part, index)]
    # Not the SDK's part types: video_url is vLLM's extension, and an audio format other
    # than wav or mp3 is the server's to accept or refuse.
    return [*tools, cast("ChatCompletionMessageParam", {"role": "user", "content": media})]


# The parts of a user message that holds media, as the chat-completions protocol takes
# them (and as the reference's LiteLlm sends them): text inline, images and video as
# URLs (a base64 data URL for bytes), audio as input_audio, documents as files.
_Piece = dict[str, object]
"""One part of a user message's content list ({"type": "text", "text": ...}, ...)."""

_DOCUMENT_TYPES = frozenset(
    {
        "application/pdf",
        "application/msword",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "application/json",
        "application/x-sh",
    }
)


def _user_pieces(part: Part, index: int) -> list[_Piece]:
    if part.text:
        return [{"type": "text", "text": part.text}]
    if part.inline_data is not None:
        return [_blob_piece(part.inline_data, index)]
    if part.file_data is not None:
        return [_file_piece(part.file_data, index)]
    return []


def _blob_piece(blob: Blob, index: int) -> _Piece:
    if not blob.mime_type or blob.data is None:
        raise ValueError(
            f"inline_data in contents[{index}] needs both its bytes and a mime_type "
            "(e.g. 'image/png') to be sent to a chat-completions model."
        )
    mime_type = _bare_mime_type(blob.mime_type)
    major = mime_type.partition("/")[0]
    if major == "text":
        return {"type": "text", "text": _decoded_text(blob.data)}
    encoded = base64.b64encode(blob.data).decode("ascii")
    data_url = f"data:{mime_type};base64,{encoded}"
    if major == "image":
        return {"type": "image_url", "image_url": {"url": data_url}}
    if major == "audio":
        return {
            "type": "input_audio",
            "input_audio": {"data": encoded, "format": _audio_format(mime_type)},
        }
    if major == "video":
        return {"type": "video_url", "video_url": {"url": data_url}}
    if mime_type in _DOCUMENT_TYPES:
        name = blob.display_name or f"document{mimetypes.guess_extension(mime_type) or '.bin'}"
        return {"type": "file", "file": {"file_data": data_url, "filename": name}}
    raise ValueError(
        f"inline_data in contents[{index}] is {blob.mime_type}, which a chat-completions "
        "model cannot be sent: send text, an image, audio, video or a document "
        f"({', '.join(sorted(_DOCUMENT_TYPES))})."
    )


def _file_piece(file: FileData, index: int) -> _Piece:
    uri = file.file_uri or ""
    if uri.startswith("file-"):  # a file uploaded to the provider, by its id
        return {"type": "file", "file": {"file_id": uri}}
    guessed = mimetypes.guess_type(uri.partition("?")[0])[0]
    mime_type = _bare_mime_type(file.mime_type or guessed or "")
    if uri.startswith(("http://", "https://")):
        major = mime_type.partition("/")[0]
        if major == "image":
            return {"type": "image_url", "image_url": {"url": uri}}
        if major == "video":
            return {"type": "video_url", "video_url": {"url": uri}}
    raise ValueError(
        f"file_data in contents[{index}] ({uri or 'no file_uri'}, "
        f"{mime_type or 'no mime_type'}) cannot be sent to a chat-completions model: it "
        "takes http(s) URLs of images or video, or a provider file id ('file-...'); "
        "send other files as inline_data."
    )


def _bare_mime_type(mime_type: str) -> str:
    return mime_type.partition(";")[0].strip().lower()


def _decoded_text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _audio_format(mime_type: str) -> str:
    subtype = mime_type.partition("/")[2].removeprefix("x-")
    return {"mpeg": "mp3", "wave": "wav", "vnd.wave": "wav"}.get(subtype, subtype)


def _assistant_message(
    text: str, calls: list[FunctionCall], index: int
) -> ChatCompletionAssistantMessageParam:
    message: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [_tool_call_param(call, index) for call in calls]
    return message


def _tool_call_param(call: FunctionCall, index: int) -> ChatCompletionMessageFunctionToolCallParam:
    name = call.name or ""
    return {
        "id": _require_id(call.id, "call", name, index),
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(call.args or {}, ensure_ascii=False)},
    }


def _tool_message(response: FunctionResponse, index: int) -> ChatCompletionToolMessageParam:
    return {
        "role": "tool",
        "tool_call_id": _require_id(response.id, "response", response.name or "", index),
        "content": json.dumps(response.response or {}, ensure_ascii=False),
    }


def _require_id(call_id: str | None, kind: str, name: str, index: int) -> str:
    if not call_id:
        raise ValueError(
            f"function {kind} '{name}' in contents[{index}] has no id; the chat-completions "
            "protocol pairs calls and responses by id, so give both the call's id."
        )
    return call_id


def _tool_param(declaration: FunctionDeclaration) -> ChatCompletionToolParam:
    parameters: dict[str, object] = dict(
        declaration.parameters or {"type": "object", "properties": {}}
    )
    return {
        "type": "function",
        "function": {
            "name": declaration.name,
            "description": declaration.description,
            "parameters": parameters,
        },
    }


def from_completion(completion: ChatCompletion) -> LlmResponse:
    """The LlmResponse for a (non-streamed) chat completion.

    Args:
        completion: the server's answer; its first choice is used.

    Returns:
        The response: text and function calls (ids kept, arguments parsed), finish
        reason and token usage; `error_code` MALFORMED_FUNCTION_CALL when a call's
        arguments are not a JSON object, or when the server returned no choice.
    """
    usage = usage_of(completion.usage)
    if not completion.choices:
        return LlmResponse(error_code="NO_CHOICES", error_message="the server returned no choices.")
    choice = completion.choices[0]
    raw_calls: list[RawToolCall] = [
        (call.id, call.function.name, call.function.arguments)
        for call in choice.message.tool_calls or []
        if call.type == "function"
    ]
    response = build_turn(choice.message.content, raw_calls)
    response.finish_reason = finish_reason_of(choice.finish_reason)
    response.usage_metadata = usage
    return response


def build_turn(text: str | None, raw_calls: list[RawToolCall]) -> LlmResponse:
    """A complete model turn from its text and tool calls.

    Args:
        text: the assistant's text, if any.
        raw_calls: the tool calls as received, in order.

    Returns:
        A turn-complete response; a call whose arguments do not parse to a JSON
        object is left out and reported in `error_code` / `error_message`.
    """
    parts = [Part(text=text)] if text else []
    problems: list[str] = []
    for call_id, name, arguments in raw_calls:
        args = _parse_arguments(arguments)
        if args is None:
            problems.append(f"tool call '{name}' ({call_id}) has arguments {arguments!r}")
            continue
        parts.append(Part(function_call=FunctionCall(id=call_id, name=name, args=args)))
    response = LlmResponse(content=Content(role="model", parts=parts), turn_complete=True)
    if problems:
        response.error_code = MALFORMED_FUNCTION_CALL
        response.error_message = (
            "; ".join(problems) + ", which is not a JSON object; ask the model to call again."
        )
    return response


def finish_reason_of(reason: str | None) -> str | None:
    """OpenAI's finish reason in the reference's vocabulary ("length" -> "MAX_TOKENS").

    Args:
        reason: as the server sent it.

    Returns:
        The mapped reason; an unknown one upper-cased; None stays None.
    """
    return _FINISH_REASONS.get(reason, reason.upper()) if reason else None


def _parse_arguments(arguments: str) -> dict[str, JsonValue] | None:
    if not arguments.strip():
        return {}
    try:
        parsed: JsonValue = json.loads(arguments)
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def usage_of(usage: CompletionUsage | None) -> UsageMetadata | None:
    """The token counts of a completion, as the reference's LiteLlm reports them.

    Cached prompt tokens and reasoning tokens come from the usage's details when the
    server sends them; reasoning tokens are the reference's `thoughts_token_count`.
    """
    if usage is None:
        return None
    prompt_details = usage.prompt_tokens_details
    completion_details = usage.completion_tokens_details
    cached = prompt_details.cached_tokens if prompt_details is not None else None
    reasoning = completion_details.reasoning_tokens if completion_details is not None else None
    return UsageMetadata(
        prompt_token_count=usage.prompt_tokens,
        candidates_token_count=usage.completion_tokens,
        total_token_count=usage.total_tokens,
        cached_content_token_count=cached or None,
        thoughts_token_count=reasoning or None,
    )
