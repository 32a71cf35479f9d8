"""An LLM agent whose refund tool needs a person's approval.

The model looks the order up (a regular tool), then asks to refund it: the
refund is a long-running tool that declares the answer it waits for (a
`RefundDecision`), so the run pauses until a person answers: a form in the inbox,
`y`/`n` (or JSON) in the terminal. The model is then called once more with the
answer, and the run ends. The pause survives restarts: answer it later with
`baton resume` or in `baton web`.

    baton run examples/approval_agent "Please refund order 42, it arrived broken."
    BATON_MODEL=openai/gpt-4o-mini baton run examples/approval_agent "Refund order 7"

BATON_MODEL names any OpenAI-compatible model ("openai/<model>"; OPENAI_BASE_URL
and OPENAI_API_KEY point it at OpenAI, vLLM, Ollama, ...). Without it a scripted
model plays the part, so the example runs offline.
"""

from __future__ import annotations

import os
import re
import sys

from pydantic import BaseModel, Field, JsonValue

from baton import App, LlmAgent, LongRunningFunctionTool, ResumabilityConfig
from baton.models import BaseLlm, LlmRequest, ScriptedModel
from baton.models.scripted import ScriptItem
from baton.tools import ToolContext
from baton.types import FunctionCall

ORDERS: dict[str, dict[str, JsonValue]] = {
    "42": {"item": "teapot", "amount": 35.0, "status": "delivered"},
    "7": {"item": "headphones", "amount": 120.0, "status": "delivered"},
}


class RefundDecision(BaseModel):
    """A person's answer to a refund request."""

    approved: bool = Field(description="Refund the customer?")
    note: str = Field("", description="Shown to the customer with the outcome.")


def lookup_order(order_id: str) -> dict[str, JsonValue]:
    """Look an order up.

    Args:
        order_id: the order's number.
    """
    return ORDERS.get(order_id, {"error": f"no order {order_id}"})


def issue_refund(order_id: str, amount: float, reason: str, tool_context: ToolContext) -> None:
    """Ask a person to approve a refund; their answer says whether it was approved.

    Args:
        order_id: the order to refund.
        amount: the amount to refund.
        reason: why the customer should get the refund.
    """
    # A real app would notify the approver here, deduplicating on the idempotency key.
    print(
        f"approval requested for a refund of {amount} on order {order_id} ({reason}); "
        f"key {tool_context.idempotency_key}",
        file=sys.stderr,
    )


def scripted_turn(request: LlmRequest) -> ScriptItem:
    """What a helpful model would do, decided from the conversation so far."""
    answered = {r.name: r.response or {} for c in request.contents for r in c.function_responses}
    asked = " ".join(c.text for c in request.contents if c.role == "user" and c.text)
    order_id = next(iter(re.findall(r"\d+", asked)), "42")
    if "issue_refund" in answered:
        answer = answered["issue_refund"]
        decision = answer.get("result", answer)  # the answer as sent, or wrapped as a result
        approved = isinstance(decision, dict) and decision.get("approved") in (True, "yes")
        return f"The refund for order {order_id} was {'approved' if approved else 'declined'}."
    if "lookup_order" in answered:
        order = answered["lookup_order"]
        return FunctionCall(
            name="issue_refund",
            args={"order_id": order_id, "amount": order.get("amount", 0), "reason": asked[:80]},
        )
    return FunctionCall(name="lookup_order", args={"order_id": order_id})


def make_model() -> BaseLlm | str:
    """BATON_MODEL when set, else the scripted stand-in (with a note saying so)."""
    configured = os.environ.get("BATON_MODEL")
    if configured:
        return configured
    print(
        "approval_agent: BATON_MODEL is not set; a scripted model answers. Set "
        "BATON_MODEL=openai/<model> (and OPENAI_API_KEY / OPENAI_BASE_URL) for a real model.",
        file=sys.stderr,
    )
    return ScriptedModel(model="scripted-refunds", responder=scripted_turn)


root_agent = LlmAgent(
    name="refund_agent",
    model=make_model(),
    instruction=(
        "You handle refund requests. Look the order up with lookup_order, then request the "
        "refund with issue_refund and wait for its answer. Tell the customer the outcome."
    ),
    tools=[lookup_order, LongRunningFunctionTool(issue_refund, response_schema=RefundDecision)],
)

app = App(
    name="approval_agent",
    root_agent=root_agent,
    resumability_config=ResumabilityConfig(is_resumable=True),
)
