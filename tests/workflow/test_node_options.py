"""`node(...)` options as the reference has them: `require_confirmation` asks a person
before the body runs, `parameter_binding="node_input"` binds from the input object, and
an option `node()` does not know is refused instead of dropped."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from baton import FunctionNode, RequestInput, Workflow, node
from baton.errors import InvalidResponseError, MissingParameterError, WorkflowChangedError
from baton.events import CONFIRMATION_SCHEMA
from baton.sessions.services import BaseSessionService, InMemorySessionService
from baton.sessions.store import InvocationStatus
from baton.workflow.graph import fingerprint_of
from tests.conftest import StoreFactory
from tests.harness import MakeHarness, asked, attach_harness, build_harness, outputs
from tests.runner.test_guarantees import snapshot


def _paying(paid: list[Any], **options: Any) -> Workflow:
    def make() -> dict[str, int]:
        return {"amount": 250}

    @node(**options)
    def pay(node_input: dict[str, int]) -> str:
        paid.append(node_input)
        return f"paid {node_input['amount']}"

    def after(node_input: Any) -> Any:
        return node_input

    return Workflow(name="wf", edges=[("START", make, pay, after)])


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_require_confirmation_asks_first_and_runs_the_body_once_confirmed(
    stores: StoreFactory, resumable: bool
) -> None:
    paid: list[Any] = []
    flow = _paying(paid, require_confirmation=True)
    h = await build_harness(flow, BaseSessionService(stores.open()), resumable=resumable)
    first = await h.start()

    iid = "wf_tool_confirmation:wf@1/pay@1"
    assert asked(first) == [iid]
    [call] = first[-1].function_calls
    assert call.args == {
        "interruptId": iid,
        "message": "Please approve or reject the tool call pay().",
        "payload": {"tool_name": "pay", "args": {"node_input": {"amount": 250}}},
        "response_schema": CONFIRMATION_SCHEMA,
    }
    assert paid == []
    assert (await h.invocation()).status == InvocationStatus.PAUSED

    # Another process (a restart) takes the answer: the question was committed.
    again = attach_harness(
        _paying(paid, require_confirmation=True),
        BaseSessionService(stores.open()),
        h.session_id,
        resumable=resumable,
    )
    events = await again.answer((iid, {"confirmed": True}))
    assert outputs(events)[-2:] == [("pay", "paid 250"), ("after", "paid 250")]
    assert paid == [{"amount": 250}]


async def test_a_rejected_node_outputs_the_rejection_and_never_runs(
    make_harness: MakeHarness,
) -> None:
    paid: list[Any] = []
    h = await make_harness(_paying(paid, require_confirmation=True))
    [iid] = asked(await h.start())
    events = await h.answer((iid, {"confirmed": False}))
    rejected = {"error": "This tool call is rejected."}
    assert outputs(events)[-2:] == [("pay", rejected), ("after", rejected)]
    assert paid == []
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_an_answer_that_is_not_a_confirmation_is_refused(make_harness: MakeHarness) -> None:
    paid: list[Any] = []
    h = await make_harness(_paying(paid, require_confirmation=True))
    [iid] = asked(await h.start())
    with pytest.raises(InvalidResponseError):
        await h.answer((iid, "yes"))
    assert paid == []
    assert (await h.invocation()).status == InvocationStatus.PAUSED


async def test_a_confirmation_predicate_asks_only_for_the_runs_it_picks(
    make_harness: MakeHarness,
) -> None:
    seen: list[Any] = []

    def large(node_input: dict[str, int], limit: int) -> bool:
        seen.append((node_input, limit))
        return node_input["amount"] > limit

    paid: list[Any] = []
    h = await make_harness(_paying(paid, require_confirmation=large), state={"limit": 500})
    events = await h.start()
    assert asked(events) == []
    assert outputs(events)[-1] == ("after", "paid 250")
    assert seen == [({"amount": 250}, 500)]

    async def always(node_input: Any) -> bool:
        return True

    h = await make_harness(_paying(paid, require_confirmation=always))
    assert asked(await h.start()) == ["wf_tool_confirmation:wf@1/pay@1"]


def test_node_refuses_an_option_it_does_not_know() -> None:
    def f(node_input: int) -> int:
        return node_input

    with pytest.raises(TypeError, match=r"unknown option\(s\) 'require_confirmaton'"):
        node(require_confirmaton=True)(f)  # pyright: ignore[reportCallIssue] -- the misspelling under test
    with pytest.raises(TypeError, match="'colour'"):
        FunctionNode(f, colour="red")  # pyright: ignore[reportCallIssue] -- the unknown field under test


def test_require_confirmation_settings_that_cannot_work_are_refused() -> None:
    def f(node_input: int) -> int:
        return node_input

    with pytest.raises(ValueError, match="node 'f' require_confirmation needs rerun_on_resume"):
        node(require_confirmation=True, rerun_on_resume=False)(f)
    with pytest.raises(TypeError, match="node 'f' require_confirmation must be .* got 'yes'"):
        FunctionNode(f, require_confirmation="yes")  # pyright: ignore[reportArgumentType] -- the bad value under test
    assert node(require_confirmation=True)(f).rerun_on_resume is True
    unset = node(require_confirmation=None)(f)
    assert isinstance(unset, FunctionNode)
    assert unset.require_confirmation is False


async def test_parameter_binding_node_input_reads_parameters_from_the_input_object() -> None:
    def make() -> dict[str, int]:
        return {"a": 1, "b": 2, "c": 3}

    @node(parameter_binding="node_input", name="add")
    def add(a: int, b: int, **rest: int) -> int:
        return a + b + 10 * sum(rest.values())

    h = await build_harness(
        Workflow(name="wf", edges=[("START", make, add)]), InMemorySessionService(), resumable=True
    )
    assert outputs(await h.start())[-1] == ("add", 33)


async def test_parameter_binding_node_input_names_a_missing_key() -> None:
    def make() -> dict[str, int]:
        return {"a": 1}

    @node(parameter_binding="node_input")
    def add(a: int, b: int) -> int:
        return a + b

    h = await build_harness(
        Workflow(name="wf", edges=[("START", make, add)]), InMemorySessionService(), resumable=True
    )
    with pytest.raises(MissingParameterError, match="node 'add' .* no key 'b'"):
        await h.start()
    with pytest.raises(ValidationError, match="parameter_binding"):
        node(parameter_binding="input")(make)  # pyright: ignore[reportArgumentType] -- the bad value under test


async def test_a_node_that_stopped_asking_for_confirmation_does_not_resume_a_run_that_asked(
    stores: StoreFactory,
) -> None:
    """`require_confirmation` is in the fingerprint, as `rerun_on_resume` is: a run that
    asked is refused by code whose node no longer asks (it would run the body although
    the person rejected it), and nothing changes; code that asks resumes it."""
    paid: list[Any] = []
    service = BaseSessionService(stores.open())
    h = await build_harness(_paying(paid, require_confirmation=True), service, resumable=True)
    await h.start()
    before = await snapshot(service, h.key)

    changed = attach_harness(
        _paying(paid, rerun_on_resume=True),
        BaseSessionService(stores.open()),
        h.session_id,
        resumable=True,
    )
    iid = "wf_tool_confirmation:wf@1/pay@1"
    with pytest.raises(WorkflowChangedError) as caught:
        await changed.answer((iid, {"confirmed": False}), wrap=False)

    invocation = await h.invocation()
    assert str(caught.value) == (
        f"workflow 'wf' changed since invocation '{invocation.id}' started: node 'pay' "
        "changed (FunctionNode(rerun, confirm) -> FunctionNode(rerun)). Resume with the "
        "code it started with, or start a new run."
    )
    assert await snapshot(service, h.key) == before
    events = await h.answer((iid, {"confirmed": False}), wrap=False)
    assert outputs(events)[-1] == ("after", {"error": "This tool call is rejected."})
    assert paid == []


async def test_a_run_started_before_confirmations_were_fingerprinted_resumes(
    stores: StoreFactory,
) -> None:
    """A run recorded without the confirmation flag (by the release before it, whose
    node asked all the same) resumes, and so does one whose node asks only now: it asks
    before its body runs."""
    paid: list[Any] = []
    service = BaseSessionService(stores.open())
    plain = _asking_first(paid, rerun_on_resume=True)
    asking = _asking_first(paid, require_confirmation=True)
    assert fingerprint_of(asking) != fingerprint_of(plain)
    h = await build_harness(plain, service, resumable=True)
    await h.start()

    later = attach_harness(asking, BaseSessionService(stores.open()), h.session_id, resumable=True)
    events = await later.answer(("first", 250))

    assert asked(events) == ["wf_tool_confirmation:wf@1/pay@1"]
    assert paid == []
    await later.answer(("wf_tool_confirmation:wf@1/pay@1", {"confirmed": True}), wrap=False)
    assert paid == [250]


def _asking_first(paid: list[Any], **options: Any) -> Workflow:
    """A question ('first'), then `pay` with its answer."""

    def first() -> RequestInput:
        return RequestInput(interrupt_id="first")

    @node(**options)
    def pay(node_input: int) -> str:
        paid.append(node_input)
        return f"paid {node_input}"

    return Workflow(name="wf", edges=[("START", first, pay)])
