"""The runner's guarantees hold on every backend: these tests run on memory, SQLite and
PostgreSQL (the `stores` fixture of tests/conftest.py), in resumable mode."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from baton.sessions.services import BaseSessionService
from baton.workflow.nodes import Node
from tests.conftest import StoreFactory
from tests.harness import Harness, MakeHarness, build_harness


@pytest.fixture
def make_harness(stores: StoreFactory) -> MakeHarness:
    async def make(
        root: Node,
        *,
        resumable: bool = True,
        service: BaseSessionService | None = None,
        state: dict[str, JsonValue] | None = None,
    ) -> Harness:
        chosen = service or BaseSessionService(stores.open())
        return await build_harness(root, chosen, resumable=resumable, state=state)

    return make
