"""The HTTP benchmark's run: one question (a yes/no), then one node after the answer."""

from __future__ import annotations

from baton import App, RequestInput, ResumabilityConfig, Workflow


def ask(node_input: str) -> RequestInput:
    return RequestInput(interrupt_id="ok", message=f"approve {node_input}?", response_schema=bool)


def after(node_input: bool) -> str:
    return "approved" if node_input else "declined"


app = App(
    name="approve",
    root_agent=Workflow(name="approve", edges=[("START", ask, after)]),
    resumability_config=ResumabilityConfig(is_resumable=True),
)
