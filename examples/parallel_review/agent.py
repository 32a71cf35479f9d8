"""Dynamic nodes: one reviewer question per section, asked in parallel.

The message is a document whose sections are separated by blank lines. `review`
starts one dynamic child per section with `ctx.run_node` and `asyncio.gather`: each
child summarizes its section, then asks a person to approve it (interrupt ids
`section-1`, `section-2`, ...). The run pauses with every question open; answer them
in any order, in any process: summaries already made are never made again, and
`publish` runs once every section is approved or rejected.

    baton run examples/parallel_review "Intro text.

    Pricing: 12 EUR a month.

    Terms apply."
    baton web examples/
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from baton import App, Context, RequestInput, ResumabilityConfig, Workflow, node


class Verdict(BaseModel):
    """What the reviewer answers for one section."""

    approved: bool
    comment: str = ""


def summarize(node_input: dict[str, Any]) -> dict[str, Any]:
    """A stand-in for an expensive call (a model, a service): runs once per section."""
    text = str(node_input["text"])
    words = text.split()
    short = " ".join(words[:6]) + (" ..." if len(words) > 6 else "")
    return {"number": node_input["number"], "summary": short}


@node(rerun_on_resume=True)
async def review_section(ctx: Context, node_input: dict[str, Any]) -> dict[str, Any]:
    """Summarize one section, then ask a person about it."""
    section = await ctx.run_node(summarize, node_input)
    verdict = await ctx.run_node(ask_reviewer, section, run_id=f"ask-{section['number']}")
    return {**section, "verdict": verdict}


def ask_reviewer(node_input: dict[str, Any]) -> RequestInput:
    return RequestInput(
        interrupt_id=f"section-{node_input['number']}",
        message=f"Approve section {node_input['number']}: {node_input['summary']!r}?",
        payload=node_input,
        response_schema=Verdict,
    )


@node(rerun_on_resume=True)
async def review(ctx: Context, node_input: str) -> list[dict[str, Any]]:
    """One dynamic child per section, all at once."""
    sections = [s.strip() for s in str(node_input or "").split("\n\n") if s.strip()]
    return list(
        await asyncio.gather(
            *(
                ctx.run_node(review_section, {"number": n, "text": text})
                for n, text in enumerate(sections, start=1)
            )
        )
    )


def publish(node_input: list[dict[str, Any]]) -> dict[str, Any]:
    approved = [s["number"] for s in node_input if s["verdict"].get("approved")]
    rejected = [s["number"] for s in node_input if not s["verdict"].get("approved")]
    return {"published": not rejected, "approved": approved, "rejected": rejected}


root_agent = Workflow(name="parallel_review", edges=[("START", review, publish)])
app = App(
    name="parallel_review",
    root_agent=root_agent,
    resumability_config=ResumabilityConfig(is_resumable=True),
)
