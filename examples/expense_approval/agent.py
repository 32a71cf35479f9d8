"""Expense approval with a review loop: submit, review (a person), revise, pay.

Start a run with a message such as `120.50 taxi to the airport` (the first number
is the amount, the rest the description). The reviewer approves, or rejects with a
comment; a rejected claim is revised (the amount is capped at the reviewer's
adjusted amount, if any) and reviewed again, each pass with its own interrupt id
(`review_0`, `review_1`, ...).

    baton run examples/expense_approval "120.50 taxi to the airport"
    baton web examples/
"""

from __future__ import annotations

import enum
import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from baton import App, Context, Event, RequestInput, ResumabilityConfig, Workflow


class Category(enum.StrEnum):
    TRAVEL = "travel"
    MEALS = "meals"
    EQUIPMENT = "equipment"
    OTHER = "other"


class Reimbursement(BaseModel):
    method: Literal["payroll", "bank_transfer"] = "payroll"
    reference: str = ""


class ReviewDecision(BaseModel):
    """What the reviewer answers."""

    approved: bool
    comment: str = ""
    category: Category = Category.OTHER
    adjusted_amount: float | None = Field(None, ge=0)
    reimbursement: Reimbursement = Reimbursement()


class Expense(BaseModel):
    amount: float
    description: str
    revision: int = 0


def submit(node_input: str) -> Expense:
    """Read the amount (the first number) and the description (the rest) from the message."""
    text = str(node_input or "")
    found = re.search(r"\d+(?:\.\d+)?", text)
    amount = float(found.group()) if found else 0.0
    rest = text[: found.start()] + text[found.end() :] if found else text
    return Expense(amount=amount, description=" ".join(rest.split()) or "unspecified expense")


async def review(ctx: Context, node_input: Any):
    """Ask a person to approve; one interrupt id per pass through the loop."""
    review_count = ctx.state.get("review_count", 0)
    interrupt_id = f"review_{review_count}"
    response = ctx.resume_inputs.get(interrupt_id)
    if response:
        route = "approved" if response.get("approved") else "rejected"
        yield Event(
            output={"expense": node_input, "decision": response},
            route=route,
            state={"review_count": review_count + 1},
        )
        return
    expense = Expense.model_validate(node_input)
    yield RequestInput(
        interrupt_id=interrupt_id,
        message=f"Approve {expense.amount:.2f} for '{expense.description}'?",
        payload=expense.model_dump(),
        response_schema=ReviewDecision,
    )


def revise(node_input: dict[str, Any]) -> Expense:
    """Apply the reviewer's adjusted amount, if any, and send the claim back for review."""
    expense = Expense.model_validate(node_input["expense"])
    decision = ReviewDecision.model_validate(node_input["decision"])
    amount = expense.amount
    if decision.adjusted_amount is not None:
        amount = min(amount, decision.adjusted_amount)
    return Expense(amount=amount, description=expense.description, revision=expense.revision + 1)


def pay(node_input: dict[str, Any]) -> str:
    """Record the approved payment."""
    expense = Expense.model_validate(node_input["expense"])
    decision = ReviewDecision.model_validate(node_input["decision"])
    amount = decision.adjusted_amount if decision.adjusted_amount is not None else expense.amount
    return (
        f"paid {amount:.2f} for '{expense.description}' via {decision.reimbursement.method} "
        f"({decision.category.value})"
    )


root_agent = Workflow(
    name="expense_workflow",
    edges=[
        ("START", submit, review),
        (review, {"approved": pay, "rejected": revise}),
        (revise, review),
    ],
)

app = App(
    name="expense_approval",
    root_agent=root_agent,
    description="Expense approval with a human review loop.",
    resumability_config=ResumabilityConfig(is_resumable=True),
)
