"""Schemas on every backend: a workflow's state_schema refuses bad writes (the reference's
StateSchemaError) with the key, the value and the node, before anything is stored; node
input_schema / output_schema check and coerce what a node gets and gives."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field, JsonValue

from baton import Context, Event, Workflow, node, types
from baton.errors import NodeSchemaError, StateSchemaError
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus
from baton.workflow.nodes import Node
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, build_harness, outputs


class Trip(BaseModel):
    city: str = ""
    nights: int = Field(0, ge=0)
    approved: bool = False


async def start(stores: StoreFactory, root: Node) -> Harness:
    return await build_harness(root, BaseSessionService(stores.open()), resumable=True)


async def state_of(h: Harness) -> dict[str, JsonValue]:
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    return session.state


async def test_declared_writes_pass_and_nested_workflows_inherit(stores: StoreFactory) -> None:
    def plan(ctx: Context) -> str:
        ctx.state["city"] = "Oslo"
        ctx.state["temp:scratch"] = {"anything": True}  # prefixed keys are not checked
        return "planned"

    def book() -> Event:
        return Event(output="booked", state={"nights": 3})

    inner = Workflow(name="inner", edges=[("START", book)])
    h = await start(stores, Workflow(name="wf", edges=[("START", plan, inner)], state_schema=Trip))

    await h.start()

    assert (await h.invocation()).status == InvocationStatus.COMPLETED
    state = await state_of(h)
    assert state["city"] == "Oslo"
    assert state["nights"] == 3


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("nights", -2, "Input should be greater than or equal to 0"),
        ("nights", "many", "Input should be a valid integer"),
        ("budget", 100, "does not declare (declared: approved, city, nights)"),
    ],
)
async def test_a_bad_write_fails_the_node_naming_key_value_and_node(
    stores: StoreFactory, key: str, value: JsonValue, says: str
) -> None:
    counter = Counter()

    def first(ctx: Context) -> str:
        ctx.state["city"] = "Oslo"
        return "ok"

    def second(ctx: Context) -> str:
        counter.bump("second")
        ctx.state["approved"] = True
        ctx.state[key] = value
        return "never stored"

    h = await start(
        stores, Workflow(name="wf", edges=[("START", first, second)], state_schema=Trip)
    )

    with pytest.raises(StateSchemaError) as refused:
        await h.start()

    message = str(refused.value)
    assert f"node 'second' wrote state key '{key}' = {value!r}" in message
    assert says in message
    assert await state_of(h) == {"city": "Oslo"}  # nothing of the failed node was stored
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert "never stored" not in [e.output for e in session.events]
    assert (await h.invocation()).status == InvocationStatus.FAILED


async def test_the_callers_state_delta_is_checked_before_anything_is_stored(
    stores: StoreFactory,
) -> None:
    h = await start(stores, Workflow(name="wf", edges=[("START", lambda_free)], state_schema=Trip))

    with pytest.raises(StateSchemaError, match="the caller's state_delta wrote state key 'nights'"):
        await h.collect(
            new_message=types.Content(role="user", parts=[types.Part(text="go")]),
            state_delta={"nights": "lots"},
        )

    assert await h.service.store.list_invocations(h.key) == []
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.events == []
    assert session.state == {}


def lambda_free() -> str:
    return "ran"


async def test_output_schema_coerces_and_refuses_before_storing(stores: StoreFactory) -> None:
    @node(output_schema=Trip)
    def shaped() -> dict[str, Any]:
        return {"city": "Rome", "nights": "2"}

    @node(output_schema={"type": "object", "required": ["total"]})
    def totals() -> dict[str, Any]:
        return {"sum": 5}

    h = await start(stores, Workflow(name="wf", edges=[("START", shaped, totals)]))

    with pytest.raises(NodeSchemaError) as refused:
        await h.start()

    assert str(refused.value).startswith(
        "the output of node 'totals' ({'sum': 5}) does not fit its output_schema: "
        "the value: 'total' is a required property."
    )
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert outputs(session.events) == [("shaped", {"city": "Rome", "nights": 2, "approved": False})]


async def test_input_schema_is_checked_before_the_node_runs(stores: StoreFactory) -> None:
    counter = Counter()

    def make() -> dict[str, Any]:
        return {"city": "Rome", "nights": -1}

    @node(input_schema=Trip)
    def use(node_input: dict[str, Any]) -> str:
        counter.bump("use")
        return "used"

    h = await start(stores, Workflow(name="wf", edges=[("START", make, use)]))

    with pytest.raises(NodeSchemaError, match=r"the input of node 'use' .* nights: Input should"):
        await h.start()

    assert counter.runs == {}


def test_state_schema_must_be_a_model_class() -> None:
    with pytest.raises(TypeError, match="state_schema of workflow 'wf' must be a pydantic"):
        Workflow(name="wf", edges=[("START", lambda_free)], state_schema=dict)  # pyright: ignore[reportArgumentType] -- the bad input under test


async def test_a_schema_given_after_the_node_ran_is_checked(stores: StoreFactory) -> None:
    # The engine reads a function node's settings once (FunctionNode.is_bare_call is
    # cached): one changed after a run, by assignment or in a model_copy, still counts.
    def totals() -> dict[str, Any]:
        return {"sum": 5}

    ran = node(totals)
    h = await start(stores, Workflow(name="wf", edges=[("START", ran)]))
    assert outputs(await h.start()) == [("totals", {"sum": 5})]
    copied = ran.model_copy(update={"output_schema": {"required": ["total"]}})

    ran.output_schema = {"type": "object", "required": ["total"]}
    with pytest.raises(NodeSchemaError, match="'total' is a required property"):
        await h.start()

    h = await start(stores, Workflow(name="copy", edges=[("START", copied)]))
    with pytest.raises(NodeSchemaError, match="'total' is a required property"):
        await h.start()
