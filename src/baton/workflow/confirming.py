"""A function node that asks a person before it runs (`require_confirmation`).

Before the body runs, the node asks, as the reference's does: a question with id
`wf_tool_confirmation:<node path>`, message "Please approve or reject the tool call
<name>().", payload `{"tool_name": ..., "args": {...}}` (the arguments the body would
get) and a `ToolConfirmation` answer (`{"confirmed": true, "payload": ...}`). The node
reruns when it is answered: a confirmed run calls the body, a rejected one outputs
`{"error": "This tool call is rejected."}` and the body never runs. The question and
its answer are committed as every other question's, so a crash before the answer, or
between the answer and the body's commit, neither skips the question nor runs the
body twice.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from pydantic import JsonValue

from baton.context import Context
from baton.events import CONFIRMATION_SCHEMA, RequestInput, to_json_value
from baton.tools.confirmation import REJECTED, ToolConfirmation
from baton.workflow.binding import NodeInput

__all__ = ["Confirmation", "check_confirmation", "confirmation_gate", "confirmation_id"]

Confirmation: TypeAlias = bool | Callable[..., Any]
"""`require_confirmation`: always (True), never (False), or a predicate of the run's
arguments (sync or async) that says whether this run must be confirmed."""


def check_confirmation(name: str, value: object) -> None:
    """Refuse a `require_confirmation` that is neither a bool nor a callable.

    Raises:
        TypeError: naming the node and the value.
    """
    if not isinstance(value, bool) and not callable(value):
        raise TypeError(
            f"node '{name}' require_confirmation must be True, False or a function of the "
            f"node's arguments returning a bool, got {value!r}."
        )


def confirmation_id(node_path: str) -> str:
    """The id of the confirmation question of the node run at `node_path`."""
    return f"wf_tool_confirmation:{node_path}"


async def confirmation_gate(
    name: str,
    require: Confirmation,
    ctx: Context,
    node_input: NodeInput,
    kwargs: Mapping[str, Any],
) -> RequestInput | dict[str, JsonValue] | None:
    """What the run yields instead of calling the body (the question, or the rejection),
    or None when the body may run.

    Raises:
        InvalidResponseError: the answer is not a confirmation.
    """
    answer = ctx.resume_inputs.get(confirmation_id(ctx.node_path))
    if answer is not None:
        return None if ToolConfirmation.from_answer(answer).confirmed else dict(REJECTED)
    args = {key: value for key, value in kwargs.items() if value is not ctx}
    if not await _requires(require, ctx, node_input, args):
        return None
    return RequestInput(
        interrupt_id=confirmation_id(ctx.node_path),
        message=f"Please approve or reject the tool call {name}().",
        payload={"tool_name": name, "args": to_json_value(args, what=f"node '{name}' arguments")},
        response_schema=CONFIRMATION_SCHEMA,
    )


async def _requires(
    require: Confirmation, ctx: Context, node_input: NodeInput, args: dict[str, Any]
) -> bool:
    """Whether this run must be confirmed: the flag, or the predicate's verdict on the
    run's arguments (plus `ctx`, `node_input` and state values it names)."""
    if not callable(require):
        return require
    params = inspect.signature(require).parameters
    given = dict(args)
    for param in params:
        if param in given:
            continue
        if param in ("ctx", "tool_context"):
            given[param] = ctx
        elif param == "node_input":
            given[param] = node_input
        elif param in ctx.state:
            given[param] = ctx.state[param]
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        given = {key: value for key, value in given.items() if key in params}
    verdict = require(**given)
    return bool(await verdict if inspect.isawaitable(verdict) else verdict)
