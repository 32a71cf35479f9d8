"""A workflow run paused by baton before its fan-outs had branches resumes after the upgrade.

Before, every run of a workflow was on the workflow's branch (None at the root): no
event, run record or join arrival in the checkpoint named a branch. Now a run after a
fan-out is on a lane of its own ('a@1'), kept in its run record. A run of the old code
stores exactly the rows today's code stores but for those names (checked by running
both on one tree and comparing the rows; it also stored a's started call as an event
of its own, which a resume reads from the checkpoint either way), so the paused run of
the old code is built here by running today's code and taking the names out of the
stored events and checkpoints. Resumed, the waiting agent finds its own earlier events and continues
where it stopped, on the branch it started on; nothing that finished runs again.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue
from sqlalchemy import Table, select, update
from sqlalchemy.engine import Connection

from baton import App, DatabaseSessionService, ResumabilityConfig, Runner
from baton.agents import LlmAgent
from baton.sessions.sql import schema
from baton.sessions.store import InvocationStatus
from baton.tools import LongRunningFunctionTool
from baton.types import Content, FunctionCall, FunctionResponse, Part
from baton.workflow import JoinNode, Workflow
from tests.agents.agents import Models, rewrite_events, rewrite_stored

NAMES = ("branch", "fan_out", "join_branches")
"""What the old code's checkpoints did not hold: run and trigger branches, join lanes."""


ASK = FunctionCall(id="ca", name="approve", args={"x": 1})


def approve(x: int) -> None:
    """Waits for a person's approval."""


def _said(part: Part) -> str:
    if part.function_call:
        return f"call {part.function_call.id}"
    if part.function_response:
        return f"answer {part.function_response.id}"
    return part.text or ""


def seen_by_a(models: Models) -> list[list[str]]:
    """What each of a's requests showed, part by part."""
    return [[_said(p) for c in r.contents for p in c.parts or []] for r in models.asker_requests]


def workflow(models: Models) -> Workflow:
    """START fans out to a (which waits) and b; a goes on to a2; j joins a2 and b."""
    a = LlmAgent(name="a", model=models.asks("a", ASK), tools=[LongRunningFunctionTool(approve)])
    b = LlmAgent(name="b", model=models.reply("b"))
    a2 = LlmAgent(name="a2", model=models.reply("a2"))
    return Workflow(name="wf", edges=[("START", (a, b)), (a, a2), ((a2, b), JoinNode(name="j"))])


def runner(service: DatabaseSessionService, models: Models, *, resumable: bool) -> Runner:
    config = ResumabilityConfig(is_resumable=resumable)
    app = App(name="app", root_agent=workflow(models), resumability_config=config)
    return Runner(app=app, session_service=service)


def _unnamed(value: Any) -> tuple[Any, int]:
    """The checkpoint without branch names, and how many it held."""
    if isinstance(value, list):
        items = [_unnamed(v) for v in value]  # pyright: ignore[reportUnknownVariableType] -- JSON
        return [v for v, _ in items], sum(n for _, n in items)
    if not isinstance(value, dict):
        return value, 0
    kept: dict[str, Any] = {}
    count = 0
    for key, item in value.items():  # pyright: ignore[reportUnknownVariableType] -- JSON
        if key in NAMES:
            count += 1
            continue
        kept[key], n = _unnamed(item)
        count += n
    return kept, count


async def store_as_before_branches(url: str) -> tuple[int, int]:
    """Take the branch names out of the stored events and checkpoints, as the old code
    stored them; how many events and checkpoint entries held one."""

    def strip(connection: Connection) -> tuple[int, int]:
        renamed = rewrite_events(connection, lambda data: data.pop("branch", None) is not None)
        entries = 0
        for table in (schema.invocations, schema.question_checkpoints):
            entries += _strip_checkpoints(connection, table)
        return renamed, entries

    return await rewrite_stored(url, strip)


def _strip_checkpoints(connection: Connection, table: Table) -> int:
    keys = [c for c in table.primary_key.columns]
    count = 0
    for row in connection.execute(select(*keys, table.c.checkpoint)).all():
        stripped, n = _unnamed(row[-1])
        if n:
            where = [k == v for k, v in zip(keys, row[:-1], strict=True)]
            connection.execute(update(table).where(*where).values(checkpoint=stripped))
            count += n
    return count


@pytest.mark.parametrize("resumable", [True, False], ids=["resumable", "replay"])
@pytest.mark.parametrize("paused_before", [True, False], ids=["old-code", "new-code"])
async def test_a_run_paused_on_a_fan_out_resumes_on_the_branches_it_started_on(
    emptied_store_url: str, paused_before: bool, resumable: bool
) -> None:
    before = Models()
    service = DatabaseSessionService(emptied_store_url)
    await service.create_session(app_name="app", user_id="u", session_id="s")
    go = Content(role="user", parts=[Part(text="go")])
    run = runner(service, before, resumable=resumable)
    async for _ in run.run_async(user_id="u", session_id="s", new_message=go):
        pass
    await service.close()
    assert before.calls == {"a": 1, "b": 1}
    if paused_before:
        # a's call, b's reply and end (a non-resumable run keeps b's end in its checkpoint
        # only, and a's started call in any mode); a's record and b's arrival at j in the
        # checkpoint, a's and b's records in the one kept as the question was asked.
        events = 3 if resumable else 2
        assert await store_as_before_branches(emptied_store_url) == (events, 4)

    after = Models()
    service = DatabaseSessionService(emptied_store_url)
    answer = FunctionResponse(id="ca", name="approve", response={"ok": True})
    message = Content(role="user", parts=[Part(function_response=answer)])
    run = runner(service, after, resumable=resumable)
    events = [e async for e in run.run_async(user_id="u", session_id="s", new_message=message)]

    # Only a's model (once) and a2's are asked; a sees its own call and the answer.
    assert after.calls == {"a": 1, "a2": 1}
    assert seen_by_a(after) == [["go", "call ca", "answer ca"]]
    # a resumes on the branch its record holds, and a2 goes on on it.
    lane = None if paused_before else "a@1"
    shown: list[tuple[str, str | None, JsonValue]] = [
        (e.author, e.branch, e.content.text if e.content else e.output)
        for e in events
        if e.content is not None or e.output is not None
    ]
    assert shown == [
        ("a", lane, "a done"),
        ("a2", lane, "a2 done"),
        ("wf", None, {"a2": "a2 done", "b": "b done"}),
    ]
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    invocations = await service.store.list_invocations(session.key)
    assert [i.status for i in invocations] == [InvocationStatus.COMPLETED]
    await service.close()
