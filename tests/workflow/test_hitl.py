"""The interrupt / persist / resume / continue lifecycle (DESIGN §2, seed 000's tables)."""

from __future__ import annotations

import itertools
import json
import uuid
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from baton import Context, Event, FunctionNode, JoinNode, RequestInput, Workflow
from baton.events import REQUEST_INPUT_FUNCTION
from baton.sessions.store import InterruptStatus, InvocationStatus
from baton.types import InvocationId
from tests.harness import Counter, MakeHarness, asked, outputs


async def test_interrupt_event_has_the_reference_wire_shape(make_harness: MakeHarness) -> None:
    class Decision(BaseModel):
        approved: bool

    async def approval(ctx: Context, node_input: str):
        yield RequestInput(
            interrupt_id="approve",
            message="Approve?",
            payload={"amount": 12},
            response_schema=Decision,
        )

    h = await make_harness(Workflow(name="wf", edges=[("START", approval)]))
    events = await h.start()
    wire = events[-1].to_wire()
    assert wire["content"] == {
        "role": "model",
        "parts": [
            {
                "functionCall": {
                    "id": "approve",
                    "name": REQUEST_INPUT_FUNCTION,
                    "args": {
                        "interruptId": "approve",
                        "payload": {"amount": 12},
                        "message": "Approve?",
                        "response_schema": Decision.model_json_schema(),
                    },
                }
            }
        ],
    }
    assert wire["longRunningToolIds"] == ["approve"]
    assert wire["author"] == "wf"  # the enclosing workflow signs it, as in the reference
    assert wire["nodeInfo"] == {"path": "wf@1/approval@1", "runId": "1"}
    assert (await h.invocation()).status == InvocationStatus.PAUSED


async def test_interrupt_id_defaults_to_a_uuid(make_harness: MakeHarness) -> None:
    def ask() -> RequestInput:
        return RequestInput(message="?")

    h = await make_harness(Workflow(name="wf", edges=[("START", ask)]))
    [iid] = asked(await h.start())
    assert uuid.UUID(iid)


async def test_returned_request_input_pauses_and_answer_becomes_output(
    make_harness: MakeHarness,
) -> None:
    counter = Counter()

    def ask() -> RequestInput:
        counter.bump("ask")
        return RequestInput(interrupt_id="q", message="Name?")

    def greet(node_input: str) -> str:
        counter.bump("greet")
        return f"hello {node_input}"

    h = await make_harness(Workflow(name="wf", edges=[("START", ask, greet)]))
    assert asked(await h.start()) == ["q"]
    events = await h.answer(("q", "Ada"))
    assert outputs(events) == [("ask", "Ada"), ("greet", "hello Ada")]
    assert counter.runs == {"ask": 1, "greet": 1}
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_rerun_false_waits_for_all_answers_then_outputs_them_by_id(
    make_harness: MakeHarness,
) -> None:
    counter = Counter()

    async def two_questions(ctx: Context):
        counter.bump("ask")
        yield RequestInput(interrupt_id="a")
        yield RequestInput(interrupt_id="b")

    def after(node_input: Any) -> Any:
        return node_input

    node = FunctionNode(two_questions, rerun_on_resume=False)
    h = await make_harness(Workflow(name="wf", edges=[("START", node, after)]))
    assert asked(await h.start()) == ["a", "b"]
    assert await h.answer(("a", "A")) == []
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    events = await h.answer(("b", "B"))
    assert outputs(events) == [
        ("two_questions", {"a": "A", "b": "B"}),
        ("after", {"a": "A", "b": "B"}),
    ]
    assert counter.runs == {"ask": 1}


async def test_rerun_true_reexecutes_on_partial_answers_without_repeating_questions(
    make_harness: MakeHarness,
) -> None:
    seen_inputs: list[dict[str, Any]] = []

    async def two_questions(ctx: Context):
        seen_inputs.append(dict(ctx.resume_inputs))
        if len(ctx.resume_inputs) == 2:
            yield Event(output=ctx.resume_inputs["a"] + ctx.resume_inputs["b"])
            return
        yield RequestInput(interrupt_id="a")
        yield RequestInput(interrupt_id="b")

    h = await make_harness(Workflow(name="wf", edges=[("START", two_questions)]))
    assert asked(await h.start()) == ["a", "b"]
    partial = await h.answer(("a", "A"))
    assert asked(partial) == []  # b is still open: no second function call for it
    assert seen_inputs == [{}, {"a": "A"}]
    done = await h.answer(("b", "B"))
    assert outputs(done) == [("two_questions", "AB")]
    assert seen_inputs[-1] == {"a": "A", "b": "B"}


async def test_both_answers_in_one_message_rerun_once(make_harness: MakeHarness) -> None:
    runs: list[dict[str, Any]] = []

    async def two_questions(ctx: Context):
        runs.append(dict(ctx.resume_inputs))
        if ctx.resume_inputs:
            yield Event(output=sorted(ctx.resume_inputs))
            return
        yield RequestInput(interrupt_id="a")
        yield RequestInput(interrupt_id="b")

    h = await make_harness(Workflow(name="wf", edges=[("START", two_questions)]))
    await h.start()
    events = await h.answer(("a", 1), ("b", 2))
    assert outputs(events) == [("two_questions", ["a", "b"])]
    assert runs == [{}, {"a": 1, "b": 2}]


async def test_parallel_branches_answered_branch_continues_others_keep_waiting(
    make_harness: MakeHarness,
) -> None:
    counter = Counter()

    def fan() -> str:
        counter.bump("fan")
        return "x"

    def ask1() -> RequestInput:
        counter.bump("ask1")
        return RequestInput(interrupt_id="one")

    def ask2() -> RequestInput:
        counter.bump("ask2")
        return RequestInput(interrupt_id="two")

    def after1(node_input: Any) -> str:
        counter.bump("after1")
        return f"after1:{node_input}"

    def after2(node_input: Any) -> str:
        counter.bump("after2")
        return f"after2:{node_input}"

    join = JoinNode(name="join")

    def final(node_input: dict[str, Any]) -> dict[str, Any]:
        counter.bump("final")
        return node_input

    wf = Workflow(
        name="wf",
        edges=[
            ("START", fan, (ask1, ask2)),
            (ask1, after1, join),
            (ask2, after2, join),
            (join, final),
        ],
    )
    h = await make_harness(wf)
    assert sorted(asked(await h.start())) == ["one", "two"]
    first = await h.answer(("two", "B"))
    assert outputs(first) == [("ask2", "B"), ("after2", "after2:B")]
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    second = await h.answer(("one", "A"))
    assert outputs(second)[-1] == ("final", {"after2": "after2:B", "after1": "after1:A"})
    assert counter.runs == dict.fromkeys(["fan", "ask1", "ask2", "after1", "after2", "final"], 1)


async def test_interrupt_inside_nested_workflow_resumes_inner_node(
    make_harness: MakeHarness,
) -> None:
    counter = Counter()

    def before() -> str:
        counter.bump("before")
        return "in"

    def inner_ask() -> RequestInput:
        counter.bump("inner_ask")
        return RequestInput(interrupt_id="deep")

    def inner_after(node_input: Any) -> str:
        return f"inner:{node_input}"

    def outer_after(node_input: Any) -> str:
        counter.bump("outer_after")
        return f"outer:{node_input}"

    inner = Workflow(name="inner", edges=[("START", inner_ask, inner_after)])
    outer = Workflow(name="outer", edges=[("START", before, inner, outer_after)])
    h = await make_harness(outer)
    events = await h.start()
    assert asked(events) == ["deep"]
    assert events[-1].node_info
    assert events[-1].node_info.path == "outer@1/inner@1/inner_ask@1"
    done = await h.answer(("deep", "yes"))
    assert outputs(done) == [
        ("inner_ask", "yes"),
        ("inner_after", "inner:yes"),
        ("outer_after", "outer:inner:yes"),
    ]
    assert counter.runs == {"before": 1, "inner_ask": 1, "outer_after": 1}


async def test_output_and_interrupt_in_one_run_carry_forward(make_harness: MakeHarness) -> None:
    runs: list[tuple[Any, dict[str, Any]]] = []

    async def both(ctx: Context):
        runs.append((ctx.output, dict(ctx.resume_inputs)))
        if not ctx.resume_inputs:
            yield Event(output="draft")
            yield RequestInput(interrupt_id="more")

    def after(node_input: Any) -> Any:
        return node_input

    node = FunctionNode(both, rerun_on_resume=True)
    h = await make_harness(Workflow(name="wf", edges=[("START", node, after)]))
    events = await h.start()
    assert outputs(events) == [("both", "draft")]
    done = await h.answer(("more", "ok"))
    assert runs == [(None, {}), ("draft", {"more": "ok"})]
    assert outputs(done) == [("after", "draft")]


async def test_resumed_node_keeps_its_run_id_fresh_dispatch_gets_new_one(
    make_harness: MakeHarness,
) -> None:
    seen: list[tuple[str, str]] = []

    async def form(ctx: Context):
        seen.append((ctx.run_id, ctx.node_path))
        if "q" in ctx.resume_inputs:
            yield Event(output=ctx.resume_inputs["q"])
            return
        yield RequestInput(interrupt_id="q")

    h = await make_harness(Workflow(name="wf", edges=[("START", form)]))
    await h.start()
    await h.answer(("q", 1))
    assert seen == [("1", "wf@1/form@1"), ("1", "wf@1/form@1")]
    second = await h.start()
    assert second[-1].node_info
    assert second[-1].node_info.path == "wf@1/form@1"
    assert second[-1].invocation_id != h.seen[0].invocation_id


async def test_multi_step_form_from_seed_004(make_harness: MakeHarness) -> None:
    async def multi_step_form(ctx: Context, node_input: str):
        if not ctx.resume_inputs:
            yield RequestInput(interrupt_id="ask_name", message="What is your name?")
            return
        if "ask_name" in ctx.resume_inputs and "ask_email" not in ctx.resume_inputs:
            yield RequestInput(interrupt_id="ask_email", message="What is your email?")
            return
        name = ctx.resume_inputs["ask_name"]
        email = ctx.resume_inputs["ask_email"]
        yield Event(output={"name": name, "email": email})

    h = await make_harness(Workflow(name="wf", edges=[("START", multi_step_form)]))
    assert asked(await h.start()) == ["ask_name"]
    assert asked(await h.answer(("ask_name", "Ada"))) == ["ask_email"]
    done = await h.answer(("ask_email", "ada@example.com"))
    assert outputs(done) == [("multi_step_form", {"name": "Ada", "email": "ada@example.com"})]


class ApprovalSchema(BaseModel):
    approved: bool


@pytest.mark.parametrize("reuse_id", [False, True])
async def test_review_loop_with_counter_or_reused_ids(
    make_harness: MakeHarness, reuse_id: bool
) -> None:
    counter = Counter()

    def draft(node_input: Any) -> str:
        counter.bump("draft")
        return f"plan v{counter.runs['draft']}"

    async def review(ctx: Context, node_input: Any):
        review_count = ctx.state.get("review_count", 0)
        interrupt_id = "review" if reuse_id else f"review_{review_count}"
        response = ctx.resume_inputs.get(interrupt_id)
        if response:
            route = "approved" if response.get("approved") else "rejected"
            yield Event(output=response, route=route, state={"review_count": review_count + 1})
            return
        yield RequestInput(
            interrupt_id=interrupt_id, message="Approve this plan?", response_schema=ApprovalSchema
        )

    def publish(node_input: Any) -> str:
        counter.bump("publish")
        return "published"

    wf = Workflow(
        name="wf",
        edges=[("START", draft, review), (review, {"approved": publish, "rejected": draft})],
    )
    h = await make_harness(wf)
    first = asked(await h.start())
    second = asked(await h.answer((first[0], {"approved": False}), wrap=False))
    third = asked(await h.answer((second[0], {"approved": False}), wrap=False))
    done = await h.answer((third[0], {"approved": True}), wrap=False)
    expected_ids = ["review"] * 3 if reuse_id else ["review_0", "review_1", "review_2"]
    assert [*first, *second, *third] == expected_ids
    assert outputs(done)[-1] == ("publish", "published")
    assert counter.runs == {"draft": 3, "publish": 1}
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state["review_count"] == 3


async def test_result_wrapper_unwraps_and_objects_pass_as_is(make_harness: MakeHarness) -> None:
    async def ask(ctx: Context):
        if ctx.resume_inputs:
            yield Event(output=dict(ctx.resume_inputs))
            return
        yield RequestInput(interrupt_id="x")
        yield RequestInput(interrupt_id="y")

    h = await make_harness(Workflow(name="wf", edges=[("START", ask)]))
    await h.start()
    events = await h.answer(("x", [1, 2]), ("y", {"k": "v", "result": 3}), wrap=True)
    assert outputs(events) == [("ask", {"x": [1, 2], "y": {"k": "v", "result": 3}})]


async def test_resume_by_invocation_id_alone_continues_after_failure(
    make_harness: MakeHarness,
) -> None:
    counter = Counter()
    fail = {"once": True}

    def step1() -> str:
        counter.bump("step1")
        return "one"

    def step2(node_input: Any) -> str:
        counter.bump("step2")
        if fail["once"]:
            fail["once"] = False
            raise RuntimeError("flaky downstream")
        return f"{node_input}+two"

    h = await make_harness(Workflow(name="wf", edges=[("START", step1, step2)]))
    with pytest.raises(RuntimeError, match="flaky downstream"):
        await h.start()
    invocation = await h.invocation()
    assert invocation.status == InvocationStatus.FAILED
    errors = [e for e in h.seen if e.error_code]
    assert errors == []  # the error event is stored, though run_async raised before yielding it
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert [e.error_code for e in session.events if e.error_code] == ["RuntimeError"]
    events = await h.collect(invocation_id=invocation.id)
    assert outputs(events) == [("step2", "one+two")]
    assert counter.runs == {"step1": 1, "step2": 2}
    assert (await h.load(InvocationId(invocation.id))) is not None


async def test_index_rows_follow_the_lifecycle(make_harness: MakeHarness) -> None:
    async def ask(ctx: Context, node_input: str):
        yield RequestInput(interrupt_id="q", message="why?", payload={"p": 1}, response_schema=int)

    h = await make_harness(Workflow(name="wf", edges=[("START", ask)]))
    await h.start()
    store = h.service.store
    [row] = await store.list_interrupts("app", "u")
    assert (row.interrupt_id, row.message, row.payload, row.response_schema) == (
        "q",
        "why?",
        {"p": 1},
        {"type": "integer"},
    )
    assert row.node_path == "wf@1/ask@1"
    await h.collect(
        new_message=__import__("baton").types.Content(
            role="user",
            parts=[
                __import__("baton").types.Part(
                    function_response=__import__("baton").types.FunctionResponse(
                        id="q", name=REQUEST_INPUT_FUNCTION, response={"result": "7"}
                    )
                )
            ],
        ),
        answered_by="alice",
    )
    assert await store.list_interrupts("app", "u") == []
    [answered] = await store.list_interrupts("app", "u", status=InterruptStatus.ANSWERED)
    assert (answered.answer, answered.answered_by) == (7, "alice")


async def test_implicit_fan_in_gets_each_branch_output_across_resumes(
    make_harness: MakeHarness,
) -> None:
    seen: list[str] = []

    def ask1() -> RequestInput:
        return RequestInput(interrupt_id="one")

    def ask2() -> RequestInput:
        return RequestInput(interrupt_id="two")

    def after1(node_input: str) -> str:
        return f"after1:{node_input}"

    def after2(node_input: str) -> str:
        return f"after2:{node_input}"

    def final(node_input: str) -> str:
        seen.append(node_input)
        return node_input

    wf = Workflow(
        name="wf",
        edges=[("START", (ask1, ask2)), (ask1, after1), (ask2, after2), ((after1, after2), final)],
    )
    h = await make_harness(wf)
    await h.start()
    await h.answer(("one", "A"))
    await h.answer(("two", "B"))
    assert seen == ["after1:A", "after2:B"]
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


async def test_checkpoint_holds_the_frontier_not_the_history(make_harness: MakeHarness) -> None:
    async def ask(ctx: Context):
        n = ctx.state.get("n", 0)
        answer = ctx.resume_inputs.get(f"q{n}")
        if answer is None:
            yield RequestInput(interrupt_id=f"q{n}")
            return
        yield Event(output=answer, route="again" if n < 29 else "stop", state={"n": n + 1})

    def stop(node_input: Any) -> Any:
        return node_input

    h = await make_harness(
        Workflow(name="wf", edges=[("START", ask), (ask, {"again": ask, "stop": stop})])
    )
    await h.start()
    sizes: list[int] = []
    for n in range(30):
        await h.answer((f"q{n}", n))
        sizes.append(len(json.dumps((await h.invocation()).checkpoint)))
    assert (await h.invocation()).status == InvocationStatus.COMPLETED
    if h.runner.is_resumable:
        # The frontier is one waiting run however long the loop ran.
        assert max(sizes[:-1]) - min(sizes[:-1]) < 40
    else:
        # Replay mode keeps each completed run's outcome to fast-forward it: linear, not more.
        growth = [b - a for a, b in itertools.pairwise(sizes[:-1])]
        assert max(growth) < 200


def test_a_response_schema_is_a_fresh_dict_for_every_question() -> None:
    """Schemas of types are derived once and reused; a caller changing one it was given
    changes no other question's."""

    class Choice(BaseModel):
        pick: Annotated[int, Field(ge=1)]

    first = RequestInput(interrupt_id="a", response_schema=Choice).json_schema()
    assert first is not None
    first["title"] = "changed"
    again = RequestInput(interrupt_id="b", response_schema=Choice).json_schema()
    assert again == Choice.model_json_schema()
    # A type form that cannot be a cache key is derived each time.
    unhashable = Annotated[int, Field(ge=1), {"note": "kept"}]
    assert RequestInput(interrupt_id="c", response_schema=unhashable).json_schema() == {
        "minimum": 1,
        "type": "integer",
    }
