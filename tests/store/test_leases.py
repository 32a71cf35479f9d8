"""Invocation leases on every backend: one holder at a time, expiry, renew, release."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from baton.errors import InvocationBusyError
from baton.sessions.store import Lease, Store
from baton.types import InvocationId
from tests.conftest import FakeClock, StoreFactory

INV = InvocationId("inv-1")
TTL = timedelta(seconds=30)
CLAIMERS = 8


async def test_claim_returns_a_lease_until_now_plus_ttl(store: Store, clock: FakeClock) -> None:
    lease = await store.claim(INV, "worker-1", TTL)

    assert lease == Lease(INV, "worker-1", clock.now + 30)


async def test_second_owner_is_refused_with_the_holder_and_time_left_named(
    store: Store, clock: FakeClock
) -> None:
    await store.claim(INV, "worker-1", TTL)
    clock.advance(10)

    with pytest.raises(InvocationBusyError) as caught:
        await store.claim(INV, "worker-2", TTL)

    # FakeClock starts at 2023-11-14 22:13:20 UTC; the lease was taken a tick after.
    assert str(caught.value) == (
        "invocation 'inv-1' is being run by 'worker-1' (its lease runs 20 s more, until "
        "2023-11-14 22:13:50 UTC, unless renewed); wait for that run to pause or finish, "
        "then retry."
    )


async def test_same_owner_may_claim_again(store: Store, clock: FakeClock) -> None:
    await store.claim(INV, "worker-1", TTL)
    clock.advance(10)

    again = await store.claim(INV, "worker-1", TTL)

    assert again.expires_at == clock.now + 30


async def test_expired_lease_can_be_taken_over(store: Store, clock: FakeClock) -> None:
    await store.claim(INV, "worker-1", TTL)
    clock.advance(29)
    with pytest.raises(InvocationBusyError):
        await store.claim(INV, "worker-2", TTL)
    clock.advance(2)

    taken = await store.claim(INV, "worker-2", TTL)

    assert taken.owner == "worker-2"


async def test_renew_extends_a_held_lease(store: Store, clock: FakeClock) -> None:
    lease = await store.claim(INV, "worker-1", TTL)
    clock.advance(25)

    renewed = await store.renew(lease, TTL)
    clock.advance(25)

    assert renewed.expires_at > lease.expires_at
    with pytest.raises(InvocationBusyError):
        await store.claim(INV, "worker-2", TTL)


async def test_renew_after_losing_the_lease_raises(store: Store, clock: FakeClock) -> None:
    lost = await store.claim(INV, "worker-1", TTL)
    clock.advance(31)
    await store.claim(INV, "worker-2", TTL)

    with pytest.raises(InvocationBusyError, match=r"'inv-1' was lost by 'worker-1'"):
        await store.renew(lost, TTL)
    with pytest.raises(InvocationBusyError, match="'worker-2'"):
        await store.claim(INV, "worker-3", TTL)


async def test_release_frees_the_lease_and_ignores_a_lost_one(
    store: Store, clock: FakeClock
) -> None:
    first = await store.claim(INV, "worker-1", TTL)
    await store.release(first)
    second = await store.claim(INV, "worker-2", TTL)

    await store.release(first)  # already gone: no error, and worker-2 keeps its lease

    with pytest.raises(InvocationBusyError, match="'worker-2'"):
        await store.claim(INV, "worker-3", TTL)
    await store.release(second)
    with pytest.raises(InvocationBusyError):
        await store.renew(second, TTL)


async def test_leases_of_different_invocations_are_independent(store: Store) -> None:
    await store.claim(INV, "worker-1", TTL)

    other = await store.claim(InvocationId("inv-2"), "worker-2", TTL)

    assert other.owner == "worker-2"


async def test_concurrent_claims_exactly_one_wins(stores: StoreFactory) -> None:
    claimers = [stores.open() for _ in range(CLAIMERS)]

    results = await asyncio.gather(
        *(c.claim(INV, f"worker-{i}", TTL) for i, c in enumerate(claimers)),
        return_exceptions=True,
    )

    leases = [r for r in results if isinstance(r, Lease)]
    assert len(leases) == 1, results
    refused = [r for r in results if not isinstance(r, Lease)]
    assert all(isinstance(r, InvocationBusyError) for r in refused), results
    assert all(f"'{leases[0].owner}'" in str(r) for r in refused), results
