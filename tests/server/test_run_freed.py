"""Over HTTP too, a request's run is freed by reference counting once its reply is sent:
no reference cycles left for the garbage collector (see `InvocationRun._let_go`)."""

from __future__ import annotations

import weakref

from baton.invocation import InvocationRun
from tests.runner.test_run_freed import runs  # noqa: F401  # pyright: ignore[reportUnusedImport]
from tests.server.conftest import Live


async def test_a_hitl_run_over_http_is_freed_without_the_collector(
    live: Live,
    runs: list[weakref.ref[InvocationRun]],  # noqa: F811
) -> None:
    sid = await live.create("approval", "u")
    asked = await live.start("approval", "u", sid)
    assert asked[-1]["content"]["parts"][0]["functionCall"]["args"]["interruptId"] == "approve"
    url = f"/apps/approval/users/u/sessions/{sid}/interrupts/approve/respond"
    r = await live.client.post(url, json={"response": {"approved": True}})
    assert r.status_code == 200, r.text
    assert r.json()[-1]["output"].startswith("done:")
    assert len(runs) == 2
    assert [run() for run in runs] == [None, None]
