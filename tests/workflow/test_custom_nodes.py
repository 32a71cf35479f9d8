"""Custom nodes as the reference's users write them: pydantic fields and `_run_impl`."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest
from pydantic import ValidationError

from baton import (
    App,
    BaseNode,
    Context,
    RequestInput,
    ResumabilityConfig,
    Runner,
    Workflow,
    types,
)
from baton.sessions.services import InMemorySessionService
from tests.harness import Harness, MakeHarness, asked, outputs


class Scale(BaseNode):
    factor: int = 2

    async def _run_impl(self, *, ctx: Context, node_input: Any) -> AsyncGenerator[Any, None]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator
        # After START a custom node gets the user's message, a types.Content, as in the reference.
        text = node_input.text if isinstance(node_input, types.Content) else str(node_input)
        yield int(text) * self.factor


class Ask(BaseNode):
    """Asks `question`; with rerun_on_resume it runs again and says what it got."""

    question: str

    async def _run_impl(self, *, ctx: Context, node_input: Any) -> AsyncGenerator[Any, None]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator
        answer = ctx.resume_inputs.get("q")
        if answer is None:
            yield RequestInput(interrupt_id="q", message=self.question)
            return
        yield f"{self.name} heard {answer}"


async def test_a_custom_node_declares_fields_and_is_built_with_keywords(
    make_harness: MakeHarness,
) -> None:
    scale = Scale(name="scale", factor=3)
    assert scale.factor == 3
    assert scale.model_copy(update={"factor": 5}).factor == 5
    h = await make_harness(Workflow(name="wf", edges=[("START", scale)]))
    assert outputs(await h.start("7")) == [("scale", 21)]


def test_bad_fields_of_a_custom_node_are_refused_by_name() -> None:
    with pytest.raises(ValidationError, match="factor"):
        Scale(name="scale", factor="many")  # pyright: ignore[reportArgumentType] -- the point of the test
    with pytest.raises(ValidationError, match="colour"):
        Scale(name="scale", colour="red")  # pyright: ignore[reportCallIssue] -- the point of the test
    with pytest.raises(ValueError, match="must be a Python identifier"):
        Scale(name="no spaces")
    with pytest.raises(ValueError, match="timeout must be positive"):
        Scale(name="scale", timeout=0)
    twins = Scale(name="same"), Scale(name="same")
    assert twins[0] != twins[1]  # nodes compare by identity, not by settings


async def _root_harness(root: BaseNode, resumable: bool) -> Harness:
    service = InMemorySessionService()
    config = ResumabilityConfig(is_resumable=resumable)
    runner = Runner(
        app=App(name="app", root_agent=root, resumability_config=config), session_service=service
    )
    session = await service.create_session(app_name="app", user_id="u")
    return Harness(runner, service, session.id)


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_a_custom_node_as_the_root_takes_the_answer_as_its_output(resumable: bool) -> None:
    h = await _root_harness(Ask(name="ask", question="ok?"), resumable)
    assert asked(await h.start()) == ["q"]
    events = await h.answer(("q", "yes"))
    assert outputs(events) == [("ask", "yes")]  # rerun_on_resume=False: the answer is the output
    assert (await h.invocation()).status.value == "completed"


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_a_custom_root_node_that_reruns_on_resume_gets_its_answer(resumable: bool) -> None:
    h = await _root_harness(Ask(name="ask", question="ok?", rerun_on_resume=True), resumable)
    assert asked(await h.start()) == ["q"]
    events = await h.answer(("q", "yes"))
    assert outputs(events) == [("ask", "ask heard yes")]
