"""`Event.is_final_response()` as the reference counts it: the usual
`if event.is_final_response()` loop finds the turn's last event after `exit_loop`, a
long-running tool and an error, not only after a plain reply."""

from __future__ import annotations

from baton import Event, EventActions, InMemorySessionService, Runner, types
from baton.agents import LlmAgent, LoopAgent
from baton.models import ScriptedModel
from baton.tools import LongRunningFunctionTool, exit_loop
from baton.types import FunctionCall


async def _finals(agent: LlmAgent | LoopAgent) -> list[Event]:
    service = InMemorySessionService()
    runner = Runner(app_name="x", agent=agent, session_service=service)
    session = await service.create_session(app_name="x", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="hi")])
    return [
        event
        async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message)
        if event.is_final_response()
    ]


async def test_exit_loop_s_result_is_the_final_response() -> None:
    model = ScriptedModel([FunctionCall(name="exit_loop", args={}, id="c1")])
    loop = LoopAgent(name="l", sub_agents=[LlmAgent(name="a", model=model, tools=[exit_loop])])
    [final] = await _finals(loop)
    assert [r.name for r in final.get_function_responses()] == ["exit_loop"]
    assert final.get_function_calls() == []


async def test_a_long_running_call_is_the_final_response() -> None:
    def start_job() -> None:
        """Starts a job; its result comes later."""

    model = ScriptedModel([FunctionCall(name="start_job", args={}, id="c1")])
    agent = LlmAgent(name="a", model=model, tools=[LongRunningFunctionTool(start_job)])
    finals = await _finals(agent)
    assert [c.id for e in finals for c in e.get_function_calls()] == ["c1"]


def test_an_error_event_is_final_unless_partial_or_calling() -> None:
    error = Event(author="a", error_code="SAFETY", error_message="blocked")
    assert error.is_final_response()
    assert not error.model_copy(update={"partial": True}).is_final_response()
    skipped = Event(
        author="a",
        content=types.Content(
            role="user",
            parts=[types.Part(function_response=types.FunctionResponse(name="t", response={}))],
        ),
        actions=EventActions(skip_summarization=True),
    )
    assert skipped.is_final_response()


def test_a_message_ending_in_a_code_execution_result_is_not_final() -> None:
    # The model reads the result and answers next, as in the reference.
    ran = types.Part(
        code_execution_result=types.CodeExecutionResult(
            outcome=types.Outcome.OUTCOME_OK, output="2"
        )
    )
    code = types.Part(
        executable_code=types.ExecutableCode(language=types.Language.PYTHON, code="print(1 + 1)")
    )
    result = Event(author="a", content=types.Content(role="model", parts=[code, ran]))
    assert result.has_trailing_code_execution_result()
    assert not result.is_final_response()
    asked = Event(author="a", content=types.Content(role="model", parts=[code]))
    assert asked.is_final_response()
    said = types.Part(text="2")
    answered = Event(author="a", content=types.Content(role="model", parts=[ran, said]))
    assert answered.is_final_response()
