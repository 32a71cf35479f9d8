"""Artifacts from the user's side, on memory, SQLite and PostgreSQL: nodes, tools and
callbacks save and load through their contexts; a run that executes a node again (an
answer resumes it) saves onto the versions it saved before; the events say what was
saved; a run without an artifact service, or with a bad artifact, is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from baton import (
    App,
    Context,
    InMemoryArtifactService,
    InMemoryRunner,
    RequestInput,
    ResumabilityConfig,
    Runner,
    Workflow,
    types,
)
from baton.agents import LlmAgent
from baton.agents.callbacks import CallbackContext
from baton.artifacts import BaseArtifactService
from baton.errors import InvalidArtifactError
from baton.events import REQUEST_CONFIRMATION_FUNCTION, Event
from baton.models import LlmRequest, ScriptedModel
from baton.server.catalog import load_app
from baton.sessions.services import BaseSessionService, InMemorySessionService
from baton.sessions.store import InvocationStatus
from baton.tools import ToolContext
from baton.types import FunctionCall
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness

pytestmark = pytest.mark.filterwarnings("error")


def _runner(stores: StoreFactory, root: Any, *, artifacts: bool = True) -> Runner:
    store = stores.open()
    return Runner(
        app=App(
            name="app", root_agent=root, resumability_config=ResumabilityConfig(is_resumable=True)
        ),
        session_service=BaseSessionService(store),
        artifact_service=BaseArtifactService(store) if artifacts else None,
    )


async def _harness(runner: Runner) -> Harness:
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    return Harness(runner, runner.session_service, session.id)


def _draft_workflow(counter: Counter) -> Workflow:
    async def draft(ctx: Context) -> dict[str, int]:
        counter.bump("draft")
        version = await ctx.save_artifact("doc.md", types.Part.from_text(text="# Plan"))
        return {"doc_version": version}

    async def review(ctx: Context, node_input: dict[str, int]):
        counter.bump("review")
        # Executed again once answered: the note saved before the question is saved again.
        note = types.Part.from_text(text=f"review pass {counter.runs['review']}")
        await ctx.save_artifact("note.txt", note, custom_metadata={"by": "review"})
        if "ok" not in ctx.resume_inputs:
            yield RequestInput(interrupt_id="ok", message="Approve the plan?")
            return
        doc = await ctx.load_artifact("doc.md")
        yield {"approved": ctx.resume_inputs["ok"], "doc": doc.text if doc else None}

    async def publish(ctx: Context, node_input: dict[str, Any]) -> list[str]:
        counter.bump("publish")
        await ctx.save_artifact("user:published.md", types.Part.from_text(text=node_input["doc"]))
        return await ctx.list_artifacts()

    return Workflow(name="wf", edges=[("START", draft, review, publish)])


async def test_nodes_save_and_load_artifacts_and_a_rerun_node_saves_onto_its_versions(
    stores: StoreFactory,
) -> None:
    counter = Counter()
    runner = _runner(stores, _draft_workflow(counter))
    h = await _harness(runner)
    artifacts = runner.artifact_service
    assert artifacts is not None

    first = await h.start()
    assert [e.actions.artifact_delta for e in first if e.actions.artifact_delta] == [
        {"doc.md": 0},
        {"note.txt": 0},
    ]
    done = await h.answer(("ok", True))

    assert counter.runs == {"draft": 1, "review": 2, "publish": 1}
    assert done[-1].output == ["doc.md", "note.txt", "user:published.md"]
    scope: dict[str, Any] = {"app_name": "app", "user_id": "u", "session_id": h.session_id}
    # The review ran twice, its note landed once: version 0, with the second pass's text.
    assert await artifacts.list_versions(**scope, filename="note.txt") == [0]
    note = await artifacts.load_artifact(**scope, filename="note.txt")
    assert note == types.Part.from_text(text="review pass 2")
    meta = await artifacts.get_artifact_version(**scope, filename="note.txt")
    assert meta is not None
    assert meta.custom_metadata == {"by": "review"}
    assert await artifacts.list_versions(**scope, filename="user:published.md") == [0]
    # The user's artifact is there in their next session too.
    other = await runner.session_service.create_session(app_name="app", user_id="u")
    names = await artifacts.list_artifact_keys(app_name="app", user_id="u", session_id=other.id)
    assert names == ["user:published.md"]
    assert (await h.invocation()).status is InvocationStatus.COMPLETED


async def test_a_node_that_only_saves_still_records_what_it_saved(stores: StoreFactory) -> None:
    async def quiet(ctx: Context) -> None:
        await ctx.save_artifact("a.txt", types.Part.from_text(text="one"))
        await ctx.save_artifact("a.txt", types.Part.from_text(text="two"))

    runner = _runner(stores, Workflow(name="wf", edges=[("START", quiet)]))
    h = await _harness(runner)

    await h.start()

    session = await runner.session_service.get_session(
        app_name="app", user_id="u", session_id=h.session_id
    )
    assert session is not None
    deltas = [e.actions.artifact_delta for e in session.events if e.actions.artifact_delta]
    assert deltas == [{"a.txt": 1}]


async def test_tools_and_callbacks_save_and_load_artifacts(stores: StoreFactory) -> None:
    async def render_chart(title: str, tool_context: ToolContext) -> dict[str, Any]:
        """Draw a chart.

        Args:
            title: the chart's title.
        """
        version = await tool_context.save_artifact(
            "chart.png", types.Part.from_bytes(data=title.encode(), mime_type="image/png")
        )
        return {"saved": version, "names": await tool_context.list_artifacts()}

    seen: list[str | None] = []

    async def after_model(callback_context: CallbackContext, llm_response: Any) -> None:
        chart = await callback_context.load_artifact("chart.png")
        seen.append(chart.inline_data.mime_type if chart and chart.inline_data else None)

    model = ScriptedModel(
        [FunctionCall(id="c1", name="render_chart", args={"title": "Q3"}), "drawn"]
    )
    agent = LlmAgent(
        name="painter", model=model, tools=[render_chart], after_model_callback=after_model
    )
    runner = _runner(stores, agent)
    h = await _harness(runner)

    events = await h.start()

    tool_events = [e for e in events if e.content and e.content.function_responses]
    assert tool_events[0].actions.artifact_delta == {"chart.png": 0}
    assert tool_events[0].content is not None
    response = tool_events[0].content.function_responses[0].response
    assert response == {"saved": 0, "names": ["chart.png"]}
    assert seen == [None, "image/png"]  # before the tool ran, then after
    requests: list[LlmRequest] = model.requests
    assert len(requests) == 2


async def test_without_an_artifact_service_saving_fails_the_node_and_says_how_to_set_one(
    stores: StoreFactory,
) -> None:
    async def save(ctx: Context) -> int:
        return await ctx.save_artifact("a.txt", types.Part.from_text(text="x"))

    runner = _runner(stores, Workflow(name="wf", edges=[("START", save)]), artifacts=False)
    h = await _harness(runner)

    with pytest.raises(ValueError, match=r"Runner\(\.\.\., artifact_service="):
        await h.start()


async def test_a_bad_artifact_fails_the_node_and_saves_nothing(stores: StoreFactory) -> None:
    async def save(ctx: Context) -> int:
        await ctx.save_artifact("good.txt", types.Part.from_text(text="kept"))
        return await ctx.save_artifact("bad.txt", types.Part())

    runner = _runner(stores, Workflow(name="wf", edges=[("START", save)]))
    h = await _harness(runner)

    with pytest.raises(InvalidArtifactError, match="holds no content"):
        await h.start()
    assert runner.artifact_service is not None
    names = await runner.artifact_service.list_artifact_keys(
        app_name="app", user_id="u", session_id=h.session_id
    )
    assert names == ["good.txt"]


def test_runner_refuses_an_artifact_service_of_another_kind() -> None:
    def one() -> int:
        return 1

    wf = Workflow(name="wf", edges=[("START", one)])
    with pytest.raises(TypeError, match="got dict"):
        Runner(
            agent=wf,
            session_service=InMemorySessionService(),
            artifact_service={},  # pyright: ignore[reportArgumentType] -- the refused value
        )


async def test_in_memory_runner_and_reference_style_services_keep_artifacts() -> None:
    async def save(ctx: Context) -> int:
        return await ctx.save_artifact("a.txt", types.Part.from_text(text="x"))

    wf = Workflow(name="wf", edges=[("START", save)])
    runner = InMemoryRunner(agent=wf, app_name="app")
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    events: list[Event] = [
        e
        async for e in runner.run_async(
            user_id="u",
            session_id=session.id,
            new_message=types.Content(parts=[types.Part(text="go")]),
        )
    ]
    assert events[-1].output == 0
    service = InMemoryArtifactService()
    assert (
        await service.save_artifact(
            app_name="app", user_id="u", session_id="s", filename="f", artifact=types.Part(text="t")
        )
        == 0
    )


async def test_the_contract_review_example_revises_and_files_its_contract(
    stores: StoreFactory,
) -> None:
    example = load_app(Path(__file__).parents[2] / "examples" / "contract_review")
    store = stores.open()
    runner = Runner(
        app=example,
        session_service=BaseSessionService(store),
        artifact_service=BaseArtifactService(store),
    )
    h = await _harness_for(runner, "contract_review")
    artifacts = runner.artifact_service
    assert artifacts is not None

    await h.start("ACME Corp, 12 months")
    await h.answer(("review_0", {"approved": False, "comment": "add a notice period"}))
    done = await h.answer(("review_1", {"approved": True}))

    assert done[-1].output == "filed as user:signed/ACME Corp.md"
    scope: dict[str, Any] = {"app_name": "contract_review", "user_id": "u"}
    names = await artifacts.list_artifact_keys(**scope, session_id=h.session_id)
    assert names == ["contract.md", "user:signed/ACME Corp.md"]
    assert await artifacts.list_versions(
        **scope, session_id=h.session_id, filename="contract.md"
    ) == [0, 1]
    filed = await artifacts.load_artifact(**scope, filename="user:signed/ACME Corp.md")
    assert filed is not None
    assert filed.inline_data is not None
    assert filed.inline_data.data == (
        b"# Contract with ACME Corp\n\nTerms: 12 months\n"
        b"\nRevised after review: add a notice period\n"
    )


async def _harness_for(runner: Runner, app_name: str) -> Harness:
    session = await runner.session_service.create_session(app_name=app_name, user_id="u")
    h = Harness(runner, runner.session_service, session.id)
    return h


async def test_a_tool_run_again_after_its_confirmation_saves_onto_its_version(
    stores: StoreFactory,
) -> None:
    runs: list[str] = []

    async def quote(item: str, tool_context: ToolContext) -> str:
        """Draw up a quote and have it confirmed.

        Args:
            item: what to quote.
        """
        runs.append(item)
        text = f"quote for {item}, pass {len(runs)}"
        await tool_context.save_artifact("quote.txt", types.Part.from_text(text=text))
        if tool_context.tool_confirmation is None:
            tool_context.request_confirmation(hint=f"Send the quote for {item}?")
            return "waiting"
        return "sent"

    model = ScriptedModel(
        [
            FunctionCall(id="q1", name="quote", args={"item": "desk"}),
            FunctionCall(id="q2", name="quote", args={"item": "lamp"}),
            "both sent",
        ]
    )
    runner = _runner(stores, LlmAgent(name="sales", model=model, tools=[quote]))
    h = await _harness(runner)
    artifacts = runner.artifact_service
    assert artifacts is not None
    scope: dict[str, Any] = {"app_name": "app", "user_id": "u", "session_id": h.session_id}

    await h.start("quote a desk and a lamp")
    await h.answer(
        ("adk-confirm-q1", {"confirmed": True}), name=REQUEST_CONFIRMATION_FUNCTION, wrap=False
    )
    await h.answer(
        ("adk-confirm-q2", {"confirmed": True}), name=REQUEST_CONFIRMATION_FUNCTION, wrap=False
    )

    assert runs == ["desk", "desk", "lamp", "lamp"]
    # Each call ran twice and saved once: its version holds its confirmed pass's text.
    assert await artifacts.list_versions(**scope, filename="quote.txt") == [0, 1]
    texts = [
        part.text if part else None
        for part in [
            await artifacts.load_artifact(**scope, filename="quote.txt", version=0),
            await artifacts.load_artifact(**scope, filename="quote.txt", version=1),
        ]
    ]
    assert texts == ["quote for desk, pass 2", "quote for lamp, pass 4"]
