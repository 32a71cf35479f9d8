"""A message prints as the reference's prints: `repr()` an indented tree of the fields
that are set, `str()` and f-strings the message's own fields with that tree for each
value. The expected texts are what google-genai prints for the same messages."""

from __future__ import annotations

from baton import types


def test_a_text_message_prints_only_what_is_set() -> None:
    message = types.Content(role="user", parts=[types.Part(text="hi")])

    assert repr(message) == (
        "Content(\n  parts=[\n    Part(\n      text='hi'\n    ),\n  ],\n  role='user'\n)"
    )
    assert str(message) == "parts=[Part(\n  text='hi'\n)] role='user'"
    assert f"asked: {message}" == "asked: parts=[Part(\n  text='hi'\n)] role='user'"
    assert repr(types.UserContent("hi")).startswith("UserContent(\n  parts=[")


def test_a_function_call_prints_its_arguments_sorted_and_indented() -> None:
    call = types.FunctionCall(id="c1", name="f", args={"b": [1, "x", None], "a": {"d": True}})

    assert repr(types.Part(function_call=call)) == (
        "Part(\n  function_call=FunctionCall(\n    args={\n      'a': {\n        'd': True\n"
        "      },\n      'b': [\n        1,\n        'x',\n        None,\n      ]\n    },\n"
        "    id='c1',\n    name='f'\n  )\n)"
    )


def test_a_part_prints_every_field_of_its_own_in_the_reference_order() -> None:
    part = types.Part(text="t", thought=True)

    assert str(part) == (
        "media_resolution=None code_execution_result=None executable_code=None "
        "file_data=None function_call=None function_response=None inline_data=None "
        "text='t' thought=True thought_signature=None video_metadata=None tool_call=None "
        "tool_response=None part_metadata=None audio_transcription=None "
        "media_processing=None speech_metadata=None"
    )


def test_bytes_past_a_hundred_are_cut_short() -> None:
    part = types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x00\x01abc"))
    assert repr(part) == (
        "Part(\n  inline_data=Blob(\n    data=b'\\x00\\x01abc',\n    mime_type='image/png'\n  )\n)"
    )

    long = repr(types.Blob(data=b"a" * 200))

    assert long == "Blob(\n  data=b'" + "a" * 97 + "...'\n)"


def test_multi_line_text_long_lists_and_deep_dicts_are_summarized() -> None:
    message = types.Content(
        role="model",
        parts=[types.Part(text="line1\nline2"), *(types.Part(text=str(i)) for i in range(6))],
    )
    deep = types.FunctionCall(name="f", args={"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}})
    wide = types.FunctionCall(name="f", args={str(i): i for i in range(6)})

    assert repr(message) == (
        'Content(\n  parts=[\n    Part(\n      text="""line1\nline2"""\n    ),\n'
        + "".join(f"    Part(\n      text='{i}'\n    ),\n" for i in range(4))
        + "    <... 2 more items ...>,\n  ],\n  role='model'\n)"
    )
    assert repr(deep) == (
        "FunctionCall(\n  args={\n    'a': {\n      'b': {\n        'c': {\n          'd': {\n"
        "            'e': {<... 1 item at Max depth ...>}\n          }\n        }\n      }\n"
        "    }\n  },\n  name='f'\n)"
    )
    assert repr(wide) == "FunctionCall(\n  args=<dict len=6>,\n  name='f'\n)"


def test_an_empty_message_prints_its_type_alone() -> None:
    assert repr(types.Content()) == "Content()"
    assert str(types.Content()) == "parts=None role=None"
    assert repr(types.Content(parts=[])) == "Content(\n  parts=[]\n)"


def test_str_lists_the_references_fields_in_its_order_those_baton_lacks_as_none() -> None:
    """genai's `str()` lists every field of its type; for types where baton has fewer (the
    ones it refuses a value for) or orders them otherwise, the text is genai's still."""
    config = types.GenerateContentConfig(
        temperature=0.5,
        tools=[
            types.Tool(function_declarations=[types.FunctionDeclaration(name="f", description="d")])
        ],
    )
    printed = [
        types.FunctionCall(name="f", args={"a": 1}),
        types.FunctionResponse(name="f", response={"r": 1}, id="c1"),
        types.FunctionCallingConfig(
            mode=types.FunctionCallingConfigMode.ANY, allowed_function_names=["f"]
        ),
        types.GenerateContentResponseUsageMetadata(prompt_token_count=1, total_token_count=2),
        types.SafetySetting(
            category=types.HarmCategory.HARM_CATEGORY_HARASSMENT,
            threshold=types.HarmBlockThreshold.BLOCK_NONE,
        ),
        types.HttpOptions(timeout=10),
        types.Schema(type=types.Type.STRING),
        types.ToolConfig(),
        config,
    ]

    assert [str(value) for value in printed] == [
        "id=None args={'a': 1} name='f' partial_args=None will_continue=None",
        "will_continue=None scheduling=None parts=None id='c1' name='f' response={'r': 1}",
        "allowed_function_names=['f'] mode=<FunctionCallingConfigMode.ANY: 'ANY'> "
        "stream_function_call_arguments=None",
        "cache_tokens_details=None cached_content_token_count=None candidates_token_count=None "
        "candidates_tokens_details=None prompt_token_count=1 prompt_tokens_details=None "
        "thoughts_token_count=None tool_use_prompt_token_count=None "
        "tool_use_prompt_tokens_details=None total_token_count=2 traffic_type=None",
        "category=<HarmCategory.HARM_CATEGORY_HARASSMENT: 'HARM_CATEGORY_HARASSMENT'> "
        "method=None threshold=<HarmBlockThreshold.BLOCK_NONE: 'BLOCK_NONE'>",
        "base_url=None base_url_resource_scope=None api_version=None headers=None timeout=10 "
        "client_args=None async_client_args=None extra_body=None retry_options=None "
        "httpx_client=None httpx_async_client=None aiohttp_client=None",
        "additional_properties=None defs=None ref=None any_of=None default=None "
        "description=None enum=None example=None format=None items=None max_items=None "
        "max_length=None max_properties=None maximum=None min_items=None min_length=None "
        "min_properties=None minimum=None nullable=None pattern=None properties=None "
        "property_ordering=None required=None title=None type=<Type.STRING: 'STRING'>",
        "retrieval_config=None function_calling_config=None "
        "include_server_side_tool_invocations=None",
        "http_options=None should_return_http_response=None system_instruction=None "
        "temperature=0.5 top_p=None top_k=None candidate_count=None max_output_tokens=None "
        "stop_sequences=None response_logprobs=None logprobs=None presence_penalty=None "
        "frequency_penalty=None seed=None response_mime_type=None response_schema=None "
        "response_json_schema=None routing_config=None model_selection_config=None "
        "safety_settings=None tools=[Tool(\n  function_declarations=[\n    "
        "FunctionDeclaration(\n      description='d',\n      name='f'\n    ),\n  ]\n)] "
        "tool_config=None labels=None cached_content=None response_modalities=None "
        "media_resolution=None speech_config=None audio_timestamp=None "
        "automatic_function_calling=None thinking_config=None image_config=None "
        "enable_enhanced_civic_answers=None model_armor_config=None service_tier=None "
        "audio_transcription_config=None continuation_token=None automatic_continuation=None "
        "generation_output_config=None store=None",
    ]


def test_the_reference_fields_a_type_prints_hold_every_field_of_its_own() -> None:
    """A field added to baton's type, but not to the list it prints, would never show."""
    for name in types.__all__:
        kind = getattr(types, name)
        listed: tuple[str, ...] = getattr(kind, "reference_fields", ())
        if listed:
            assert set(kind.model_fields) <= set(listed), name
