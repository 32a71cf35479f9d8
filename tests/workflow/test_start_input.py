"""What START's successors receive: the user's message, bound by annotation as the reference does.

Untyped, `Any`, `object` and `types.Content` parameters get the `types.Content` itself;
`str` (and `str | None`) its text; other types its text read as JSON. A nested
workflow's first nodes get the same message, and so does a node that runs again after
a pause or a restart, on every backend.
"""

# Untyped parameters are what these tests are about: their functions stay untyped.
# pyright: reportUnknownArgumentType=false, reportUnknownVariableType=false

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from pydantic import BaseModel, JsonValue

from baton import BaseNode, Context, RequestInput, Workflow, node, types
from baton.errors import MissingParameterError
from tests.conftest import StoreFactory
from tests.harness import MakeHarness, asked, outputs
from tests.workflow.test_dynamic import open_harness, restarted

MESSAGE = '{"item": "pen", "qty": 2}'
USER_MESSAGE = types.Content(role="user", parts=[types.Part(text=MESSAGE)])


class Order(BaseModel):
    item: str
    qty: int


async def test_each_annotation_gets_the_message_as_the_reference_binds_it(
    make_harness: MakeHarness,
) -> None:
    seen: dict[str, object] = {}

    def untyped(node_input):  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType] -- untyped on purpose
        seen["untyped"] = node_input

    def any_(node_input: Any) -> None:
        seen["any"] = node_input

    def object_(node_input: object) -> None:
        seen["object"] = node_input

    def text(node_input: str) -> None:
        seen["str"] = node_input

    def maybe_text(node_input: str | None) -> None:
        seen["str | None"] = node_input

    def mapping(node_input: dict[str, Any]) -> None:
        seen["dict"] = node_input

    def model(node_input: Order) -> None:
        seen["model"] = node_input

    def content(node_input: types.Content) -> None:
        seen["content"] = node_input

    def inner_first(node_input):  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType] -- untyped on purpose
        seen["inner"] = node_input

    inner = Workflow(name="inner", edges=[("START", inner_first)])
    readers = (untyped, any_, object_, text, maybe_text, mapping, model, content, inner)
    h = await make_harness(Workflow(name="wf", edges=[("START", readers)]))
    await h.start(MESSAGE)

    assert seen == {
        "untyped": USER_MESSAGE,
        "any": USER_MESSAGE,
        "object": USER_MESSAGE,
        "str": MESSAGE,
        "str | None": MESSAGE,
        "dict": {"item": "pen", "qty": 2},
        "model": Order(item="pen", qty=2),
        "content": USER_MESSAGE,
        "inner": USER_MESSAGE,
    }


async def test_a_custom_node_and_a_returned_message_pass_the_content_on(
    make_harness: MakeHarness,
) -> None:
    class Echo(BaseNode):
        async def _run_impl(self, *, ctx: Context, node_input: Any):  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator
            assert isinstance(node_input, types.Content)
            yield types.Content(role="model", parts=[types.Part(text=f"echo {MESSAGE}")])

    h = await make_harness(Workflow(name="wf", edges=[("START", Echo(name="echo"))]))
    events = await h.start(MESSAGE)
    assert [e.content.text for e in events if e.content and e.author == "wf"] == [f"echo {MESSAGE}"]
    assert outputs(events) == []  # a message, not a JSON output


async def test_text_that_is_not_json_reaches_a_typed_parameter_as_text_or_a_clear_error(
    make_harness: MakeHarness,
) -> None:
    def count(node_input: int) -> int:
        return node_input + 1

    h = await make_harness(Workflow(name="wf", edges=[("START", count)]))
    assert outputs(await h.start("41")) == [("count", 42)]
    h = await make_harness(Workflow(name="wf", edges=[("START", count)]))
    with pytest.raises(MissingParameterError, match="'forty-one'"):
        await h.start("forty-one")


def asks_then_reports(seen: list[object]) -> Workflow:
    @node(rerun_on_resume=True)
    async def ask(ctx: Context, node_input: Any):
        seen.append(node_input)
        answer = ctx.resume_inputs.get("ok")
        if answer is None:
            yield RequestInput(interrupt_id="ok", message="go on?")
            return
        yield f"{answer}: {node_input.parts[0].text}"

    return Workflow(name="wf", edges=[("START", ask)])


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_a_rerun_after_a_restart_gets_the_same_message(
    stores: StoreFactory, resumable: bool
) -> None:
    seen: list[object] = []
    h = await open_harness(stores, asks_then_reports(seen), resumable)
    assert asked(await h.start("ship it")) == ["ok"]

    later = restarted(h, stores, asks_then_reports(seen), resumable)
    done = await later.answer(("ok", "yes"))

    message = types.Content(role="user", parts=[types.Part(text="ship it")])
    assert seen == [message, message]
    assert outputs(done) == [("ask", "yes: ship it")]


async def test_a_message_with_bytes_reaches_the_first_nodes_whole_in_a_nested_workflow_too(
    make_harness: MakeHarness,
) -> None:
    message = types.Content(
        role="user",
        parts=[
            types.Part(text="what is on it?"),
            types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\x00\xff")),
        ],
    )
    seen: dict[str, object] = {}

    def first(node_input: types.Content) -> None:
        seen["first"] = node_input

    def inner_first(node_input: types.Content) -> None:
        seen["inner"] = node_input

    inner = Workflow(name="inner", edges=[("START", inner_first)])
    h = await make_harness(Workflow(name="wf", edges=[("START", (first, inner))]))
    await h.collect(new_message=message)

    assert seen == {"first": message, "inner": message}


ANNOTATIONS: dict[str, object] = {
    "untyped": None,
    "Any": Any,
    "object": object,
    "JsonValue": JsonValue,
    "str": str,
    "str | None": str | None,
    "dict": dict[str, Any],
    "list": list[Any],
    "Order": Order,
    "Order | None": Order | None,
    "Content": types.Content,
}


def readers_of(seen: dict[str, object], labels: Iterable[str]) -> tuple[Any, ...]:
    """A node for each annotation of `ANNOTATIONS` named, as an `async def` (whose JSON
    input a run passes as it is when the annotation converts nothing) and as a plain
    `def` (bound every run); each notes what it got under its annotation and kind."""

    def both(label: str) -> tuple[Any, Any]:
        async def quick(node_input):  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType] -- annotated below
            seen[f"async {label}"] = node_input

        def bound(node_input):  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType] -- annotated below
            seen[f"def {label}"] = node_input

        for func, kind in ((quick, "async"), (bound, "def")):
            if ANNOTATIONS[label] is not None:
                func.__annotations__ = {"node_input": ANNOTATIONS[label]}
            func.__name__ = f"{kind}_{label.replace(' | ', '_or_')}"
        return node(quick), node(bound)

    return tuple(n for label in labels for n in both(label))


def same(labels: Iterable[str], value: object) -> dict[str, object]:
    return {label: value for label in labels}


def assert_both_kinds_got(seen: dict[str, object], expected: dict[str, object]) -> None:
    got = {label: seen.get(f"async {label}", "<not run>") for label in expected}
    assert got == expected
    assert got == {label: seen.get(f"def {label}", "<not run>") for label in expected}
    assert {label: type(v) for label, v in got.items()} == {
        label: type(v) for label, v in expected.items()
    }


async def test_an_async_node_gets_each_input_as_a_plain_one_does(
    make_harness: MakeHarness,
) -> None:
    """What an `async def` node receives (most of them take a JSON input passed as it is,
    without binding) is what a plain one, bound every run, receives: the user's message,
    a node's object, a pydantic model it returned, a list, a number."""
    seen: dict[str, object] = {}
    order = Order(item="pen", qty=2)
    from_message: dict[str, object] = {
        "untyped": USER_MESSAGE,
        "Any": USER_MESSAGE,
        "object": USER_MESSAGE,
        "JsonValue": {"item": "pen", "qty": 2},
        "str": MESSAGE,
        "str | None": MESSAGE,
        "dict": {"item": "pen", "qty": 2},
        "Order": order,
        "Order | None": order,
        "Content": USER_MESSAGE,
    }

    h = await make_harness(Workflow(name="wf", edges=[("START", readers_of(seen, from_message))]))
    await h.start(MESSAGE)

    assert_both_kinds_got(seen, from_message)
    untyped = ("untyped", "Any", "object", "JsonValue")
    for value, expected in (
        (
            {"item": "pen", "qty": 2},
            same((*untyped, "dict"), {"item": "pen", "qty": 2})
            | {"Order": order, "Order | None": order},
        ),
        (order, same(untyped, {"item": "pen", "qty": 2}) | {"Order": order}),
        ([1, 2.5, "x", None], same((*untyped, "list"), [1, 2.5, "x", None])),
        (2.5, same(untyped, 2.5)),
        ("pen", same((*untyped, "str", "str | None"), "pen")),
    ):
        seen.clear()

        async def produce() -> object:
            return value  # noqa: B023 -- run before the loop goes on

        wf = Workflow(name="wf", edges=[("START", produce, readers_of(seen, expected))])
        await (await make_harness(wf)).start()

        assert_both_kinds_got(seen, expected)


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
async def test_an_async_node_gets_an_input_read_back_after_a_restart_as_a_plain_one_does(
    stores: StoreFactory, resumable: bool
) -> None:
    """The input of a node that runs after a restart comes back from the store: an
    `async def` node gets it as a plain one does, on every backend."""
    seen: dict[str, object] = {}
    order = Order(item="p\u00e9n \U0001f58a", qty=2)
    value = {"order": order.model_dump(), "share": 0.1, "big": 2**53 + 1, "none": None}
    expected = same(("untyped", "Any", "object", "JsonValue", "dict"), value)

    def flow() -> Workflow:
        async def produce() -> object:
            return value

        @node(rerun_on_resume=True)
        async def ask(ctx: Context, node_input: Any) -> Any:
            if "ok" not in ctx.resume_inputs:
                return RequestInput(interrupt_id="ok", message="go on?")
            return node_input

        return Workflow(name="wf", edges=[("START", produce, ask, readers_of(seen, expected))])

    h = await open_harness(stores, flow(), resumable)
    assert asked(await h.start()) == ["ok"]
    later = restarted(h, stores, flow(), resumable)

    await later.answer(("ok", "yes"))

    assert_both_kinds_got(seen, expected)
