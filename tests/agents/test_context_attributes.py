"""ToolContext and CallbackContext carry the run's invocation as the reference's do:
`user_id`, `session`, `branch`, `invocation_context` and `run_config`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from baton import Context, InMemorySessionService, Runner, Workflow, types
from baton.agents import LlmAgent, SequentialAgent
from baton.agents.callbacks import CallbackContext
from baton.errors import LlmCallsLimitExceededError, NoCredentialServiceError
from baton.models import ScriptedModel
from baton.run_config import RunConfig
from baton.tools import ToolContext
from baton.types import FunctionCall


async def test_tool_and_callback_contexts_name_the_run() -> None:
    seen: dict[str, Any] = {}

    def look(tool_context: ToolContext) -> str:
        """Looks around."""
        seen["tool"] = (
            tool_context.user_id,
            tool_context.session.id,
            tool_context.branch,
            tool_context.run_config.custom_metadata,
            tool_context.invocation_context.invocation_id == tool_context.invocation_id,
        )
        return "ok"

    def before_model(callback_context: CallbackContext, llm_request: Any) -> None:
        seen["callback"] = (
            callback_context.user_id,
            callback_context.session.id,
            callback_context.run_config.custom_metadata,
        )

    model = ScriptedModel([FunctionCall(name="look", args={}, id="c1"), "done"])
    agent = LlmAgent(name="a", model=model, tools=[look], before_model_callback=before_model)
    service = InMemorySessionService()
    runner = Runner(app_name="x", agent=agent, session_service=service)
    session = await service.create_session(app_name="x", user_id="ann")
    message = types.Content(role="user", parts=[types.Part(text="hi")])
    config = RunConfig(custom_metadata={"k": 1})
    async for _ in runner.run_async(
        user_id="ann", session_id=session.id, new_message=message, run_config=config
    ):
        pass
    assert seen == {
        "tool": ("ann", session.id, None, {"k": 1}, True),
        "callback": ("ann", session.id, {"k": 1}),
    }


def test_a_context_made_by_hand_says_it_has_no_invocation() -> None:
    with pytest.raises(ValueError, match="made outside a run and has no invocation"):
        _ = ToolContext().session


def is_a(value: object, kind: type) -> bool:
    """isinstance, on a value whose static type the checker would decide it from."""
    return isinstance(value, kind)


async def run_once(agent: Any, *, abort_signal: asyncio.Event | None = None) -> None:
    """Run `agent` once on a new session of user 'ann', to its end."""
    service = InMemorySessionService()
    runner = Runner(app_name="x", agent=agent, session_service=service)
    session = await service.create_session(app_name="x", user_id="ann")
    message = types.Content(role="user", parts=[types.Part(text="hi")])
    async for _ in runner.run_async(
        user_id="ann", session_id=session.id, new_message=message, abort_signal=abort_signal
    ):
        pass


async def test_every_context_is_a_readonly_context_as_in_the_reference() -> None:
    from baton.agents.callback_context import CallbackContext as AgentsCallbackContext
    from baton.agents.readonly_context import ReadonlyContext as AgentsReadonlyContext
    from baton.readonly_context import ReadonlyContext
    from baton.tools.tool_context import ToolContext as ToolsToolContext
    from baton.workflow import Workflow

    kinds: dict[str, tuple[bool, ...]] = {}

    def look(tool_context: ToolContext) -> str:
        """Looks around."""
        kinds["tool"] = (
            is_a(tool_context, ReadonlyContext),
            is_a(tool_context, CallbackContext),
            tool_context.is_aborted,
        )
        return "ok"

    def before_model(callback_context: CallbackContext, llm_request: Any) -> None:
        kinds["callback"] = (
            is_a(callback_context, ReadonlyContext),
            callback_context.is_aborted,
        )

    def node(ctx: Context) -> str:
        kinds["node"] = (is_a(ctx, ReadonlyContext), ctx.is_aborted)
        return ctx.agent_name

    model = ScriptedModel([FunctionCall(name="look", args={}, id="c1"), "done"])
    agent = LlmAgent(name="a", model=model, tools=[look], before_model_callback=before_model)
    await run_once(Workflow(name="flow", edges=[("START", agent), (agent, node)]))
    assert kinds == {"tool": (True, True, False), "callback": (True, False), "node": (True, False)}
    assert AgentsReadonlyContext is ReadonlyContext
    assert AgentsCallbackContext is CallbackContext
    assert ToolsToolContext is ToolContext
    assert issubclass(ToolContext, CallbackContext)


async def test_is_aborted_tells_a_tool_its_caller_aborted_the_run() -> None:
    abort = asyncio.Event()
    seen: list[bool] = []

    async def slow(tool_context: ToolContext) -> str:
        """Works a while."""
        seen.append(tool_context.is_aborted)
        abort.set()  # the caller aborts while the tool works
        seen.append(tool_context.is_aborted)
        await asyncio.sleep(0)
        return "ok"

    model = ScriptedModel([FunctionCall(name="slow", args={}, id="c1"), "done"])
    await run_once(LlmAgent(name="a", model=model, tools=[slow]), abort_signal=abort)
    assert seen == [False, True]


async def test_credential_methods_name_what_is_missing() -> None:
    failures: dict[str, str] = {}

    async def sign_in(tool_context: ToolContext) -> str:
        """Signs in."""
        attempts: dict[str, Callable[[], object]] = {
            "get_credential": lambda: tool_context.get_credential("k"),
            "request_credential": lambda: tool_context.request_credential(object()),  # pyright: ignore[reportArgumentType] -- the wrong type is the point
            "get_auth_response": lambda: tool_context.get_auth_response(object()),  # pyright: ignore[reportArgumentType] -- the wrong type is the point
        }
        for name, attempt in attempts.items():
            with pytest.raises((NoCredentialServiceError, TypeError)) as caught:
                attempt()
            failures[name] = f"{type(caught.value).__name__}: {caught.value}"
        with pytest.raises(NoCredentialServiceError, match="the Runner was given none"):
            await tool_context.load_credential(object())  # pyright: ignore[reportArgumentType] -- no service is checked first
        return "ok"

    model = ScriptedModel([FunctionCall(name="sign_in", args={}, id="c1"), "done"])
    await run_once(LlmAgent(name="a", model=model, tools=[sign_in]))
    assert failures["get_credential"].startswith("NoCredentialServiceError: get_credential('k')")
    for name in ("request_credential", "get_auth_response"):
        assert failures[name] == (
            f"TypeError: {name} takes an AuthConfig (from baton.auth.auth_tool: its "
            "auth_scheme and raw_auth_credential), got object."
        )
    assert isinstance(NoCredentialServiceError("x"), ValueError)


async def test_the_invocation_context_names_the_running_agent() -> None:
    seen: list[tuple[str, str]] = []

    def look(tool_context: ToolContext) -> str:
        """Looks around."""
        agent = tool_context._invocation_context.agent  # pyright: ignore[reportPrivateUsage] -- as the reference's users read it
        seen.append(("tool", getattr(agent, "name", "")))
        return "ok"

    def before(callback_context: CallbackContext) -> None:
        agent = callback_context._invocation_context.agent  # pyright: ignore[reportPrivateUsage] -- likewise
        seen.append(("before", getattr(agent, "name", "")))

    def looker(name: str) -> LlmAgent:
        model = ScriptedModel([FunctionCall(name="look", args={}, id="c1"), "done"])
        return LlmAgent(name=name, model=model, tools=[look], before_agent_callback=before)

    sequence = SequentialAgent(name="s", sub_agents=[looker("one"), looker("two")])
    service = InMemorySessionService()
    runner = Runner(app_name="x", agent=sequence, session_service=service)
    session = await service.create_session(app_name="x", user_id="ann")
    message = types.Content(role="user", parts=[types.Part(text="hi")])
    async for _ in runner.run_async(user_id="ann", session_id=session.id, new_message=message):
        pass
    assert seen == [("before", "one"), ("tool", "one"), ("before", "two"), ("tool", "two")]


def reference_fields(ctx: Any) -> tuple[Any, ...]:
    """What the reference's users read of any context, in one tuple."""
    invocation = ctx.get_invocation_context()
    return (
        ctx.function_call_id,
        ctx.tool_confirmation,
        ctx.node_path,
        ctx.run_id,
        ctx.event_author,
        ctx.attempt_count,
        invocation.node_path,
        invocation.session is ctx.session,
    )


async def test_callback_and_tool_contexts_carry_the_reference_fields() -> None:
    seen: dict[str, Any] = {}

    def look(tool_context: ToolContext) -> str:
        """Looks around."""
        seen["tool"] = reference_fields(tool_context)
        return "ok"

    def before_agent(callback_context: CallbackContext) -> None:
        seen["agent"] = reference_fields(callback_context)
        with pytest.raises(ValueError, match="CallbackContext has none; call it from a tool"):
            callback_context.request_confirmation(hint="sure?")
        assert callback_context.actions.requested_tool_confirmations == {}  # as the reference

    def before_model(callback_context: CallbackContext, llm_request: Any) -> None:
        seen.setdefault("model", reference_fields(callback_context))

    model = ScriptedModel([FunctionCall(name="look", args={}, id="c1"), "done"])
    agent = LlmAgent(
        name="a",
        model=model,
        tools=[look],
        before_agent_callback=before_agent,
        before_model_callback=before_model,
    )
    await run_once(Workflow(name="wf", edges=[("START", agent)]))
    called = (None, None, "wf@1/a@1", "1", "", 1, "wf@1/a@1", True)
    assert seen == {"agent": called, "model": called, "tool": ("c1", *called[1:])}


async def test_a_node_reads_its_run_and_the_runners_services_as_the_reference_does() -> None:
    seen: dict[str, Any] = {}

    def count_my_model_call(ctx: Context) -> str:
        invocation = ctx.get_invocation_context()
        seen["node"] = reference_fields(ctx)[:6]  # its invocation's node_path is read below
        seen["services"] = (
            invocation.session_service,
            invocation.plugin_manager.plugins,
            invocation.node_path,
        )
        with pytest.raises(ValueError, match="Context has none; call it from a tool"):
            ctx.request_confirmation(hint="sure?")
        invocation.increment_llm_call_count()
        return "go"

    agent = LlmAgent(name="a", model=ScriptedModel(["done"]))
    service = InMemorySessionService()
    root = Workflow(name="wf", edges=[("START", count_my_model_call, agent)])
    runner = Runner(app_name="x", agent=root, session_service=service)
    session = await service.create_session(app_name="x", user_id="ann")
    message = types.Content(role="user", parts=[types.Part(text="hi")])
    config = RunConfig(max_llm_calls=1)
    run = runner.run_async(
        user_id="ann", session_id=session.id, new_message=message, run_config=config
    )
    with pytest.raises(LlmCallsLimitExceededError, match="model call 2"):
        _ = [event async for event in run]
    assert seen == {
        "node": (None, None, "wf@1/count_my_model_call@1", "1", "wf", 1),
        "services": (service, (), None),
    }


def test_a_tool_context_made_by_hand_belongs_to_no_node_run_nor_call() -> None:
    context = ToolContext()
    assert (context.node_path, context.run_id, context.attempt_count, context.event_author) == (
        "",
        "",
        1,
        "",
    )
    with pytest.raises(ValueError, match="ToolContext has none; call it from a tool"):
        context.request_confirmation(hint="sure?")
    with pytest.raises(ValueError, match="made outside a run and has no invocation"):
        context.get_invocation_context()


def workflow_fields(ctx: Any) -> tuple[Any, ...]:
    """What code written for a node's `ctx` reads of it, in one tuple."""
    return (
        ctx.node,
        ctx.parent_ctx,
        ctx.resume_inputs,
        ctx.interrupt_ids,
        ctx.output,
        ctx.route,
        ctx.error,
        ctx.error_node_path,
        ctx.isolation_scope,
    )


async def test_tool_and_callback_contexts_read_a_node_contexts_fields_as_the_reference() -> None:
    # The reference's ToolContext and CallbackContext are its node Context: code written
    # for a node's ctx (a helper shared by a node and a tool) reads them there too, and
    # finds no node run of their own (probed on 2.13: None, {}, set(), "", also inside a
    # workflow).
    seen: dict[str, Any] = {}

    def look(tool_context: ToolContext) -> str:
        """Looks around."""
        seen["tool"] = workflow_fields(tool_context)
        return "ok"

    def before_agent(callback_context: CallbackContext) -> None:
        seen["agent"] = workflow_fields(callback_context)

    def node_scope(ctx: Context) -> None:
        seen["node"] = ctx.isolation_scope

    model = ScriptedModel([FunctionCall(name="look", args={}, id="c1"), "done"])
    agent = LlmAgent(name="a", model=model, tools=[look], before_agent_callback=before_agent)
    await run_once(Workflow(name="wf", edges=[("START", node_scope, agent)]))
    no_ids: set[str] = set()
    none: tuple[Any, ...] = (None, None, {}, no_ids, None, None, None, "", None)
    assert seen == {"tool": none, "agent": none, "node": None}
    assert workflow_fields(ToolContext()) == none
