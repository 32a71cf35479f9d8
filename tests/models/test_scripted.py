from __future__ import annotations

from contextlib import aclosing

import pytest

from baton.models import LlmRequest, LlmResponse, ScriptedModel
from baton.types import Content, FunctionCall, Part


async def ask(model: ScriptedModel, text: str) -> list[LlmResponse]:
    request = LlmRequest(contents=[Content(role="user", parts=[Part(text=text)])])
    async with aclosing(model.generate_content_async(request)) as responses:
        return [r async for r in responses]


def model_says(*parts: Part) -> LlmResponse:
    return LlmResponse(content=Content(role="model", parts=list(parts)), turn_complete=True)


async def test_turns_are_replayed_in_order_in_every_form() -> None:
    call = FunctionCall(id="c1", name="approve", args={"amount": 5})
    error = LlmResponse(error_code="SAFETY", error_message="blocked")
    model = ScriptedModel(
        responses=[
            "hello",
            call,
            ["two calls:", call, FunctionCall(id="c2", name="notify", args={})],
            Content(role="model", parts=[Part(text="as content")]),
            error,
        ]
    )

    turns = [await ask(model, str(i)) for i in range(5)]

    assert turns == [
        [model_says(Part(text="hello"))],
        [model_says(Part(function_call=call))],
        [
            model_says(
                Part(text="two calls:"),
                Part(function_call=call),
                Part(function_call=FunctionCall(id="c2", name="notify", args={})),
            )
        ],
        [model_says(Part(text="as content"))],
        [error],
    ]
    assert model.remaining == 0


async def test_requests_are_recorded_as_copies() -> None:
    model = ScriptedModel(responses=["a", "b"])
    request = LlmRequest(contents=[Content(role="user", parts=[Part(text="first")])])
    async with aclosing(model.generate_content_async(request)) as responses:
        _ = [r async for r in responses]
    request.contents.append(Content(role="user", parts=[Part(text="later")]))

    assert model.requests == [
        LlmRequest(contents=[Content(role="user", parts=[Part(text="first")])])
    ]
    assert model.remaining == 1


async def test_an_exhausted_script_says_how_many_turns_it_had() -> None:
    model = ScriptedModel(responses=["only"])
    await ask(model, "1")

    with pytest.raises(RuntimeError, match="called 2 times but has 1 scripted responses"):
        await ask(model, "2")


async def test_a_responder_computes_turns_after_the_script() -> None:
    model = ScriptedModel(
        responses=["scripted"], responder=lambda request: f"echo {request.contents[-1].text}"
    )

    turns = [await ask(model, "a"), await ask(model, "b")]

    assert turns == [[model_says(Part(text="scripted"))], [model_says(Part(text="echo b"))]]


async def test_an_async_responder_is_awaited() -> None:
    async def respond(request: LlmRequest) -> FunctionCall:
        return FunctionCall(id=f"call-{len(request.contents)}", name="lookup", args={})

    model = ScriptedModel(responder=respond)

    assert await ask(model, "x") == [
        model_says(Part(function_call=FunctionCall(id="call-1", name="lookup", args={})))
    ]
