from __future__ import annotations

import pytest
from pydantic import BaseModel, JsonValue

from baton.events import EventActions
from baton.tools import ToolContext


class Point(BaseModel):
    x: int
    y: int


def test_state_reads_the_given_state_and_records_writes_without_touching_it() -> None:
    given: dict[str, JsonValue] = {"a": 1, "b": 2}
    context = ToolContext(state=given)

    context.state["b"] = 20
    context.state["c"] = Point(x=1, y=2)  # pyright: ignore[reportArgumentType] -- converted to JSON

    assert dict(context.state) == {"a": 1, "b": 20, "c": {"x": 1, "y": 2}}
    assert (len(context.state), "c" in context.state, "z" in context.state) == (3, True, False)
    assert context.state_delta == {"b": 20, "c": {"x": 1, "y": 2}}
    assert given == {"a": 1, "b": 2}


def test_state_keys_cannot_be_deleted() -> None:
    context = ToolContext(state={"a": 1})

    with pytest.raises(TypeError, match="state key 'a' cannot be deleted; set it to None instead"):
        del context.state["a"]


@pytest.mark.parametrize("key", ["a", "missing"])
def test_deleting_a_state_key_raises_attribute_error_as_the_reference_does(key: str) -> None:
    """Any way of deleting, the key there or not, raises the reference's AttributeError
    (its State has no way to delete) and changes nothing."""
    context = ToolContext(state={"a": 1})
    context.state["b"] = 2
    deletes = [
        lambda: context.state.__delitem__(key),
        lambda: context.state.pop(key),
        lambda: context.state.pop(key, None),
        context.state.popitem,
        context.state.clear,
    ]

    for delete in deletes:
        with pytest.raises(AttributeError, match="cannot be deleted; set"):
            delete()

    assert dict(context.state) == {"a": 1, "b": 2}
    assert context.state_delta == {"b": 2}


def test_writes_land_in_the_actions_the_response_event_carries() -> None:
    actions = EventActions(escalate=True)
    context = ToolContext(actions=actions)

    context.state["done"] = True

    assert context.actions is actions
    assert actions.state_delta == {"done": True}
    assert context.state_delta == {"done": True}


def test_idempotency_key_is_stable_per_call_or_given() -> None:
    first = ToolContext(invocation_id="inv-1", function_call_id="call-1")
    again = ToolContext(invocation_id="inv-1", function_call_id="call-1")
    given = ToolContext(invocation_id="inv-1", function_call_id="call-1", idempotency_key="k-9")

    assert first.idempotency_key == again.idempotency_key == "inv-1:call-1"
    assert given.idempotency_key == "k-9"
