"""Fan-in without a JoinNode: the successor runs once per arrival, in both modes."""

from __future__ import annotations

from typing import Any

from baton import Context, RequestInput, Workflow
from tests.harness import Counter, MakeHarness, asked


async def test_equal_outputs_arriving_twice_run_the_successor_twice_and_never_again(
    make_harness: MakeHarness,
) -> None:
    counter = Counter()

    def a() -> str:
        return "same"

    def b() -> str:
        return "same"

    def merge(ctx: Context, node_input: str) -> None:
        counter.bump("merge")
        ctx.state[f"merged_{ctx.run_id}"] = node_input

    def ask(ctx: Context) -> Any:
        return RequestInput(interrupt_id="go", message="go on?")

    h = await make_harness(Workflow(name="wf", edges=[("START", (a, b), merge), ("START", ask)]))
    events = await h.start()
    assert counter.runs == {"merge": 2}
    assert asked(events) == ["go"]

    await h.answer(("go", True))
    assert counter.runs == {"merge": 2}  # the resume ran neither arrival again
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state["merged_1"] == session.state["merged_2"] == "same"
    assert (await h.invocation()).status.value == "completed"
