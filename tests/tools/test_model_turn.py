"""A model turn the way the agent layer drives one: declare, call, answer, continue."""

from __future__ import annotations

from contextlib import aclosing

from baton.models import LlmRequest, LlmResponse, ScriptedModel
from baton.tools import FunctionTool, ToolContext, to_function_response
from baton.types import Content, FunctionCall, Part


def get_weather(city: str) -> str:
    """Get the weather.

    Args:
        city: The city.
    """
    return f"sunny in {city}"


async def generate(model: ScriptedModel, request: LlmRequest) -> LlmResponse:
    async with aclosing(model.generate_content_async(request)) as responses:
        return [r async for r in responses][-1]


async def test_a_scripted_model_calls_a_function_tool_and_reads_its_answer() -> None:
    tool = FunctionTool(get_weather)
    model = ScriptedModel(
        [FunctionCall(id="call-1", name="get_weather", args={"city": "Nice"}), "It is sunny."]
    )
    request = LlmRequest(contents=[Content(role="user", parts=[Part(text="Weather in Nice?")])])
    request.append_tools([tool])

    first = await generate(model, request)
    assert first.content is not None
    [call] = first.content.function_calls
    result = await tool.run(call.args or {}, ToolContext(function_call_id=call.id))
    response = to_function_response(call, result)
    answer = Content(role="user", parts=[Part(function_response=response)])
    request.contents += [first.content, answer]
    second = await generate(model, request)

    assert second.content is not None
    assert second.content.text == "It is sunny."
    assert model.requests[0].config.function_declarations == [tool.declaration()]
    assert model.requests[1].contents[-1].function_responses[0].to_wire() == {
        "id": "call-1",
        "name": "get_weather",
        "response": {"result": "sunny in Nice"},
    }
