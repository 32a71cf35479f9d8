"""Fixtures for agent tests: a Runner over a real store (memory, then a SQLite file)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from pydantic import JsonValue

from baton import App, ResumabilityConfig, Runner
from baton.artifacts import BaseArtifactService
from baton.sessions.services import BaseSessionService, InMemorySessionService, SqliteSessionService
from baton.workflow.nodes import Node
from tests.conftest import StoreFactory, migrated_sqlite
from tests.harness import Harness
from tests.harness import make_harness as make_harness  # the engine tests' fixture, both modes

MakeRunner = Callable[..., Awaitable[Harness]]


@pytest.fixture(params=["memory", "sqlite"])
async def service(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[BaseSessionService]:
    backend: str = request.param
    svc = (
        InMemorySessionService()
        if backend == "memory"
        else SqliteSessionService(str(await migrated_sqlite(tmp_path / "sessions.db")))
    )
    yield svc
    await svc.close()


@pytest.fixture
def make(service: BaseSessionService) -> MakeRunner:
    """Builds a Harness around a root agent or workflow, on the test's store."""

    async def build(
        root: Node, *, resumable: bool = True, state: dict[str, JsonValue] | None = None
    ) -> Harness:
        runner = Runner(
            app=App(
                name="app",
                root_agent=root,
                resumability_config=ResumabilityConfig(is_resumable=resumable),
            ),
            session_service=service,
        )
        session = await service.create_session(app_name="app", user_id="u", state=state)
        return Harness(runner, service, session.id)

    return build


def runner_with_artifacts(stores: StoreFactory, root: Node) -> Runner:
    """A resumable Runner of `root` whose sessions and artifacts are in one store of
    `stores` (every backend)."""
    store = stores.open()
    return Runner(
        app=App(
            name="app", root_agent=root, resumability_config=ResumabilityConfig(is_resumable=True)
        ),
        session_service=BaseSessionService(store),
        artifact_service=BaseArtifactService(store),
    )
