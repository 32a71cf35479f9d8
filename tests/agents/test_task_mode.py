"""LlmAgent(mode="task") as a workflow node and as the root agent: it chats with the user
until its model calls `finish_task`, whose arguments become the node's output.

Its model sees the finish_task tool (the reference's declaration) and an instruction
about it; a text reply waits for the user's next message, which goes to that agent in
the same invocation; a finish_task call with arguments that do not fit is answered
with the errors, and the model tries again. Every backend.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel, JsonValue
from sqlalchemy import event as sa_event
from sqlalchemy.pool import Pool

from baton import Context, FunctionNode, LlmAgent, SequentialAgent, Workflow, node, types
from baton.errors import InvalidResponseError, InvocationWaitingError
from baton.events import Event
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.sql import SqlStore
from baton.sessions.store import InvocationStatus
from baton.types import Content, FunctionCall, InvocationId, SessionId
from tests.conftest import StoreFactory, sqlite_url
from tests.harness import Harness, attach_harness, build_harness

FINISH_INSTRUCTION = (
    "You work on a task. Call `finish_task` only once the task is completely done, "
    "after using your tools for every part of it; ask the user when something about "
    "the task is unclear. When it is done, call `finish_task` alone, without text."
)
FINISH_DESCRIPTION = "Report that the task is done, ending your work on it."


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture
def service(stores: StoreFactory) -> BaseSessionService:
    return BaseSessionService(stores.open())


def finish(**args: JsonValue) -> FunctionCall:
    return FunctionCall(name="finish_task", args=args)


def seen(request: LlmRequest) -> list[tuple[str, str]]:
    """(role, what) of each part the model was shown."""
    shown: list[tuple[str, str]] = []
    for content in request.contents:
        for part in content.parts or []:
            if part.text is not None:
                shown.append((content.role or "", part.text))
            elif part.function_call is not None:
                shown.append((content.role or "", f"call {part.function_call.name}"))
            elif part.function_response is not None:
                response = part.function_response
                shown.append((content.role or "", f"{response.name} -> {response.response}"))
    return shown


def said(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.author, e.content.text) for e in events if e.content and e.content.text]


def asker(model: ScriptedModel, **fields: object) -> LlmAgent:
    return LlmAgent(
        name="asker",
        model=model,
        instruction="Find out the user's name.",
        mode="task",
        **fields,  # pyright: ignore[reportArgumentType] -- the test's own fields
    )


def workflow(agent: LlmAgent | SequentialAgent, seen_by_next: list[JsonValue]) -> Workflow:
    def after(node_input: JsonValue) -> str:
        seen_by_next.append(node_input)
        return f"after {node_input}"

    return Workflow(name="wf", edges=[("START", agent, after)])


async def test_a_task_node_chats_until_finish_task_and_outputs_its_arguments(
    service: BaseSessionService,
) -> None:
    model = ScriptedModel(["What's your name?", finish(result="name is Bob")])
    received: list[JsonValue] = []
    harness = await build_harness(workflow(asker(model), received), service, resumable=False)

    first = await harness.start("hi, please help")

    assert said(first) == [("asker", "What's your name?")]
    assert [e.output for e in first] == [None]
    invocation = await harness.invocation()
    assert invocation.status == InvocationStatus.PAUSED
    assert received == []

    second = await harness.start("Bob")

    assert [e.invocation_id for e in second] == [invocation.id] * 3
    calls = [c.name for e in second for c in e.function_calls]
    assert calls == ["finish_task"]
    result = second[1]
    assert result.author == "asker"
    assert result.content is not None
    assert [r.response for r in result.content.function_responses] == [
        {"result": "Task completed."}
    ]
    assert result.output == {"result": "name is Bob"}
    assert received == [{"result": "name is Bob"}]
    assert second[-1].output == "after {'result': 'name is Bob'}"
    assert (await harness.invocation()).status == InvocationStatus.COMPLETED
    # The model saw the whole conversation: the user's request, its question, the reply.
    assert seen(model.requests[0]) == [("user", "hi, please help")]
    assert seen(model.requests[1]) == [
        ("user", "hi, please help"),
        ("model", "What's your name?"),
        ("user", "Bob"),
    ]


async def test_the_model_sees_the_finish_task_tool_and_its_instruction(
    service: BaseSessionService,
) -> None:
    model = ScriptedModel([finish(result="done")])
    harness = await build_harness(workflow(asker(model), []), service, resumable=True)

    await harness.start("hi")

    [request] = model.requests
    assert request.config.system_instruction == (
        "Find out the user's name.\n\n"
        'You are the agent named "asker".\n\n'
        f"{FINISH_INSTRUCTION}"
    )
    [tools] = request.config.tools or []
    [declaration] = tools.function_declarations or []
    assert declaration.name == "finish_task"
    assert declaration.description == FINISH_DESCRIPTION
    assert declaration.parameters == {
        "type": "object",
        "properties": {
            "result": {"type": "string", "description": "What the task achieved, in brief."}
        },
        "required": ["result"],
    }


async def test_an_output_schema_shapes_finish_task_and_bad_arguments_get_a_retry(
    service: BaseSessionService,
) -> None:
    model = ScriptedModel([finish(name="Bob"), finish(name="Bob", age="3")])
    received: list[JsonValue] = []
    agent = asker(model, output_schema=Person, output_key="person")
    harness = await build_harness(workflow(agent, received), service, resumable=True)

    events = await harness.start("hi")

    [tools] = model.requests[0].config.tools or []
    [declaration] = tools.function_declarations or []
    assert declaration.description == (
        f"{FINISH_DESCRIPTION} Give the task's result as the parameters."
    )
    assert declaration.parameters == Person.model_json_schema()
    refused = seen(model.requests[1])[-1]
    assert refused[0] == "user"
    assert refused[1] == (
        "finish_task -> {'error': '`finish_task` was called with arguments that do not fit: "
        "age: Field required. Call it again with every required parameter, of the right "
        "type.'}"
    )
    assert received == [{"name": "Bob", "age": 3}]
    session = await harness.service.get_session(
        app_name="app", user_id="u", session_id=harness.session_id
    )
    assert session is not None
    assert session.state == {"person": {"name": "Bob", "age": 3}}
    assert [e.output for e in events if e.author == "asker" and e.content] == [
        None,
        None,
        None,
        {"name": "Bob", "age": 3},
    ]


async def test_a_non_object_output_schema_is_wrapped_in_result(
    service: BaseSessionService,
) -> None:
    model = ScriptedModel([finish(result=5)])
    received: list[JsonValue] = []
    harness = await build_harness(
        workflow(asker(model, output_schema=int), received), service, resumable=False
    )

    await harness.start("hi")

    [tools] = model.requests[0].config.tools or []
    [declaration] = tools.function_declarations or []
    assert declaration.parameters == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert received == [5]


async def test_a_task_root_agent_takes_the_next_message_and_a_new_one_after_it_finished(
    service: BaseSessionService,
) -> None:
    model = ScriptedModel(["What's your name?", finish(result="Bob"), "Hello again"])
    harness = await build_harness(asker(model), service, resumable=True)

    await harness.start("hi")
    finished = await harness.start("Bob")
    again = await harness.start("more")

    assert [e.output for e in finished if e.output is not None] == [{"result": "Bob"}]
    assert finished[0].invocation_id != again[0].invocation_id
    assert said(again) == [("asker", "Hello again")]
    # A new task conversation asks the user again (its reply waits for the next message).
    assert (await harness.invocation()).status == InvocationStatus.PAUSED


@dataclass
class Waiting:
    """A workflow whose task node asked the user's name and waits for the reply."""

    harness: Harness
    model: ScriptedModel
    received: list[JsonValue]


async def waiting_task(service: BaseSessionService) -> Waiting:
    model = ScriptedModel(["What's your name?", finish(result="Bob")])
    received: list[JsonValue] = []
    harness = await build_harness(workflow(asker(model), received), service, resumable=True)
    await harness.start("hi")
    return Waiting(harness, model, received)


async def test_a_restarted_process_hands_the_reply_to_the_waiting_task(
    service: BaseSessionService,
) -> None:
    waiting = await waiting_task(service)

    restarted = attach_harness(
        workflow(asker(ScriptedModel([finish(result="Bob")])), waiting.received),
        service,
        waiting.harness.session_id,
        resumable=True,
    )
    await restarted.start("Bob")

    assert waiting.received == [{"result": "Bob"}]
    assert len(waiting.model.requests) == 1  # the first turn was not asked for again


async def test_the_reply_may_name_the_invocation(service: BaseSessionService) -> None:
    waiting = await waiting_task(service)
    invocation = await waiting.harness.invocation()

    await waiting.harness.collect(
        new_message=Content(role="user", parts=[types.Part(text="Bob")]),
        invocation_id=invocation.id,
    )

    assert waiting.received == [{"result": "Bob"}]


async def test_continuing_a_waiting_task_without_a_message_is_refused(
    service: BaseSessionService,
) -> None:
    waiting = await waiting_task(service)
    invocation = await waiting.harness.invocation()
    before = await service.store.list_events(waiting.harness.key, InvocationId(invocation.id))

    with pytest.raises(InvocationWaitingError, match="send the user's reply as a new message"):
        await waiting.harness.collect(invocation_id=invocation.id)

    after = await service.store.list_events(waiting.harness.key, InvocationId(invocation.id))
    assert after == before
    assert waiting.model.remaining == 1


async def test_the_pending_list_shows_the_task_agent_waiting_for_a_reply_not_empty(
    service: BaseSessionService,
) -> None:
    waiting = await waiting_task(service)
    harness = waiting.harness

    [item] = await harness.runner.pending(user_id="u", session_id=harness.session_id)
    assert item.message == "What's your name?"
    # An empty reply is refused, changing nothing: the agent would take it for no reply
    # and end without finish_task (its successor ran on None).
    invocation = InvocationId((await harness.invocation()).id)
    before = await service.store.list_events(harness.key, invocation)
    with pytest.raises(InvalidResponseError, match=f"interrupt '{item.interrupt_id}'.*non-empty"):
        await harness.answer((item.interrupt_id, ""), name=item.function_name)
    assert await service.store.list_events(harness.key, invocation) == before
    assert waiting.received == []
    await harness.answer((item.interrupt_id, "Bob"), name=item.function_name)

    assert waiting.received == [{"result": "Bob"}]
    assert seen(waiting.model.requests[1])[-1] == ("user", "Bob")


async def test_task_agents_in_a_sequence_each_finish_their_own_task(
    service: BaseSessionService,
) -> None:
    first = ScriptedModel(["What's your name?", finish(result="Bob")])
    second = ScriptedModel([finish(result="done at once")])  # needs nothing from the user
    sequence = SequentialAgent(
        name="steps",
        sub_agents=[
            LlmAgent(name="name_task", model=first, mode="task", output_key="name"),
            LlmAgent(name="other_task", model=second, mode="task", output_key="other"),
        ],
    )
    harness = await build_harness(
        Workflow(name="wf", edges=[("START", sequence)]), service, resumable=True
    )

    asked = [said(await harness.start(text)) for text in ("hi", "Bob")]

    assert asked == [[("name_task", "What's your name?")], []]
    assert (await harness.invocation()).status == InvocationStatus.COMPLETED
    session = await service.get_session(app_name="app", user_id="u", session_id=harness.session_id)
    assert session is not None
    assert session.state == {"name": {"result": "Bob"}, "other": {"result": "done at once"}}


async def test_a_task_agent_run_by_a_function_node_takes_the_users_next_message(
    service: BaseSessionService,
) -> None:
    # The reference (2.13.0) hands the waiting agent's None to the function and ends the
    # run, so the task never gets the reply; baton waits in the child, as a node's does.
    model = ScriptedModel(["What's your name?", finish(result="name is Bob")])
    task = asker(model)

    @node(rerun_on_resume=True)
    async def outer(ctx: Context, node_input: str) -> str:
        return f"outer got {await ctx.run_node(task, node_input)}"

    harness = await build_harness(
        Workflow(name="wf", edges=[("START", outer)]), service, resumable=True
    )

    first = await harness.start("hi, please help")
    waiting = await harness.invocation()
    second = await harness.start("Bob")

    assert said(first) == [("asker", "What's your name?")]
    assert {e.invocation_id for e in first + second} == {waiting.id}
    assert [e.output for e in second if e.output is not None] == [
        {"result": "name is Bob"},
        "outer got {'result': 'name is Bob'}",
    ]
    assert (await harness.invocation()).status == InvocationStatus.COMPLETED
    assert seen(model.requests[1]) == [
        ("user", "hi, please help"),
        ("model", "What's your name?"),
        ("user", "Bob"),
    ]


async def test_a_message_costs_no_extra_statement_when_a_function_node_takes_ctx(
    tmp_path: Path,
) -> None:
    # Such a node may run a task agent, so a message first looks for a task waiting for
    # the user's reply: in the read of the session the call does anyway.
    async def plain(node_input: str) -> str:
        return node_input

    async def with_ctx(ctx: Context, node_input: str) -> str:
        return node_input

    sent = [await _second_message_statements(tmp_path, f) for f in (plain, with_ctx)]

    assert sent[0] == sent[1]
    assert "SELECT" in sent[0]


async def _second_message_statements(
    tmp_path: Path, function: Callable[..., Awaitable[str]]
) -> list[str]:
    """What SQLite runs (each statement's first word) for the second message to an app
    whose workflow runs `function` alone."""
    sent: list[str] = []

    def trace(connection: sqlite3.Connection, _record: object) -> None:
        connection.set_trace_callback(lambda sql: sent.append(sql.split(None, 1)[0].upper()))

    sa_event.listen(Pool, "connect", trace)
    store = SqlStore(sqlite_url(tmp_path))
    workflow = Workflow(name="wf", edges=[("START", FunctionNode(function, name="f"))])
    harness = await build_harness(workflow, BaseSessionService(store), resumable=True)
    try:
        await harness.start("first")
        before = len(sent)
        assert [e.output for e in await harness.start("second") if e.output] == ["second"]
        return sent[before:]
    finally:
        sa_event.remove(Pool, "connect", trace)
        await harness.runner.close()
        await store.close()


async def test_a_reply_with_only_an_image_answers_the_waiting_task(
    service: BaseSessionService,
) -> None:
    waiting = await waiting_task(service)
    invocation = await waiting.harness.invocation()
    image = types.Part.from_bytes(data=b"\x89PNG", mime_type="image/png")

    events = await waiting.harness.collect(new_message=Content(role="user", parts=[image]))

    assert {e.invocation_id for e in events} == {invocation.id}
    assert waiting.received == [{"result": "Bob"}]
    [reply] = waiting.model.requests[1].contents[-1].parts or []
    assert reply.inline_data is not None
    assert reply.inline_data.data == b"\x89PNG"
    [row] = await service.store.list_interrupts(
        "app", "u", session_id=SessionId(waiting.harness.session_id), status=None
    )
    assert row.answer == "[image/png]"


@pytest.mark.parametrize("asks", [True, False], ids=["asks", "finishes-at-once"])
async def test_a_sequence_ending_in_a_task_agent_outputs_the_tasks_result(
    service: BaseSessionService, asks: bool
) -> None:
    # The question is no reply of the sequence's, and the chat agent's reply before the
    # task is not its last sub-agent's (the reference hands every SequentialAgent's
    # successor None: see README).
    script: list[str | FunctionCall] = ["What's your name?"] if asks else []
    task = ScriptedModel([*script, finish(result="name is Bob")])
    sequence = SequentialAgent(
        name="steps",
        sub_agents=[
            LlmAgent(name="greeter", model=ScriptedModel(["Hello!"])),
            LlmAgent(name="name_task", model=task, mode="task"),
        ],
    )
    received: list[JsonValue] = []
    harness = await build_harness(workflow(sequence, received), service, resumable=True)

    await harness.start("hi")
    if asks:
        assert received == []
        await harness.start("Bob")

    assert received == [{"result": "name is Bob"}]
