"""`DatabaseSessionService(db_url, **kwargs)`: the reference hands the keyword arguments
to SQLAlchemy's create_async_engine; baton applies the logging, pool and connect_args
options to its engine, and refuses by name, with why, those it sets itself."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

from baton import DatabaseSessionService
from baton.errors import EngineOptionsError
from baton.sessions.sql.backends import open_dialect
from baton.sessions.sql.postgres import asyncpg_connect_args


async def test_pool_and_logging_options_apply(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    service = DatabaseSessionService(
        store_url,
        echo=True,
        logging_name="baton_test",
        pool_size=3,
        max_overflow=2,
        pool_timeout=5,
        pool_recycle=600,
        pool_pre_ping=True,
        pool_use_lifo=True,
    )
    try:
        with caplog.at_level(logging.INFO, logger="sqlalchemy.engine"):
            made = await service.create_session(app_name="a", user_id="u", session_id="s1")
    finally:
        await service.close()
    assert made.id == "s1"
    # echo=True: SQLAlchemy logs the statements, under the engine's logging_name.
    logged = [r for r in caplog.records if r.name.endswith(".baton_test")]
    assert any("sessions" in r.getMessage() for r in logged)


async def test_connect_args_reach_the_postgres_connections(emptied_postgres_url: str) -> None:
    import asyncpg  # pyright: ignore[reportMissingTypeStubs] -- looking at the server beside the store

    name = f"baton-{uuid.uuid4().hex[:8]}"
    service = DatabaseSessionService(
        emptied_postgres_url, connect_args={"server_settings": {"application_name": name}}
    )
    try:
        await service.create_session(app_name="a", user_id="u", session_id="s1")
        session = await service.get_session(app_name="a", user_id="u", session_id="s1")
        assert session is not None
        # The URL's search_path stays beside the caller's settings: the tables were found.
        connecting = asyncpg_connect_args(open_dialect(emptied_postgres_url).url)
        other: Any = await asyncpg.connect(**connecting)  # pyright: ignore[reportUnknownMemberType]
        try:
            count = await other.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name
            )
        finally:
            await other.close()
        assert count >= 1
    finally:
        await service.close()


async def test_options_baton_sets_itself_are_refused_by_name(emptied_store_url: str) -> None:
    with pytest.raises(
        EngineOptionsError,
        match=r"db_engine \(not an option baton knows\), isolation_level \(baton's reads",
    ):
        DatabaseSessionService(
            emptied_store_url, isolation_level="SERIALIZABLE", db_engine=object()
        )
    with pytest.raises(EngineOptionsError, match="json_serializer"):
        DatabaseSessionService(emptied_store_url, json_serializer=str, pool_size=3)
    with pytest.raises(EngineOptionsError, match="connect_args must be a dict"):
        DatabaseSessionService(emptied_store_url, connect_args=["timeout"])
    # Driver settings that would change how a step commits are refused on every backend.
    with pytest.raises(
        EngineOptionsError,
        match=r"connect_args autocommit \(a committed step must be durable",
    ):
        DatabaseSessionService(emptied_store_url, connect_args={"autocommit": True})
    with pytest.raises(EngineOptionsError, match=r"connect_args isolation_level \("):
        DatabaseSessionService(emptied_store_url, connect_args={"isolation_level": None})
    settings = {"synchronous_commit": "off", "default_transaction_isolation": "serializable"}
    with pytest.raises(
        EngineOptionsError,
        match=r"server_settings default_transaction_isolation \(.*server_settings "
        r"synchronous_commit \(",
    ):
        DatabaseSessionService(emptied_store_url, connect_args={"server_settings": settings})
    service = DatabaseSessionService(emptied_store_url)  # without options, the same URL serves
    try:
        made = await service.create_session(app_name="a", user_id="u", session_id="s1")
        assert made.id == "s1"
    finally:
        await service.close()


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_pool_options_an_in_memory_sqlite_pool_lacks_are_refused_by_name(url: str) -> None:
    """An in-memory SQLite database's pool keeps one connection per thread: its queue
    options are refused as engine options, naming them, not as SQLAlchemy's TypeError."""
    with pytest.raises(EngineOptionsError, match=r"max_overflow, pool_timeout do not all apply"):
        DatabaseSessionService(url, pool_timeout=5, max_overflow=2)
