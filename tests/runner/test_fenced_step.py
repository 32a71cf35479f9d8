"""A step whose commit is fenced out (another worker took the run's lease while the node
ran) leaves the next node uncalled and nothing of the step in the store, on every backend."""

from __future__ import annotations

from datetime import timedelta

import pytest

from baton import Workflow
from baton.errors import LeaseLostError
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InvocationId
from tests.conftest import FakeClock, StoreFactory
from tests.harness import build_harness

TTL = timedelta(seconds=30)  # the Runner's default lease


async def test_a_step_whose_commit_is_fenced_out_never_runs_the_next_node(
    stores: StoreFactory, clock: FakeClock
) -> None:
    thief = stores.open()  # another process's store on the same database
    called: list[str] = []
    taken: list[InvocationId] = []

    async def first(node_input: str) -> str:
        called.append("first")
        # The runner's lease lapses while this node runs, and another worker claims the
        # run: this node's step is fenced out.
        clock.advance(TTL.total_seconds() + 1)
        (invocation,) = await thief.list_invocations(harness.key)
        taken.append(InvocationId(invocation.id))
        await thief.claim(taken[0], "thief", TTL)
        return "first done"

    async def second(node_input: str) -> str:
        called.append("second")
        return "second done"

    async def third(node_input: str) -> str:
        called.append("third")
        return "third done"

    workflow = Workflow(name="chain", edges=[("START", first, second, third)])
    harness = await build_harness(workflow, BaseSessionService(stores.open()), resumable=True)
    key = harness.key

    with pytest.raises(LeaseLostError, match="taken over by another runner"):
        await harness.start()

    assert called == ["first"]
    (invocation,) = await thief.list_invocations(key)
    # As the start left it (the user's message, version 1): nothing of `first`'s step.
    assert invocation.version == 1
    session = await thief.get_session(key)
    assert session is not None
    assert [e.author for e in session.events] == ["user"]
    holder = await thief.holder(taken[0])
    assert holder is not None
    assert holder.owner == "thief"
