"""`model_dump()` / `model_dump_json()` of events and wire types give the field names, as
the reference's (pydantic's default); `by_alias=True` gives the camelCase wire form."""

from __future__ import annotations

import json

from baton import Event, Runner, types
from baton.agents import LlmAgent
from baton.models import ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.tools import FunctionTool, ToolContext
from baton.types import FunctionCall
from tests.conftest import StoreFactory


def remember(topic: str, tool_context: ToolContext) -> str:
    tool_context.state["last_topic"] = topic
    return "noted"


async def test_stored_events_dump_with_their_field_names_as_the_reference_s(
    stores: StoreFactory,
) -> None:
    service = BaseSessionService(stores.open())
    model = ScriptedModel([FunctionCall(id="c1", name="remember", args={"topic": "tea"}), "ok"])
    agent = LlmAgent(name="helper", model=model, tools=[FunctionTool(remember)])
    runner = Runner(app_name="app", agent=agent, session_service=service)
    session = await service.create_session(app_name="app", user_id="u")
    image = types.Part.from_bytes(data=b"png", mime_type="image/png")
    message = types.Content(role="user", parts=[types.Part(text="note tea"), image])
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        pass
    stored = await service.get_session(app_name="app", user_id="u", session_id=session.id)
    assert stored is not None
    user, call, result, answer = [e for e in stored.events if e.content is not None]

    assert user.model_dump(exclude_none=True)["content"]["parts"][1] == {
        "inline_data": {"data": b"png", "mime_type": "image/png"}
    }
    assert call.model_dump()["content"]["parts"][0]["function_call"]["name"] == "remember"
    dumped = result.model_dump(mode="json")
    assert dumped["invocation_id"] == result.invocation_id
    assert dumped["actions"]["state_delta"] == {"last_topic": "tea"}
    assert dumped["content"]["parts"][0]["function_response"]["response"] == {"result": "noted"}
    assert json.loads(answer.model_dump_json())["invocation_id"] == answer.invocation_id
    # The wire form, as the reference's `by_alias=True`, and it reads back either way.
    wire = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert wire["actions"]["stateDelta"] == {"last_topic": "tea"}
    assert Event.model_validate(wire) == Event.model_validate(dumped) == result
    await runner.close()
