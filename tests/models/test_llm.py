from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

import pytest

from baton.models import (
    BaseLlm,
    FunctionDeclaration,
    LlmRequest,
    LlmResponse,
    OpenAiModel,
    ScriptedModel,
    Tool,
    UnknownModelError,
    register_model_class,
    register_model_prefix,
    resolve_model,
)
from baton.types import Content, Part


class EchoLlm(BaseLlm):
    """A custom model written the way the reference's users write one."""

    model: str = "echo"

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"echo-\d+"]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].text
        yield LlmResponse(content=Content(role="model", parts=[Part(text=f"{self.model}: {last}")]))


class NoPatterns(BaseLlm):
    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield LlmResponse()


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    from baton.models import registry

    monkeypatch.setattr(registry, "_prefixes", dict(vars(registry)["_prefixes"]))
    monkeypatch.setattr(registry, "_classes", list(vars(registry)["_classes"]))


async def test_a_custom_model_subclass_reads_contents_and_yields_responses() -> None:
    request = LlmRequest(contents=[Content(role="user", parts=[Part(text="ping")])])

    async with aclosing(EchoLlm().generate_content_async(request)) as responses:
        answers = [r async for r in responses]

    assert answers == [LlmResponse(content=Content(role="model", parts=[Part(text="echo: ping")]))]


def test_append_instructions_joins_paragraphs() -> None:
    request = LlmRequest()
    request.append_instructions(["Be brief."])
    request.append_instructions(["Answer in French.", ""])

    assert request.config.system_instruction == "Be brief.\n\nAnswer in French."


def test_append_tools_skips_undeclared_tools_and_refuses_duplicates() -> None:
    class Declared:
        name = "lookup"

        def declaration(self) -> FunctionDeclaration | None:
            return FunctionDeclaration(name=self.name, description="Look up.")

    class Hidden:
        name = "hidden"

        def declaration(self) -> FunctionDeclaration | None:
            return None

    request = LlmRequest()
    request.append_tools([Declared(), Hidden()])

    assert request.config.tools == [
        Tool(function_declarations=[FunctionDeclaration(name="lookup", description="Look up.")])
    ]
    with pytest.raises(ValueError, match="function 'lookup' is declared twice in one request"):
        request.append_tools([Declared()])


def test_request_and_response_round_trip_through_wire_json() -> None:
    request = LlmRequest(model="m", contents=[Content(role="user", parts=[Part(text="x")])])
    request.append_function_declarations(
        [FunctionDeclaration(name="f", parameters={"type": "object"})]
    )

    assert LlmRequest.from_wire(request.to_json()) == request
    assert request.to_wire()["config"] == {
        "tools": [
            {
                "functionDeclarations": [
                    {"name": "f", "description": "", "parameters": {"type": "object"}}
                ]
            }
        ]
    }


def test_resolve_model_returns_a_model_object_unchanged() -> None:
    model = ScriptedModel()

    assert resolve_model(model) is model


async def test_resolve_model_maps_the_openai_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")

    model = resolve_model("openai/gpt-4o-mini")

    assert isinstance(model, OpenAiModel)
    assert (model.model, model.server_model) == ("openai/gpt-4o-mini", "gpt-4o-mini")
    await model.aclose()


def test_unknown_model_string_lists_the_known_prefixes_and_classes() -> None:
    register_model_class(EchoLlm)

    with pytest.raises(UnknownModelError) as caught:
        resolve_model("claude-3-haiku")

    assert str(caught.value) == (
        "model 'claude-3-haiku' is not known (known: 'gemini-<model>', 'openai/<model>', "
        "EchoLlm (echo-\\d+)). "
        "Use a known prefix, e.g. 'openai/<model>' for any OpenAI-compatible server (set "
        "OPENAI_BASE_URL for vLLM or Ollama), pass a BaseLlm instance, or call "
        "register_model_prefix()."
    )
    assert isinstance(caught.value, ValueError)


def test_registered_prefix_wins_over_a_shorter_one() -> None:
    register_model_prefix("openai/echo-", lambda name: EchoLlm(model=name))

    assert resolve_model("openai/echo-7") == EchoLlm(model="openai/echo-7")


def test_registered_class_serves_strings_matching_its_patterns() -> None:
    assert register_model_class(EchoLlm) is EchoLlm

    assert resolve_model("echo-3") == EchoLlm(model="echo-3")
    with pytest.raises(UnknownModelError):
        resolve_model("echo-three")


def test_a_class_without_patterns_cannot_be_registered() -> None:
    with pytest.raises(ValueError, match=r"NoPatterns.supported_models\(\) returns no patterns"):
        register_model_class(NoPatterns)
