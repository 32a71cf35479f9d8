"""A long-running tool's call answered several times: progress updates, then the final result,
each giving the model another turn in the same invocation.

Written as the reference's users write it (only the imports changed): the tool
returns a ticket, and the client later sends responses to the same call id. A
progress update says more responses follow (`FunctionResponse(will_continue=True)`,
genai's own field); the response without it is the final one. The invocation waits
until then, across restarts, on every backend.
"""

from __future__ import annotations

import pytest

from baton import Event, LlmAgent, LongRunningFunctionTool, RequestInput, Workflow, types
from baton.errors import AlreadyAnsweredError, InvalidMessageError
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.store import InvocationStatus
from baton.types import FunctionCall
from tests.conftest import StoreFactory
from tests.harness import Harness, outputs
from tests.workflow.test_dynamic import open_harness, restarted

started: list[str] = []


def start_job(what: str) -> dict[str, str]:
    """Start a job; it reports back later."""
    started.append(what)
    return {"status": "pending", "ticket": "T1"}


def job_agent(model: ScriptedModel) -> LlmAgent:
    return LlmAgent(name="assistant", model=model, tools=[LongRunningFunctionTool(start_job)])


def scripted() -> ScriptedModel:
    return ScriptedModel(
        responses=[
            FunctionCall(id="c1", name="start_job", args={"what": "report"}),
            "Half way there.",
            "Your report is ready.",
        ]
    )


def job_response(response: dict[str, object], *, more: bool) -> types.Content:
    update = types.FunctionResponse(
        id="c1",
        name="start_job",
        response=response,  # pyright: ignore[reportArgumentType] -- JSON built in the test
        will_continue=True if more else None,
    )
    return types.Content(role="user", parts=[types.Part(function_response=update)])


def last_response(request: LlmRequest) -> object:
    """The newest function response the model was shown."""
    found = [r.response for c in request.contents for r in c.function_responses]
    return found[-1] if found else None


def said(events: list[Event]) -> list[str]:
    return [
        e.content.text for e in events if e.content and e.content.role == "model" if e.content.text
    ]


async def invocation_status(h: Harness) -> InvocationStatus:
    [invocation] = await h.runner.store.list_invocations(h.key)
    return invocation.status


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_each_response_to_the_call_gives_the_model_a_turn(
    stores: StoreFactory, resumable: bool
) -> None:
    started.clear()
    model = scripted()
    h = await open_harness(stores, job_agent(model), resumable)

    first = await h.start("Make me the report")

    assert len(model.requests) == 1
    assert await invocation_status(h) == InvocationStatus.PAUSED  # the call is open

    later = restarted(h, stores, job_agent(model), resumable)
    progress = await later.collect(new_message=job_response({"done": "50%"}, more=True))
    assert said(progress) == ["Half way there."]
    assert last_response(model.requests[1]) == {"done": "50%"}
    assert await invocation_status(later) == InvocationStatus.PAUSED  # still open

    final = await later.collect(new_message=job_response({"url": "r.pdf"}, more=False))
    assert said(final) == ["Your report is ready."]
    assert last_response(model.requests[2]) == {"url": "r.pdf"}
    assert len(model.requests) == 3
    assert started == ["report"]  # the tool itself ran once
    assert await invocation_status(later) == InvocationStatus.COMPLETED
    assert {e.invocation_id for e in first + progress + final} == {first[0].invocation_id}

    with pytest.raises(AlreadyAnsweredError):
        await later.collect(new_message=job_response({"url": "again"}, more=False))


async def test_in_a_workflow_the_next_node_gets_the_reply_to_the_final_result(
    stores: StoreFactory,
) -> None:
    started.clear()

    def publish(node_input: str) -> str:
        return f"published: {node_input}"

    model = scripted()
    root = Workflow(name="desk", edges=[("START", job_agent(model), publish)])
    h = await open_harness(stores, root, True)
    await h.start("Make me the report")
    progress = await h.collect(new_message=job_response({"done": "50%"}, more=True))
    assert [name for name, _ in outputs(progress)] == ["assistant"]  # publish still waits

    final = await h.collect(new_message=job_response({"url": "r.pdf"}, more=False))
    assert outputs(final)[-1] == ("publish", "published: Your report is ready.")


async def test_will_continue_on_a_question_is_refused_and_changes_nothing(
    stores: StoreFactory,
) -> None:
    def ask(node_input: str) -> RequestInput:
        return RequestInput(interrupt_id="q", message="ok?")

    h = await open_harness(stores, Workflow(name="wf", edges=[("START", ask)]), True)
    await h.start("go")
    update = types.FunctionResponse(
        id="q", name="adk_request_input", response={"result": "maybe"}, will_continue=True
    )
    before = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    with pytest.raises(InvalidMessageError, match="will_continue"):
        await h.collect(
            new_message=types.Content(role="user", parts=[types.Part(function_response=update)])
        )
    after = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert before is not None
    assert after is not None
    assert after.events == before.events
    assert await invocation_status(h) == InvocationStatus.PAUSED
