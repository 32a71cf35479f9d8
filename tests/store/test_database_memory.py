"""The memory service in the sessions' database (SQLite, PostgreSQL, MySQL/MariaDB): a
Runner over SQL sessions uses it unless given another, its memories survive a restart,
a search finds those sharing the most words (in SQL, on each backend), re-adding a
session keeps one copy, a forgotten memory stays forgotten, users are apart, and bad
inputs are refused with nothing stored."""

from __future__ import annotations

import pytest

from baton import App, Context, Runner, Workflow
from baton.database_memory import DatabaseMemoryService, SqlMemoryService, memory_in
from baton.events import Event
from baton.memory import InMemoryMemoryService, MemoryEntry
from baton.server.catalog import AppCatalog
from baton.sessions.memory import MemoryStore
from baton.sessions.services import DatabaseSessionService, InMemorySessionService
from baton.sessions.sql import SqlStore
from baton.types import Content, Part


def entry(text: str, memory_id: str | None = None) -> MemoryEntry:
    return MemoryEntry(id=memory_id, content=Content(role="user", parts=[Part(text=text)]))


def said(text: str, event_id: str) -> Event:
    return Event(id=event_id, author="user", content=Content(role="user", parts=[Part(text=text)]))


async def texts(memory: SqlMemoryService, query: str, user: str = "u") -> list[str]:
    found = await memory.search_memory(app_name="app", user_id=user, query=query)
    return [m.content.text for m in found.memories]


def noting_app() -> App:
    async def note(ctx: Context) -> str:
        await ctx.add_session_to_memory()
        await ctx.add_session_to_memory()  # again: still one copy
        return "noted"

    return App(name="app", root_agent=Workflow(name="wf", edges=[("START", note)]))


async def test_a_runner_over_sql_sessions_remembers_across_a_restart(
    emptied_store_url: str,
) -> None:
    sessions = DatabaseSessionService(emptied_store_url)
    runner = Runner(app=noting_app(), session_service=sessions)
    assert isinstance(runner.memory_service, SqlMemoryService)
    session = await sessions.create_session(app_name="app", user_id="u")
    async for _ in runner.run_async(
        user_id="u",
        session_id=session.id,
        new_message=Content(role="user", parts=[Part(text="The parcel arrives on Tuesday")]),
    ):
        pass
    await runner.close()

    restarted = DatabaseMemoryService(emptied_store_url)
    try:
        assert await texts(restarted, "when does the PARCEL arrive") == [
            "The parcel arrives on Tuesday"
        ]
        assert await texts(restarted, "parcel", user="v") == []
    finally:
        await restarted.store.close()


async def test_searches_rank_by_shared_words_and_forgetting_lasts(emptied_store_url: str) -> None:
    memory = SqlMemoryService(SqlStore(emptied_store_url))
    try:
        await memory.add_memory(
            app_name="app",
            user_id="u",
            memories=[
                entry("red apples and green pears", "a"),
                entry("green tea", "b"),
                entry("red green blue apples", "c"),
                entry("nothing shared"),
                *(entry(f"green number {n}", f"n{n}") for n in range(12)),
            ],
        )
        await memory.add_events_to_memory(
            app_name="app",
            user_id="u",
            session_id="s1",
            events=[said("blue sky", "e1"), said("blue sky", "e1"), said("grey sky", "e2")],
        )

        found = await texts(memory, "Red green apples")
        assert found[:2] == ["red apples and green pears", "red green blue apples"]
        assert found[2:] == ["green tea", *(f"green number {n}" for n in range(7))]
        assert await texts(memory, "blue sky") == ["blue sky", "red green blue apples", "grey sky"]
        assert await texts(memory, "") == []

        await memory.delete_memory(app_name="app", user_id="u", memory_id="e1")
        await memory.add_events_to_memory(
            app_name="app", user_id="u", session_id="s1", events=[said("blue sky", "e1")]
        )
        assert await texts(memory, "sky") == ["grey sky"]
    finally:
        await memory.store.close()


async def test_bad_inputs_are_refused_and_store_nothing(emptied_store_url: str) -> None:
    memory = SqlMemoryService(SqlStore(emptied_store_url))
    try:
        await memory.add_memory(app_name="app", user_id="u", memories=[entry("kept words")])
        with pytest.raises(TypeError, match="takes a Session .* got dict"):
            await memory.add_session_to_memory({"id": "s"})  # pyright: ignore[reportArgumentType] -- the refused value
        with pytest.raises(TypeError, match="query is a string, got int"):
            await memory.search_memory(app_name="app", user_id="u", query=3)  # pyright: ignore[reportArgumentType] -- the refused value
        with pytest.raises(TypeError, match="MemoryEntry items, got str"):
            await memory.add_memory(app_name="app", user_id="u", memories=[entry("x"), "hi"])  # pyright: ignore[reportArgumentType] -- the refused value
        with pytest.raises(TypeError, match="Event items, got str"):
            await memory.add_events_to_memory(app_name="app", user_id="u", events=["words"])  # pyright: ignore[reportArgumentType] -- the refused value
        with pytest.raises(ValueError, match="user_id"):
            await memory.add_memory(app_name="app", user_id="u\n", memories=[entry("kept x")])
        with pytest.raises(ValueError, match="app_name .* characters long"):
            await memory.delete_memory(app_name="a" * 300, user_id="u", memory_id="m")
        with pytest.raises(ValueError, match="memory_id .* characters long"):
            await memory.delete_memory(app_name="app", user_id="u", memory_id="m" * 300)
        with pytest.raises(ValueError, match="memory id .* control character"):
            await memory.add_memory(app_name="app", user_id="u", memories=[entry("x", "m\t")])
        with pytest.raises(ValueError, match="session_id .* characters long"):
            await memory.add_events_to_memory(
                app_name="app", user_id="u", session_id="s" * 300, events=[said("x", "e")]
            )

        assert await texts(memory, "kept words x hi") == ["kept words"]
    finally:
        await memory.store.close()


def test_sessions_in_memory_keep_memory_in_memory_and_a_memory_store_is_refused() -> None:
    with pytest.raises(TypeError, match="SqlMemoryService keeps memories in a SqlStore"):
        SqlMemoryService(MemoryStore())  # pyright: ignore[reportArgumentType] -- the refused value
    assert memory_in(MemoryStore()) is None
    runner = Runner(app=noting_app(), session_service=InMemorySessionService())
    assert runner.memory_service is None
    catalog = AppCatalog.of([noting_app()], InMemorySessionService())
    assert isinstance(catalog.runner("app").memory_service, InMemoryMemoryService)


async def test_the_server_keeps_memory_in_the_sessions_database(emptied_store_url: str) -> None:
    sessions = DatabaseSessionService(emptied_store_url)
    catalog = AppCatalog.of([noting_app()], sessions)
    try:
        memory = catalog.runner("app").memory_service
        assert isinstance(memory, SqlMemoryService)
        assert memory.store is sessions.store
    finally:
        await sessions.close()
