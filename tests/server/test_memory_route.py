"""The reference's memory route on a live server over SQLite and PostgreSQL: a session
added with PATCH .../memory is recalled by the user's later runs; an unknown session or
a body without a session id is refused and adds nothing."""

from __future__ import annotations

import pytest

from baton import App, Context, ResumabilityConfig, Workflow
from tests.server.conftest import Live, StartLive


async def recall(ctx: Context, node_input: str) -> list[str]:
    found = await ctx.search_memory(node_input)
    return [m.content.text for m in found.memories]


def recall_app() -> App:
    return App(
        name="recall",
        root_agent=Workflow(name="recall_wf", edges=[("START", recall)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


@pytest.fixture
async def live(emptied_store_url: str, start_live: StartLive) -> Live:
    started: Live = await start_live([recall_app()], db_url=emptied_store_url)
    return started


async def test_a_session_added_to_memory_is_recalled_by_later_runs(live: Live) -> None:
    first = await live.create("recall", "ann")
    await live.start("recall", "ann", first, "the boat is moored in Bergen")

    added = await live.client.patch("/apps/recall/users/ann/memory", json={"sessionId": first})
    assert added.status_code == 200, added.text
    second = await live.create("recall", "ann")
    events = await live.start("recall", "ann", second, "where is the boat")

    assert events[-1]["output"] == ["the boat is moored in Bergen"]
    other = await live.create("recall", "bob")
    assert (await live.start("recall", "bob", other, "where is the boat"))[-1]["output"] == []


async def test_bad_memory_requests_are_refused_and_add_nothing(live: Live) -> None:
    first = await live.create("recall", "ann")
    await live.start("recall", "ann", first, "the boat is moored in Bergen")

    missing = await live.client.patch("/apps/recall/users/ann/memory", json={"sessionId": "nope"})
    assert missing.status_code == 404
    assert "'nope'" in missing.json()["detail"]
    no_id = await live.client.patch("/apps/recall/users/ann/memory", json={})
    assert no_id.status_code == 422
    other_app = await live.client.patch("/apps/other/users/ann/memory", json={"sessionId": first})
    assert other_app.status_code == 404
    second = await live.create("recall", "ann")
    assert (await live.start("recall", "ann", second, "where is the boat"))[-1]["output"] == []
