"""Invocation leases on every backend: one holder at a time, fencing tokens, expiry,
renew, release, and the recovery claims that take over what a dead holder left."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from pydantic import JsonValue

from baton.errors import InvocationBusyError, InvocationNotFoundError, LeaseLostError
from baton.sessions.sql.store import SqlStore
from baton.sessions.store import InvocationStatus, Lease, SessionKey, Store
from baton.types import InterruptId, InvocationId
from tests.conftest import FakeClock, StoreFactory
from tests.store.builders import event, question, snapshot, step, texts

INV = InvocationId("inv-1")
TTL = timedelta(seconds=30)
CLAIMERS = 8


async def _start(
    store: Store, session: SessionKey, invocation: str = INV, *, owner: str = "worker-1"
) -> Lease:
    """Create a running invocation the way a run starts one: its first step writes the lease."""
    lease = store.lease_new(InvocationId(invocation), owner, TTL)
    first = step(session, invocation, 0, status=InvocationStatus.RUNNING)
    first.lease = lease
    await store.commit_step(first)
    return lease


async def _session(store: Store, name: str = "s1", *, app: str = "app") -> SessionKey:
    created = await store.create_session(app, "u", session_id=name)  # pyright: ignore[reportArgumentType]
    return created.key


async def test_a_new_invocation_starts_under_its_first_lease(
    store: Store, clock: FakeClock
) -> None:
    session = await _session(store)

    lease = await _start(store, session)

    assert lease.token == 1
    assert await store.holder(INV) == lease


async def test_second_owner_is_refused_with_the_holder_and_time_left_named(
    store: Store, clock: FakeClock
) -> None:
    await _start(store, await _session(store))
    clock.advance(10)

    with pytest.raises(InvocationBusyError) as caught:
        await store.claim(INV, "worker-2", TTL)

    assert "invocation 'inv-1' is being run by 'worker-1' (its lease runs 20 s more" in str(
        caught.value
    )


async def test_every_claim_takes_a_new_token(store: Store, clock: FakeClock) -> None:
    first = await _start(store, await _session(store))
    clock.advance(10)

    again = await store.claim(INV, "worker-1", TTL)  # the same owner may claim again
    renewed_until = clock.now + 30
    clock.advance(31)
    taken = await store.claim(INV, "worker-2", TTL)  # expired: anyone may

    assert first.token == 1
    assert len({first.token, again.token, taken.token}) == 3
    assert again.expires_at <= renewed_until
    assert taken.owner == "worker-2"


async def test_expired_lease_can_be_taken_over_only_after_expiry(
    store: Store, clock: FakeClock
) -> None:
    await _start(store, await _session(store))
    clock.advance(29)
    with pytest.raises(InvocationBusyError):
        await store.claim(INV, "worker-2", TTL)
    clock.advance(2)

    assert (await store.claim(INV, "worker-2", TTL)).owner == "worker-2"


async def test_claiming_an_unknown_invocation_is_refused(store: Store) -> None:
    await _session(store)

    with pytest.raises(InvocationNotFoundError, match="'inv-9' does not exist"):
        await store.claim(InvocationId("inv-9"), "worker-1", TTL)


async def test_a_claim_can_return_the_invocation_as_load_invocation_gives_it(
    store: Store, clock: FakeClock
) -> None:
    session = await _session(store)
    lease = await _start(store, session)
    checkpoint: JsonValue = {"node": "root", "status": "waiting", "answers": {"q": [1, 2]}}
    second = step(session, INV, 1, checkpoint=checkpoint, status=InvocationStatus.PAUSED)
    second.lease = lease
    await store.commit_step(second)
    clock.advance(31)

    taken, invocation = await store.claim_loaded(session, INV, "worker-2", TTL)

    assert taken.owner == "worker-2"
    assert taken.token != lease.token
    assert await store.holder(INV) == taken
    assert invocation == await store.load_invocation(session, INV)
    assert (invocation.fingerprint, invocation.checkpoint) == ("fp", checkpoint)
    assert (invocation.version, invocation.status) == (2, InvocationStatus.PAUSED)


async def test_a_loading_claim_is_refused_like_a_claim_and_takes_nothing(
    store: Store, clock: FakeClock
) -> None:
    session = await _session(store)
    other = await _session(store, "s2")
    held = await _start(store, session)
    await _start(store, other, "inv-2", owner="worker-3")
    clock.advance(10)

    with pytest.raises(InvocationBusyError, match="is being run by 'worker-1'"):
        await store.claim_loaded(session, INV, "worker-2", TTL)
    with pytest.raises(InvocationNotFoundError, match="'inv-9' does not exist"):
        await store.claim_loaded(session, InvocationId("inv-9"), "worker-2", TTL)
    clock.advance(30)  # both leases lapsed: only the session stops the claim now
    with pytest.raises(InvocationNotFoundError, match="'inv-2' does not exist"):
        await store.claim_loaded(session, InvocationId("inv-2"), "worker-2", TTL)

    assert (await store.claim(INV, "worker-1", TTL)).token != held.token
    assert (await store.claim(InvocationId("inv-2"), "worker-3", TTL)).token != 1


async def test_a_step_that_releases_leaves_the_invocation_free_to_claim(
    store: Store, clock: FakeClock
) -> None:
    session = await _session(store)
    lease = await _start(store, session)
    last = step(session, INV, 1, status=InvocationStatus.PAUSED)
    last.lease, last.release = lease, True
    created = step(session, "inv-2", 0, status=InvocationStatus.COMPLETED)
    created.lease, created.release = store.lease_new(InvocationId("inv-2"), "worker-1", TTL), True

    await store.commit_step(last)
    await store.commit_step(created)

    assert await store.holder(INV) is None
    assert await store.holder(InvocationId("inv-2")) is None
    await store.claim(INV, "worker-2", TTL)  # at once, not after the TTL
    stale = step(session, INV, 2)
    stale.lease = lease
    with pytest.raises(LeaseLostError):  # the old token is fenced out by the new claim
        await store.commit_step(stale)


async def test_renew_extends_a_held_lease_and_fails_once_lost(
    store: Store, clock: FakeClock
) -> None:
    lease = await _start(store, await _session(store))
    clock.advance(25)
    renewed = await store.renew(lease, TTL)
    clock.advance(25)
    with pytest.raises(InvocationBusyError):
        await store.claim(INV, "worker-2", TTL)
    clock.advance(31)
    await store.claim(INV, "worker-2", TTL)

    assert renewed.expires_at > lease.expires_at
    assert renewed.token == lease.token
    with pytest.raises(LeaseLostError, match=r"lease of 'worker-1' \(token 1\) no longer holds"):
        await store.renew(renewed, TTL)


# A step changing state, and one that does not (on PostgreSQL its one statement).
@pytest.mark.parametrize("state", [{"k": 1}, None])
async def test_a_commit_under_a_lost_lease_lands_nothing(
    store: Store, clock: FakeClock, state: dict[str, JsonValue] | None
) -> None:
    session = await _session(store)
    stale = await _start(store, session)
    clock.advance(31)
    current = await store.claim(INV, "worker-2", TTL)
    before = await snapshot(store, session)

    late = step(session, INV, 1, events=(event("late", invocation_id=INV),), state=state)
    late.lease = stale
    with pytest.raises(LeaseLostError, match="taken over by another runner"):
        await store.commit_step(late)

    assert await snapshot(store, session) == before
    fresh = step(session, INV, 1, events=(event("new holder", invocation_id=INV),))
    fresh.lease = current
    assert await store.commit_step(fresh) == 2


# A running node's step under its lease: one event, a checkpoint, nothing asked or
# ended (on PostgreSQL a plain step's statement), with and without a state change.
@pytest.mark.parametrize("state", [{"k": 1, "temp:scratch": 2}, {"temp:scratch": 2}, None])
async def test_a_step_under_its_lease_lands_its_state_change(
    store: Store, state: dict[str, JsonValue] | None
) -> None:
    session = await _session(store)
    lease = await _start(store, session)

    commit = step(session, INV, 1, events=(event("out", invocation_id=INV),), state=state)
    commit.checkpoint = {"at": 1}
    commit.lease = lease
    assert await store.commit_step(commit) == 2

    found = await store.get_session(session)
    assert found is not None
    assert found.state == ({"k": 1} if state and "k" in state else {})
    assert texts(found.events) == ["out"]
    invocation = await store.load_invocation(session, INV)
    assert invocation is not None
    assert (invocation.version, invocation.checkpoint) == (2, {"at": 1})
    assert await store.holder(INV) == lease


async def test_release_frees_the_lease_and_ignores_a_lost_one(
    store: Store, clock: FakeClock
) -> None:
    first = await _start(store, await _session(store))
    await store.release(first)
    assert await store.holder(INV) is None
    second = await store.claim(INV, "worker-2", TTL)

    await store.release(first)  # already taken over: no error, worker-2 keeps its lease

    assert await store.holder(INV) == second
    await store.release(second)
    with pytest.raises(LeaseLostError):
        await store.renew(second, TTL)


async def test_concurrent_claims_exactly_one_wins(stores: StoreFactory, clock: FakeClock) -> None:
    first = stores.open()
    await _start(first, await _session(first))
    clock.advance(31)
    claimers = [stores.open() for _ in range(CLAIMERS)]

    results = await asyncio.gather(
        *(c.claim(INV, f"worker-{i}", TTL) for i, c in enumerate(claimers)),
        return_exceptions=True,
    )

    leases = [r for r in results if isinstance(r, Lease)]
    assert len(leases) == 1, results
    refused = [r for r in results if not isinstance(r, Lease)]
    assert all(isinstance(r, InvocationBusyError) for r in refused), results


async def test_orphans_are_running_invocations_without_a_live_lease(
    store: Store, clock: FakeClock
) -> None:
    session = await _session(store)
    await _start(store, session, "dead")  # its holder dies: the lease will lapse
    live = await _start(store, session, "live")
    paused = await _start(store, session, "paused")
    done = step(session, "paused", 1, status=InvocationStatus.PAUSED)
    done.lease = paused
    await store.commit_step(done)
    await store.release(paused)
    other_app = await _session(store, "s2", app="other")
    await _start(store, other_app, "elsewhere")
    clock.advance(20)
    await store.renew(live, TTL)
    assert await store.claim_orphans(["app"], "rescuer/1", TTL, limit=10) == []
    clock.advance(11)

    claimed = await store.claim_orphans(["app"], "rescuer/1", TTL, limit=10)

    assert [(c.key, c.lease.invocation_id, c.lease.owner) for c in claimed] == [
        (session, "dead", "rescuer/1")
    ]
    assert claimed[0].lease.token != 1
    assert await store.holder(InvocationId("dead")) == claimed[0].lease
    assert await store.claim_orphans(["app"], "rescuer/2", TTL, limit=10) == []


async def test_a_released_running_invocation_is_an_orphan_at_once(
    store: Store, clock: FakeClock
) -> None:
    session = await _session(store)
    lease = await _start(store, session)
    assert await store.next_due(["app"]) == lease.expires_at

    await store.release(lease)  # e.g. a server shutting down hands the run over

    assert await store.next_due(["app"]) == 0.0
    claimed = await store.claim_orphans(["app"], "rescuer/1", TTL, limit=10)
    assert [c.lease.invocation_id for c in claimed] == [INV]


async def test_a_restarted_worker_reclaims_its_own_runs_before_they_expire(
    store: Store, clock: FakeClock
) -> None:
    session = await _session(store)
    await _start(store, session, "mine", owner="host:8000/abc")
    await _start(store, session, "theirs", owner="host:8001/def")
    await _start(store, session, "prefix", owner="host:80000/ghi")

    await _start(store, session, "current", owner="host:8000/now-ghi")  # this very process's

    claimed = await store.claim_orphans(
        ["app"], "host:8000/now-r", TTL, limit=10, worker="host:8000", spare="host:8000/now-"
    )

    assert [c.lease.invocation_id for c in claimed] == ["mine"]


async def test_concurrent_orphan_claims_take_each_run_once(
    stores: StoreFactory, clock: FakeClock
) -> None:
    first = stores.open()
    session = await _session(first)
    for i in range(12):
        await _start(first, session, f"run-{i}")
    clock.advance(31)
    claimers = [stores.open() for _ in range(4)]

    results = await asyncio.gather(
        *(c.claim_orphans(["app"], f"rescuer-{i}/x", TTL, limit=5) for i, c in enumerate(claimers))
    )

    ids = [c.lease.invocation_id for batch in results for c in batch]
    assert sorted(ids) == sorted(f"run-{i}" for i in range(12))


async def test_deadlines_fall_due_by_the_store_clock(store: Store, clock: FakeClock) -> None:
    session = await _session(store)
    lease = await _start(store, session)
    asked = question(session, INV, "q1").model_copy(update={"timeout": 60.0})
    untimed = question(session, INV, "q2")
    opening = step(session, INV, 1, opened=(asked, untimed), status=InvocationStatus.PAUSED)
    opening.lease = lease
    await store.commit_step(opening)
    await store.release(lease)
    rows = await store.find_interrupts(session, InterruptId("q1"))
    expires_at = rows[0].expires_at
    assert expires_at == rows[0].created_at + 60

    assert await store.next_due(["app"]) == expires_at
    assert await store.due_interrupts(["app"], limit=10) == []
    clock.advance(61)
    due = await store.due_interrupts(["app"], limit=10)
    assert [r.interrupt_id for r in due] == ["q1"]
    assert await store.due_interrupts(["other"], limit=10) == []


async def test_subscribers_wake_when_a_question_opens_or_is_answered_or_a_run_is_released(
    stores: StoreFactory,
) -> None:
    # PostgreSQL wakes other processes (LISTEN/NOTIFY): the writer is another store there.
    # SQLite and MySQL wake only their own process; other processes poll.
    watcher = stores.open()
    writer = stores.open() if watcher.wakes_other_processes else watcher
    subscription = watcher.subscribe()
    try:
        session = await _session(writer)
        lease = await _start(writer, session)
        await subscription.wait(0.01)  # the listener's own first look, where there is one
        opening = step(session, INV, 1, opened=(question(session, INV, "q1"),))
        opening.lease = lease
        await writer.commit_step(opening)

        assert await subscription.wait(5.0)
        answering = step(session, INV, 2, answered={"q1": True})
        answering.lease = lease
        await writer.commit_step(answering)
        assert await subscription.wait(5.0)
        await writer.release(lease)
        assert await subscription.wait(5.0)
    finally:
        subscription.close()


async def test_a_subscriber_of_work_only_sleeps_through_answers_and_wakes_for_deadlines(
    stores: StoreFactory,
) -> None:
    """A worker subscribes to work only (`questions=False`): a question with a deadline and
    a released running invocation wake it, from another process on PostgreSQL; a question
    without one and an answer do not, while a subscriber of questions, even one that
    starts after the others, hears every change."""
    watcher = stores.open()
    listens = stores.backend == "postgres"
    writer = stores.open() if listens else watcher
    work = watcher.subscribe(questions=False)
    every = None
    try:
        if listens:
            assert await work.wait(5.0)  # the listener's first look, before any change
        every = watcher.subscribe()
        if listens:
            assert await every.wait(5.0)  # its first look at questions, once it listens
        session = await _session(writer)
        lease = await _start(writer, session)
        for change in (
            step(session, INV, 1, opened=(question(session, INV, "q1"),)),
            step(session, INV, 2, answered={"q1": True}),
        ):
            change.lease = lease
            await writer.commit_step(change)
            assert await every.wait(5.0)
            # Woken together or not at all: `work` would be by now.
            assert not await work.wait(0)
        timed = question(session, INV, "q2").model_copy(update={"timeout": 60.0})
        deadline = step(session, INV, 3, opened=(timed,))
        deadline.lease = lease
        await writer.commit_step(deadline)
        assert await work.wait(5.0)
        assert await every.wait(5.0)
        await writer.release(lease)
        assert await work.wait(5.0)
    finally:
        work.close()
        if every is not None:
            every.close()


async def test_deployments_in_two_schemas_of_one_database_do_not_wake_each_other(
    postgres_url: str, emptied_postgres_url: str, clock: FakeClock
) -> None:
    """PostgreSQL's wake-ups are scoped to the deployment's schema: a question opened and a
    run released in one schema wake that schema's subscribers, not those of a deployment
    in another schema of the same database."""
    writer, mine = SqlStore(postgres_url, clock=clock), SqlStore(postgres_url, clock=clock)
    theirs = SqlStore(emptied_postgres_url, clock=clock)
    session = await _session(writer)
    lease = await _start(writer, session)
    subscriptions = mine.subscribe(), theirs.subscribe()
    woken, not_woken = subscriptions
    try:
        for look in ("first", "again, a while after listening to questions"):
            for subscription in subscriptions:
                assert await subscription.wait(5.0), f"the listener's {look} look"
        opening = step(session, INV, 1, opened=(question(session, INV, "q1"),))
        opening.lease = lease
        await writer.commit_step(opening)
        assert await woken.wait(5.0)
        # Delivered to both listeners at once if at all: the other has had time to wake.
        assert not await not_woken.wait(0.5)
        await writer.release(lease)
        assert await woken.wait(5.0)
        assert not await not_woken.wait(0.5)
    finally:
        for subscription in subscriptions:
            subscription.close()
        for store in (writer, mine, theirs):
            await store.close()
