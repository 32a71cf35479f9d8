"""Memory from the user's side, with sessions on memory, SQLite and PostgreSQL: a
callback adds the session to memory, a later session's agent recalls it with the
`load_memory` tool or gets it preloaded into its request; nodes search it through their
context; re-adding a session keeps one copy, a deleted memory stays forgotten; without a
memory service, sessions in SQL remember in their database, those in memory say how to
set one; bad arguments are refused with the reason."""

from __future__ import annotations

from typing import Any, cast

import pytest

from baton import App, Context, ResumabilityConfig, Runner, Workflow
from baton.agents import LlmAgent
from baton.agents.callbacks import CallbackContext
from baton.memory import InMemoryMemoryService, MemoryEntry
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.services import BaseSessionService, InMemorySessionService
from baton.tools import load_memory, preload_memory
from baton.types import Content, FunctionCall, Part
from tests.conftest import StoreFactory
from tests.harness import Harness


async def remember(callback_context: CallbackContext) -> None:
    await callback_context.add_session_to_memory()


def _runner(stores: StoreFactory, agent: Any, memory: InMemoryMemoryService | None) -> Runner:
    return Runner(
        app=App(
            name="app", root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True)
        ),
        session_service=BaseSessionService(stores.open()),
        memory_service=memory,
    )


async def _session(runner: Runner) -> Harness:
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    return Harness(runner, runner.session_service, session.id)


async def test_an_agent_recalls_a_past_session_with_load_memory(stores: StoreFactory) -> None:
    memory = InMemoryMemoryService()
    teller = LlmAgent(
        name="teller",
        model=ScriptedModel(["Noted: your favourite colour is teal."]),
        after_agent_callback=remember,
    )
    first = await _session(_runner(stores, teller, memory))
    await first.start("My favourite colour is teal")

    model = ScriptedModel(
        [FunctionCall(id="m1", name="load_memory", args={"query": "favourite colour"}), "Teal!"]
    )
    asker = LlmAgent(name="asker", model=model, tools=[load_memory])
    second = await _session(_runner(stores, asker, memory))
    await second.start("What is my favourite colour?")

    requests: list[LlmRequest] = model.requests
    assert "call load_memory" in (requests[0].config.system_instruction or "")
    recalled = [r.response for c in requests[1].contents for r in c.function_responses]
    memories: Any = recalled[0]["memories"] if recalled[0] else None
    texts = [m["content"]["parts"][0]["text"] for m in memories]
    # Both share two words with the query: in the order they were said.
    assert texts == ["My favourite colour is teal", "Noted: your favourite colour is teal."]


async def test_preload_memory_puts_what_the_message_recalls_in_the_request(
    stores: StoreFactory,
) -> None:
    memory = InMemoryMemoryService()
    await memory.add_memory(
        app_name="app",
        user_id="u",
        memories=[
            MemoryEntry(
                content=Content(role="user", parts=[Part(text="I live in Oslo")]), author="user"
            ),
            MemoryEntry(content=Content(role="user", parts=[Part(text="unrelated words")])),
        ],
    )
    model = ScriptedModel(["It is cold in Oslo."])
    agent = LlmAgent(name="weather", model=model, tools=[preload_memory])
    h = await _session(_runner(stores, agent, memory))

    await h.start("Where do I live?")

    contents = model.requests[0].contents
    assert len(contents) == 2
    assert "<PAST_CONVERSATIONS>\nuser: I live in Oslo\n</PAST_CONVERSATIONS>" in contents[0].text
    assert contents[1].text == "Where do I live?"
    assert model.requests[0].config.tools in (None, [])  # not offered to the model


async def test_nodes_search_add_and_delete_memory_and_readding_keeps_one_copy(
    stores: StoreFactory,
) -> None:
    memory = InMemoryMemoryService()

    async def note(ctx: Context) -> list[str]:
        await ctx.add_session_to_memory()
        await ctx.add_session_to_memory()  # again: one copy
        found = await ctx.search_memory("parcel arrives")
        return [m.content.text for m in found.memories]

    runner = _runner(stores, Workflow(name="wf", edges=[("START", note)]), memory)
    h = await _session(runner)
    events = await h.start("the parcel arrives on Tuesday")

    assert events[-1].output == ["the parcel arrives on Tuesday"]
    [entry] = (await memory.search_memory(app_name="app", user_id="u", query="Tuesday")).memories
    assert entry.author == "user"
    assert entry.id is not None
    # Its time is in UTC and says so (the reference's: local time, no offset).
    assert entry.timestamp is not None
    assert entry.timestamp.endswith("+00:00")
    await memory.delete_memory(app_name="app", user_id="u", memory_id=entry.id)
    session = await runner.session_service.get_session(
        app_name="app", user_id="u", session_id=h.session_id
    )
    assert session is not None
    await memory.add_session_to_memory(session)
    assert (await memory.search_memory(app_name="app", user_id="u", query="Tuesday")).memories == []
    # Another user's memory is their own.
    assert (await memory.search_memory(app_name="app", user_id="v", query="parcel")).memories == []


async def test_without_a_memory_service_sql_sessions_remember_in_their_database(
    stores: StoreFactory,
) -> None:
    async def search(ctx: Context) -> list[str | None]:
        await ctx.add_session_to_memory()
        return [m.timestamp for m in (await ctx.search_memory("go")).memories]

    h = await _session(_runner(stores, Workflow(name="wf", edges=[("START", search)]), None))
    if stores.backend != "memory":
        [timestamp] = cast("list[str]", (await h.start("go"))[-1].output)
        assert timestamp.endswith("+00:00")  # UTC, saying so, as in memory
        return
    # Sessions in memory: no memory unless given one, as in the reference.
    with pytest.raises(ValueError, match=r"memory_service=InMemoryMemoryService\(\)"):
        await h.start("go")


async def test_bad_memory_arguments_are_refused() -> None:
    memory = InMemoryMemoryService()
    with pytest.raises(TypeError, match="takes a Session"):
        await memory.add_session_to_memory({"id": "s"})  # pyright: ignore[reportArgumentType] -- the refused value
    with pytest.raises(TypeError, match="query is a string, got int"):
        await memory.search_memory(app_name="app", user_id="u", query=3)  # pyright: ignore[reportArgumentType] -- the refused value
    with pytest.raises(TypeError, match="MemoryEntry items, got str"):
        await memory.add_memory(app_name="app", user_id="u", memories=["hi"])  # pyright: ignore[reportArgumentType] -- the refused value
    with pytest.raises(TypeError, match="Event items, got str"):
        await memory.add_events_to_memory(app_name="app", user_id="u", events=["words"])  # pyright: ignore[reportArgumentType] -- the refused value
    assert (await memory.search_memory(app_name="app", user_id="u", query="words")).memories == []
    with pytest.raises(ValueError, match="user_id"):
        await memory.search_memory(app_name="app", user_id="u\n", query="x")
    with pytest.raises(TypeError, match="memory_service must be"):
        Runner(
            agent=LlmAgent(name="a", model=ScriptedModel([])),
            session_service=InMemorySessionService(),
            memory_service=object(),  # pyright: ignore[reportArgumentType] -- the refused value
        )
