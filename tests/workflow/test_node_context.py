"""What a node run's Context holds besides its own run, as the reference's: `parent_ctx`
(the runs above it) and `actions` (what its next event carries)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, MutableMapping
from typing import Any, cast

import pytest
from pydantic import JsonValue

from baton import (
    App,
    BaseArtifactService,
    BaseNode,
    Context,
    Event,
    FunctionNode,
    RequestInput,
    ResumabilityConfig,
    Runner,
    Workflow,
    types,
)
from baton.errors import NodeActionError, StateDeleteError
from baton.sessions.services import BaseSessionService
from tests.conftest import StoreFactory
from tests.harness import Harness, MakeHarness, asked, attach_harness, build_harness, outputs

Chain = list[tuple[str, str, str | None, str]]


def chain(ctx: Context) -> Chain:
    """(node path, run id, node name, event author) of `ctx` and every context above it."""
    found: Chain = []
    at: Context | None = ctx
    while at is not None:
        found.append((at.node_path, at.run_id, at.node.name if at.node else None, at.event_author))
        at = at.parent_ctx
    return found


ROOT = ("", "", None, "")


async def test_a_node_reads_the_runs_above_it_from_ctx_parent_ctx_as_in_the_reference(
    make_harness: MakeHarness,
) -> None:
    seen: dict[str, Chain] = {}

    def first(ctx: Context, node_input: Any) -> str:
        seen["first"] = chain(ctx)
        return "a"

    def leaf(ctx: Context, node_input: Any) -> str:
        seen[f"leaf in {ctx.parent_ctx.node_path if ctx.parent_ctx else None}"] = chain(ctx)
        return "b"

    class Custom(BaseNode):
        async def _run_impl(self, *, ctx: Context, node_input: Any) -> AsyncIterator[Any]:
            seen["custom"] = chain(ctx)
            yield "c"

    async def caller(ctx: Context, node_input: Any) -> Any:
        return await ctx.run_node(leaf, node_input="z")

    inner = Workflow(name="inner", edges=[("START", leaf, Custom(name="custom"))])
    outer = Workflow(
        name="outer",
        edges=[("START", first, inner, FunctionNode(caller, rerun_on_resume=True))],
    )
    h = await make_harness(outer)
    await h.start()

    # What the reference's contexts hold, probed with google-adk 2.13 for the same graph.
    outer_run = ("outer@1", "1", "outer", "outer")
    inner_run = ("outer@1/inner@1", "1", "inner", "inner")
    assert seen == {
        "first": [("outer@1/first@1", "1", "first", "outer"), outer_run, ROOT],
        "leaf in outer@1/inner@1": [
            ("outer@1/inner@1/leaf@1", "1", "leaf", "inner"),
            inner_run,
            outer_run,
            ROOT,
        ],
        "custom": [
            ("outer@1/inner@1/custom@1", "1", "custom", "inner"),
            inner_run,
            outer_run,
            ROOT,
        ],
        "leaf in outer@1/caller@1": [
            ("outer@1/caller@1/leaf@1", "1", "leaf", "outer"),
            ("outer@1/caller@1", "1", "caller", "outer"),
            outer_run,
            ROOT,
        ],
    }


async def test_a_root_node_run_has_the_invocations_root_context_as_its_parent(
    make_harness: MakeHarness,
) -> None:
    seen: list[Chain] = []

    def alone(ctx: Context, node_input: Any) -> str:
        seen.append(chain(ctx))
        assert ctx.parent_ctx is ctx.parent_ctx  # made once
        return "done"

    h = await make_harness(FunctionNode(alone))
    await h.start()

    assert seen == [[("alone@1", "1", "alone", ""), ROOT]]


def _asking_in_a_nested_workflow(seen: list[Chain]) -> Workflow:
    async def ask(ctx: Context, node_input: Any) -> AsyncIterator[Any]:
        seen.append(chain(ctx))
        if "ok" not in ctx.resume_inputs:
            yield RequestInput(interrupt_id="ok", message="go on?")
            return
        yield ctx.resume_inputs["ok"]

    inner = Workflow(name="inner", edges=[("START", FunctionNode(ask, rerun_on_resume=True))])
    return Workflow(name="outer", edges=[("START", inner)])


async def test_a_node_resumed_after_a_restart_sees_the_same_parent_ctx_chain(
    stores: StoreFactory,
) -> None:
    seen: list[Chain] = []
    h = await build_harness(
        _asking_in_a_nested_workflow(seen), BaseSessionService(stores.open()), resumable=True
    )
    assert asked(await h.start()) == ["ok"]

    restarted = attach_harness(
        _asking_in_a_nested_workflow(seen),
        BaseSessionService(stores.open()),
        h.session_id,
        resumable=True,
    )
    events = await restarted.answer(("ok", "yes"))

    assert outputs(events)[0] == ("ask", "yes")
    expected = [
        ("outer@1/inner@1/ask@1", "1", "ask", "inner"),
        ("outer@1/inner@1", "1", "inner", "inner"),
        ("outer@1", "1", "outer", "outer"),
        ROOT,
    ]
    assert seen == [expected, expected]


async def test_ctx_actions_state_delta_is_the_runs_state_writes_not_yet_on_an_event(
    make_harness: MakeHarness,
) -> None:
    seen: list[dict[str, JsonValue]] = []

    async def write(ctx: Context, node_input: Any) -> AsyncIterator[Any]:
        ctx.state["a"] = 1
        ctx.actions.state_delta["b"] = 2  # a write through the delta is a state write
        ctx.actions.state_delta.update({"c": 3})
        seen.append(dict(ctx.actions.state_delta))
        seen.append({"b": ctx.state["b"], "c": ctx.state["c"]})
        yield Event(message="written")  # carries the writes: the delta is empty again
        seen.append(dict(ctx.actions.state_delta))
        ctx.actions.state_delta = {"d": 4}  # each key written; the earlier writes stay
        ctx.state["e"] = 5
        seen.append(dict(ctx.actions.state_delta))
        yield "out"

    h = await make_harness(Workflow(name="wf", edges=[("START", write)]))
    events = await h.start()

    assert seen == [{"a": 1, "b": 2, "c": 3}, {"b": 2, "c": 3}, {}, {"d": 4, "e": 5}]
    deltas = [e.actions.state_delta for e in events if e.actions.state_delta]
    assert deltas == [{"a": 1, "b": 2, "c": 3}, {"d": 4, "e": 5}]
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state == {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}


async def test_ctx_actions_route_routes_as_ctx_route_does(make_harness: MakeHarness) -> None:
    def decide(ctx: Context, node_input: Any) -> str:
        ctx.actions.route = "no"
        assert ctx.route == "no"
        return "decided"

    def yes(node_input: Any) -> str:
        return "took yes"

    def no(node_input: Any) -> str:
        return "took no"

    h = await make_harness(Workflow(name="wf", edges=[("START", decide, {"yes": yes, "no": no})]))

    assert outputs(await h.start()) == [("decide", "decided"), ("no", "took no")]


async def test_ctx_actions_artifact_delta_shows_the_versions_the_run_saved(
    stores: StoreFactory,
) -> None:
    seen: list[dict[str, int]] = []

    async def save(ctx: Context, node_input: Any) -> str:
        seen.append(dict(ctx.actions.artifact_delta))
        await ctx.save_artifact("a.txt", types.Part.from_text(text="one"))
        await ctx.save_artifact("a.txt", types.Part.from_text(text="two"))
        seen.append(dict(ctx.actions.artifact_delta))
        return "saved"

    store = stores.open()
    runner = Runner(
        app=App(
            name="app",
            root_agent=Workflow(name="wf", edges=[("START", save)]),
            resumability_config=ResumabilityConfig(is_resumable=True),
        ),
        session_service=BaseSessionService(store),
        artifact_service=BaseArtifactService(store),
    )
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    events = await Harness(runner, runner.session_service, session.id).start()

    assert seen == [{}, {"a.txt": 1}]
    assert [e.actions.artifact_delta for e in events if e.actions.artifact_delta] == [{"a.txt": 1}]


def write_into(view: Mapping[str, Any], key: str, value: object) -> None:
    """`view[key] = value`, as user code written for the reference's dicts does."""
    cast(MutableMapping[str, Any], view)[key] = value


REFUSED: list[tuple[Callable[[Context], None], str, str]] = [
    (lambda ctx: setattr(ctx.actions, "escalate", True), "escalate = True", "route out of it"),
    (
        lambda ctx: setattr(ctx.actions, "skip_summarization", True),
        "skip_summarization = True",
        "tool_context.actions",
    ),
    (
        lambda ctx: setattr(ctx.actions, "transfer_to_agent", "helper"),
        "transfer_to_agent = 'helper'",
        "route to the agent's node",
    ),
    (
        lambda ctx: setattr(ctx.actions, "end_of_agent", True),
        "end_of_agent = True",
        "checkpoints a node run",
    ),
    (
        lambda ctx: setattr(ctx.actions, "agent_state", {"step": 1}),
        "agent_state = {'step': 1}",
        "set_agent_state",
    ),
    (
        lambda ctx: setattr(ctx.actions, "rewind_before_invocation_id", "inv-1"),
        "rewind_before_invocation_id = 'inv-1'",
        "Runner.rewind_async",
    ),
    (
        lambda ctx: write_into(ctx.actions.artifact_delta, "a.txt", 3),
        "artifact_delta['a.txt'] = 3",
        "ctx.save_artifact",
    ),
    (
        lambda ctx: write_into(ctx.actions.requested_tool_confirmations, "fc-1", {}),
        "requested_tool_confirmations['fc-1'] = {}",
        "RequestInput",
    ),
    (
        lambda ctx: write_into(ctx.actions.requested_auth_configs, "fc-1", {}),
        "requested_auth_configs['fc-1'] = {}",
        "tool_context.request_credential",
    ),
]


@pytest.mark.parametrize(
    ("act", "shown", "advice"), REFUSED, ids=[shown.split(" ")[0] for _, shown, _ in REFUSED]
)
async def test_an_action_only_agents_or_tools_take_is_refused_in_a_node_run(
    make_harness: MakeHarness, act: Callable[[Context], None], shown: str, advice: str
) -> None:
    ran: list[str] = []

    def step(ctx: Context, node_input: Any) -> str:
        ctx.state["written"] = True
        act(ctx)
        return "out"

    def after(node_input: Any) -> str:
        ran.append("after")
        return "after"

    h = await make_harness(Workflow(name="wf", edges=[("START", step, after)]))

    with pytest.raises(NodeActionError) as raised:
        await h.start()

    message = str(raised.value)
    assert f"node run 'wf@1/step@1' set ctx.actions.{shown}" in message
    assert advice in message
    assert ran == []
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state == {}
    failed = [e for e in session.events if e.error_code]
    assert [(e.error_code, e.node_info and e.node_info.path) for e in failed] == [
        ("NodeActionError", "wf@1/step@1")
    ]


async def test_node_actions_set_to_their_defaults_ask_for_nothing(
    make_harness: MakeHarness,
) -> None:
    def step(ctx: Context, node_input: Any) -> str:
        ctx.actions.escalate = False
        ctx.actions.skip_summarization = None
        ctx.actions.transfer_to_agent = None
        assert ctx.actions.escalate is None
        assert ctx.actions.transfer_to_agent is None
        assert dict(ctx.actions.requested_auth_configs) == {}
        assert ctx.actions.render_ui_widgets is None
        return "out"

    h = await make_harness(Workflow(name="wf", edges=[("START", step)]))

    assert outputs(await h.start()) == [("step", "out")]


async def test_bad_writes_through_ctx_actions_state_delta_are_refused(
    make_harness: MakeHarness,
) -> None:
    errors: list[BaseException] = []

    def step(ctx: Context, node_input: Any) -> str:
        ctx.state["kept"] = 1
        for bad in (
            lambda: ctx.actions.state_delta.pop("kept"),
            lambda: ctx.actions.state_delta.__delitem__("kept"),
            lambda: setattr(ctx.actions, "state_delta", ["not", "a", "mapping"]),
            lambda: ctx.actions.state_delta.__setitem__("f", object()),
        ):
            with pytest.raises((StateDeleteError, TypeError)) as raised:
                bad()
            errors.append(raised.value)
        return "out"

    h = await make_harness(Workflow(name="wf", edges=[("START", step)]))
    events = await h.start()

    assert [type(e).__name__ for e in errors] == [
        "StateDeleteError",
        "StateDeleteError",
        "TypeError",
        "TypeError",
    ]
    assert "state key 'kept' cannot be deleted" in str(errors[0])
    assert "ctx.actions.state_delta of node run 'wf@1/step@1' takes a mapping" in str(errors[2])
    assert "state value 'f'" in str(errors[3])
    assert [e.actions.state_delta for e in events if e.actions.state_delta] == [{"kept": 1}]


async def test_a_refused_action_commits_nothing_of_the_run_on_every_backend(
    stores: StoreFactory,
) -> None:
    """A run that sets an action a node may not take fails as a run whose code raised: its
    state writes and output are not stored, the node after it does not run, and a new
    process reading the session finds only the failure."""
    ran: list[str] = []

    def step(ctx: Context, node_input: Any) -> str:
        ctx.state["written"] = True
        ctx.actions.escalate = True
        return "out"

    def after(node_input: Any) -> str:
        ran.append("after")
        return "after"

    flow = Workflow(name="wf", edges=[("START", step, after)])
    h = await build_harness(flow, BaseSessionService(stores.open()), resumable=True)

    with pytest.raises(NodeActionError, match=r"node run 'wf@1/step@1' set ctx.actions.escalate"):
        await h.start()

    assert ran == []
    fresh = BaseSessionService(stores.open())
    session = await fresh.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state == {}
    assert [e.output for e in session.events if e.output is not None] == []
    assert [
        (e.error_code, e.node_info and e.node_info.path) for e in session.events if e.error_code
    ] == [("NodeActionError", "wf@1/step@1")]
