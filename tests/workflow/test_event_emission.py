"""What events a node run emits, as the reference emits them."""

from __future__ import annotations

from baton import Context, Workflow, types
from tests.harness import MakeHarness, outputs


async def test_a_node_returning_content_emits_a_message_not_an_output(
    make_harness: MakeHarness,
) -> None:
    def reply(node_input: str) -> types.Content:
        return types.Content(role="model", parts=[types.Part(text=f"hello {node_input}")])

    h = await make_harness(Workflow(name="wf", edges=[("START", reply)]))
    events = await h.start("ann")
    assert outputs(events) == []
    messages = [e for e in events if e.author == "reply"]
    assert len(messages) == 1
    assert messages[0].content is not None
    assert messages[0].content.text == "hello ann"


async def test_a_node_that_only_writes_state_emits_an_event_with_the_delta(
    make_harness: MakeHarness,
) -> None:
    def remember(ctx: Context, node_input: str) -> None:
        ctx.state["seen"] = node_input

    h = await make_harness(Workflow(name="wf", edges=[("START", remember)]))
    events = await h.start("x")
    written = [e for e in events if e.author == "remember"]
    assert [e.actions.state_delta for e in written] == [{"seen": "x"}]
    assert written[0].node_info is not None
    assert written[0].node_info.name == "remember"
    session = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    assert session.state == {"seen": "x"}


async def test_a_node_that_writes_nothing_emits_nothing(make_harness: MakeHarness) -> None:
    def quiet(node_input: str) -> None:
        return None

    h = await make_harness(Workflow(name="wf", edges=[("START", quiet)]))
    assert [e for e in await h.start("x") if e.author == "quiet"] == []
