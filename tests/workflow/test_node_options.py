"""`node(...)` options as the reference has them: `require_confirmation` asks a person
before the body runs, `parameter_binding="node_input"` binds from the input object, and
an option `node()` does not know is refused instead of dropped."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from baton import FunctionNode, Workflow, node
from baton.errors import InvalidResponseError, MissingParameterError
from baton.events import CONFIRMATION_SCHEMA
from baton.sessions.services import BaseSessionService, InMemorySessionService
from baton.sessions.store import InvocationStatus
from tests.conftest import StoreFactory
from tests.harness import MakeHarness, asked, attach_harness, build_harness, outputs


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
