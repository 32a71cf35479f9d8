"""`Runner.run_debug`, the reference's way of trying an agent out."""

from __future__ import annotations

import logging

import pytest

from baton import App, Context, InMemoryRunner, LlmAgent, ResumabilityConfig, Workflow, types
from baton.models import ScriptedModel


def lookup(city: str) -> dict[str, str]:
    return {"weather": "sunny " * 30}


def _calls_lookup() -> list[str | types.Part | types.FunctionCall]:
    return [
        types.Part(text="thinking", thought=True),
        "Let me ",
        "look.",
        types.FunctionCall(name="lookup", args={"city": "Paris" * 20}),
    ]


async def test_run_debug_prints_each_reply_and_keeps_one_session(
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = ScriptedModel(responses=[_calls_lookup(), "done 2", _calls_lookup(), "done 4", "q"])
    runner = InMemoryRunner(agent=LlmAgent(name="helper", model=model, tools=[lookup]))

    first = await runner.run_debug("hi", verbose=True)
    second = await runner.run_debug(["again"])

    # What the reference prints for the same turns.
    args = str({"city": "Paris" * 20})[:50]
    result = str({"weather": "sunny " * 30})[:100]
    assert capsys.readouterr().out.splitlines() == [
        "helper > thinkingLet me look.",  # a thought too, with verbose
        f"helper > [Calling tool: lookup({args}...)]",
        f"helper > [Tool result: {result}...]",
        "helper > done 2",
        "helper > Let me look.",
        "helper > done 4",
    ]
    assert [len(first), len(second)] == [3, 3]
    session = await runner.session_service.get_session(
        app_name=runner.app_name, user_id="debug_user_id", session_id="debug_session_id"
    )
    assert session is not None
    assert [e.content.text for e in session.events if e.author == "user" and e.content] == [
        "hi",
        "again",
    ]

    quiet = await runner.run_debug("q", quiet=True, user_id="bob", session_id="s2")
    assert [e.content.text for e in quiet if e.content] == ["q"]
    assert capsys.readouterr().out == ""


def test_a_runner_shows_its_app_s_resumability_config() -> None:
    model = ScriptedModel(responses=[])
    config = ResumabilityConfig(is_resumable=True)
    app = App(name="app", root_agent=LlmAgent(name="a", model=model), resumability_config=config)
    assert InMemoryRunner(app=app).resumability_config is config
    assert InMemoryRunner(agent=LlmAgent(name="b", model=model)).resumability_config is None


async def test_run_debug_logs_each_user_message_and_the_session_as_the_reference(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = InMemoryRunner(agent=LlmAgent(name="helper", model=ScriptedModel(["a", "b", "c"])))

    with caplog.at_level(logging.INFO, logger="baton.runner"):
        await runner.run_debug("hi")
        await runner.run_debug(["again"])
        await runner.run_debug("hush", quiet=True)

    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("baton.runner", logging.INFO, "Created new session: debug_session_id"),
        ("baton.runner", logging.INFO, "User > hi"),
        ("baton.runner", logging.INFO, "Continue session: debug_session_id"),
        ("baton.runner", logging.INFO, "User > again"),
    ]


async def test_a_runner_s_resumability_config_assigned_applies_to_its_next_runs() -> None:
    seen: list[bool] = []

    def look(ctx: Context) -> None:
        seen.append(ctx.is_resumable)

    runner = InMemoryRunner(node=Workflow(name="wf", edges=[("START", look)]))
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
    await runner.run_debug("go", session_id=session.id, user_id="u", quiet=True)

    runner.resumability_config = ResumabilityConfig(is_resumable=True)
    await runner.run_debug("go", session_id=session.id, user_id="u", quiet=True)

    assert seen == [False, True]
    assert runner.resumability_config == ResumabilityConfig(is_resumable=True)
    with pytest.raises(TypeError, match="takes a ResumabilityConfig or None, got True"):
        runner.resumability_config = True  # pyright: ignore[reportAttributeAccessIssue] -- the bad input tested
    assert runner.resumability_config == ResumabilityConfig(is_resumable=True)
