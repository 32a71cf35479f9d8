"""Seed 003's pause/resume examples, as written there with only the imports changed.

The seed leaves `my_agent`, `user_input` and `new_user_input` to the reader: here the
agent is a workflow that pauses for an approval, the first input is text and the
new input answers the pause. Also the call shapes the seed uses beyond the other
seeds: an App without a name, `run_async(session=...)`, and a new message sent
with the `invocation_id` it continues.
"""

# The seed's example is kept as written, untyped lists included.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false, reportUnknownArgumentType=false, reportPossiblyUnboundVariable=false

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from baton import (
    App,
    Context,
    Event,
    EventActions,
    InMemorySessionService,
    RequestInput,
    ResumabilityConfig,
    Runner,
    Workflow,
    types,
)
from baton.errors import InvalidMessageError
from baton.events import REQUEST_INPUT_FUNCTION
from baton.sessions.store import InvocationStatus
from tests.harness import Counter, MakeHarness, outputs


def _approval_agent(counter: Counter, name: str = "my_agent") -> Workflow:
    def draft(node_input: str) -> str:
        counter.bump("draft")
        return f"draft of {node_input}"

    async def approve(ctx: Context, node_input: str):
        counter.bump("approve")
        yield RequestInput(interrupt_id="ok", message=f"Publish {node_input}?")

    def publish(node_input: Any) -> str:
        counter.bump("publish")
        return f"published: {node_input}"

    return Workflow(name=name, edges=[("START", draft, approve, publish)])


def _text(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def test_seed_003_complete_pause_resume_flow_runs_as_written() -> None:
    counter = Counter()
    # The seed creates its session in "my_app" and names no app: the agent's name is used.
    my_agent = _approval_agent(counter, name="my_app")
    user_input = _text("the launch post")
    new_user_input = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id="ok", name=REQUEST_INPUT_FUNCTION, response={"result": "yes"}
                )
            )
        ],
    )

    # --- seed 003, "Example: Complete Pause/Resume Flow" ---
    # 1. Configure app for resumability
    config = ResumabilityConfig(is_resumable=True)
    app = App(root_agent=my_agent, resumability_config=config)

    # 2. Create session and runner
    session_service = InMemorySessionService()
    runner = Runner(app=app, session_service=session_service)

    # 3. Initial invocation - creates checkpoint
    session = await session_service.create_session(user_id="user1", app_name="my_app")
    events = []
    async for event in runner.run_async(session=session, new_message=user_input):
        events.append(event)
        # Store invocation_id for later
        last_invocation_id = event.invocation_id

    # 4. [Later] Resume invocation with new input
    resumed_events = []
    async for event in runner.run_async(
        session=session,
        new_message=new_user_input,
        invocation_id=last_invocation_id,  # Resume from this point
    ):
        resumed_events.append(event)
    # --- end of the seed's example ---

    assert app.name == "my_app"
    assert [e.long_running_tool_ids for e in events if e.long_running_tool_ids] == [{"ok"}]
    assert outputs(resumed_events) == [
        ("approve", "yes"),
        ("publish", "published: yes"),
    ]
    assert {e.invocation_id for e in events + resumed_events} == {last_invocation_id}
    assert counter.runs == {"draft": 1, "approve": 1, "publish": 1}


def test_seed_003_checkpoint_event_carries_agent_state() -> None:
    agent_state_dict: dict[str, JsonValue] = {"current_sub_agent": "writer", "times_looped": 2}
    response_content = types.Content(role="model", parts=[types.Part(text="done")])
    event = Event(
        invocation_id="inv_1",
        author="agent_name",
        actions=EventActions(
            end_of_agent=True,
            agent_state=agent_state_dict,  # Serialized agent state
        ),
        content=response_content,
    )
    wire = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert wire["actions"]["endOfAgent"] is True
    assert wire["actions"]["agentState"] == agent_state_dict
    assert Event.model_validate(wire) == event


async def test_a_failed_invocation_continues_with_a_new_message_recorded_in_it(
    make_harness: MakeHarness,
) -> None:
    counter = Counter()
    seen: list[str | None] = []

    def step1(node_input: str) -> str:
        counter.bump("step1")
        return "one"

    def step2(ctx: Context, node_input: str) -> str:
        counter.bump("step2")
        content = ctx.user_content
        seen.append(content.text if content else None)
        if counter.runs["step2"] == 1:
            raise RuntimeError("the mail server is down")
        return f"{node_input}+two"

    h = await make_harness(Workflow(name="wf", edges=[("START", step1, step2)]))
    with pytest.raises(RuntimeError, match="mail server is down"):
        await h.start("go")
    invocation = await h.invocation()
    assert invocation.status == InvocationStatus.FAILED

    events = await h.collect(
        invocation_id=invocation.id, new_message=_text("the mail server is back")
    )

    assert outputs(events) == [("step2", "one+two")]
    assert counter.runs == {"step1": 1, "step2": 2}
    assert seen == ["go", "the mail server is back"]
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    user_texts = [
        (e.invocation_id, e.content.text)
        for e in session.events
        if e.author == "user" and e.content
    ]
    assert user_texts == [(invocation.id, "go"), (invocation.id, "the mail server is back")]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_run_async_takes_the_session_object_in_place_of_its_ids(
    make_harness: MakeHarness,
) -> None:
    counter = Counter()
    h = await make_harness(_approval_agent(counter))
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    events = [e async for e in h.runner.run_async(session=session, new_message=_text("x"))]
    assert [e.long_running_tool_ids for e in events if e.long_running_tool_ids] == [{"ok"}]


@pytest.mark.parametrize(
    ("call", "named"),
    [
        ({"user_id": "mallory"}, "user_id 'mallory' contradicts session="),
        ({"session_id": "other"}, "session_id 'other' contradicts session="),
        ({"session": None}, "needs user_id= and session_id= (or session=)"),
        ({"app": "billing"}, "belongs to app 'billing', but this runner serves 'app'"),
    ],
)
async def test_session_arguments_that_disagree_are_refused_and_change_nothing(
    make_harness: MakeHarness, call: dict[str, str | None], named: str
) -> None:
    counter = Counter()
    h = await make_harness(_approval_agent(counter))
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    kwargs: dict[str, Any] = {"session": session, **call}
    if "app" in kwargs:
        kwargs["session"] = session.model_copy(update={"app_name": kwargs.pop("app")})
    stream = h.runner.run_async(new_message=_text("x"), **kwargs)
    with pytest.raises(InvalidMessageError) as caught:
        await anext(stream)
    assert named in str(caught.value)
    assert await h.service.store.list_invocations(h.key) == []
    assert counter.runs == {}


def test_app_name_defaults_to_the_root_agent_name_and_an_explicit_one_wins() -> None:
    agent = _approval_agent(Counter())
    assert App(root_agent=agent).name == "my_agent"
    assert App(name="publishing", root_agent=agent).name == "publishing"
