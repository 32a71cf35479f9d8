from __future__ import annotations

import subprocess
import sys
from contextlib import aclosing

import openai
import pytest

from baton import types
from baton.errors import ExtraNotInstalledError
from baton.models import (
    BaseLlm,
    FunctionDeclaration,
    GenerateContentConfig,
    LlmRequest,
    LlmResponse,
    OpenAiModel,
    UsageMetadata,
)
from baton.types import Content, FunctionCall, FunctionResponse, Part
from tests.models.chat_server import ChatServer, chunk, completion

WEATHER = FunctionDeclaration(
    name="get_weather",
    description="Get the weather.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


async def collect(
    model: BaseLlm, request: LlmRequest, *, stream: bool = False
) -> list[LlmResponse]:
    async with aclosing(model.generate_content_async(request, stream=stream)) as responses:
        return [response async for response in responses]


def user(text: str) -> Content:
    return Content(role="user", parts=[Part(text=text)])


async def test_text_answer_sends_instruction_options_and_prefixless_model(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    chat_server.reply(completion(content="Hello!"))
    request = LlmRequest(
        contents=[user("Hi")],
        config=GenerateContentConfig(
            system_instruction="Be brief.", temperature=0.2, max_output_tokens=50, seed=7
        ),
    )

    responses = await collect(openai_model, request)

    assert chat_server.requests == [
        {
            "model": "served-model",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"},
            ],
            "temperature": 0.2,
            "max_tokens": 50,
            "seed": 7,
        }
    ]
    assert chat_server.headers[0]["authorization"] == "Bearer k"
    assert responses == [
        LlmResponse(
            content=Content(role="model", parts=[Part(text="Hello!")]),
            turn_complete=True,
            finish_reason="STOP",
            usage_metadata=UsageMetadata(
                prompt_token_count=11, candidates_token_count=7, total_token_count=18
            ),
        )
    ]


async def test_cached_and_reasoning_tokens_are_reported_as_the_reference_reports_them(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    reply = completion(content="Hello!")
    reply["usage"] = {
        "prompt_tokens": 110,
        "completion_tokens": 50,
        "total_tokens": 160,
        "prompt_tokens_details": {"cached_tokens": 100},
        "completion_tokens_details": {"reasoning_tokens": 20},
    }
    chat_server.reply(reply)

    [response] = await collect(openai_model, LlmRequest(contents=[user("Hi")]))

    assert response.usage_metadata is not None
    assert response.usage_metadata.to_wire() == {
        "promptTokenCount": 110,
        "candidatesTokenCount": 50,
        "totalTokenCount": 160,
        "cachedContentTokenCount": 100,
        "thoughtsTokenCount": 20,
    }


async def test_tools_are_declared_and_several_calls_in_one_turn_come_back_with_ids(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    chat_server.reply(
        completion(
            tool_calls=[
                ("call_a", "get_weather", '{"city": "Paris"}'),
                ("call_b", "get_weather", '{"city": "Oslo"}'),
            ],
            finish_reason="tool_calls",
        )
    )
    request = LlmRequest(contents=[user("Weather?")])
    request.append_function_declarations([WEATHER])

    [response] = await collect(openai_model, request)

    assert chat_server.requests[0]["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the weather.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    assert response.content == Content(
        role="model",
        parts=[
            Part(
                function_call=FunctionCall(id="call_a", name="get_weather", args={"city": "Paris"})
            ),
            Part(
                function_call=FunctionCall(id="call_b", name="get_weather", args={"city": "Oslo"})
            ),
        ],
    )
    assert response.finish_reason == "STOP"
    assert response.error_code is None


async def test_history_with_calls_and_responses_becomes_tool_calls_and_tool_messages(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    chat_server.reply(completion(content="Paris is sunny, Oslo is cold."))
    calls = [
        Part(text="Checking."),
        Part(function_call=FunctionCall(id="call_a", name="get_weather", args={"city": "Paris"})),
        Part(function_call=FunctionCall(id="call_b", name="get_weather", args={"city": "Oslo"})),
        Part(text="private reasoning", thought=True),
    ]
    answers = [
        Part(
            function_response=FunctionResponse(id="call_a", name="get_weather", response={"t": 25})
        ),
        Part(
            function_response=FunctionResponse(
                id="call_b", name="get_weather", response={"result": "cold"}
            )
        ),
    ]
    request = LlmRequest(
        model="openai/other-model",
        contents=[
            user("Weather?"),
            Content(role="model", parts=calls),
            Content(role="user", parts=answers),
        ],
    )

    await collect(openai_model, request)

    assert chat_server.requests[0]["model"] == "other-model"
    assert chat_server.requests[0]["messages"] == [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": '{"t": 25}'},
        {"role": "tool", "tool_call_id": "call_b", "content": '{"result": "cold"}'},
    ]


async def test_streaming_yields_text_chunks_then_the_whole_turn(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    call_a = {"index": 0, "id": "call_a", "type": "function"}
    chat_server.reply(
        [
            chunk({"role": "assistant", "content": "Let me "}),
            chunk({"content": "check."}),
            chunk(
                {"tool_calls": [{**call_a, "function": {"name": "get_weather", "arguments": ""}}]}
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Rome"}'}}]}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{}"},
                        }
                    ]
                }
            ),
            chunk({}, finish_reason="tool_calls"),
            # Asked for with stream_options: the usage comes last, in a chunk of its own.
            {**chunk({}), "choices": [], "usage": completion()["usage"]},
        ]
    )

    responses = await collect(openai_model, LlmRequest(contents=[user("Rome?")]), stream=True)

    assert chat_server.requests[0]["stream"] is True
    assert chat_server.requests[0]["stream_options"] == {"include_usage": True}
    assert responses == [
        LlmResponse(content=Content(role="model", parts=[Part(text="Let me ")]), partial=True),
        LlmResponse(content=Content(role="model", parts=[Part(text="check.")]), partial=True),
        LlmResponse(
            content=Content(
                role="model",
                parts=[
                    Part(text="Let me check."),
                    Part(
                        function_call=FunctionCall(
                            id="call_a", name="get_weather", args={"city": "Rome"}
                        )
                    ),
                    Part(function_call=FunctionCall(id="call_b", name="get_weather", args={})),
                ],
            ),
            turn_complete=True,
            finish_reason="STOP",
            usage_metadata=UsageMetadata(
                prompt_token_count=11, candidates_token_count=7, total_token_count=18
            ),
        ),
    ]


async def test_malformed_arguments_are_reported_not_guessed(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    chat_server.reply(
        completion(
            tool_calls=[("call_a", "get_weather", '{"city": '), ("call_b", "get_weather", "{}")]
        )
    )

    [response] = await collect(openai_model, LlmRequest(contents=[user("?")]))

    assert response.content == Content(
        role="model",
        parts=[Part(function_call=FunctionCall(id="call_b", name="get_weather", args={}))],
    )
    assert response.error_code == "MALFORMED_FUNCTION_CALL"
    assert response.error_message == (
        "tool call 'get_weather' (call_a) has arguments '{\"city\": ', which is not a JSON "
        "object; ask the model to call again."
    )


async def test_a_function_call_without_id_is_refused_before_sending(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    history = Content(role="model", parts=[Part.from_function_call(name="get_weather", args={})])
    request = LlmRequest(contents=[user("?"), history])

    with pytest.raises(ValueError, match=r"function call 'get_weather' in contents\[1\] has no id"):
        await collect(openai_model, request)
    assert chat_server.requests == []


async def test_base_url_comes_from_the_environment_and_a_local_server_needs_no_key(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    chat_server.reply(completion(content="ok"))
    model = OpenAiModel(model="llama3", max_retries=0)
    try:
        [response] = await collect(model, LlmRequest(contents=[user("hi")]))
    finally:
        await model.aclose()

    assert response.content == Content(role="model", parts=[Part(text="ok")])
    assert chat_server.requests[0]["model"] == "llama3"


def test_no_key_and_no_base_url_is_refused_at_construction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(ValueError, match="model 'openai/gpt-4o' has no API key: pass api_key="):
        OpenAiModel(model="openai/gpt-4o")


def test_missing_openai_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import openai` raise ImportError.
    monkeypatch.setitem(sys.modules, "openai", None)

    with pytest.raises(ExtraNotInstalledError) as caught:
        OpenAiModel(model="openai/gpt-4o", api_key="k")

    assert caught.value.extra == "openai"
    assert str(caught.value) == (
        "the OpenAI-compatible model adapter needs the 'openai' package; install it with "
        "`pip install 'baton[openai]'`."
    )


async def test_a_server_error_propagates_as_the_sdks_error(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    with pytest.raises(openai.InternalServerError, match="no reply queued"):
        await collect(openai_model, LlmRequest(contents=[user("hi")]))
    assert len(chat_server.requests) == 1


def test_importing_baton_models_does_not_import_the_sdk() -> None:
    code = "import sys, baton.models; print('openai' in sys.modules)"

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert done.stdout.strip() == "False"


async def test_the_references_config_fields_reach_the_server_as_chat_completions_takes_them(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    chat_server.reply(completion(content='{"city": "Oslo"}'))
    other = FunctionDeclaration(name="get_time", description="Get the time.")
    schema = types.Schema(
        type=types.Type.OBJECT,
        properties={"city": types.Schema(type=types.Type.STRING, nullable=True)},
        required=["city"],
    )
    config = types.GenerateContentConfig(
        top_k=20,
        presence_penalty=0.5,
        frequency_penalty=0.25,
        response_schema=schema.to_json_schema(),
        tool_config=types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(
                mode=types.FunctionCallingConfigMode.ANY, allowed_function_names=["get_weather"]
            )
        ),
        thinking_config=types.ThinkingConfig(thinking_level=types.ThinkingLevel.LOW),
        safety_settings=[
            types.SafetySetting(
                category=types.HarmCategory.HARM_CATEGORY_HARASSMENT,
                threshold=types.HarmBlockThreshold.BLOCK_ONLY_HIGH,
            )
        ],
    )
    request = LlmRequest(contents=[user("Where?")], config=config)
    request.append_function_declarations([WEATHER, other])

    await collect(openai_model, request)

    [sent] = chat_server.requests
    assert sent["top_k"] == 20  # in the body, for the servers that take it
    assert sent["presence_penalty"] == 0.5
    assert sent["frequency_penalty"] == 0.25
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "response",
            "schema": {
                "type": "object",
                "properties": {"city": {"type": ["string", "null"]}},
                "required": ["city"],
            },
        },
    }
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather"]
    assert sent["reasoning_effort"] == "low"
    assert "safety_settings" not in sent  # Gemini's filters: chat completions has none


async def test_function_calling_modes_and_a_json_answer_without_a_schema(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    def request_with(mode: types.FunctionCallingConfigMode) -> LlmRequest:
        calling = types.FunctionCallingConfig(mode=mode)
        config = types.GenerateContentConfig(
            response_mime_type="application/json",
            tool_config=types.ToolConfig(function_calling_config=calling),
        )
        request = LlmRequest(contents=[user("Go")], config=config)
        request.append_function_declarations([WEATHER])
        return request

    for mode in (
        types.FunctionCallingConfigMode.NONE,
        types.FunctionCallingConfigMode.ANY,
        types.FunctionCallingConfigMode.AUTO,
    ):
        chat_server.reply(completion(content="{}"))
        await collect(openai_model, request_with(mode))

    assert [r.get("tool_choice") for r in chat_server.requests] == ["none", "required", None]
    assert all(r["response_format"] == {"type": "json_object"} for r in chat_server.requests)


async def test_a_config_the_server_cannot_be_asked_is_refused_before_sending(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    config = types.GenerateContentConfig(response_mime_type="text/x.enum")
    request = LlmRequest(contents=[user("Go")], config=config)

    with pytest.raises(ValueError, match="response_mime_type 'text/x.enum'"):
        await collect(openai_model, request)

    assert chat_server.requests == []


async def test_http_options_send_their_headers_and_retry_as_many_attempts(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    retries = types.HttpRetryOptions(attempts=3)
    http = types.HttpOptions(headers={"x-team": "ops"}, timeout=10_000, retry_options=retries)
    request = LlmRequest(
        contents=[user("hi")], config=types.GenerateContentConfig(http_options=http)
    )

    with pytest.raises(openai.InternalServerError, match="no reply queued"):
        await collect(openai_model, request)  # the model itself is built with no retries

    assert len(chat_server.requests) == 3
    assert all(h["x-team"] == "ops" for h in chat_server.headers)


def test_a_config_field_only_gemini_takes_is_refused_by_name() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="response_modalities: only Gemini's own API"):
        types.GenerateContentConfig.model_validate({"responseModalities": ["TEXT"]})


async def test_a_model_turn_holding_bytes_is_refused_before_sending(
    openai_model: OpenAiModel, chat_server: ChatServer
) -> None:
    picture = Content(role="model", parts=[Part.from_bytes(data=b"x", mime_type="image/png")])

    with pytest.raises(ValueError, match=r"contents\[1\] is a model turn holding a file"):
        await collect(openai_model, LlmRequest(contents=[user("Draw"), picture]))
    assert chat_server.requests == []
