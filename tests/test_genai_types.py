"""`baton.types` as code written for the reference uses `google.genai.types`: the names it
imports, their constructors and factory methods, and how their enums print."""

from __future__ import annotations

import json
import re
from enum import Enum
from pathlib import Path

import pytest
from pydantic import ValidationError

from baton import types
from baton.events import Event
from baton.sessions import DatabaseSessionService

ENUMS: list[type[Enum]] = [
    types.Language,
    types.Outcome,
    types.FinishReason,
    types.Type,
    types.FunctionCallingConfigMode,
    types.ThinkingLevel,
    types.HarmCategory,
    types.HarmBlockThreshold,
    types.Behavior,
    types.Modality,
]


@pytest.mark.parametrize("enum", ENUMS, ids=lambda e: e.__name__)
def test_enum_members_print_as_the_references(enum: type[Enum]) -> None:
    for member in enum:
        shown = f"{enum.__name__}.{member.name}"
        assert (str(member), format(member), f"{member}", f"{member:>0}") == (shown,) * 4
        assert repr(member) == f"<{shown}: {member.value!r}>"
        assert json.dumps(member) == json.dumps(member.value)
        assert json.dumps({"k": [member]}) == json.dumps({"k": [member.value]})
        assert member == member.value
        assert enum(member.value.lower()) is member


def test_a_message_s_enums_serialize_as_their_values() -> None:
    part = types.Part.from_executable_code(code="print(1)", language="python")
    result = types.Part.from_code_execution_result(outcome=types.Outcome.OUTCOME_OK, output="1")
    message = types.Content(role="model", parts=[part, result])

    assert json.loads(message.to_json()) == {
        "parts": [
            {"executableCode": {"code": "print(1)", "language": "PYTHON"}},
            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
        ],
        "role": "model",
    }
    assert message.model_dump(mode="json")["parts"][0]["executable_code"]["language"] == "PYTHON"
    code = part.executable_code
    assert code is not None
    assert f"[Executing {code.language} code...]" == "[Executing Language.PYTHON code...]"


async def test_an_event_with_enum_fields_reads_back_from_every_store(store_url: str) -> None:
    sessions = DatabaseSessionService(store_url)
    session = await sessions.create_session(app_name="app", user_id="u")
    code = types.Part.from_executable_code(code="print(1)", language=types.Language.PYTHON)
    given = [
        Event(
            author="coder",
            content=types.Content(role="model", parts=[code]),
            finish_reason="stop",
        ),
        Event(author="custom", finish_reason="A_REASON_OF_ITS_OWN"),
    ]
    for event in given:
        await sessions.append_event(session, event)

    read = await sessions.get_session(app_name="app", user_id="u", session_id=session.id)
    assert read is not None
    assert [e.finish_reason for e in read.events] == [
        types.FinishReason.STOP,
        "A_REASON_OF_ITS_OWN",
    ]
    assert str(read.events[0].finish_reason) == "FinishReason.STOP"
    assert read.events[0].content == given[0].content
    (part,) = read.events[0].content.parts or [] if read.events[0].content else []
    assert part.executable_code is not None
    assert part.executable_code.language is types.Language.PYTHON
    await sessions.close()


def test_tool_holds_gemini_s_built_in_tools_as_the_reference_s_does() -> None:
    tools = [
        types.Tool(google_search=types.GoogleSearch(exclude_domains=["example.com"])),
        types.Tool(code_execution=types.ToolCodeExecution()),
        types.Tool(url_context=types.UrlContext()),
        types.Tool(enterprise_web_search=types.EnterpriseWebSearch()),
        types.Tool(retrieval=types.Retrieval(vertex_ai_search={"datastore": "projects/p/ds"})),
        types.Tool(
            google_search_retrieval=types.GoogleSearchRetrieval(
                dynamic_retrieval_config=types.DynamicRetrievalConfig(dynamic_threshold=0.5)
            )
        ),
        types.Tool(google_maps=types.GoogleMaps(), file_search=types.FileSearch(top_k=3)),
    ]

    assert [t.built_ins for t in tools] == [
        ["google_search"],
        ["code_execution"],
        ["url_context"],
        ["enterprise_web_search"],
        ["retrieval"],
        ["google_search_retrieval"],
        ["file_search", "google_maps"],
    ]
    assert tools[0].to_wire() == {"googleSearch": {"excludeDomains": ["example.com"]}}
    assert [types.Tool.from_wire(t.to_json()) for t in tools] == tools
    assert repr(tools[1]) == "Tool(\n  code_execution=ToolCodeExecution()\n)"
    with pytest.raises(ValidationError, match="google_serch"):
        types.Tool(google_serch=types.GoogleSearch())  # pyright: ignore[reportCallIssue]


J = types.JSONSchemaType


def lookup(order: str, verbose: bool = False) -> str:
    """Looks an order up.

    Args:
        order: the order's number.
    """
    return "shipped"


def test_a_function_declaration_is_made_from_a_callable() -> None:
    made = types.FunctionDeclaration.from_callable(callable=lookup)

    assert made.name == "lookup"
    assert made.description == "Looks an order up.\n\nArgs:\n    order: the order's number."
    assert made.parameters is not None
    assert made.parameters["properties"] == {
        "order": {"type": "string", "description": "the order's number."},
        "verbose": {"type": "boolean", "default": False},
    }
    assert made.parameters["required"] == ["order"]
    assert made.response is None
    same = types.FunctionDeclaration.from_callable_with_api_option(
        callable=lookup, api_option="VERTEX_AI", behavior=types.Behavior.BLOCKING
    )
    assert same.model_copy(update={"behavior": None}) == made
    assert same.behavior is types.Behavior.BLOCKING


def test_an_api_option_the_reference_does_not_have_is_refused_naming_those_it_has() -> None:
    with pytest.raises(ValueError, match="api_option 'GEMINI' is not one of") as refused:
        types.FunctionDeclaration.from_callable_with_api_option(
            callable=lookup,
            api_option="GEMINI",  # pyright: ignore[reportArgumentType] -- the wrong value is the point
        )
    assert "'ENTERPRISE', 'GEMINI_API', 'VERTEX_AI'" in str(refused.value)


def test_a_function_declaration_takes_the_reference_s_response_and_behavior() -> None:
    declared = types.FunctionDeclaration.model_validate(
        {
            "name": "lookup",
            "response": {"type": "string"},
            "response_json_schema": {"type": "string"},
            "behavior": "non_blocking",
        }
    )

    assert declared.behavior is types.Behavior.NON_BLOCKING
    assert declared.response == types.Schema(type=types.Type.STRING)
    assert declared.to_wire()["behavior"] == "NON_BLOCKING"
    assert types.FunctionDeclaration.from_wire(declared.to_json()) == declared


def test_a_schema_is_read_from_json_schema() -> None:
    given = types.JSONSchema(
        type=J.OBJECT,
        title="Order",
        properties={
            "id": types.JSONSchema(type=J.INTEGER, minimum=1),
            "note": types.JSONSchema(type=[J.STRING, J.NULL], max_length=10),
            "tags": types.JSONSchema(type=J.ARRAY, items=types.JSONSchema(type=J.STRING)),
            "either": types.JSONSchema(
                any_of=[types.JSONSchema(type=J.STRING), types.JSONSchema(type=J.NUMBER)]
            ),
        },
        required=["id"],
        additional_properties=False,
    )

    schema = types.Schema.from_json_schema(json_schema=given)

    assert schema == types.Schema(
        type=types.Type.OBJECT,
        title="Order",
        properties={
            "id": types.Schema(type=types.Type.INTEGER, minimum=1),
            "note": types.Schema(type=types.Type.STRING, nullable=True, max_length=10),
            "tags": types.Schema(type=types.Type.ARRAY, items=types.Schema(type=types.Type.STRING)),
            "either": types.Schema(
                any_of=[types.Schema(type=types.Type.STRING), types.Schema(type=types.Type.NUMBER)]
            ),
        },
        required=["id"],
        additional_properties=False,
    )
    as_dict = types.Schema.from_json_schema(json_schema=given.model_dump(by_alias=True))
    assert as_dict == schema
    assert schema.to_json_schema()["additionalProperties"] is False
    as_json = schema.json_schema.properties
    assert as_json is not None
    assert as_json["id"].type is types.JSONSchemaType.INTEGER


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (types.JSONSchema(one_of=[types.JSONSchema(type=J.STRING)]), "'one_of'"),
        (types.JSONSchema(type=J.ARRAY, unique_items=True), "'unique_items'"),
        (types.JSONSchema(type=[J.STRING, J.INTEGER]), "any_of"),
    ],
    ids=["one_of", "unique_items", "two-types"],
)
def test_a_json_schema_a_schema_cannot_hold_is_refused_by_name(
    given: types.JSONSchema, named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        types.Schema.from_json_schema(json_schema=given)


def test_an_image_part_reads_as_an_image(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n-image"
    part = types.Part.from_bytes(
        data=png, mime_type="image/png", media_resolution="MEDIA_RESOLUTION_HIGH"
    )

    image = part.as_image()

    assert image is not None
    assert image == types.Image(image_bytes=png, mime_type="image/png")
    assert part.media_resolution == {"level": "MEDIA_RESOLUTION_HIGH"}
    assert types.Part.from_bytes(data=b"%PDF", mime_type="application/pdf").as_image() is None
    assert types.Part.from_uri(file_uri="gs://b/cat.png", mime_type="image/png").as_image() is None
    assert types.Part(text="hi").as_image() is None
    image.save(str(tmp_path / "cat.png"))
    assert types.Image.from_file(location=str(tmp_path / "cat.png")) == image
    stored = types.Image.from_file(location="https://storage.googleapis.com/b/cat.png")
    assert stored == types.Image(gcs_uri="gs://b/cat.png")
    with pytest.raises(ValueError, match="gs://b/cat.png"):
        stored.save(str(tmp_path / "other.png"))


def test_a_function_response_part_with_parts_is_refused_by_name() -> None:
    with pytest.raises(ValidationError, match="parts"):
        types.Part.from_function_response(name="f", response={}, parts=[types.Part(text="x")])


def test_automatic_function_calling_disabled_is_what_baton_does_and_the_rest_is_refused() -> None:
    off = types.AutomaticFunctionCallingConfig(disable=True)

    assert (
        types.GenerateContentConfig(automatic_function_calling=off).automatic_function_calling
        == off
    )
    for setting in (
        types.AutomaticFunctionCallingConfig(disable=False),
        types.AutomaticFunctionCallingConfig(maximum_remote_calls=3),
    ):
        with pytest.raises(
            ValidationError, match="only AutomaticFunctionCallingConfig.disable=True"
        ):
            types.GenerateContentConfig(automatic_function_calling=setting)


def test_gemini_s_speech_config_is_importable_and_refused_in_a_config_by_name() -> None:
    speech = types.SpeechConfig(
        voice_config=types.VoiceConfig(
            prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name="Kore")
        )
    )

    with pytest.raises(ValidationError, match="speech_config: only Gemini's own API takes it"):
        types.GenerateContentConfig(speech_config=speech)  # pyright: ignore[reportCallIssue]
    assert types.GroundingMetadata(web_search_queries=["q"]).web_search_queries == ["q"]
    assert (
        types.HarmCategory("harm_category_jailbreak") is types.HarmCategory.HARM_CATEGORY_JAILBREAK
    )


@pytest.mark.parametrize(
    ("model", "field", "value", "advice"),
    [
        (types.FunctionResponse, "parts", [{"text": "x"}], "put the result in response="),
        (types.FunctionResponse, "scheduling", "SILENT", "Gemini's Live API"),
        (types.FunctionCall, "partial_args", [], "whole, in args"),
        (types.FunctionCall, "will_continue", True, "whole, in args"),
        (types.FunctionCall, "partialArgs", [], "whole, in args"),
        (types.FunctionCallingConfig, "stream_function_call_arguments", True, "whole, in args"),
        (types.HttpOptions, "base_url", "http://h", "OpenAiModel(base_url="),
        (types.HttpOptions, "apiVersion", "v1", "OpenAiModel(base_url="),
        (types.HttpOptions, "httpx_async_client", object(), "make their own HTTP client"),
        (types.HttpOptions, "extra_body", {"k": 1}, "headers, timeout and retry_options"),
        (types.ToolConfig, "retrieval_config", {}, "function_calling_config"),
        (types.SafetySetting, "method", "SEVERITY", "category and threshold"),
    ],
)
def test_a_reference_field_baton_does_not_take_is_refused_saying_what_it_takes(
    model: type[types.FunctionResponse], field: str, value: object, advice: str
) -> None:
    # pydantic's own refusal says only "Extra inputs are not permitted".
    with pytest.raises(ValidationError) as refused:
        model(**{field: value})
    message = str(refused.value)
    assert f"{model.__name__}: " in message
    assert re.sub("([A-Z])", lambda upper: "_" + upper[1].lower(), field) in message
    assert advice in message
    assert "Extra inputs are not permitted" not in message
    # A field the reference does not have either is still pydantic's plain refusal.
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        model(**{"no_such_field": 1})


def test_a_function_response_is_made_from_an_mcp_result_as_genai_makes_it() -> None:
    mcp_types = pytest.importorskip("mcp.types")
    four = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text="4")])
    failed = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="no")], is_error=True
    )

    # genai keeps the SDK's content objects; baton their JSON, which a session stores.
    assert types.FunctionResponse.from_mcp_response(name="add", response=four) == (
        types.FunctionResponse(name="add", response={"result": [{"type": "text", "text": "4"}]})
    )
    assert types.FunctionResponse.from_mcp_response(name="add", response=failed) == (
        types.FunctionResponse(name="add", response={"error": "MCP response is error."})
    )
