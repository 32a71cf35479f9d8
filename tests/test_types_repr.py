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
