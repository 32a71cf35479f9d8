from __future__ import annotations

import asyncio
import enum
import threading

import pytest
from pydantic import BaseModel, JsonValue

from baton.tools import (
    FunctionTool,
    LongRunningFunctionTool,
    ToolContext,
    to_function_response,
    to_response_dict,
)
from baton.tools.function_tool import LONG_RUNNING_NOTE
from baton.types import FunctionCall, FunctionResponse


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


class Order(BaseModel):
    item: str
    quantity: int = 1


def place_order(order: Order, size: Size, rush: bool = False) -> dict[str, JsonValue]:
    """Place an order.

    Args:
        order: What to order.
        size: Which size.
        rush: Ship it today.
    """
    assert isinstance(order, Order)
    assert isinstance(size, Size)
    return {"item": order.item, "quantity": order.quantity, "size": size.value, "rush": rush}


def where_am_i() -> str:
    return threading.current_thread().name


async def add(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a + b


def remember(fact: str, tool_context: ToolContext) -> str:
    facts = tool_context.state.get("facts", [])
    assert isinstance(facts, list)
    tool_context.state["facts"] = [*facts, fact]
    tool_context.actions.skip_summarization = True
    return f"{tool_context.agent_name} remembers {fact} ({tool_context.idempotency_key})"


def positional(x: int, /, y: int) -> list[int]:
    return [x, y]


def ask_approval(amount: float) -> None:
    """Ask a manager to approve a payment.

    Args:
        amount: The amount, in euros.
    """


def fail(reason: str) -> None:
    raise RuntimeError(reason)


async def test_arguments_are_coerced_into_models_enums_and_scalars() -> None:
    result = await FunctionTool(place_order).run(
        {"order": {"item": "tea", "quantity": "3"}, "size": "large", "rush": "true"}, ToolContext()
    )

    assert result == {"item": "tea", "quantity": 3, "size": "large", "rush": True}


async def test_invalid_arguments_come_back_as_an_error_for_the_model() -> None:
    result = await FunctionTool(place_order).run(
        {"order": {"quantity": "many"}, "size": "medium", "colour": "red"}, ToolContext()
    )

    assert result == {
        "error": "invalid arguments for tool 'place_order': 'order.item': Field required; "
        "'order.quantity': Input should be a valid integer, unable to parse string as an "
        "integer (got 'many'); 'size': Input should be 'small' or 'large' (got 'medium'). "
        "Its parameters are: order, size, rush. Call it again with corrected arguments."
    }


async def test_an_argument_the_function_does_not_take_is_dropped_as_the_reference_does() -> None:
    result = await FunctionTool(add).run({"a": 2, "b": 3, "c": 4}, ToolContext())

    assert result == 5


async def test_a_missing_argument_gets_the_reference_s_words() -> None:
    result = await FunctionTool(place_order).run({"rush": True}, ToolContext())

    assert result == {
        "error": "Invoking `place_order()` failed as the following mandatory input "
        "parameters are not present:\norder\nsize\nYou could retry calling this tool, but "
        "it is IMPORTANT for you to provide all the mandatory parameters."
    }


async def test_sync_functions_run_in_a_worker_thread() -> None:
    result = await FunctionTool(where_am_i).run({}, ToolContext())

    assert result != threading.current_thread().name


async def test_async_functions_are_awaited() -> None:
    assert await FunctionTool(add).run({"a": 2, "b": "3"}, ToolContext()) == 5


async def test_tool_context_is_passed_and_state_writes_become_the_delta() -> None:
    context = ToolContext(
        state={"facts": ["sky is blue"]},
        function_call_id="call-1",
        invocation_id="inv-1",
        agent_name="scribe",
    )

    result = await FunctionTool(remember).run({"fact": "grass is green"}, context)

    assert result == "scribe remembers grass is green (inv-1:call-1)"
    assert context.state_delta == {"facts": ["sky is blue", "grass is green"]}
    assert context.actions.skip_summarization is True


async def test_positional_only_parameters_are_passed_by_position() -> None:
    assert await FunctionTool(positional).run({"x": 1, "y": 2}, ToolContext()) == [1, 2]


async def test_results_are_converted_to_json() -> None:
    def make_order() -> Order:
        return Order(item="cake")

    assert await FunctionTool(make_order).run({}, ToolContext()) == {"item": "cake", "quantity": 1}


async def test_exceptions_from_the_function_propagate() -> None:
    with pytest.raises(RuntimeError, match="out of stock"):
        await FunctionTool(fail).run({"reason": "out of stock"}, ToolContext())


async def test_long_running_tool_is_flagged_and_tells_the_model_to_wait() -> None:
    tool = LongRunningFunctionTool(func=ask_approval)

    assert tool.is_long_running is True
    assert FunctionTool(ask_approval).is_long_running is False
    assert (
        tool.declaration().description
        == f"Ask a manager to approve a payment.\n\n{LONG_RUNNING_NOTE}"
    )
    assert await tool.run({"amount": 12.5}, ToolContext()) is None


def test_long_running_note_is_added_to_an_overridden_description() -> None:
    tool = LongRunningFunctionTool(ask_approval, description="Get approval.")

    assert tool.description == f"Get approval.\n\n{LONG_RUNNING_NOTE}"


def test_results_are_wrapped_into_function_responses() -> None:
    call = FunctionCall(id="call-7", name="lookup", args={})

    assert to_response_dict({"status": "ok"}) == {"status": "ok"}
    assert to_response_dict([1, 2]) == {"result": [1, 2]}
    assert to_response_dict(None) == {"result": None}
    assert to_function_response(call, "done") == FunctionResponse(
        id="call-7", name="lookup", response={"result": "done"}
    )
