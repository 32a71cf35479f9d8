"""`app:` and `user:` state keys seen by runs on every backend: what a run writes to them,
a run of another session of the app (or of the user) reads in `ctx.state`, when it
starts and when it resumes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, JsonValue

from baton import Context, RequestInput, Workflow, types
from baton.sessions.services import BaseSessionService
from tests.conftest import StoreFactory
from tests.harness import Harness, attach_harness, outputs


class Decision(BaseModel):
    approved: bool


def visit(ctx: Context, node_input: str) -> dict[str, JsonValue]:
    """What the run saw of the shared keys; then counts itself and remembers its input."""
    seen: dict[str, JsonValue] = {
        "visits": ctx.state.get("app:visits", 0),
        "last": ctx.state.get("user:last"),
    }
    ctx.state["app:visits"] = int(ctx.state.get("app:visits", 0)) + 1
    ctx.state["user:last"] = node_input
    return seen


def ask(ctx: Context, node_input: Any) -> RequestInput:
    return RequestInput(interrupt_id="ok", message="OK?", response_schema=Decision)


def report(ctx: Context, node_input: Any) -> JsonValue:
    return ctx.state.get("user:last")


async def _session(service: BaseSessionService, workflow: Workflow, user_id: str) -> Harness:
    session = await service.create_session(app_name="app", user_id=user_id)
    harness = attach_harness(workflow, service, session.id, resumable=True)
    harness.user_id = user_id
    return harness


async def test_a_run_reads_what_runs_of_other_sessions_shared(stores: StoreFactory) -> None:
    service = BaseSessionService(stores.open())
    workflow = Workflow(name="wf", edges=[("START", visit)])
    first = await _session(service, workflow, "u")
    second = await _session(service, workflow, "u")
    theirs = await _session(service, workflow, "v")

    seen = [
        outputs(await first.start("one")),
        outputs(await second.start("two")),
        outputs(await theirs.start("three")),
    ]

    assert seen == [
        [("visit", {"visits": 0, "last": None})],
        [("visit", {"visits": 1, "last": "one"})],
        [("visit", {"visits": 2, "last": None})],
    ]
    mine = await service.get_session(app_name="app", user_id="u", session_id=first.session_id)
    assert mine is not None
    assert mine.state == {"app:visits": 3, "user:last": "two"}
    assert await service.get_user_state(app_name="app", user_id="v") == {"last": "three"}


async def test_a_resumed_run_reads_what_was_shared_while_it_waited(stores: StoreFactory) -> None:
    service = BaseSessionService(stores.open())
    waiting = await _session(service, Workflow(name="wf", edges=[("START", ask, report)]), "u")
    other = await _session(service, Workflow(name="wf", edges=[("START", visit)]), "u")
    await waiting.start("go")

    await other.start("meanwhile")
    resumed = await waiting.answer(("ok", {"approved": True}))

    assert outputs(resumed)[-1] == ("report", "meanwhile")


async def test_temp_keys_reach_the_runs_nodes_but_no_event_yielded_or_stored(
    stores: StoreFactory,
) -> None:
    def note(ctx: Context) -> JsonValue:
        ctx.state["temp:scratch"] = f"{ctx.state['temp:given']}!"
        ctx.state["kept"] = 1
        return None

    def read(ctx: Context) -> JsonValue:
        return [ctx.state.get("temp:given"), ctx.state.get("temp:scratch")]

    service = BaseSessionService(stores.open())
    h = await _session(service, Workflow(name="wf", edges=[("START", note, read)]), "u")
    message = types.Content(role="user", parts=[types.Part(text="go")])

    events = await h.collect(new_message=message, state_delta={"temp:given": "g", "own": 2})

    assert outputs(events) == [("read", ["g", "g!"])]
    session = await service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert session is not None
    deltas = [e.actions.state_delta for e in (*events, *session.events)]
    assert {"own": 2} in deltas
    assert {"kept": 1} in deltas
    assert not [key for delta in deltas for key in delta if key.startswith("temp:")]
    assert session.state == {"own": 2, "kept": 1}
