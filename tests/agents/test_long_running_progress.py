"""A long-running tool's call: its interim result gives the model a turn at once, and each
later response to the call (progress updates, then the final result) gives it another, all
in the invocation that made the call.

Written as the reference's users write it (only the imports changed): the tool starts a
job and returns its ticket; the model tells the user the request is pending, and the run
waits. The client later sends responses to the same call id. A progress update says more
responses follow (`FunctionResponse(will_continue=True)`, genai's own field); the response
without it is the final one. The invocation waits until then, across restarts, on every
backend, with the call listed as open under one occurrence key.
"""

from __future__ import annotations

import pytest

from baton import Event, LlmAgent, LongRunningFunctionTool, RequestInput, Workflow, types
from baton.errors import AlreadyAnsweredError, InvalidMessageError
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.store import InterruptStatus, InvocationStatus
from baton.types import FunctionCall
from tests.conftest import StoreFactory
from tests.harness import Harness, asked, outputs
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
            "Your request is pending (ticket T1).",
            "Half way there.",
            "Your report is ready.",
        ]
    )


def job_response(response: dict[str, object], *, more: bool, call_id: str = "c1") -> types.Content:
    update = types.FunctionResponse(
        id=call_id,
        name="start_job",
        response=response,  # pyright: ignore[reportArgumentType] -- JSON built in the test
        will_continue=True if more else None,
    )
    return types.Content(role="user", parts=[types.Part(function_response=update)])


def shown(request: LlmRequest) -> list[tuple[str, object]]:
    """The conversation the model was shown: (role, text or call id or response)."""
    seen: list[tuple[str, object]] = []
    for content in request.contents:
        for part in content.parts or []:
            if part.function_call is not None:
                seen.append((content.role or "", f"call {part.function_call.id}"))
            elif part.function_response is not None:
                seen.append((content.role or "", part.function_response.response))
            else:
                seen.append((content.role or "", part.text))
    return seen


def said(events: list[Event]) -> list[str]:
    return [
        e.content.text for e in events if e.content and e.content.role == "model" if e.content.text
    ]


async def invocation_status(h: Harness) -> InvocationStatus:
    [invocation] = await h.runner.store.list_invocations(h.key)
    return invocation.status


async def open_calls(h: Harness) -> list[tuple[str, str]]:
    """(interrupt id, occurrence) of the session's open questions, as the inbox lists them."""
    return [(row.interrupt_id, row.occurrence) for row in await h.runner.pending(user_id="u")]


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_the_interim_result_and_each_response_give_the_model_a_turn(
    stores: StoreFactory, resumable: bool
) -> None:
    started.clear()
    model = scripted()
    h = await open_harness(stores, job_agent(model), resumable)

    first = await h.start("Make me the report")

    # The call, the tool's interim result, the model's reply to it; then the run waits.
    assert [
        (e.author, [c.id for c in e.function_calls], [r.id for r in e.content.function_responses])
        for e in first
        if e.content
    ] == [
        ("assistant", ["c1"], []),
        ("assistant", [], ["c1"]),
        ("assistant", [], []),
    ]
    assert asked(first) == ["c1"]
    assert said(first) == ["Your request is pending (ticket T1)."]
    assert shown(model.requests[1]) == [
        ("user", "Make me the report"),
        ("model", "call c1"),
        ("user", {"status": "pending", "ticket": "T1"}),
    ]
    assert await invocation_status(h) == InvocationStatus.PAUSED
    [(call, occurrence)] = await open_calls(h)
    assert call == "c1"

    # A new process answers: the call is still open under the same occurrence.
    later = restarted(h, stores, job_agent(model), resumable)
    assert await open_calls(later) == [("c1", occurrence)]
    progress = await later.collect(
        new_message=job_response({"done": "50%"}, more=True), occurrences={"c1": occurrence}
    )
    assert said(progress) == ["Half way there."]
    assert await invocation_status(later) == InvocationStatus.PAUSED
    assert await open_calls(later) == [("c1", occurrence)]

    final = await later.collect(
        new_message=job_response({"url": "r.pdf"}, more=False), occurrences={"c1": occurrence}
    )
    assert said(final) == ["Your report is ready."]
    # The model sees the call's newest response only, right after the call, as in the
    # reference: its replies to the superseded ones are left out.
    assert shown(model.requests[3]) == [
        ("user", "Make me the report"),
        ("model", "call c1"),
        ("user", {"url": "r.pdf"}),
    ]
    assert len(model.requests) == 4
    assert started == ["report"]  # the tool itself ran once
    assert await invocation_status(later) == InvocationStatus.COMPLETED
    assert await open_calls(later) == []
    [answered] = await later.runner.pending(user_id="u", status=InterruptStatus.ANSWERED)
    assert (answered.interrupt_id, answered.answer) == ("c1", {"url": "r.pdf"})
    assert {e.invocation_id for e in first + progress + final} == {first[0].invocation_id}

    before = await later.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    with pytest.raises(AlreadyAnsweredError, match="'c1'"):
        await later.collect(new_message=job_response({"url": "again"}, more=False))
    with pytest.raises(AlreadyAnsweredError, match="'c1'"):
        await later.collect(new_message=job_response({"done": "99%"}, more=True))
    after = await later.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert before is not None
    assert after is not None
    assert after.events == before.events
    assert len(model.requests) == 4


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_a_restart_between_the_interim_turn_and_the_final_result(
    stores: StoreFactory, resumable: bool
) -> None:
    started.clear()
    model = scripted()
    h = await open_harness(stores, job_agent(model), resumable)
    await h.start("Make me the report")

    later = restarted(h, stores, job_agent(model), resumable)
    final = await later.collect(new_message=job_response({"url": "r.pdf"}, more=False))

    assert said(final) == ["Half way there."]  # the script's next reply: one more turn
    assert len(model.requests) == 3
    assert shown(model.requests[2])[-1] == ("user", {"url": "r.pdf"})
    assert started == ["report"]
    assert await invocation_status(later) == InvocationStatus.COMPLETED


class Flaky:
    """A model script whose second call fails once, as a crash between the tool's interim
    result and the model's reply to it would leave the run."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: LlmRequest) -> list[str | FunctionCall]:
        self.calls += 1
        if self.calls == 1:
            return [FunctionCall(id="c1", name="start_job", args={"what": "report"})]
        if self.calls == 2:
            raise ConnectionError("model unreachable")
        return [f"reply {self.calls}"]


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_a_recorded_interim_result_reaches_the_model_when_the_run_continues(
    stores: StoreFactory, resumable: bool
) -> None:
    started.clear()
    model = ScriptedModel(responder=Flaky())
    h = await open_harness(stores, job_agent(model), resumable)
    with pytest.raises(ConnectionError):
        await h.start("Make me the report")

    later = restarted(h, stores, job_agent(model), resumable)
    [invocation] = await later.runner.store.list_invocations(later.key)
    resumed = await later.collect(invocation_id=invocation.id)

    assert said(resumed) == ["reply 3"]
    assert shown(model.requests[2])[-1] == ("user", {"status": "pending", "ticket": "T1"})
    assert started == ["report"]  # the tool is not started again
    assert await invocation_status(later) == InvocationStatus.PAUSED
    assert [c for c, _ in await open_calls(later)] == ["c1"]


def ask_twice(what: str) -> dict[str, str] | None:
    """Ask a person (no interim result) or start a job (a ticket)."""
    started.append(what)
    return None if what == "person" else {"ticket": "T2"}


async def test_two_waiting_calls_one_with_an_interim_result(stores: StoreFactory) -> None:
    started.clear()
    model = ScriptedModel(
        responses=[
            [
                FunctionCall(id="p", name="ask_twice", args={"what": "person"}),
                FunctionCall(id="j", name="ask_twice", args={"what": "job"}),
            ],
            "Waiting for the person and the job.",
            "The person answered.",
            "Both are done.",
        ]
    )
    agent = LlmAgent(name="assistant", model=model, tools=[LongRunningFunctionTool(ask_twice)])
    h = await open_harness(stores, agent, True)

    first = await h.start("go")
    assert said(first) == ["Waiting for the person and the job."]
    assert shown(model.requests[1])[-1] == ("user", {"ticket": "T2"})
    assert sorted(c for c, _ in await open_calls(h)) == ["j", "p"]

    person = types.FunctionResponse(id="p", name="ask_twice", response={"result": "yes"})
    answer = types.Content(role="user", parts=[types.Part(function_response=person)])
    assert said(await h.collect(new_message=answer)) == ["The person answered."]
    assert [c for c, _ in await open_calls(h)] == ["j"]
    done = await h.collect(new_message=job_response({"url": "j.pdf"}, more=False, call_id="j"))

    assert said(done) == ["Both are done."]
    # Both calls' newest responses follow the call, in the reference's order: the job's
    # (its interim result was the turn's result), then the person's.
    assert shown(model.requests[3]) == [
        ("user", "go"),
        ("model", "call p"),
        ("model", "call j"),
        ("user", {"url": "j.pdf"}),
        ("user", {"result": "yes"}),
    ]
    assert started == ["person", "job"]
    assert await invocation_status(h) == InvocationStatus.COMPLETED


async def test_in_a_workflow_the_next_node_gets_the_reply_to_the_final_result(
    stores: StoreFactory,
) -> None:
    started.clear()

    def publish(node_input: str) -> str:
        return f"published: {node_input}"

    model = scripted()
    root = Workflow(name="desk", edges=[("START", job_agent(model), publish)])
    h = await open_harness(stores, root, True)
    first = await h.start("Make me the report")
    assert said(first) == ["Your request is pending (ticket T1)."]
    assert [name for name, _ in outputs(first)] == ["assistant"]  # publish waits
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


@pytest.mark.parametrize("nothing", [None, {}, "", 0, [], False], ids=repr)
async def test_a_falsy_return_is_no_interim_result(stores: StoreFactory, nothing: object) -> None:
    """As in the reference, a long-running tool returning any falsy value has given no
    result yet: the model gets no turn, and the call waits for its response."""

    def submit(what: str) -> object:
        """Submit a request; a person decides later."""
        return nothing

    model = ScriptedModel(
        responses=[FunctionCall(id="c1", name="submit", args={"what": "leave"}), "Approved."]
    )
    agent = LlmAgent(name="assistant", model=model, tools=[LongRunningFunctionTool(submit)])
    h = await open_harness(stores, agent, True)

    first = await h.start("go")
    assert [e.content.function_responses for e in first if e.content] == [[]]
    assert len(model.requests) == 1
    assert [c for c, _ in await open_calls(h)] == ["c1"]
    done = await h.collect(new_message=job_response({"ok": True}, more=False, call_id="c1"))
    assert said(done) == ["Approved."]
    assert await invocation_status(h) == InvocationStatus.COMPLETED
