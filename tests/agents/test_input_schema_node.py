"""An LlmAgent with an `input_schema` as a node of a workflow, as google-adk 2.13.0 runs
it (read off the reference with a fake model): the node's input is checked against the
schema, coerced, and the model is given the checked value as JSON; an input that does not
fit fails the node before the model is called."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, JsonValue

from baton import LlmAgent, Workflow
from baton.errors import NodeSchemaError
from baton.models import ScriptedModel
from tests.agents.conftest import MakeRunner


class Trip(BaseModel):
    city: str
    days: int


def planner_after(value: JsonValue, model: ScriptedModel) -> Workflow:
    def propose() -> JsonValue:
        return value

    planner = LlmAgent(name="planner", model=model, input_schema=Trip, instruction="Plan.")
    return Workflow(name="wf", edges=[("START", propose, planner)])


async def test_the_model_is_given_the_input_as_the_schema_reads_it(make: MakeRunner) -> None:
    model = ScriptedModel(["planned"])
    h = await make(planner_after({"city": "Oslo", "days": "3", "note": "x"}, model))

    await h.start()

    [request] = model.requests
    assert [c.text for c in request.contents] == ['{"city": "Oslo", "days": 3}']


@pytest.mark.parametrize("value", [{"city": "Oslo"}, "Oslo for three days"])
async def test_an_input_the_schema_refuses_fails_the_node_before_the_model_is_called(
    make: MakeRunner, value: JsonValue
) -> None:
    model = ScriptedModel(["planned"])
    h = await make(planner_after(value, model))

    with pytest.raises(NodeSchemaError, match=r"input of node 'planner' .*input_schema"):
        await h.start()

    assert model.requests == []


async def test_a_users_message_to_the_node_is_read_as_json_and_checked(
    make: MakeRunner,
) -> None:
    model = ScriptedModel(["planned"])
    planner = LlmAgent(name="planner", model=model, input_schema=Trip)
    h = await make(Workflow(name="wf", edges=[("START", planner)]))

    await h.start('{"city": "Oslo", "days": "2"}')
    with pytest.raises(NodeSchemaError, match="'hello'"):
        await h.start("hello")

    [request] = model.requests
    assert [c.text for c in request.contents] == ['{"city": "Oslo", "days": 2}']


async def test_the_root_agent_takes_any_message_as_its_schema_is_for_calls_as_a_tool(
    make: MakeRunner,
) -> None:
    model = ScriptedModel(["hi there"])
    h = await make(LlmAgent(name="planner", model=model, input_schema=Trip))

    await h.start("hello")

    [request] = model.requests
    assert [c.text for c in request.contents] == ["hello"]


@pytest.mark.parametrize(
    ("schema", "sent"),
    [(Trip, '{"city": "Zürich", "days": 3}'), (None, '{"city": "Zürich", "days": "3"}')],
    ids=["input_schema", "none"],
)
async def test_the_model_is_given_the_inputs_text_unescaped_as_the_reference_gives_it(
    make: MakeRunner, schema: type[Trip] | None, sent: str
) -> None:
    """google-adk 2.13.0 sends a node's JSON input with its characters as they are (probed:
    'Zürich', not 'Z\\u00fcrich'), with an input_schema or without."""

    def propose() -> JsonValue:
        return {"city": "Zürich", "days": "3"}

    model = ScriptedModel(["planned"])
    planner = LlmAgent(name="planner", model=model, input_schema=schema, instruction="Plan.")
    h = await make(Workflow(name="wf", edges=[("START", propose, planner)]))

    await h.start()

    [request] = model.requests
    assert [c.text for c in request.contents] == [sent]
