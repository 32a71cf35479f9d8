from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from baton.models import FunctionDeclaration, GenerateContentConfig, LlmRequest, LlmResponse, Tool
from baton.types import Content, FunctionCall, FunctionResponse, Part

names = st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8)
json_values: st.SearchStrategy[JsonValue] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=6,
)
json_objects = st.dictionaries(names, json_values, max_size=3)
parts = st.one_of(
    st.builds(Part, text=st.text(max_size=10)),
    st.builds(Part, function_call=st.builds(FunctionCall, id=names, name=names, args=json_objects)),
    st.builds(
        Part,
        function_response=st.builds(FunctionResponse, id=names, name=names, response=json_objects),
    ),
)
contents = st.builds(
    Content, role=st.sampled_from(["user", "model"]), parts=st.lists(parts, max_size=3)
)
declarations = st.builds(FunctionDeclaration, name=names, description=st.text(max_size=10))
tools = st.builds(Tool, function_declarations=st.none() | st.lists(declarations, max_size=2))


@given(
    st.builds(
        LlmRequest,
        model=st.none() | names,
        contents=st.lists(contents, max_size=3),
        config=st.builds(
            GenerateContentConfig,
            system_instruction=st.none() | st.text(max_size=10),
            tools=st.lists(tools, max_size=2),
        ),
    )
)
def test_llm_requests_survive_the_wire(request: LlmRequest) -> None:
    assert LlmRequest.from_wire(request.to_json()) == request


@given(
    st.builds(
        LlmResponse,
        content=st.none() | contents,
        partial=st.none() | st.booleans(),
        error_code=st.none() | names,
    )
)
def test_llm_responses_survive_the_wire(response: LlmResponse) -> None:
    assert LlmResponse.from_wire(response.to_json()) == response
