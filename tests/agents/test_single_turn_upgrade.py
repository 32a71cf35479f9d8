"""A workflow agent node paused by a baton before single-turn mode resumes in it.

Before, a workflow node's LlmAgent saw the conversation; now it sees its input and its
own turns. What a paused run stores did not change: the old code's rows for the run
below (a function node, then an agent waiting on a long-running tool) equal today's
but for ids and timestamps (checked by running both on one SQLite file each and
comparing the events), its checkpoint still naming where its run began. So the
paused run is made here by today's code, on every backend, and resumed by a new
Runner: the agent's tool does not run again, its first turn is not asked again, and
the model's second request shows its input, its call and the answer.
"""

from __future__ import annotations

import pytest

from baton import App, DatabaseSessionService, ResumabilityConfig, Runner
from baton.agents import LlmAgent
from baton.models import ScriptedModel
from baton.sessions.store import InvocationStatus
from baton.tools import LongRunningFunctionTool
from baton.types import Content, FunctionCall, FunctionResponse, Part
from baton.workflow import Workflow
from tests.agents.test_single_turn_node import seen

CALL = FunctionCall(id="t1", name="ticket", args={"reason": "r"})


def topic(node_input: str) -> str:
    del node_input
    return "topic"


def runner(service: DatabaseSessionService, model: ScriptedModel, tickets: list[str]) -> Runner:
    def ticket(reason: str) -> None:
        """Files a ticket; a person answers it."""
        tickets.append(reason)

    writer = LlmAgent(name="writer", model=model, tools=[LongRunningFunctionTool(ticket)])
    app = App(
        name="app",
        root_agent=Workflow(name="wf", edges=[("START", topic, writer)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )
    return Runner(app=app, session_service=service)


@pytest.mark.parametrize("new_runner", [True, False], ids=["new-process", "same-runner"])
async def test_a_paused_agent_node_resumes_seeing_only_its_input_and_turns(
    emptied_store_url: str, new_runner: bool
) -> None:
    tickets: list[str] = []
    first = ScriptedModel(responses=[[CALL]])
    service = DatabaseSessionService(emptied_store_url)
    await service.create_session(app_name="app", user_id="u", session_id="s")
    run = runner(service, first, tickets)
    go = Content(role="user", parts=[Part(text="go")])
    async for _ in run.run_async(user_id="u", session_id="s", new_message=go):
        pass
    if new_runner:
        await service.close()
        service = DatabaseSessionService(emptied_store_url)
    second = ScriptedModel(responses=["filed"])
    run = runner(service, second, tickets)
    answer = FunctionResponse(id="t1", name="ticket", response={"status": "ok"})
    message = Content(role="user", parts=[Part(function_response=answer)])
    events = [e async for e in run.run_async(user_id="u", session_id="s", new_message=message)]

    assert tickets == ["r"]
    assert [seen(r) for r in first.requests] == [["user: topic"]]
    assert [seen(r) for r in second.requests] == [
        [
            "user: topic",
            "model: call ticket({'reason': 'r'})",
            "user: result ticket={'status': 'ok'}",
        ]
    ]
    assert [(e.author, e.content.text) for e in events if e.content and e.content.text] == [
        ("writer", "filed")
    ]
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    invocations = await service.store.list_invocations(session.key)
    assert [i.status for i in invocations] == [InvocationStatus.COMPLETED]
    await service.close()
