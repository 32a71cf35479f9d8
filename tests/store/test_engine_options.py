"""`DatabaseSessionService(db_url, **kwargs)`: the reference hands the keyword arguments
to SQLAlchemy's create_async_engine; baton refuses them by name, since its steps go to
each driver's own connections, which those options would not reach."""

from __future__ import annotations

import pytest

from baton import DatabaseSessionService
from baton.errors import EngineOptionsError


async def test_engine_options_are_refused_by_name(store_url: str) -> None:
    with pytest.raises(
        EngineOptionsError, match="engine options echo, pool_size are not supported"
    ):
        DatabaseSessionService(store_url, pool_size=5, echo=True)
    with pytest.raises(EngineOptionsError, match="connect_args"):
        DatabaseSessionService(store_url, connect_args={"timeout": 5})
    service = DatabaseSessionService(store_url)  # without options, the same URL serves
    try:
        made = await service.create_session(app_name="a", user_id="u", session_id="s1")
        assert made.id == "s1"
    finally:
        await service.close()
