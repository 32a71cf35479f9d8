"""Contract review with artifacts: draft a contract, a person approves it, it is filed.

The `draft` node writes the contract as an artifact (`contract.md`); the reviewer sees
it on the question's card in the inbox and downloads it before answering. An approved
contract is filed as the user's artifact `user:signed/<client>.md` (seen from every
session of theirs); a rejected one gets a new version of `contract.md` with the
reviewer's comment, and is asked about again.

    baton run examples/contract_review "ACME Corp, 12 months, 4000 per month"
    baton web examples/
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from baton import App, Context, Event, RequestInput, ResumabilityConfig, Workflow, types


class Review(BaseModel):
    """What the reviewer answers."""

    approved: bool
    comment: str = ""


class Terms(BaseModel):
    client: str
    details: str


def read_terms(node_input: str) -> Terms:
    """The client is what comes before the first comma; the rest are the terms."""
    client, _, details = str(node_input or "").partition(",")
    return Terms(client=client.strip() or "client", details=details.strip() or "standard terms")


async def draft(ctx: Context, node_input: Terms) -> dict[str, Any]:
    text = f"# Contract with {node_input.client}\n\nTerms: {node_input.details}\n"
    version = await ctx.save_artifact(
        "contract.md",
        types.Part.from_bytes(data=text.encode(), mime_type="text/markdown"),
        custom_metadata={"client": node_input.client},
    )
    return {"client": node_input.client, "version": version}


async def review(ctx: Context, node_input: dict[str, Any]):
    """Ask about the latest draft; a rejection adds the comment as a new version."""
    asked = f"review_{node_input['version']}"
    answer = ctx.resume_inputs.get(asked)
    if answer is None:
        yield RequestInput(
            interrupt_id=asked,
            message=f"Approve the contract with {node_input['client']} (contract.md)?",
            response_schema=Review,
        )
        return
    decision = Review.model_validate(answer)
    if decision.approved:
        yield Event(output=node_input, route="approved")
        return
    current = await ctx.load_artifact("contract.md")
    revised = (current.inline_data.data or b"").decode() if current and current.inline_data else ""
    revised += f"\nRevised after review: {decision.comment or 'no comment'}\n"
    version = await ctx.save_artifact(
        "contract.md", types.Part.from_bytes(data=revised.encode(), mime_type="text/markdown")
    )
    yield Event(output={**node_input, "version": version}, route="revise")


async def file_contract(ctx: Context, node_input: dict[str, Any]) -> str:
    contract = await ctx.load_artifact("contract.md")
    if contract is None:
        raise LookupError("contract.md is missing; it was deleted while under review.")
    name = f"user:signed/{node_input['client']}.md"
    await ctx.save_artifact(name, contract)
    return f"filed as {name}"


root_agent = Workflow(
    name="contract_review",
    edges=[
        ("START", read_terms, draft, review),
        (review, {"approved": file_contract, "revise": review}),
    ],
)

app = App(
    name="contract_review",
    root_agent=root_agent,
    resumability_config=ResumabilityConfig(is_resumable=True),
)
