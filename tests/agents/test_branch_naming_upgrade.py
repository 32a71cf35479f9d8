"""A run paused inside a nested ParallelAgent before 6f16d2b resumes after the upgrade.

Before 6f16d2b a ParallelAgent inside a branch named its sub-agents' branches
`<branch>.<sub>` ('par.inner.z'); since, as the reference, `<branch>.<parallel>.<sub>`
('par.inner.par2.z'). A run of 6f16d2b^ stores exactly the rows a run of today's code
stores but for those branch names (checked by running both on one tree and comparing
the rows; it also stored z's started call as an event of its own, which a resume reads
from the checkpoint either way), so the paused run of the old code is built here by
running today's code and renaming the branches in the stored events as the old code
named them. The resumed run
must find its branches' earlier events: the waiting agent continues where it stopped,
and nothing that finished runs again.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from baton import App, DatabaseSessionService, ResumabilityConfig, Runner
from baton.agents import LlmAgent, ParallelAgent, SequentialAgent
from baton.sessions.store import InvocationStatus
from baton.tools import LongRunningFunctionTool
from baton.types import Content, FunctionCall, FunctionResponse, Part
from tests.agents.agents import Models, rewrite_events, rewrite_stored

NEW_PREFIX = "par.inner.par2."
OLD_PREFIX = "par.inner."


ASK = FunctionCall(id="cz", name="approve", args={"x": 1})


def approve(x: int) -> None:
    """Waits for a person's approval."""


def tree(models: Models) -> ParallelAgent:
    """par runs inner and side; inner runs w, then par2, which runs y and z (z waits)."""
    par2 = ParallelAgent(
        name="par2",
        sub_agents=[
            LlmAgent(name="y", model=models.reply("y")),
            LlmAgent(
                name="z", model=models.asks("z", ASK), tools=[LongRunningFunctionTool(approve)]
            ),
        ],
    )
    inner = SequentialAgent(
        name="inner", sub_agents=[LlmAgent(name="w", model=models.reply("w")), par2]
    )
    return ParallelAgent(
        name="par", sub_agents=[inner, LlmAgent(name="side", model=models.reply("side"))]
    )


def runner(service: DatabaseSessionService, models: Models) -> Runner:
    config = ResumabilityConfig(is_resumable=True)
    app = App(name="app", root_agent=tree(models), resumability_config=config)
    return Runner(app=app, session_service=service)


async def name_branches_as_before_6f16d2b(url: str) -> int:
    """Rename the stored events' branches as 6f16d2b^ named them; how many were renamed."""

    def renamed(data: dict[str, Any]) -> bool:
        branch = data.get("branch")
        if not (isinstance(branch, str) and branch.startswith(NEW_PREFIX)):
            return False
        data["branch"] = OLD_PREFIX + branch.removeprefix(NEW_PREFIX)
        return True

    return await rewrite_stored(url, lambda connection: rewrite_events(connection, renamed))


@pytest.mark.parametrize("started_before_6f16d2b", [True, False], ids=["old-names", "new-names"])
async def test_a_run_paused_in_a_nested_parallel_agent_resumes_on_its_branches(
    emptied_store_url: str, started_before_6f16d2b: bool
) -> None:
    before = Models()
    service = DatabaseSessionService(emptied_store_url)
    await service.create_session(app_name="app", user_id="u", session_id="s")
    go = Content(role="user", parts=[Part(text="go")])
    async for _ in runner(service, before).run_async(user_id="u", session_id="s", new_message=go):
        pass
    await service.close()
    assert before.calls == {"w": 1, "side": 1, "y": 1, "z": 1}
    if started_before_6f16d2b:
        renamed = await name_branches_as_before_6f16d2b(emptied_store_url)
        assert renamed == 3  # y's two events, z's call
    prefix = OLD_PREFIX if started_before_6f16d2b else NEW_PREFIX

    after = Models()
    service = DatabaseSessionService(emptied_store_url)
    answer = FunctionResponse(id="cz", name="approve", response={"ok": True})
    message = Content(role="user", parts=[Part(function_response=answer)])
    events = [
        e
        async for e in runner(service, after).run_async(
            user_id="u", session_id="s", new_message=message
        )
    ]

    # Only z's model is asked, once, and it sees its own call and the answer.
    assert after.calls == {"z": 1}
    seen = [p for c in after.asker_requests[0].contents for p in c.parts or []]
    assert [p.function_call.id for p in seen if p.function_call] == ["cz"]
    assert [p.function_response.id for p in seen if p.function_response] == ["cz"]
    shown: list[tuple[str, str | None, JsonValue]] = [
        (e.author, e.branch, e.content.text if e.content else "end") for e in events
    ]
    assert shown == [
        ("z", f"{prefix}z", "z done"),
        ("z", f"{prefix}z", "end"),
        ("par2", "par.inner", "end"),
        ("inner", "par.inner", "end"),
        ("par", None, "end"),
    ]
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    stale = OLD_PREFIX + "z" if not started_before_6f16d2b else NEW_PREFIX
    assert not [e for e in session.events if (e.branch or "").startswith(stale)]
    invocations = await service.store.list_invocations(session.key)
    assert [i.status for i in invocations] == [InvocationStatus.COMPLETED]
    await service.close()
