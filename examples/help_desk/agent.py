"""A help desk whose agents hand the conversation around: down, across and back up.

`triage` hands a billing question to `billing` (its sub-agent). `billing` sees it is
a refund and hands it to its peer `refunds` (another sub-agent of triage), which asks
a person to approve the refund (`approve_refund`, a long-running tool: the run
pauses). Once approved, `refunds` confirms and hands the conversation back to its
parent `triage`, which asks if there is anything else. Each hand-over is a committed
`transfer_to_agent` result, so a restart or crash while the refund waits resumes in
`refunds` without asking triage or billing again.

    baton run examples/help_desk "Please refund order 42, it arrived broken"
    baton web examples/

BATON_MODEL names any OpenAI-compatible model ("openai/<model>"). Without it a
scripted model plays every agent, so the example runs offline.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from pydantic import BaseModel, Field

from baton import App, LlmAgent, ResumabilityConfig
from baton.models import BaseLlm, LlmRequest, ScriptedModel
from baton.models.scripted import ScriptItem
from baton.tools import LongRunningFunctionTool
from baton.types import FunctionCall


class RefundDecision(BaseModel):
    """The approver's answer (`baton run` takes y/n, the inbox shows a form)."""

    approved: bool = Field(description="Refund the customer?")


def approve_refund(order: str) -> None:
    """Ask a person to approve refunding an order; their answer comes back later.

    Args:
        order: the order number.
    """


def transfer(agent: str) -> FunctionCall:
    return FunctionCall(name="transfer_to_agent", args={"agent_name": agent})


def triage_turn(request: LlmRequest) -> ScriptItem:
    if any("[refunds] said" in (c.text or "") for c in request.contents):
        return "Glad that is sorted. Anything else I can do?"
    return transfer("billing")


def billing_turn(request: LlmRequest) -> ScriptItem:
    del request
    return ["This is a refund; refunds will take it from here.", transfer("refunds")]


def refunds_turn(request: LlmRequest) -> ScriptItem:
    answers = [r.response or {} for c in request.contents for r in c.function_responses]
    if answers:
        decision = answers[-1].get("result", answers[-1])  # as sent, or wrapped as a result
        if isinstance(decision, dict) and decision.get("approved") in (True, "yes"):
            return ["Your refund was approved and is on its way.", transfer("triage")]
        return ["The refund was not approved, sorry.", transfer("triage")]
    said = " ".join(c.text for c in request.contents if c.role == "user" and c.text)
    order = next(iter(re.findall(r"order (\w+)", said)), "unknown")
    return FunctionCall(name="approve_refund", args={"order": order})


def make_model(script: Any) -> BaseLlm | str:
    configured = os.environ.get("BATON_MODEL")
    if configured:
        return configured
    return ScriptedModel(model="scripted-help-desk", responder=script)


if not os.environ.get("BATON_MODEL"):
    print("help_desk: BATON_MODEL is not set; a scripted model answers.", file=sys.stderr)

billing = LlmAgent(
    name="billing",
    description="Answers questions about invoices and payments.",
    model=make_model(billing_turn),
    instruction="Answer billing questions; hand refunds to the refunds agent.",
)
refunds = LlmAgent(
    name="refunds",
    description="Refunds orders, once a person approved.",
    model=make_model(refunds_turn),
    instruction=(
        "Ask for approval with approve_refund, tell the customer the outcome, then hand "
        "the conversation back to triage."
    ),
    tools=[LongRunningFunctionTool(approve_refund, response_schema=RefundDecision)],
)
root_agent = LlmAgent(
    name="triage",
    model=make_model(triage_turn),
    instruction="Greet the customer and hand each question to the agent that handles it.",
    sub_agents=[billing, refunds],
)

app = App(
    name="help_desk",
    root_agent=root_agent,
    resumability_config=ResumabilityConfig(is_resumable=True),
)
