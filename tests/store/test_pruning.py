"""Pruning old sessions (`BaseSessionService.prune_sessions`) on every backend."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationStatus, Lease, Session, Store
from baton.types import InvocationId, SessionId
from tests.conftest import FakeClock, StoreFactory
from tests.store.builders import APP, USER, event, key, snapshot, step, texts

DAY = 24 * 3600.0


async def _session(store: Store, name: str, *, run: InvocationStatus | None) -> None:
    """A session `name`; with `run`, one invocation left in that status."""
    await store.create_session(APP, USER, session_id=SessionId(name))
    if run is not None:
        await store.commit_step(
            step(key(name), f"inv-{name}", 0, events=(event(name),), status=run)
        )


async def _aged(stores: StoreFactory, clock: FakeClock) -> BaseSessionService:
    """Sessions 40 days old (done, paused, failed, no runs) and one a day old (done)."""
    store = stores.open()
    await _session(store, "old-done", run=InvocationStatus.COMPLETED)
    await _session(store, "old-paused", run=InvocationStatus.PAUSED)
    await _session(store, "old-failed", run=InvocationStatus.FAILED)
    await _session(store, "old-empty", run=None)
    clock.advance(39 * DAY)
    await _session(store, "recent-done", run=InvocationStatus.COMPLETED)
    clock.advance(DAY)
    return BaseSessionService(store, clock=clock)


def _ids(sessions: list[Session]) -> list[str]:
    return sorted(s.id for s in sessions)


async def test_prune_deletes_old_finished_sessions_and_keeps_the_rest(
    stores: StoreFactory, clock: FakeClock
) -> None:
    service = await _aged(stores, clock)
    kept_paused = await snapshot(service.store, key("old-paused"))

    pruned = await service.prune_sessions(app_name=APP, older_than=timedelta(days=30))

    assert _ids(pruned) == ["old-done", "old-empty"]
    left = await service.store.list_sessions(APP)
    assert _ids(left) == ["old-failed", "old-paused", "recent-done"]
    assert await snapshot(service.store, key("old-paused")) == kept_paused
    assert await service.store.list_invocations(key("old-done")) == []


async def test_prune_with_unfinished_runs_included_and_a_dry_run(
    stores: StoreFactory, clock: FakeClock
) -> None:
    service = await _aged(stores, clock)
    old = ["old-done", "old-empty", "old-failed", "old-paused"]

    would = await service.prune_sessions(
        app_name=APP, older_than=timedelta(days=30), include_unfinished=True, dry_run=True
    )
    assert _ids(would) == old
    assert len(await service.store.list_sessions(APP)) == 5  # a dry run deletes nothing

    pruned = await service.prune_sessions(
        app_name=APP, older_than=timedelta(days=30), include_unfinished=True
    )
    assert _ids(pruned) == old
    assert _ids(await service.store.list_sessions(APP)) == ["recent-done"]


async def test_prune_only_the_given_users_sessions(stores: StoreFactory, clock: FakeClock) -> None:
    store = stores.open()
    await store.create_session(APP, "ann", session_id=SessionId("a"))
    await store.create_session(APP, "bob", session_id=SessionId("b"))
    clock.advance(2 * DAY)
    service = BaseSessionService(store, clock=clock)

    pruned = await service.prune_sessions(app_name=APP, user_id="ann", older_than=timedelta(days=1))

    assert _ids(pruned) == ["a"]
    assert [s.id for s in await store.list_sessions(APP)] == ["b"]


@pytest.mark.parametrize("older_than", [timedelta(0), timedelta(days=-1)])
async def test_prune_refuses_an_age_that_is_not_positive(
    store: Store, older_than: timedelta
) -> None:
    await _session(store, "s1", run=None)
    service = BaseSessionService(store)

    with pytest.raises(ValueError, match="older_than must be positive") as caught:
        await service.prune_sessions(app_name=APP, older_than=older_than)

    assert str(older_than) in str(caught.value)
    assert len(await store.list_sessions(APP)) == 1


async def _prune_after(
    service: BaseSessionService,
    monkeypatch: pytest.MonkeyPatch,
    meanwhile: Callable[[], Awaitable[object]],
    *,
    include_unfinished: bool,
) -> list[Session]:
    """Prune, with `meanwhile` landing right after the old sessions are listed."""
    store = service.store
    listed = store.list_sessions

    async def list_then_change(*args: Any, **options: Any) -> list[Session]:
        sessions = await listed(*args, **options)
        monkeypatch.undo()
        await meanwhile()
        return sessions

    monkeypatch.setattr(store, "list_sessions", list_then_change)
    return await service.prune_sessions(
        app_name=APP, older_than=timedelta(days=30), include_unfinished=include_unfinished
    )


async def test_prune_keeps_an_old_session_appended_to_while_it_prunes(
    stores: StoreFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = await _aged(stores, clock)
    later = step(
        key("old-done"), "inv-later", 0, events=(event("later"),), status=InvocationStatus.COMPLETED
    )

    pruned = await _prune_after(
        service, monkeypatch, lambda: service.store.commit_step(later), include_unfinished=False
    )

    assert _ids(pruned) == ["old-empty"]
    left = await service.store.get_session(key("old-done"))
    assert left is not None
    assert texts(left.events) == ["old-done", "later"]


async def test_prune_keeps_an_old_session_whose_run_executes_even_with_unfinished_included(
    stores: StoreFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = await _aged(stores, clock)
    store = service.store
    # A run claimed before the prune (executing for longer than `older_than`, say).
    await store.claim(InvocationId("inv-old-failed"), "worker-1", timedelta(hours=1))

    # and a resume claiming its paused run while the prune runs
    async def resume() -> Lease:
        return await store.claim(InvocationId("inv-old-paused"), "worker-2", timedelta(hours=1))

    pruned = await _prune_after(service, monkeypatch, resume, include_unfinished=True)

    assert _ids(pruned) == ["old-done", "old-empty"]
    assert _ids(await store.list_sessions(APP)) == ["old-failed", "old-paused", "recent-done"]
