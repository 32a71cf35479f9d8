"""Instruction templates: filled as google-adk 2.13.0 fills them (each expectation read off
its `_render_with_regex`), and a run whose first instruction cannot be filled refused
before anything is stored, on every backend."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from baton import App, ResumabilityConfig, Runner, SequentialAgent
from baton.agents import LlmAgent, MissingArtifactError, MissingStateKeyError
from baton.agents.instructions import fill_instruction
from baton.artifacts import BaseArtifactService
from baton.context import InvocationContext
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.store import SessionKey, Store
from baton.tools import ToolContext
from baton.types import Content, FunctionCall, Part, SessionId
from tests.agents.conftest import runner_with_artifacts
from tests.conftest import StoreFactory

STATE: dict[str, JsonValue] = {
    "key": "V",
    "app:k": "A",
    "user:k": "U",
    "temp:k": "T",
    "café": "C",
    "class": "K",
    "n": None,
}


@pytest.mark.parametrize(
    ("template", "filled"),
    [
        ("{key}", "V"),
        ("{ key }", "V"),
        ("{key\n}", "V"),
        ("{{key}}", "V"),
        ("{{key}", "V"),
        ("{key}}", "V"),
        ("{ key? }", "V"),
        ("{key ?}", "{key ?}"),
        ("${key}", "${key}"),
        ("\\{key}", "\\{key}"),
        ("{café}", "C"),
        ("{class}", "K"),
        ("{app:k}", "A"),
        ("{ app:k }", "A"),
        ("{user:k}", "U"),
        ("{temp:k}", "T"),
        ("{app: k}", "{app: k}"),
        ("{x:k}", "{x:k}"),
        ("{a.b}", "{a.b}"),
        ("{1a}", "{1a}"),
        ("{app:1a}", "{app:1a}"),
        ("{}", "{}"),
        ("{ }", "{ }"),
        ('{"a": 1}', '{"a": 1}'),
        ("{n}", ""),
        ("{missing?}", ""),
        ("a{key}b{ key }", "aVbV"),
    ],
)
def test_placeholders_are_the_references(template: str, filled: str) -> None:
    assert fill_instruction(template, STATE, agent="a") == filled


@pytest.mark.parametrize("template", ["{ missing }", "{{missing}}", "{user:missing}"])
def test_a_spaced_or_prefixed_missing_key_is_named(template: str) -> None:
    with pytest.raises(MissingStateKeyError, match=r"uses \{(user:)?missing\}"):
        fill_instruction(template, STATE, agent="a")


def _agents(instruction: str) -> list[LlmAgent | SequentialAgent]:
    first = LlmAgent(name="first", model=ScriptedModel(responses=["x"]), instruction=instruction)
    inner = LlmAgent(name="inner", model=ScriptedModel(responses=["x"]), instruction=instruction)
    later = LlmAgent(name="later", model=ScriptedModel(responses=["x"]), instruction="ok")
    return [first, SequentialAgent(name="seq", sub_agents=[inner, later])]


@pytest.mark.parametrize("root", [0, 1], ids=["llm_agent", "sequence"])
@pytest.mark.parametrize(
    ("instruction", "error"),
    [("About { topic }.", MissingStateKeyError), ("See {artifact.notes}.", MissingArtifactError)],
)
async def test_an_instruction_that_cannot_be_filled_refuses_the_run_and_changes_nothing(
    stores: StoreFactory, root: int, instruction: str, error: type[Exception]
) -> None:
    runner = runner_with_artifacts(stores, _agents(instruction)[root])
    session = await runner.session_service.create_session(
        app_name="app", user_id="u", state={"colour": "red"}
    )
    key = SessionKey("app", "u", SessionId(session.id))
    before = await runner.store.get_session(key)
    message = Content(role="user", parts=[Part(text="hi")])

    run = runner.run_async(
        user_id="u", session_id=session.id, new_message=message, state_delta={"x": 1}
    )
    with pytest.raises(error):
        await anext(run)

    assert await runner.store.get_session(key) == before
    assert await runner.store.list_invocations(key) == []
    # The call's own state_delta counts: with the key given, the same call runs.
    assert runner.artifact_service is not None
    await runner.artifact_service.save_artifact(
        app_name="app",
        user_id="u",
        session_id=session.id,
        filename="notes",
        artifact=Part(text="n"),
    )
    replies = [
        e.content.text
        async for e in runner.run_async(
            user_id="u", session_id=session.id, new_message=message, state_delta={"topic": "t"}
        )
        if e.content is not None
    ]
    assert "x" in replies


async def test_a_new_message_to_the_agent_the_conversation_was_left_with_checks_its_instruction(
    stores: StoreFactory,
) -> None:
    """The refusal reads the instruction of the agent the new message goes to: after the
    root handed the conversation to `child`, a root instruction naming a key the session
    no longer has (a `temp:` key given with the first call) does not refuse the next call,
    which `child` answers, as in the reference."""
    child = LlmAgent(name="child", model=ScriptedModel(responses=["c1", "c2"]), instruction="c")
    transfer = FunctionCall(name="transfer_to_agent", args={"agent_name": "child"})
    root = LlmAgent(
        name="root",
        model=ScriptedModel(responses=[[transfer]]),
        instruction="Mode: {temp:mode}",
        sub_agents=[child],
    )
    runner = runner_with_artifacts(stores, root)
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    message = Content(role="user", parts=[Part(text="hi")])
    first = runner.run_async(
        user_id="u", session_id=session.id, new_message=message, state_delta={"temp:mode": "m"}
    )
    assert [e.content.text async for e in first if e.content is not None][-1] == "c1"

    second = runner.run_async(user_id="u", session_id=session.id, new_message=message)
    assert [(e.author, e.content.text) async for e in second if e.content is not None] == [
        ("child", "c2")
    ]


def instruction_of(request: LlmRequest) -> str:
    """The agent's instruction in a request's system instruction (its first paragraph)."""
    return (request.config.system_instruction or "").split("\n\n")[0]


class CountingArtifacts(BaseArtifactService):
    """The store's artifact service, with the names it was asked to load (a user may pass
    an artifact service of their own, whose loads cost what they cost)."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.loads: list[str] = []

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> Part | None:
        self.loads.append(filename)
        return await super().load_artifact(
            app_name=app_name,
            user_id=user_id,
            filename=filename,
            session_id=session_id,
            version=version,
        )


async def test_a_new_run_loads_its_instruction_artifacts_once_for_each_model_request(
    stores: StoreFactory,
) -> None:
    """The first model request of a new run uses the artifact its instruction names as
    the check before the run loaded it (once, not again for the request); the next
    request loads it again, and sees the version a tool saved in between."""

    async def rewrite(tool_context: ToolContext) -> str:
        """Rewrite the notes."""
        await tool_context.save_artifact("notes", Part(text="second"))
        return "rewritten"

    model = ScriptedModel(responses=[[FunctionCall(name="rewrite", args={})], "done"])
    agent = LlmAgent(name="a", model=model, instruction="See {artifact.notes}.", tools=[rewrite])
    store = stores.open()
    artifacts = CountingArtifacts(store)
    runner = Runner(
        app=App(
            name="app", root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True)
        ),
        session_service=BaseSessionService(store),
        artifact_service=artifacts,
    )
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    await artifacts.save_artifact(
        app_name="app",
        user_id="u",
        session_id=session.id,
        filename="notes",
        artifact=Part(text="first"),
    )
    message = Content(role="user", parts=[Part(text="hi")])

    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        pass

    assert [instruction_of(r) for r in model.requests] == ["See first.", "See second."]
    assert artifacts.loads == ["notes", "notes"]


async def test_an_instruction_provider_is_called_once_for_each_model_request(
    stores: StoreFactory,
) -> None:
    """A new run's instruction provider is the user's code: called once for each model
    request (as the reference calls it), also for the first request of a new run."""
    calls: list[str] = []

    def instruction(ctx: InvocationContext) -> str:
        calls.append(ctx.agent_name)
        return f"Call {len(calls)}."

    def noop() -> str:
        """Do nothing."""
        return "ok"

    model = ScriptedModel(responses=[[FunctionCall(name="noop", args={})], "done"])
    agent = LlmAgent(name="a", model=model, instruction=instruction, tools=[noop])
    runner = runner_with_artifacts(stores, agent)
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    message = Content(role="user", parts=[Part(text="hi")])

    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        pass

    assert calls == ["a", "a"]
    assert [instruction_of(r) for r in model.requests] == ["Call 1.", "Call 2."]
