"""A workflow's output is its one terminal node's: several terminal outputs are refused."""

from __future__ import annotations

import pytest

from baton import Event, Workflow
from baton.errors import WorkflowConfigurationError
from baton.history import acting_node
from tests.harness import MakeHarness, outputs


def split(node_input: str) -> str:
    return node_input


def b() -> str:
    return "B"


def c() -> str:
    return "C"


def quiet() -> None:
    return None


async def test_two_terminal_nodes_with_output_fail_the_run_naming_both(
    make_harness: MakeHarness,
) -> None:
    inner = Workflow(name="inner", edges=[("START", split, (b, c))])
    h = await make_harness(Workflow(name="outer", edges=[("START", inner, quiet)]))
    with pytest.raises(WorkflowConfigurationError, match=r"'b', 'c'") as raised:
        await h.start("x")
    assert "inner" in str(raised.value)
    # Neither branch's value reached the parent as the inner workflow's output.
    assert not [e for e in h.seen if acting_node(e) == "quiet"]
    assert (await h.invocation()).status.value == "failed"


async def test_one_terminal_output_among_silent_terminals_is_the_output(
    make_harness: MakeHarness,
) -> None:
    def show(node_input: str) -> str:
        return f"got {node_input}"

    inner = Workflow(name="inner", edges=[("START", split, (b, quiet))])
    h = await make_harness(Workflow(name="outer", edges=[("START", inner, show)]))
    assert outputs(await h.start("x"))[-1] == ("show", "got B")


async def test_a_node_whose_route_matched_nothing_is_not_a_terminal(
    make_harness: MakeHarness,
) -> None:
    def pick(node_input: str) -> Event:
        return Event(output="picked", route="nowhere")

    inner = Workflow(name="inner", edges=[("START", split, (pick, b)), (pick, {"go": c})])

    def show(node_input: str) -> str:
        return f"got {node_input}"

    h = await make_harness(Workflow(name="outer", edges=[("START", inner, show)]))
    assert outputs(await h.start("x"))[-1] == ("show", "got B")
