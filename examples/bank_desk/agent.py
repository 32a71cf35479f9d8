"""A bank desk: a front agent transfers to payments, whose transfers over 100 need approval.

`desk` reads the request and hands it to `payments` with `transfer_to_agent`.
`payments` calls `send_money`, a tool that requires confirmation for amounts over
100: the run pauses with an `adk_request_confirmation` call (Approve / Reject in
`baton web`, or `{"confirmed": true}` in `baton resume`). Once answered, the
payment runs once, or the model hears it was rejected. An after-tool callback
writes each payment to the session state (`state["ledger"]`).

    baton run examples/bank_desk "Please send 250 to Bob"
    baton web examples/

BATON_MODEL names any OpenAI-compatible model ("openai/<model>"). Without it a
scripted model plays both agents, so the example runs offline.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from baton import App, LlmAgent, ResumabilityConfig
from baton.models import BaseLlm, LlmRequest, ScriptedModel
from baton.models.scripted import ScriptItem
from baton.tools import BaseTool, FunctionTool, ToolContext
from baton.types import FunctionCall


def send_money(amount: int, to: str) -> dict[str, Any]:
    """Send money to someone.

    Args:
        amount: how much, in euros.
        to: who receives it.
    """
    return {"status": "sent", "amount": amount, "to": to}


def over_100(amount: int) -> bool:
    """Transfers over 100 need a person's approval."""
    return amount > 100


def record_payment(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: dict[str, Any]
) -> None:
    """After each payment: keep it in the ledger (saved with the tool's result)."""
    if tool_response.get("status") == "sent":
        ledger = list(tool_context.state.get("ledger") or [])
        tool_context.state["ledger"] = [*ledger, f"{args['amount']} to {args['to']}"]


def desk_turn(request: LlmRequest) -> ScriptItem:
    del request
    return FunctionCall(name="transfer_to_agent", args={"agent_name": "payments"})


def payments_turn(request: LlmRequest) -> ScriptItem:
    said = " ".join(c.text for c in request.contents if c.role == "user" and c.text)
    results = [r.response or {} for c in request.contents for r in c.function_responses]
    if results:
        outcome = results[-1]
        if outcome.get("status") == "sent":
            return f"Done: {outcome['amount']} sent to {outcome['to']}."
        return f"The payment was not made: {outcome.get('error', outcome)}"
    amount = int(next(iter(re.findall(r"\d+", said)), "0"))
    name = next(iter(re.findall(r"to (\w+)", said)), "someone")
    return FunctionCall(name="send_money", args={"amount": amount, "to": name})


def make_model(script: Any) -> BaseLlm | str:
    configured = os.environ.get("BATON_MODEL")
    if configured:
        return configured
    return ScriptedModel(model="scripted-bank", responder=script)


if not os.environ.get("BATON_MODEL"):
    print("bank_desk: BATON_MODEL is not set; a scripted model answers.", file=sys.stderr)

payments = LlmAgent(
    name="payments",
    description="Sends money for the customer.",
    model=make_model(payments_turn),
    instruction="Send the money the customer asks for with send_money, then say what happened.",
    tools=[FunctionTool(send_money, require_confirmation=over_100)],
    after_tool_callback=record_payment,
)

root_agent = LlmAgent(
    name="desk",
    model=make_model(desk_turn),
    instruction="You greet customers; hand payment requests to the payments agent.",
    sub_agents=[payments],
)

app = App(
    name="bank_desk",
    root_agent=root_agent,
    resumability_config=ResumabilityConfig(is_resumable=True),
)
