from __future__ import annotations

import enum
from typing import Literal

import pytest
from pydantic import BaseModel, JsonValue

from baton.models import FunctionDeclaration
from baton.tools import FunctionTool, ToolContext


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Address(BaseModel):
    street: str
    zip_code: int | None = None


def get_weather(city: str, days: int = 3, metric: bool = True) -> dict[str, JsonValue]:
    """Get the weather forecast.

    Args:
        city: The city name.
        days: How many days to forecast.
    """
    return {}


def file_ticket(
    title: str,
    priority: Priority,
    channel: Literal["email", "chat"] = "email",
    tags: list[str] | None = None,
    assignee: str | None = None,
    tool_context: ToolContext | None = None,
) -> str:
    """File a support ticket."""
    return title


def ship(address: Address, weights: dict[str, float]) -> None:
    """Ship a parcel.

    Parameters
    ----------
    address : Address
        Where to.
    """


def anything(value, *args: int, **kwargs: str) -> None:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType] -- unannotated on purpose
    pass


def no_arguments() -> str:
    return "ok"


def test_simple_types_defaults_and_docstring_descriptions() -> None:
    assert FunctionTool(get_weather).declaration() == FunctionDeclaration(
        name="get_weather",
        description="Get the weather forecast.",
        parameters={
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city name."},
                "days": {
                    "type": "integer",
                    "default": 3,
                    "description": "How many days to forecast.",
                },
                "metric": {"type": "boolean", "default": True},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    )


def test_enums_literals_optionals_lists_and_a_hidden_tool_context() -> None:
    declaration = FunctionTool(file_ticket).declaration()

    assert declaration.parameters == {
        "$defs": {"Priority": {"enum": ["low", "high"], "title": "Priority", "type": "string"}},
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "priority": {"$ref": "#/$defs/Priority"},
            "channel": {"enum": ["email", "chat"], "type": "string", "default": "email"},
            "tags": {
                "anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}],
                "default": None,
            },
            "assignee": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["title", "priority"],
        "additionalProperties": False,
    }


def test_pydantic_models_and_dicts_with_numpy_docstring() -> None:
    assert FunctionTool(ship).declaration() == FunctionDeclaration(
        name="ship",
        description="Ship a parcel.",
        parameters={
            "$defs": {
                "Address": {
                    "properties": {
                        "street": {"type": "string"},
                        "zip_code": {
                            "anyOf": [{"type": "integer"}, {"type": "null"}],
                            "default": None,
                        },
                    },
                    "required": ["street"],
                    "title": "Address",
                    "type": "object",
                }
            },
            "type": "object",
            "properties": {
                "address": {"$ref": "#/$defs/Address", "description": "Where to."},
                "weights": {"type": "object", "additionalProperties": {"type": "number"}},
            },
            "required": ["address", "weights"],
            "additionalProperties": False,
        },
    )


def test_unannotated_parameters_accept_anything_and_star_args_are_left_out() -> None:
    tool = FunctionTool(anything)  # pyright: ignore[reportUnknownArgumentType] -- unannotated on purpose

    assert tool.declaration().parameters == {
        "type": "object",
        "properties": {"value": {}},
        "required": ["value"],
        "additionalProperties": False,
    }


def test_a_function_without_parameters_or_docstring() -> None:
    assert FunctionTool(no_arguments).declaration() == FunctionDeclaration(
        name="no_arguments",
        description="",
        parameters={"type": "object", "properties": {}, "additionalProperties": False},
    )


def test_name_and_description_can_be_overridden() -> None:
    tool = FunctionTool(get_weather, name="forecast", description="Forecast.")

    assert (tool.name, tool.declaration().name, tool.declaration().description) == (
        "forecast",
        "forecast",
        "Forecast.",
    )


def test_methods_and_callable_objects_are_tools() -> None:
    class Counter:
        def add(self, amount: int) -> int:
            """Add to the counter."""
            return amount

        def __call__(self, amount: int) -> int:
            return amount

    method = FunctionTool(Counter().add)
    callable_object = FunctionTool(Counter(), name="count")

    assert method.declaration().description == "Add to the counter."
    expected = {
        "type": "object",
        "properties": {"amount": {"type": "integer"}},
        "required": ["amount"],
    }
    assert method.declaration().parameters == {**expected, "additionalProperties": False}
    assert callable_object.declaration().parameters == {**expected, "additionalProperties": False}


def test_a_lambda_needs_a_name() -> None:
    with pytest.raises(TypeError, match="has no usable __name__; pass name=... for it"):
        FunctionTool(lambda x: x)  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType] -- an unnamed, untyped tool is the point


def test_something_that_is_not_a_function_is_refused() -> None:
    with pytest.raises(TypeError, match="a tool needs a function .*got 3 of type int"):
        FunctionTool(3)  # pyright: ignore[reportArgumentType] -- not a function, on purpose


def test_unresolvable_type_hints_name_the_tool() -> None:
    def broken(item: NotDefinedAnywhere) -> None:  # pyright: ignore[reportUndefinedVariable, reportUnknownParameterType] # noqa: F821 -- an unresolvable hint is the point
        pass

    with pytest.raises(TypeError, match="the type hints of tool 'broken' cannot be resolved"):
        FunctionTool(broken)  # pyright: ignore[reportUnknownArgumentType] -- unresolvable on purpose


def test_a_tool_context_under_another_name_is_explained() -> None:
    def misnamed(ctx: ToolContext) -> None:
        pass

    with pytest.raises(TypeError, match="the ToolContext parameter must be named 'tool_context'"):
        FunctionTool(misnamed)
