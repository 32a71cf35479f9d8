"""Seed 004's code examples, as written there with only the imports changed.

The seed's snippets are kept verbatim (modulo the `baton` imports and the stub
types they assume: TimeOffRequest, TimeOffDecision, ApprovalSchema).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from baton import Context, Event, FunctionNode, RequestInput, Workflow, types
from baton.events import REQUEST_INPUT_FUNCTION
from tests.harness import Harness, MakeHarness, asked, outputs


class TimeOffRequest(BaseModel):
    days: int


class TimeOffDecision(BaseModel):
    approved: bool


class ApprovalSchema(BaseModel):
    approved: bool


# --- seed 004, "Yield or return a RequestInput" ---
async def approval_gate(ctx: Context, node_input: str):
    yield RequestInput(
        message="Please approve this action:",
        response_schema={"type": "string"},
    )


def evaluate_request(request: TimeOffRequest):
    if request.days <= 1:
        return TimeOffDecision(approved=True)  # Auto-approve
    return RequestInput(
        interrupt_id="manager_approval",
        message="Please review this time off request.",
        payload=request,
        response_schema=TimeOffDecision,
    )


# --- seed 004, rerun_on_resume=False ---
async def ask_approval(ctx: Context, node_input: str):
    yield RequestInput(message="Approve?")


# Node won't rerun; user's response is passed as output to next node
approval_node = FunctionNode(ask_approval, rerun_on_resume=False)


# --- seed 004, rerun_on_resume=True ---
async def interactive_node(ctx: Context, node_input: str):
    if ctx.resume_inputs:
        # Second run: user responded
        user_answer = list(ctx.resume_inputs.values())[0]  # noqa: RUF015 -- the seed's code, verbatim
        yield Event(output=f"User said: {user_answer}")
    else:
        # First run: ask the user
        yield RequestInput(message="What should I do?")


# --- seed 004, a node that asks several times ---
async def multi_step_form(ctx: Context, node_input: str):
    if not ctx.resume_inputs:
        # Step 1: Ask for name
        yield RequestInput(
            interrupt_id="ask_name",
            message="What is your name?",
        )
        return
    if "ask_name" in ctx.resume_inputs and "ask_email" not in ctx.resume_inputs:
        # Step 2: Ask for email
        yield RequestInput(
            interrupt_id="ask_email",
            message="What is your email?",
        )
        return
    # All inputs collected
    name = ctx.resume_inputs["ask_name"]
    email = ctx.resume_inputs["ask_email"]
    yield Event(output={"name": name, "email": email})


# --- seed 004, review loop with counter-based ids ---
async def review(ctx: Context, node_input: Any):
    # Counter-based unique ID per review cycle
    review_count = ctx.state.get("review_count", 0)
    interrupt_id = f"review_{review_count}"
    response = ctx.resume_inputs.get(interrupt_id)
    if response:
        route = "approved" if response.get("approved") else "rejected"
        yield Event(
            output=response,
            route=route,
            state={"review_count": review_count + 1},
        )
        return
    yield RequestInput(
        interrupt_id=interrupt_id,
        message="Approve this plan?",
        response_schema=ApprovalSchema,
    )


async def answer_like_the_seed(h: Harness, interrupt_event: Event, answer: Any) -> list[Event]:
    """The seed's client-side snippet, verbatim in its middle."""
    assert interrupt_event.content is not None
    assert interrupt_event.content.parts is not None
    function_call = interrupt_event.content.parts[0].function_call
    assert function_call is not None
    # Extract function_call_id from the interrupt event
    function_call_id = function_call.id
    # Create response
    response = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id=function_call_id,
                    name="adk_request_input",
                    response={"result": answer},
                )
            )
        ],
    )
    # Send response to resume the workflow
    events: list[Event] = []
    async for event in h.runner.run_async(
        user_id=h.user_id,
        session_id=h.session_id,
        new_message=response,
    ):
        # Process resumed workflow events
        events.append(event)
    return events


def echo(node_input: Any) -> Any:
    return node_input


async def test_approval_gate_answer_becomes_output(make_harness: MakeHarness) -> None:
    h = await make_harness(Workflow(name="gate", edges=[("START", approval_gate, echo)]))
    events = await h.start("delete the repo")
    assert events[-1].function_calls[0].name == REQUEST_INPUT_FUNCTION
    done = await answer_like_the_seed(h, events[-1], "approved")
    assert outputs(done) == [("approval_gate", "approved"), ("echo", "approved")]


async def test_evaluate_request_auto_approves_or_asks(make_harness: MakeHarness) -> None:
    def to_request(node_input: str) -> TimeOffRequest:
        return TimeOffRequest(days=int(node_input))

    h = await make_harness(
        Workflow(name="timeoff", edges=[("START", to_request, evaluate_request)])
    )
    assert outputs(await h.start("1"))[-1] == ("evaluate_request", {"approved": True})
    events = await h.start("4")
    assert asked(events) == ["manager_approval"]
    done = await answer_like_the_seed(h, events[-1], {"approved": False})
    assert outputs(done) == [("evaluate_request", {"approved": False})]


async def test_rerun_false_node_passes_the_answer_on(make_harness: MakeHarness) -> None:
    h = await make_harness(Workflow(name="w", edges=[("START", approval_node, echo)]))
    events = await h.start("go")
    done = await answer_like_the_seed(h, events[-1], "yes")
    assert outputs(done) == [("ask_approval", "yes"), ("echo", "yes")]


async def test_interactive_node_reruns_with_the_answer(make_harness: MakeHarness) -> None:
    h = await make_harness(Workflow(name="w", edges=[("START", interactive_node)]))
    events = await h.start("go")
    done = await answer_like_the_seed(h, events[-1], "ship it")
    assert outputs(done) == [("interactive_node", "User said: ship it")]


async def test_review_loop_routes_approved_and_rejected(make_harness: MakeHarness) -> None:
    drafts: list[Any] = []

    def draft(node_input: Any) -> str:
        drafts.append(node_input)
        return f"plan {len(drafts)}"

    def ship(node_input: Any) -> str:
        return "shipped"

    h = await make_harness(
        Workflow(
            name="plan",
            edges=[("START", draft, review), (review, {"approved": ship, "rejected": draft})],
        )
    )
    events = await h.start("offsite")
    events = await answer_like_the_seed(h, events[-1], {"approved": False})
    assert asked(events) == ["review_1"]
    done = await answer_like_the_seed(h, events[-1], {"approved": True})
    assert outputs(done)[-1] == ("ship", "shipped")
    # The first draft gets the user's message itself (untyped, as in the reference).
    user_message = types.Content(role="user", parts=[types.Part(text="offsite")])
    assert drafts == [user_message, {"approved": False}]


async def test_multi_step_form_asks_twice_then_outputs_both_answers(
    make_harness: MakeHarness,
) -> None:
    # The reference (2.13.0) runs this example of its own docs to a different end: the
    # node is not run again on the first answer, which becomes its output ('Ann'), and
    # the second question is never asked.
    h = await make_harness(Workflow(name="form", edges=[("START", multi_step_form)]))
    events = await h.start("sign me up")
    assert asked(events) == ["ask_name"]
    events = await answer_like_the_seed(h, events[-1], "Ann")
    assert asked(events) == ["ask_email"]
    assert outputs(events) == []
    done = await answer_like_the_seed(h, events[-1], "ann@example.com")
    assert outputs(done) == [("multi_step_form", {"name": "Ann", "email": "ann@example.com"})]
