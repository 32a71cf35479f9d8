"""Plugins from the user's side, on memory, SQLite and PostgreSQL: `Runner(plugins=[...])`
hooks run before the agents' own callbacks, in the order given, the first answer wins;
runner hooks replace the message, end a run early, rewrite events before they are
stored and hear how runs end; error hooks (plugins' and the agent's `on_*_error_callback`)
turn a failing model or tool into a response; each hook runs once per logical call
across a pause and a restart; bad plugin lists are refused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from baton import App, Event, ResumabilityConfig, Runner
from baton.agents import LlmAgent
from baton.agents.callbacks import CallbackContext
from baton.models import LlmRequest, LlmResponse, ScriptedModel
from baton.plugins import BasePlugin
from baton.sessions.services import BaseSessionService, InMemorySessionService
from baton.sessions.store import InvocationStatus
from baton.tools import BaseTool, LongRunningFunctionTool, ToolContext
from baton.types import Content, FunctionCall, Part
from tests.conftest import StoreFactory
from tests.harness import Harness


def text(value: str) -> Content:
    return Content(role="model", parts=[Part(text=value)])


class Recorder(BasePlugin):
    """Notes every hook it sees in `log`; answers the hooks named in `answers` (once each)."""

    def __init__(self, name: str, log: list[str], answers: dict[str, Any] | None = None) -> None:
        super().__init__(name)
        self.log = log
        self.answers = answers or {}

    def _note(self, hook: str) -> Any:
        self.log.append(f"{self.name}.{hook}")
        return self.answers.pop(hook, None)

    async def on_user_message_callback(
        self, *, invocation_context: Any, user_message: Content
    ) -> Any:
        return self._note("user_message")

    async def before_run_callback(self, *, invocation_context: Any) -> Any:
        return self._note("before_run")

    async def after_run_callback(self, *, invocation_context: Any) -> None:
        self._note("after_run")

    async def on_run_error_callback(self, *, invocation_context: Any, error: Exception) -> None:
        self._note(f"run_error:{type(error).__name__}")

    async def before_agent_callback(self, *, agent: Any, callback_context: CallbackContext) -> Any:
        return self._note(f"before_agent:{agent.name}")

    async def after_agent_callback(self, *, agent: Any, callback_context: CallbackContext) -> Any:
        return self._note(f"after_agent:{agent.name}")

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> Any:
        return self._note("before_model")

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> Any:
        return self._note("after_model")

    async def on_model_error_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> Any:
        return self._note(f"model_error:{error}")

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> Any:
        return self._note(f"before_tool:{tool.name}")

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> Any:
        return self._note(f"after_tool:{result}")

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> Any:
        return self._note(f"tool_error:{error}")


def _agent(log: list[str], model: ScriptedModel, **callbacks: Any) -> LlmAgent:
    def lookup(city: str) -> dict[str, str]:
        """Look the weather up.

        Args:
            city: where.
        """
        log.append(f"tool:{city}")
        if city == "nowhere":
            raise LookupError("no such city")
        return {"weather": "sunny"}

    def own(name: str) -> Any:
        def callback(**_: Any) -> None:
            log.append(f"agent.{name}")

        return callback

    return LlmAgent(
        name="weather",
        model=model,
        tools=[lookup],
        before_model_callback=own("before_model"),
        after_model_callback=own("after_model"),
        before_tool_callback=own("before_tool"),
        after_tool_callback=own("after_tool"),
        **callbacks,
    )


def _runner(stores: StoreFactory, agent: Any, plugins: list[BasePlugin]) -> Runner:
    return Runner(
        app=App(
            name="app", root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True)
        ),
        session_service=BaseSessionService(stores.open()),
        plugins=plugins,
    )


async def _start(runner: Runner) -> Harness:
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    return Harness(runner, runner.session_service, session.id)


def _call(city: str) -> list[FunctionCall]:
    return [FunctionCall(id=f"c-{city}", name="lookup", args={"city": city})]


async def test_plugins_run_in_order_before_the_agents_callbacks(stores: StoreFactory) -> None:
    log: list[str] = []
    model = ScriptedModel([_call("Oslo"), "sunny in Oslo"])
    runner = _runner(stores, _agent(log, model), [Recorder("a", log), Recorder("b", log)])
    h = await _start(runner)

    await h.start("weather in Oslo?")

    assert log == [
        "a.user_message", "b.user_message", "a.before_run", "b.before_run",
        "a.before_agent:weather", "b.before_agent:weather",
        "a.before_model", "b.before_model", "agent.before_model",
        "a.after_model", "b.after_model", "agent.after_model",
        "a.before_tool:lookup", "b.before_tool:lookup", "agent.before_tool", "tool:Oslo",
        "a.after_tool:{'weather': 'sunny'}", "b.after_tool:{'weather': 'sunny'}",
        "agent.after_tool",
        "a.before_model", "b.before_model", "agent.before_model",
        "a.after_model", "b.after_model", "agent.after_model",
        "a.after_agent:weather", "b.after_agent:weather",
        "a.after_run", "b.after_run",
    ]  # fmt: skip


async def test_the_first_plugin_that_answers_wins_and_the_rest_are_skipped(
    stores: StoreFactory,
) -> None:
    log: list[str] = []
    model = ScriptedModel(["the second turn is the model's"])  # the plugin answers the first
    first = Recorder(
        "first",
        log,
        {
            "before_model": LlmResponse(content=Content(role="model", parts=_parts(_call("Rome")))),
            "before_tool:lookup": {"weather": "cached"},
        },
    )
    runner = _runner(stores, _agent(log, model), [first, Recorder("second", log)])
    h = await _start(runner)

    events = await h.start("weather in Rome?")

    assert log[:4] == [
        "first.user_message",
        "second.user_message",
        "first.before_run",
        "second.before_run",
    ]
    assert log[6:8] == ["first.before_model", "first.after_model"]  # not second's, not the agent's
    assert "tool:Rome" not in log
    assert "second.before_tool:lookup" not in log
    responses = [r.response for e in events if e.content for r in e.content.function_responses]
    assert responses[0] == {"weather": "cached"}
    assert len(model.requests) == 1  # the second turn only


def _parts(calls: list[FunctionCall]) -> list[Part]:
    return [Part(function_call=c) for c in calls]


async def test_error_hooks_turn_failures_into_results(stores: StoreFactory) -> None:
    log: list[str] = []
    answers = 0

    def respond(request: LlmRequest) -> Any:
        nonlocal answers
        answers += 1
        if answers == 1:
            return _call("nowhere")
        if answers == 2:
            raise ConnectionError("model down")
        return "done"

    def agent_tool_error(tool: BaseTool, args: Any, tool_context: ToolContext, error: Exception):
        log.append(f"agent.tool_error:{error}")
        return {"error": str(error)}

    plugin = Recorder(
        "p", log, {"model_error:model down": LlmResponse(content=text("sorry, try later"))}
    )
    agent = _agent(log, ScriptedModel(responder=respond), on_tool_error_callback=agent_tool_error)
    h = await _start(_runner(stores, agent, [plugin]))

    events = await h.start("weather nowhere?")

    assert "p.tool_error:no such city" in log
    assert "agent.tool_error:no such city" in log
    responses = [r.response for e in events if e.content for r in e.content.function_responses]
    assert responses == [{"error": "no such city"}]
    assert [e.content.text for e in events if e.content and e.content.text] == ["sorry, try later"]
    assert (await h.invocation()).status is InvocationStatus.COMPLETED


async def test_an_unanswered_error_fails_the_run_and_plugins_hear_it(stores: StoreFactory) -> None:
    log: list[str] = []
    h = await _start(
        _runner(stores, _agent(log, ScriptedModel([_call("nowhere")])), [Recorder("p", log)])
    )

    with pytest.raises(LookupError, match="no such city"):
        await h.start("weather nowhere?")

    assert log[-1] == "p.run_error:LookupError"
    assert "p.after_run" not in log
    assert (await h.invocation()).status is InvocationStatus.FAILED


class Rewriter(BasePlugin):
    """Rewrites the user's message and tags every stored event."""

    async def on_user_message_callback(
        self, *, invocation_context: Any, user_message: Content
    ) -> Content:
        return Content(role="user", parts=[Part(text=user_message.text.upper())])

    async def on_event_callback(self, *, invocation_context: Any, event: Event) -> Event:
        return event.model_copy(update={"custom_metadata": {"seen_by": self.name}})


async def test_runner_hooks_rewrite_the_message_and_the_stored_events(stores: StoreFactory) -> None:
    model = ScriptedModel(["hello"])
    runner = _runner(stores, LlmAgent(name="weather", model=model), [Rewriter("tagger")])
    h = await _start(runner)

    events = await h.start("hi there")

    assert model.requests[0].contents[0].text == "HI THERE"
    assert [e.custom_metadata for e in events] == [{"seen_by": "tagger"}] * len(events)
    session = await runner.session_service.get_session(
        app_name="app", user_id="u", session_id=h.session_id
    )
    assert session is not None
    assert session.events[0].content is not None
    assert session.events[0].content.text == "HI THERE"
    assert session.events[0].custom_metadata is None  # the user's message is not offered
    assert [e.custom_metadata for e in session.events[1:]] == [{"seen_by": "tagger"}] * len(events)


async def test_a_before_run_reply_ends_the_run_without_running_the_agent(
    stores: StoreFactory,
) -> None:
    log: list[str] = []
    gate = Recorder("gate", log, {"before_run": text("closed for maintenance")})
    h = await _start(_runner(stores, _agent(log, ScriptedModel([])), [gate]))

    events = await h.start("weather?")

    assert [(e.author, e.content.text if e.content else None) for e in events] == [
        ("model", "closed for maintenance")
    ]
    assert log == ["gate.user_message", "gate.before_run", "gate.after_run"]
    assert (await h.invocation()).status is InvocationStatus.COMPLETED


class BrokenAfterRun(BasePlugin):
    async def after_run_callback(self, *, invocation_context: Any) -> None:
        raise RuntimeError("the audit log is down")


async def test_a_plugin_failing_after_the_run_is_raised_once_its_events_are_read(
    stores: StoreFactory,
) -> None:
    """The reference raises it too; the stream ends (it waited for good before)."""
    log: list[str] = []
    agent = _agent(log, ScriptedModel(["sunny"]))
    h = await _start(_runner(stores, agent, [BrokenAfterRun("audit")]))
    seen: list[Event] = []

    async def read() -> None:
        call = h.runner.run_async(
            user_id=h.user_id, session_id=h.session_id, new_message=text("weather?")
        )
        async for event in call:
            seen.append(event)  # kept as they come: the call then raises

    async with asyncio.timeout(10):  # a guard against a hang, not a measure
        with pytest.raises(RuntimeError, match="the audit log is down"):
            await read()

    assert [e.content.text for e in seen if e.content] == ["sunny"]
    assert (await h.invocation()).status is InvocationStatus.COMPLETED


async def test_hooks_run_once_per_call_across_a_pause_and_a_restart(stores: StoreFactory) -> None:
    log: list[str] = []

    def ask_manager(amount: int) -> None:
        """Ask a manager.

        Args:
            amount: how much.
        """

    def build() -> LlmAgent:
        model = ScriptedModel(
            [[FunctionCall(id="m1", name="ask_manager", args={"amount": 9})], "approved"]
        )
        return LlmAgent(name="clerk", model=model, tools=[LongRunningFunctionTool(ask_manager)])

    store = stores.open()
    first = Runner(
        app=App(name="app", root_agent=build(), plugins=[Recorder("p", log)],
                resumability_config=ResumabilityConfig(is_resumable=True)),
        session_service=BaseSessionService(store),
    )  # fmt: skip
    h = await _start(first)
    await h.start("buy a chair")
    second = Runner(
        app=App(name="app", root_agent=build(), plugins=[Recorder("p", log)],
                resumability_config=ResumabilityConfig(is_resumable=True)),
        session_service=BaseSessionService(stores.open()),
    )  # fmt: skip
    await Harness(second, second.session_service, h.session_id).answer(
        ("m1", "yes"), name="ask_manager"
    )

    hooks = [entry.split(":")[0] for entry in log]
    assert hooks.count("p.before_agent") == 1
    assert hooks.count("p.before_model") == 2
    assert hooks.count("p.before_tool") == 1
    assert hooks.count("p.after_agent") == 1
    assert hooks.count("p.before_run") == 2  # once per call of the runner, as the reference
    assert hooks.count("p.user_message") == 1  # an answer is not a message to rewrite


def test_bad_plugin_lists_are_refused() -> None:
    agent = LlmAgent(name="a", model=ScriptedModel([]))
    sessions = InMemorySessionService()
    with pytest.raises(TypeError, match="got object"):
        Runner(agent=agent, session_service=sessions, plugins=[object()])  # pyright: ignore[reportArgumentType] -- the refused value
    with pytest.raises(ValueError, match="two plugins are named 'p'"):
        Runner(agent=agent, session_service=sessions, plugins=[BasePlugin("p"), BasePlugin("p")])
    with pytest.raises(ValueError, match="both the App and the Runner"):
        Runner(
            app=App(name="app", root_agent=agent, plugins=[BasePlugin("x")]),
            session_service=sessions,
            plugins=[BasePlugin("y")],
        )
