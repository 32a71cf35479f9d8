"""The deadline benchmark's run: a question with a deadline, answered by nobody.

The run's message is the timeout in seconds; a worker answers the question with
`on_timeout` when it expires, and `after` ends the run.
"""

from __future__ import annotations

from baton import App, RequestInput, ResumabilityConfig, Workflow


def ask(node_input: str) -> RequestInput:
    return RequestInput(
        interrupt_id="ok",
        message="ok?",
        response_schema=bool,
        timeout=float(node_input),
        on_timeout=False,
    )


def after(node_input: bool) -> bool:
    return node_input


app = App(
    name="deadline",
    root_agent=Workflow(name="deadline", edges=[("START", ask, after)]),
    resumability_config=ResumabilityConfig(is_resumable=True),
)
