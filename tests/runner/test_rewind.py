"""Runner.rewind_async on every backend: the reference's semantics (one user event with
`rewind_before_invocation_id` and the state restoring delta, nothing deleted), the runs
it undoes closed for good, refusals that change nothing, and no leak into later runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from baton import App, Context, LlmAgent, RequestInput, Runner, Workflow, types
from baton.artifacts import BaseArtifactService
from baton.errors import (
    InvocationBusyError,
    InvocationNotFoundError,
    InvocationRewoundError,
    SessionNotFoundError,
)
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.rewind import live_events
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InterruptStatus
from baton.types import InvocationId
from tests.conftest import StoreFactory
from tests.harness import Harness, MakeHarness


class Decision(BaseModel):
    approved: bool


def remember(ctx: Context, node_input: str) -> str:
    ctx.state[f"saw_{node_input}"] = True
    ctx.state["last"] = node_input
    return str(node_input)


def ask(ctx: Context, node_input: Any) -> RequestInput:
    ctx.state["asked"] = node_input
    return RequestInput(interrupt_id="ok", message="OK?", response_schema=Decision)


def decide(node_input: Any) -> str:
    return f"approved={node_input['approved']}"


def asking_workflow() -> Workflow:
    return Workflow(name="wf", edges=[("START", remember, ask, decide)])


async def session_events(h: Harness) -> list[Any]:
    session = await h.service.store.get_session(h.key)
    assert session is not None
    return session.events


async def test_rewind_restores_state_and_closes_the_rewound_question(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(asking_workflow(), state={"given": 1})
    await h.start("one")
    await h.answer(("ok", {"approved": True}))
    first = (await h.invocation()).id
    await h.start("two")  # paused at "ok" again, in a second run
    second = (await h.invocation()).id
    before = await session_events(h)
    session = await h.service.store.get_session(h.key, with_events=False)
    assert session is not None
    assert session.state["last"] == "two"

    event = await h.runner.rewind_async(
        user_id=h.user_id, session_id=h.session_id, rewind_before_invocation_id=second
    )

    after = await session_events(h)
    assert after[: len(before)] == before  # nothing deleted
    assert (after[-1].author, after[-1].id) == ("user", event.id)
    assert after[-1].actions.rewind_before_invocation_id == second
    assert after[-1].invocation_id not in (first, second)
    assert event.actions.state_delta == {"last": "one", "saw_two": None, "asked": "one"}
    session = await h.service.store.get_session(h.key, with_events=False)
    assert session is not None
    # As in the reference, a removed key stays with the value None.
    expected = {"given": 1, "saw_one": True, "last": "one", "asked": "one", "saw_two": None}
    assert session.state == expected
    assert {e.invocation_id for e in live_events(after)} == {first}
    # The rewound run and its question are closed; the earlier run is untouched.
    runs = {
        r.id: r.status.value
        for r in await h.runner.invocations(user_id="u", session_id=h.session_id)
    }
    assert runs == {first: "completed", second: "rewound"}
    assert await h.runner.pending(user_id="u") == []
    [closed] = await h.runner.pending(user_id="u", invocation_id=second, status=None)
    assert closed.status is InterruptStatus.REWOUND
    with pytest.raises(InvocationRewoundError, match="rewound"):
        await h.answer(("ok", {"approved": False}))
    with pytest.raises(InvocationRewoundError, match="rewound"):
        await h.collect(invocation_id=second)
    assert await session_events(h) == after


async def test_rewinding_twice_or_nowhere_changes_nothing(make_harness: MakeHarness) -> None:
    h = await make_harness(asking_workflow())
    await h.start("one")
    first = (await h.invocation()).id
    await h.runner.rewind_async(
        user_id="u", session_id=h.session_id, rewind_before_invocation_id=first
    )
    events = await session_events(h)
    state = (await h.service.store.get_session(h.key, with_events=False)).state  # type: ignore[union-attr]
    assert state == {"saw_one": None, "last": None, "asked": None}

    with pytest.raises(InvocationRewoundError, match="already rewound"):
        await h.runner.rewind_async(
            user_id="u", session_id=h.session_id, rewind_before_invocation_id=first
        )
    with pytest.raises(InvocationNotFoundError, match="'e-nope' has no event"):
        await h.runner.rewind_async(
            user_id="u", session_id=h.session_id, rewind_before_invocation_id="e-nope"
        )
    with pytest.raises(SessionNotFoundError):
        await h.runner.rewind_async(
            user_id="u", session_id="no-such", rewind_before_invocation_id=first
        )
    assert await session_events(h) == events


async def test_a_running_run_is_not_rewound(make_harness: MakeHarness) -> None:
    gate = asyncio.Event()
    entered = asyncio.Event()

    async def slow(node_input: Any) -> str:
        entered.set()
        await gate.wait()
        return "slow done"

    h = await make_harness(Workflow(name="wf", edges=[("START", remember, slow)]))
    running = asyncio.create_task(h.start("one"))
    await entered.wait()
    invocation = await h.invocation()
    events = await session_events(h)
    with pytest.raises(InvocationBusyError, match="is running"):
        await h.runner.rewind_async(
            user_id="u", session_id=h.session_id, rewind_before_invocation_id=invocation.id
        )
    assert await session_events(h) == events
    gate.set()
    assert (await running)[-1].output == "slow done"
    await h.runner.rewind_async(
        user_id="u", session_id=h.session_id, rewind_before_invocation_id=invocation.id
    )
    assert (await h.load(InvocationId(invocation.id))).status.value == "rewound"  # type: ignore[union-attr]


async def test_a_new_run_after_a_rewind_asks_again_and_sees_no_rewound_history(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(asking_workflow())
    await h.start("one")
    await h.answer(("ok", {"approved": True}))
    await h.runner.rewind_async(
        user_id="u", session_id=h.session_id, rewind_before_invocation_id=(await h.invocation()).id
    )
    await h.start("again")
    [row] = await h.runner.pending(user_id="u")
    assert row.invocation_id == (await h.invocation()).id
    events = await h.answer(("ok", {"approved": False}))
    assert events[-1].output == "approved=False"


async def test_an_agent_after_a_rewind_does_not_see_the_rewound_turn(
    make_harness: MakeHarness,
) -> None:
    seen: list[list[str]] = []

    def respond(request: LlmRequest) -> str:
        seen.append([p.text or "" for c in request.contents for p in c.parts or []])
        return f"reply {len(seen)}"

    agent = LlmAgent(name="bot", model=ScriptedModel(responder=respond))
    h = await make_harness(agent)
    await h.start("first question")
    await h.start("secret plan")
    secret = (await h.invocation()).id
    await h.runner.rewind_async(
        user_id="u", session_id=h.session_id, rewind_before_invocation_id=secret
    )
    await h.start("third question")
    assert seen[-1] == ["first question", "reply 1", "third question"]


async def test_rewind_restores_session_artifacts_and_leaves_the_users(
    stores: StoreFactory,
) -> None:
    async def write(ctx: Context, node_input: str) -> str:
        await ctx.save_artifact("notes.txt", types.Part.from_text(text=f"notes {node_input}"))
        await ctx.save_artifact("user:profile", types.Part.from_text(text=f"me {node_input}"))
        if node_input == "two":
            await ctx.save_artifact("extra.txt", types.Part.from_text(text="only in two"))
        return str(node_input)

    store = stores.open()
    artifacts = BaseArtifactService(store)
    runner = Runner(
        app=App(name="app", root_agent=Workflow(name="wf", edges=[("START", write)])),
        session_service=BaseSessionService(store),
        artifact_service=artifacts,
    )
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    h = Harness(runner, runner.session_service, session.id)
    await h.start("one")
    await h.start("two")
    second = (await h.invocation()).id

    event = await runner.rewind_async(
        user_id="u", session_id=session.id, rewind_before_invocation_id=second
    )

    assert set(event.actions.artifact_delta) == {"notes.txt", "extra.txt"}

    async def load(filename: str, version: int | None = None) -> types.Part | None:
        return await artifacts.load_artifact(
            app_name="app", user_id="u", session_id=session.id, filename=filename, version=version
        )

    notes = await load("notes.txt")
    assert notes is not None
    assert notes.text == "notes one"
    assert await load("extra.txt") is None
    older = await load("extra.txt", 0)
    assert older is not None  # nothing deleted: the rewound version stays in the history
    profile = await load("user:profile")
    assert profile is not None
    assert profile.text == "me two"  # the user's artifacts are not rewound
