"""The Worker: continues runs nobody is waiting on, and ends questions nobody answered.

Every `baton api_server`, `baton web` and `baton worker` process runs one; an
application that embeds baton runs its own (`async with Worker(runners): ...`). It
loops over three kinds of work, all found through the store's indexes:

- **orphans**: invocations that are `running` with no live lease: their holder died,
  stalled past its time to live, lost the database, or handed them over at shutdown.
  One claim takes each (FOR UPDATE SKIP LOCKED on PostgreSQL, the write lock on
  SQLite), with a new fencing token, and the Runner continues it from its last
  commit. At start the worker also takes back the runs its own identity held before
  a restart, without waiting for their leases to lapse.
- **deadlines**: open questions whose `timeout` passed are answered with their
  `on_timeout` (as `system:timeout`) or fail the node that asked. Not those of an
  invocation that failed (another branch's error): ending one would continue the run
  nobody asked to continue; they count again once a person continues it.
- **waiting**: between rounds it sleeps until the next thing falls due (a deadline,
  a lease expiry), or until the store wakes it: a question with a deadline opened, or
  a running invocation was released (answers and questions without a deadline do not
  wake it). On PostgreSQL those wake-ups come from every process (LISTEN/NOTIFY), so an
  idle worker does not poll; elsewhere it looks again every `poll` seconds. Wake-ups
  that come within `_GATHER` of each other make one round.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Coroutine, Iterable
from contextlib import suppress
from typing import Final, final

from baton.errors import (
    InputTimeoutError,
    InvocationBusyError,
    StoreUnavailableError,
    WorkflowChangedError,
)
from baton.invocation import held_here
from baton.runner import Runner, check_worker_id, own_prefix
from baton.sessions.store import Claimed, Interrupt, Store, Subscription

__all__ = ["Worker"]

_log = logging.getLogger("baton.worker")

_SLACK: Final = 0.01  # wake just after a lease lapses, so the claim sees it lapsed
_SHORTEST_WAIT: Final = 0.05  # between rounds while due work is still being handled
_BUSY_RETRY: Final = 0.5  # a deadline whose run is executing elsewhere is tried again after
_DRAIN_CHECK: Final = 0.25  # how often a sleeping worker notices `drain`
# After a wake-up, the round waits this long for more (as long as a drain may wait to be
# noticed): under load nearly every commit wakes the worker, and a round costs three
# queries (one a write), so rounds are spaced. Other processes' runs are found by polling
# (`poll`, 1 s) on SQLite anyway.
_GATHER: Final = 0.25


@final
class Worker:
    """Recovers orphaned runs and enforces question deadlines for a set of apps.

    Args:
        runners: the Runners of the apps this process serves, over one session service.
            Runs of other apps are left to processes that serve them.
        worker_id: this process's identity (default: the first runner's). Lease owners
            are `worker_id/...`; at start, runs held under this identity are taken back
            at once (a restarted process). Two live processes must not share one.
        poll: seconds between looks when the store cannot push wake-ups from other
            processes (SQLite); PostgreSQL pushes them and is looked at every
            `idle_check` seconds at most, as a safety net.
        idle_check: the longest sleep when nothing is due and nothing wakes the worker.
        concurrency: most runs this worker continues at once.

    Use as `async with Worker(runners): ...`, or `await worker.run()` in a task and
    `worker.drain()` to stop it. `rounds` counts the rounds it completed (each looked
    for orphans and due deadlines once): what a health check or a test can wait on.
    """

    def __init__(
        self,
        runners: Iterable[Runner],
        *,
        worker_id: str | None = None,
        poll: float = 1.0,
        idle_check: float = 30.0,
        concurrency: int = 32,
    ) -> None:
        listed = list(runners)
        if not listed:
            raise ValueError("a Worker needs at least one Runner.")
        stores = {id(r.store) for r in listed}
        if len(stores) > 1:
            raise ValueError(
                "a Worker's runners must share one session service; start one Worker per "
                "database."
            )
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}.")
        self._runners = {r.app_name: r for r in listed}
        self._store: Store = listed[0].store
        self._clock = listed[0].planner.clock
        self.worker_id = listed[0].worker_id if worker_id is None else check_worker_id(worker_id)
        self._lease_ttl = min(r.lease_ttl for r in listed)
        self._poll = poll
        self._idle_check = idle_check
        self._concurrency = concurrency
        self._active: dict[str, asyncio.Task[None]] = {}  # by invocation id
        # Deadlines tried again later (their run was busy, or ending them failed), by
        # invocation id: when.
        self._retry_after: dict[str, float] = {}
        self._draining = False
        self._task: asyncio.Task[None] | None = None
        self._grace = 30.0
        self.rounds = 0

    @property
    def app_names(self) -> list[str]:
        """The apps whose runs this worker continues."""
        return sorted(self._runners)

    async def __aenter__(self) -> Worker:
        self._task = asyncio.get_running_loop().create_task(self.run())
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    async def stop(self, grace: float = 30.0) -> None:
        """Stop looking for work; let the runs it continues reach a pause for up to
        `grace` seconds, then cut them off (their leases are released, so another
        process continues them at once)."""
        self.drain(grace)
        if self._task is not None:
            await self._task

    def drain(self, grace: float = 30.0) -> None:
        """Ask `run` to stop looking for work and return within about `grace` seconds."""
        self._draining = True
        self._grace = grace

    async def run(self) -> None:
        """Recover runs and enforce deadlines until `drain` (or cancellation)."""
        # Work only: the answers of a busy server (its own or another process's) are none of
        # a worker's business, and each wake-up cost it a round of queries.
        subscription = self._store.subscribe(questions=False)
        try:
            async with asyncio.TaskGroup() as group:
                await self._rounds(group, subscription)
                await self._finish_active()
        finally:
            subscription.close()

    async def _rounds(self, group: asyncio.TaskGroup, subscription: Subscription) -> None:
        first = True
        while not self._draining:
            try:
                await self._recover_orphans(group, reclaim_own=first)
                await self._expire_due(group)
                first = False
                wait = await self._time_to_next()
                self.rounds += 1
            except Exception as error:  # the database is away: look again shortly
                _log.warning("baton worker %s: %s", self.worker_id, error)
                wait = self._poll
            await self._sleep(subscription, wait)

    async def _recover_orphans(self, group: asyncio.TaskGroup, *, reclaim_own: bool) -> None:
        free = self._concurrency - len(self._active)
        if free < 1:
            return
        claimed = await self._store.claim_orphans(
            self.app_names,
            f"{own_prefix(self.worker_id)}recover-{uuid.uuid4().hex[:8]}",
            self._lease_ttl,
            limit=free,
            # Runs of this worker id's earlier incarnation (a restart), not this one's.
            worker=self.worker_id if reclaim_own else None,
            spare=own_prefix(self.worker_id),
            # A run in hand, or a caller's in this process, whose lease lapsed (its
            # renewals stalled) still runs here: claimed, it would run twice here.
            skip=(*self._active, *held_here()),
        )
        if self._draining:
            # Asked to stop while claiming: the runs go back at once, for another process
            # to continue now, instead of starting here to be cut off at the grace's end.
            for each in claimed:
                with suppress(StoreUnavailableError):  # then its lease lapses by itself
                    await self._store.release(each.lease)
            return
        for each in claimed:
            self._spawn(group, each.lease.invocation_id, self._recover(each))

    async def _expire_due(self, group: asyncio.TaskGroup) -> None:
        now = self._clock()
        self._retry_after = {i: at for i, at in self._retry_after.items() if at > now}
        free = self._concurrency - len(self._active)
        if free < 1 or self._draining:
            return
        # Not the deadlines of runs in hand or tried again later: read first each round,
        # they would take the places of the ones after them.
        skip = (*self._active, *self._retry_after)
        due = await self._store.due_interrupts(self.app_names, limit=free, skip=skip)
        if self._draining:  # asked to stop meanwhile: none is started now
            return
        for row in due:
            if row.invocation_id not in self._active:  # a run with several due at once
                self._spawn(group, row.invocation_id, self._expire(row))

    def _spawn(
        self, group: asyncio.TaskGroup, invocation_id: str, work: Coroutine[None, None, None]
    ) -> None:
        task = group.create_task(work)
        self._active[invocation_id] = task

        def done(_: asyncio.Task[None]) -> None:
            # Only its own entry: a newer task of the invocation must stay tracked.
            if self._active.get(invocation_id) is task:
                del self._active[invocation_id]

        task.add_done_callback(done)

    async def _recover(self, claimed: Claimed) -> None:
        runner = self._runners[claimed.key.app_name]
        invocation = claimed.lease.invocation_id
        _log.info("baton worker %s: continuing invocation %s", self.worker_id, invocation)
        try:
            await runner.recover(claimed)
        except WorkflowChangedError as error:
            _log.warning(
                "baton worker %s: cannot continue %s: %s", self.worker_id, invocation, error
            )
        except InvocationBusyError as error:
            _log.info("baton worker %s: %s", self.worker_id, error)
        except Exception as error:  # the run failed; its error is recorded in the store
            _log.info(
                "baton worker %s: invocation %s failed: %s", self.worker_id, invocation, error
            )

    async def _expire(self, row: Interrupt) -> None:
        runner = self._runners[row.app_name]
        retry: float | None = None
        try:
            await runner.expire(row)
        except (InvocationBusyError, StoreUnavailableError):
            # The run executes elsewhere (another branch of it), or the database is away a
            # moment: its deadline waits a moment.
            retry = _BUSY_RETRY
        except InputTimeoutError as error:
            _log.info("baton worker %s: %s", self.worker_id, error)
        except Exception as error:
            # E.g. the run started with other code: tried again a lease's time later, as a
            # run recovery cannot continue is; the rounds meanwhile end the deadlines after it.
            retry = self._lease_ttl.total_seconds()
            _log.warning(
                "baton worker %s: deadline of %s in %s: %s",
                self.worker_id,
                row.interrupt_id,
                row.invocation_id,
                error,
            )
        if retry is None:
            self._retry_after.pop(row.invocation_id, None)
        else:
            self._retry_after[row.invocation_id] = self._clock() + retry

    async def _time_to_next(self) -> float:
        """Seconds until something falls due, within this store's longest sleep.

        A run that starts pushes no wake-up, so where the store pushes, the worker still
        looks once per lease TTL: a lease granted after one look lapses no sooner than
        the next, and the worker sleeps until it lapses instead of up to `idle_check`
        later (a holder that died right after starting its run).
        """
        ttl = self._lease_ttl.total_seconds()
        longest = min(self._idle_check, ttl) if self._store_pushes else self._poll
        # A deadline tried again later is due then, not now: no round before.
        due = await self._store.next_due(self.app_names, skip=tuple(self._retry_after))
        times = [*self._retry_after.values(), *([] if due is None else [due])]
        if not times:
            return longest
        soonest = min(times)
        return min(longest, max(_SHORTEST_WAIT, soonest - self._clock() + _SLACK))

    @property
    def _store_pushes(self) -> bool:
        return self._store.wakes_other_processes

    async def _sleep(self, subscription: Subscription, seconds: float) -> None:
        """Sleep up to `seconds`, waking early (within `_GATHER`) for the store or for
        `drain`."""
        left = seconds
        while left > 0 and not self._draining:
            step = min(left, _DRAIN_CHECK)
            if await subscription.wait(step):
                await asyncio.sleep(_GATHER)
                return
            left -= step

    async def _finish_active(self) -> None:
        """Give the runs in hand `grace` seconds to pause, then cut them off."""
        pending = set(self._active.values())
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=self._grace)
        for task in late:
            task.cancel()
