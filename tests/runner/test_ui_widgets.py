"""`ctx.render_ui_widget(UiWidget(...))` as the reference's (google-adk 2.13.0) users call
it: in a tool, a model or agent callback, or a node. The widgets travel in the event's
`actions.render_ui_widgets`, are stored with it and read back after a restart, on every
backend; a malformed one is refused before anything is stored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import JsonValue, ValidationError

from baton import (
    Context,
    Event,
    EventActions,
    LlmAgent,
    RequestInput,
    UiWidget,
    Workflow,
    node,
)
from baton.agents import CallbackContext
from baton.events import UiWidget as EventsUiWidget
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.tools import BaseTool, ToolContext
from baton.types import FunctionCall
from tests.conftest import StoreFactory
from tests.harness import Harness, attach_harness, build_harness

TURN = [
    FunctionCall(id="c1", name="show", args={"x": 1}),
    FunctionCall(id="c2", name="show", args={"x": 2}),
]


def widget(wid: str, uri: str | None = None) -> UiWidget:
    payload: dict[str, JsonValue] = {} if uri is None else {"resource_uri": uri}
    return UiWidget(id=wid, provider="mcp" if uri else "custom", payload=payload)


def wire(wid: str, uri: str | None = None) -> dict[str, Any]:
    """A widget as `renderUiWidgets` holds it on the wire (the reference's shape)."""
    payload: dict[str, Any] = {} if uri is None else {"resource_uri": uri}
    return {"id": wid, "provider": "mcp" if uri else "custom", "payload": payload}


def widgets_of(events: list[Event]) -> list[list[dict[str, Any]]]:
    """Each event's widgets as wire JSON, for the events that carry any."""
    return [
        e.to_wire()["actions"]["renderUiWidgets"] for e in events if e.actions.render_ui_widgets
    ]


async def stored(stores: StoreFactory, h: Harness) -> list[Event]:
    """The session's events as a new store (another process) reads them."""
    session = await BaseSessionService(stores.open()).get_session(
        app_name="app", user_id="u", session_id=h.session_id
    )
    assert session is not None
    return session.events


def show(x: int, tool_context: ToolContext) -> dict[str, JsonValue]:
    """Show x.

    Args:
        x: what to show.
    """
    call = tool_context.function_call_id or ""
    tool_context.render_ui_widget(widget(call, f"ui://show/{x}"))
    return {"shown": x}


def before_tool(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> None:
    tool_context.render_ui_widget(widget(f"before-{tool_context.function_call_id}"))


def before_model(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
    callback_context.render_ui_widget(widget(f"model-{len(llm_request.contents)}"))


def before_agent(callback_context: CallbackContext) -> None:
    callback_context.render_ui_widget(widget("agent"))


async def test_widgets_of_tools_and_callbacks_land_on_their_events_and_are_stored(
    stores: StoreFactory,
) -> None:
    """As in the reference: a turn's calls' widgets on its one response event, in the
    turn's order (a before-tool callback's before its call's); a model callback's on the
    model's turn. An agent callback's get an event of their own (the reference drops
    them when the callback writes no state)."""
    agent = LlmAgent(
        name="a",
        model=ScriptedModel([TURN, "done"]),
        tools=[show],
        before_tool_callback=before_tool,
        before_model_callback=before_model,
        before_agent_callback=before_agent,
    )
    h = await build_harness(agent, BaseSessionService(stores.open()), resumable=True)

    events = await h.start()

    expected = [
        [wire("agent")],
        [wire("model-1")],
        [
            wire("before-c1"),
            wire("c1", "ui://show/1"),
            wire("before-c2"),
            wire("c2", "ui://show/2"),
        ],
        [wire("model-3")],
    ]
    assert widgets_of(events) == expected
    assert [e.content.text for e in events if e.content][-1] == "done"
    assert widgets_of(await stored(stores, h)) == expected


@node(rerun_on_resume=True)
async def asks(ctx: Context, node_input: Any):
    ctx.render_ui_widget(widget(f"asks-{len(ctx.resume_inputs)}", "ui://form"))
    if not ctx.resume_inputs:
        yield RequestInput(interrupt_id="q", message="ok?")
        return
    yield Event(message="thanks")
    ctx.render_ui_widget(widget("after-message"))
    yield ctx.resume_inputs["q"]


def quiet(ctx: Context, node_input: Any) -> None:
    ctx.render_ui_widget(widget("quiet"))


async def test_a_node_shows_its_widgets_on_its_next_event_across_a_pause_and_a_restart(
    stores: StoreFactory,
) -> None:
    """A node's widgets go on the next event it yields, the rest on its output event or
    on an event of their own (the reference drops a node's widgets); the resumed run
    renders again, in a new process."""
    wf = Workflow(name="wf", edges=[("START", asks, quiet)])
    h = await build_harness(wf, BaseSessionService(stores.open()), resumable=True)

    first = await h.start()
    assert widgets_of(first) == [[wire("asks-0", "ui://form")]]
    assert first[0].long_running_tool_ids == {"q"}

    restarted = attach_harness(wf, BaseSessionService(stores.open()), h.session_id, resumable=True)
    second = await restarted.answer(("q", "yes"))

    assert [(e.content.text if e.content else e.output) for e in second] == [
        "thanks",
        "yes",
        None,
    ]
    assert widgets_of(second) == [
        [wire("asks-1", "ui://form")],
        [wire("after-message")],
        [wire("quiet")],
    ]
    assert widgets_of(await stored(stores, h)) == widgets_of(first) + widgets_of(second)


def twice(ctx: Context, node_input: Any) -> str:
    ctx.render_ui_widget(widget("w"))
    ctx.render_ui_widget(widget("w"))
    return "never"


def not_a_widget(ctx: Context, node_input: Any) -> str:
    ctx.render_ui_widget({"id": "w", "provider": "mcp"})  # pyright: ignore[reportArgumentType] -- the bad input under test
    return "never"


@pytest.mark.parametrize(
    ("bad", "error", "words"),
    [
        (twice, ValueError, ["'w' was already rendered", "node run 'wf@1/bad@1'"]),
        (not_a_widget, TypeError, ["takes a UiWidget, not dict", "'provider': 'mcp'"]),
    ],
    ids=["duplicate", "dict"],
)
async def test_a_node_rendering_a_bad_widget_fails_and_stores_no_widget(
    stores: StoreFactory, bad: Callable[..., str], error: type[Exception], words: list[str]
) -> None:
    wf = Workflow(name="wf", edges=[("START", node(bad, name="bad"))])
    h = await build_harness(wf, BaseSessionService(stores.open()), resumable=True)

    with pytest.raises(error) as failed:
        await h.start()

    assert all(w in str(failed.value) for w in words), str(failed.value)
    events = await stored(stores, h)
    assert [e.error_code for e in events if e.error_code] == [error.__name__]
    assert widgets_of(events) == []


async def test_a_tool_rendering_a_widget_id_twice_is_refused(stores: StoreFactory) -> None:
    """The reference's rule: one id per event; the tool fails, as the reference's does,
    and no widget of the failed call is kept."""

    def twice_tool(tool_context: ToolContext) -> str:
        """Show twice."""
        tool_context.render_ui_widget(widget("same"))
        tool_context.render_ui_widget(widget("same"))
        return "never"

    call = FunctionCall(id="c1", name="twice_tool", args={})
    agent = LlmAgent(name="a", model=ScriptedModel([[call], "done"]), tools=[twice_tool])
    h = await build_harness(agent, BaseSessionService(stores.open()), resumable=True)

    with pytest.raises(
        ValueError, match="'same' was already rendered by tool call 'c1' of agent 'a'"
    ):
        await h.start()

    assert widgets_of(await stored(stores, h)) == []


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"id": "", "provider": "mcp"}, ["id is empty"]),
        ({"id": "w", "provider": " "}, ["provider is empty"]),
        ({"id": "w"}, ["provider", "Field required"]),
        ({"id": "w", "provider": "mcp", "payload": ["ui://x"]}, ["payload"]),
        ({"id": "w", "provider": "mcp", "payload": {"at": object()}}, ["payload.at"]),
        ({"id": "w", "provider": "mcp", "uri": "ui://x"}, ["uri", "Extra inputs"]),
    ],
    ids=["empty-id", "blank-provider", "no-provider", "list-payload", "not-json", "unknown"],
)
def test_a_malformed_widget_is_refused_by_name(fields: dict[str, Any], words: list[str]) -> None:
    with pytest.raises(ValidationError) as refused:
        UiWidget(**fields)
    assert all(w in str(refused.value) for w in words), str(refused.value)
    # The same fields on an event's actions (as a client's JSON brings them).
    with pytest.raises(ValidationError) as on_event:
        Event.from_wire({"author": "a", "actions": {"renderUiWidgets": [fields]}})
    assert "renderUiWidgets" in str(on_event.value) or "render_ui_widgets" in str(on_event.value)


def test_widgets_round_trip_the_reference_wire_shape() -> None:
    """camelCase `renderUiWidgets`, each widget with id, provider and payload (kept as
    given, snake_case keys included), as the reference's api_server sends them."""
    widgets: list[JsonValue] = [
        {"id": "c1", "provider": "mcp", "payload": {"resource_uri": "ui://x", "tool": {}}}
    ]
    event = Event.from_wire({"author": "a", "actions": {"renderUiWidgets": widgets}})
    assert event.actions.render_ui_widgets == [
        UiWidget(id="c1", provider="mcp", payload={"resource_uri": "ui://x", "tool": {}})
    ]
    assert event.to_wire()["actions"]["renderUiWidgets"] == widgets
    assert EventActions(render_ui_widgets=[]).render_ui_widgets == []
    assert EventsUiWidget is UiWidget


async def test_an_event_without_widgets_has_none_on_the_wire(
    stores: StoreFactory,
) -> None:
    h = await build_harness(
        Workflow(name="wf", edges=[("START", quiet_free)]),
        BaseSessionService(stores.open()),
        resumable=True,
    )
    events = await h.start()
    assert all("renderUiWidgets" not in e.to_wire()["actions"] for e in events)


def quiet_free(node_input: Any) -> str:
    return "x"
