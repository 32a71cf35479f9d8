"""Wire types round-trip through the reference JSON (camelCase, nulls dropped)."""

from __future__ import annotations

import json
from operator import attrgetter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, JsonValue, ValidationError

from baton import Event, EventActions, RequestInput, types
from baton.events import NodeInfo

json_leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
json_object = st.dictionaries(st.text(max_size=6), json_value, max_size=3)

function_calls = st.builds(
    types.FunctionCall,
    id=st.none() | st.text(max_size=8),
    name=st.text(max_size=8),
    args=json_object,
)
function_responses = st.builds(
    types.FunctionResponse, id=st.text(max_size=8), name=st.text(max_size=8), response=json_object
)
parts = st.one_of(
    st.builds(types.Part, text=st.text(max_size=20)),
    st.builds(types.Part, function_call=function_calls),
    st.builds(types.Part, function_response=function_responses),
)
contents = st.builds(
    types.Content, role=st.sampled_from(["user", "model"]), parts=st.lists(parts, max_size=3)
)
actions = st.builds(
    EventActions,
    state_delta=json_object,
    escalate=st.none() | st.booleans(),
    end_of_agent=st.none() | st.booleans(),
    agent_state=st.none() | json_object,
    route=st.none() | st.text(max_size=5) | st.integers(0, 9),
)
events = st.builds(
    Event,
    invocation_id=st.text(max_size=8),
    author=st.text(max_size=8),
    content=st.none() | contents,
    actions=actions,
    output=json_value,
    node_info=st.none()
    | st.builds(NodeInfo, path=st.text(max_size=10), run_id=st.none() | st.text(max_size=3)),
    long_running_tool_ids=st.none() | st.sets(st.text(max_size=5), max_size=3),
    error_code=st.none() | st.text(max_size=5),
)


@given(contents)
def test_content_round_trips(content: types.Content) -> None:
    assert types.Content.from_wire(content.to_json()) == content


@given(events)
def test_event_round_trips_through_wire_json(event: Event) -> None:
    again = Event.from_wire(event.to_json())
    assert again == event
    assert Event.from_wire(json.loads(event.to_json())) == event


def test_wire_keys_are_camel_case_and_snake_case_is_accepted() -> None:
    event = Event(
        invocation_id="inv",
        author="a",
        long_running_tool_ids={"b", "a"},
        state={"k": 1},
        route="go",
        message="hi",
    )
    wire = event.to_wire()
    assert wire["invocationId"] == "inv"
    assert wire["longRunningToolIds"] == ["a", "b"]
    assert wire["actions"]["stateDelta"] == {"k": 1}
    assert wire["actions"]["route"] == "go"
    assert wire["content"] == {"role": "user", "parts": [{"text": "hi"}]}  # as the reference
    assert "output" not in wire
    snake = {
        "invocation_id": "inv",
        "long_running_tool_ids": ["x"],
        "actions": {"state_delta": {"k": 2}},
    }
    parsed = Event.from_wire(snake)
    assert (parsed.invocation_id, parsed.long_running_tool_ids, parsed.actions.state_delta) == (
        "inv",
        {"x"},
        {"k": 2},
    )


def test_part_constructors() -> None:
    assert types.Part.from_text(text="t").to_wire() == {"text": "t"}
    assert types.Part.from_function_call(name="f", args={"a": 1}).to_wire() == {
        "functionCall": {"name": "f", "args": {"a": 1}}
    }
    assert types.Part.from_function_response(name="f", response={"r": 2}).to_wire() == {
        "functionResponse": {"name": "f", "response": {"r": 2}}
    }


class Decision(BaseModel):
    approved: bool


def test_request_input_schema_forms() -> None:
    assert RequestInput(response_schema=int).json_schema() == {"type": "integer"}
    assert RequestInput(response_schema=list[int]).json_schema() == {
        "type": "array",
        "items": {"type": "integer"},
    }
    assert RequestInput(response_schema={"type": "string"}).json_schema() == {"type": "string"}
    assert RequestInput(response_schema=Decision).json_schema() == Decision.model_json_schema()
    assert RequestInput().json_schema() is None


def test_model_outputs_become_json() -> None:
    assert Event(output=Decision(approved=True)).output == {"approved": True}


def test_placed_engine_output_events_equal_validated_ones() -> None:
    fast = Event.of_output(
        {"ok": True},
        invocation_id="inv",
        author="ask",
        path="w@1/ask@1",
        run_id="1",
        output_for=["w@1/ask@1", "w@1"],
        branch="w@1.b",
    )
    slow = Event(
        invocation_id="inv",
        author="ask",
        output={"ok": True},
        node_info=NodeInfo(path="w@1/ask@1", run_id="1", output_for=["w@1/ask@1", "w@1"]),
    )
    slow.branch = "w@1.b"
    same = slow.model_copy(update={"id": fast.id, "timestamp": fast.timestamp})
    assert fast == same
    assert fast.to_json() == same.to_json()


@pytest.mark.parametrize(
    "content",
    [
        types.Content(role="user", parts=[types.Part(text="go")]),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="ask", name="adk_request_input", response={"result": True}
                    )
                )
            ],
        ),
    ],
)
def test_placed_message_events_equal_validated_ones(content: types.Content) -> None:
    fast = Event.of_message(content, invocation_id="inv")
    slow = Event(
        invocation_id="inv", author="user", content=content, actions=EventActions(state_delta={})
    )
    same = slow.model_copy(update={"id": fast.id, "timestamp": fast.timestamp})
    assert fast == same
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.actions.model_fields_set == slow.actions.model_fields_set
    assert fast.to_json() == same.to_json()
    assert fast.model_dump_json() == same.model_dump_json()
    assert Event.from_wire(fast.to_json()) == fast
    assert fast.content is content  # taken as it is, as validation takes it
    # Mutable parts are the event's own, as with a validated event.
    fast.actions.state_delta["k"] = 1
    assert Event.of_message(content, invocation_id="i").actions == EventActions()


def test_state_shortcut_merges_with_explicit_actions() -> None:
    event = Event(state={"k": 1}, actions=EventActions(escalate=True, state_delta={"j": 0}))
    assert (event.actions.escalate, event.actions.state_delta) == (True, {"j": 0, "k": 1})
    raw = Event.model_validate({"state": {"k": 2}, "actions": {"stateDelta": {"j": 1}}})
    assert raw.actions.state_delta == {"j": 1, "k": 2}


@given(output=json_value, author=st.text(max_size=8), path=st.text(max_size=10))
def test_engine_output_events_equal_validated_ones(
    output: JsonValue, author: str, path: str
) -> None:
    fast = Event.of_output(output, invocation_id="inv", author=author, path=path, run_id="2")
    slow = Event(
        invocation_id="inv",
        author=author,
        output=output,
        node_info=NodeInfo(path=path, run_id="2", output_for=[path]),
    )
    same = {"id": fast.id, "timestamp": fast.timestamp}
    assert fast == slow.model_copy(update=same)
    assert fast.model_dump_json() == slow.model_copy(update=same).model_dump_json()
    assert fast.to_json() == slow.model_copy(update=same).to_json()
    assert Event.from_wire(fast.to_json()) == fast
    # Mutable parts are the event's own, as with a validated event.
    fast.actions.state_delta["k"] = 1
    assert Event.of_output(1, invocation_id="i", author="a", path="p", run_id="1").actions == (
        EventActions()
    )


def test_config_types_have_the_references_names_and_refuse_unknown_fields() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="temprature"):
        types.GenerateContentConfig.model_validate({"temprature": 0.2})
    with pytest.raises(ValidationError, match="candidate_count must be 1"):
        types.GenerateContentConfig(candidate_count=2)
    with pytest.raises(ValidationError, match="thinking_levl"):
        types.ThinkingConfig.model_validate({"thinking_levl": "LOW"})

    config = types.GenerateContentConfig.model_validate(
        {"topK": 3, "maxOutputTokens": 10, "thinkingConfig": {"thinkingLevel": "HIGH"}}
    )
    assert (config.top_k, config.max_output_tokens) == (3, 10)
    assert config.thinking_config == types.ThinkingConfig(thinking_level=types.ThinkingLevel.HIGH)


def test_schemas_given_as_the_reference_gives_them_become_json_schema() -> None:
    class Answer(BaseModel):
        approved: bool

    nested = types.Schema(
        type=types.Type.OBJECT,
        properties={
            "tags": types.Schema.model_validate({"type": "array", "items": {"type": "string"}}),
            "size": types.Schema(type=types.Type.INTEGER, minimum=1, max_length=None),
        },
    )
    assert nested.to_json_schema() == {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "size": {"type": "integer", "minimum": 1},
        },
    }
    # As the reference's users write them (typed as the JSON schema each becomes).
    declared = types.FunctionDeclaration.model_validate({"name": "tag", "parameters": nested})
    assert declared.parameters == nested.to_json_schema()
    by_json = types.FunctionDeclaration.model_validate(
        {"name": "tag", "parameters_json_schema": {"type": "object"}}
    )
    assert by_json.parameters == {"type": "object"}
    config = types.GenerateContentConfig.model_validate({"response_schema": Answer})
    assert config.response_schema == Answer.model_json_schema()


def test_user_and_model_content_take_texts_and_parts() -> None:
    user = types.UserContent("hi")
    model = types.ModelContent(parts=[types.Part(text="a"), "b"])

    assert isinstance(user, types.Content)
    assert (user.role, user.parts) == ("user", [types.Part(text="hi")])
    assert (model.role, model.parts) == ("model", [types.Part(text="a"), types.Part(text="b")])
    assert user.to_wire() == {"role": "user", "parts": [{"text": "hi"}]}


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        (types.Part, {"text": "x"}),
        (types.Content, {"role": "user"}),
        (types.FunctionCall, {"name": "f"}),
        (types.FunctionResponse, {"name": "f"}),
        (types.Blob, {"mime_type": "text/plain"}),
        (types.FileData, {"file_uri": "gs://a"}),
        (types.UsageMetadata, {"prompt_token_count": 1}),
        (EventActions, {}),
    ],
)
def test_message_types_refuse_an_unknown_field_as_the_reference_s_do(
    model: type[BaseModel], fields: dict[str, object]
) -> None:
    with pytest.raises(ValidationError, match="bogus\n  Extra inputs are not permitted"):
        model(**fields, bogus=1)
    with pytest.raises(ValidationError, match="bogus"):
        model.model_validate_json(json.dumps({**fields, "bogus": 1}))


def test_an_event_ignores_an_unknown_field_as_the_reference_s_does() -> None:
    event = Event.model_validate_json('{"author": "a", "bogus": 1}')
    assert event.author == "a"
    assert "bogus" not in event.to_json()


def test_event_actions_take_the_reference_s_empty_fields_and_refuse_their_values() -> None:
    exported = EventActions.model_validate_json(
        '{"requestedAuthConfigs": {}, "transferReason": null}'
    )
    assert exported.to_wire() == {"stateDelta": {}, "artifactDelta": {}}
    with pytest.raises(ValidationError, match="EventActions.set_model_response is a field of"):
        EventActions.model_validate({"setModelResponse": {"text": "x"}})
    # A compaction is kept (tests/agents/test_compaction.py); an incomplete one is refused.
    with pytest.raises(ValidationError, match="compaction.endTimestamp\n  Field required"):
        EventActions.model_validate({"compaction": {"startTimestamp": 1}})
    asked = EventActions.model_validate({"requestedAuthConfigs": {"c1": {"credentialKey": "k"}}})
    assert asked.to_wire()["requestedAuthConfigs"] == {"c1": {"credentialKey": "k"}}


def test_event_code_written_for_the_reference_reads_its_empty_maps_and_helpers() -> None:
    event = Event(author="a")

    # As in the reference: {} (code iterates them), yet not written on the wire when empty.
    assert list(event.actions.requested_tool_confirmations.items()) == []
    assert event.actions.requested_auth_configs == {}
    assert event.to_wire()["actions"] == {"stateDelta": {}, "artifactDelta": {}}
    asked = EventActions(requested_tool_confirmations={"c1": {"hint": "sure?"}})
    assert asked.to_wire()["requestedToolConfirmations"] == {"c1": {"hint": "sure?"}}
    fresh = Event.new_id()
    assert fresh != Event.new_id()
    assert len(fresh) == len(event.id)
    assert not event.has_trailing_code_execution_result()
    ran = types.Part(
        code_execution_result=types.CodeExecutionResult(
            outcome=types.Outcome.OUTCOME_OK, output="4"
        )
    )
    said = Event(author="a", content=types.ModelContent([types.Part(text="2+2"), ran]))
    assert said.has_trailing_code_execution_result()


def test_usage_exported_by_the_reference_keeps_every_count() -> None:
    # The reference's usage of a Gemini call, as its events carry it on the wire.
    wire = {
        "promptTokenCount": 120,
        "candidatesTokenCount": 30,
        "totalTokenCount": 190,
        "cachedContentTokenCount": 100,
        "thoughtsTokenCount": 40,
        "toolUsePromptTokenCount": 5,
        "promptTokensDetails": [
            {"modality": "TEXT", "tokenCount": 90},
            {"modality": "IMAGE", "tokenCount": 30},
        ],
        "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 30}],
        "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 100}],
        "toolUsePromptTokensDetails": [{"modality": "TEXT", "tokenCount": 5}],
        "trafficType": "ON_DEMAND",
    }
    event = Event.from_wire({"author": "model", "usageMetadata": wire})

    assert event.usage_metadata is not None
    assert event.usage_metadata.to_wire() == wire
    assert types.GenerateContentResponseUsageMetadata is types.UsageMetadata
    assert Event.from_wire(event.to_json()) == event


def test_code_parts_are_the_references_classes() -> None:
    """`ExecutableCode` / `CodeExecutionResult` as google.genai has them: built and read by
    attribute, camelCase on the wire, either case of key and enum value taken, printed as
    genai prints them, and a wrong field or value refused."""
    code = types.Part(
        executable_code=types.ExecutableCode(code="print(1)", language=types.Language.PYTHON)
    )
    ran = types.Part(
        code_execution_result=types.CodeExecutionResult(
            outcome=types.Outcome.OUTCOME_OK, output="1\n"
        )
    )
    assert code.executable_code is not None
    assert (code.executable_code.code, code.executable_code.language) == ("print(1)", "PYTHON")
    assert ran.code_execution_result is not None
    assert ran.code_execution_result.output == "1\n"
    assert code.to_json() == '{"executableCode":{"code":"print(1)","language":"PYTHON"}}'
    assert ran.to_wire() == {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}}
    assert types.Part.from_wire(code.to_json()) == code
    lower = {"executable_code": {"code": "print(1)", "language": "python"}}
    assert types.Part.model_validate(lower) == code
    # genai's repr and str, to the character.
    assert repr(ran.code_execution_result) == (
        "CodeExecutionResult(\n  outcome=<Outcome.OUTCOME_OK: 'OUTCOME_OK'>,\n"
        '  output="""1\n"""\n)'
    )
    assert str(code.executable_code) == (
        "code='print(1)' language=<Language.PYTHON: 'PYTHON'> id=None"
    )
    assert repr(code) == (
        "Part(\n  executable_code=ExecutableCode(\n    code='print(1)',\n"
        "    language=<Language.PYTHON: 'PYTHON'>\n  )\n)"
    )
    with pytest.raises(ValueError, match="'COBOL' is not a Language; use one of"):
        types.Language("COBOL")
    with pytest.raises(ValidationError, match="language"):
        types.ExecutableCode.model_validate({"code": "x", "language": "COBOL"})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        types.CodeExecutionResult.model_validate({"output": "1", "stdout": "1"})


def test_fields_only_gemini_fills_read_none_as_the_reference_s_unset_fields_do() -> None:
    # Read by name: baton's types do not declare these to type checkers.
    call = types.FunctionCall(name="f", args={})
    assert attrgetter("partial_args", "will_continue")(call) == (None, None)
    answer = types.FunctionResponse(name="f", response={})
    assert attrgetter("parts", "scheduling")(answer) == (None, None)
    config = types.GenerateContentConfig(temperature=0.1)
    assert attrgetter("cached_content", "response_modalities")(config) == (None, None)
    with pytest.raises(AttributeError, match="'FunctionCall' object has no attribute 'bogus'"):
        getattr(call, "bogus")  # noqa: B009 -- a name neither side has still fails

    event = Event(author="a", message="hi")
    assert event.message is event.content
    assert (event.grounding_metadata, event.interrupted, event.model_version) == (None,) * 3
    assert (event.input_transcription, event.turn_complete_reason, event.isolation_scope) == (
        None,
    ) * 3
    event.message = types.UserContent("again")
    assert event.content == types.UserContent("again")
    event.message = None
    assert event.content is None


def test_to_json_dict_gives_the_reference_s_dict() -> None:
    content = types.Content(
        role="user",
        parts=[
            types.Part(inline_data=types.Blob(data=b"\xfb\xff\xfe", mime_type="x/y")),
            types.Part(function_call=types.FunctionCall(name="f", args={"a": [1, None]})),
        ],
    )
    # What google.genai returns for the same message.
    assert content.to_json_dict() == {
        "parts": [
            {"inline_data": {"data": "-__-", "mime_type": "x/y"}},
            {"function_call": {"args": {"a": [1, None]}, "name": "f"}},
        ],
        "role": "user",
    }
    assert types.FunctionResponse(name="f", response={"x": 1}).to_json_dict() == {
        "name": "f",
        "response": {"x": 1},
    }


def test_validating_a_content_builds_its_parts_without_part_s_own_init() -> None:
    # Part's positional __init__ is marked as pydantic marks its own, so validating a
    # Content or an Event builds its parts from their fields (~29k instructions a text
    # part instead of ~38k, paid on every event with content). The mark is pydantic's
    # internal: if a pydantic upgrade stops honouring it, this fails instead of every
    # event quietly getting dearer.
    assert types.Part.__pydantic_custom_init__ is False  # pyright: ignore[reportAttributeAccessIssue] -- pydantic's internal flag
    assert types.Content.model_validate({"parts": [{"text": "x"}]}).text == "x"


def test_a_part_takes_one_positional_value_as_google_genai_s_does() -> None:
    assert types.Part("hi") == types.Part(text="hi")
    assert types.Part("hi").model_fields_set == {"text"}
    assert types.Part({"text": "d"}) == types.Part(text="d")
    call = types.Part.from_function_call(name="f", args={"a": 1})
    assert types.Part(call) == call
    assert types.Content(role="user", parts=[types.Part("x")]).text == "x"
    with pytest.raises(ValueError, match="positional value and the fields"):
        types.Part("a", text="b")
    with pytest.raises(ValueError, match="cannot be made from a value of type int"):
        types.Part(3)  # pyright: ignore[reportArgumentType] -- refused at run time
