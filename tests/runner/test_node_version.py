"""A node's `version` is in the fingerprint: a changed body the author marked is detected.

A fingerprint covers a workflow's shape (nodes, kinds, edges), not the code inside a
node, which Python cannot compare across processes reliably. The author marks a
change that runs already started must not resume into by raising the node's
`version`; a node without one fingerprints as it always did.
"""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from baton import App, LlmAgent, RequestInput, ResumabilityConfig, Runner, Workflow, node, types
from baton.errors import WorkflowChangedError
from baton.workflow.graph import fingerprint_of
from tests.harness import MakeHarness, outputs
from tests.runner.test_guarantees import snapshot


def workflow(version: str | int | None, *, reply: str = "done") -> Workflow:
    def ask() -> RequestInput:
        return RequestInput(interrupt_id="ok")

    @node(version=version)
    def finish(node_input: JsonValue) -> str:
        return f"{reply}: {node_input}"

    return Workflow(name="versioned", edges=[("START", ask, finish)])


def answer() -> types.Content:
    response = types.FunctionResponse(id="ok", name="adk_request_input", response={"result": 1})
    return types.Content(role="user", parts=[types.Part(function_response=response)])


async def test_a_raised_version_refuses_to_resume_old_runs_and_changes_nothing(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(workflow(1))
    await h.start()
    before = await snapshot(h.service, h.key)
    newer = Runner(
        app=App(
            name="app",
            root_agent=workflow(2, reply="changed"),
            resumability_config=ResumabilityConfig(is_resumable=True),
        ),
        session_service=h.service,
    )
    with pytest.raises(WorkflowChangedError) as caught:
        _ = [
            e
            async for e in newer.run_async(
                user_id="u", session_id=h.session_id, new_message=answer()
            )
        ]
    invocation = await h.invocation()
    assert str(caught.value) == (
        f"workflow 'versioned' changed since invocation '{invocation.id}' started: node "
        "'finish' changed (FunctionNode version 1 -> FunctionNode version 2). Resume with the "
        "code it started with, or start a new run."
    )
    assert await snapshot(h.service, h.key) == before
    # The code it started with still resumes it.
    assert outputs(await h.collect(new_message=answer()))[-1] == ("finish", "done: 1")


async def test_an_unversioned_body_change_resumes_as_before(make_harness: MakeHarness) -> None:
    h = await make_harness(workflow(None))
    await h.start()
    changed = Runner(
        app=App(
            name="app",
            root_agent=workflow(None, reply="changed"),
            resumability_config=ResumabilityConfig(is_resumable=True),
        ),
        session_service=h.service,
    )
    events = [
        e
        async for e in changed.run_async(user_id="u", session_id=h.session_id, new_message=answer())
    ]
    assert outputs(events)[-1] == ("finish", "changed: 1")


def test_versions_of_nodes_and_agents_enter_the_fingerprint() -> None:
    assert fingerprint_of(workflow(None)) == fingerprint_of(workflow(None, reply="other"))
    assert fingerprint_of(workflow(1)) != fingerprint_of(workflow(None))
    assert fingerprint_of(workflow("2024-06")) == fingerprint_of(workflow("2024-06", reply="x"))
    agent = LlmAgent(name="writer", model="gemini-2.0-flash", instruction="Write.", version=3)
    assert '"LlmAgent(rerun) version 3"' in fingerprint_of(
        Workflow(name="w", edges=[("START", agent)])
    )


def finish() -> None:
    """A node body for the bad-version cases."""


@pytest.mark.parametrize("bad", ["", "  ", True, 1.5])
def test_a_version_must_be_a_string_or_an_int(bad: object) -> None:
    with pytest.raises(ValueError, match="node 'finish' version must be a non-empty string"):
        node(version=bad)(finish)  # pyright: ignore[reportArgumentType] -- the bad value is the point
    with pytest.raises(ValueError, match="version"):
        LlmAgent(name="writer", model="gemini-2.0-flash", version=bad)  # pyright: ignore[reportArgumentType] -- the bad value is the point
