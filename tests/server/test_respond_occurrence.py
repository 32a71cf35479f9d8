"""The respond route answers the occurrence it was sent for; Idempotency-Key retries act once."""

from __future__ import annotations

import asyncio

from baton import App, ResumabilityConfig
from tests.runner.test_occurrences import looping
from tests.server.conftest import Live, StartLive


async def _loop_server(start_live: StartLive) -> tuple[Live, str, str]:
    app = App(
        name="loop", root_agent=looping(), resumability_config=ResumabilityConfig(is_resumable=True)
    )
    live: Live = await start_live(apps=[app])
    sid = await live.create("loop", "u")
    await live.start("loop", "u", sid)
    return live, sid, f"/apps/loop/users/u/sessions/{sid}/interrupts/review/respond"


async def pending_items(live: Live, user: str = "u") -> list[dict[str, object]]:
    """The open questions of app 'loop' for `user`, as the pending route lists them."""
    r = await live.client.get(f"/apps/loop/users/{user}/pending")
    assert r.status_code == 200
    rows: list[dict[str, object]] = r.json()
    return rows


async def test_a_burst_of_answers_for_one_pass_answers_only_that_pass(
    start_live: StartLive,
) -> None:
    live, _, url = await _loop_server(start_live)
    (first,) = await pending_items(live)
    body = {"response": "ok", "occurrence": first["occurrence"]}
    replies = await asyncio.gather(*(live.client.post(url, json=body) for _ in range(20)))
    assert sorted(r.status_code for r in replies).count(200) == 1, [r.text for r in replies]
    assert {r.json()["error"] for r in replies if r.status_code != 200} <= {
        "AlreadyAnsweredError",
        "InvocationBusyError",
    }
    (second,) = await pending_items(live)  # pass 2 is open and nobody answered it
    assert second["occurrence"] != first["occurrence"]
    late = await live.client.post(url, json=body)
    assert late.status_code == 409
    assert first["occurrence"] in late.json()["detail"]


async def test_a_retry_with_the_same_idempotency_key_returns_the_first_reply(
    start_live: StartLive,
) -> None:
    live, sid, url = await _loop_server(start_live)
    (first,) = await pending_items(live)
    body = {"response": "ok", "occurrence": first["occurrence"]}
    headers = {"Idempotency-Key": "answer-1"}
    replies = await asyncio.gather(
        *(live.client.post(url, json=body, headers=headers) for _ in range(3))
    )
    assert [r.status_code for r in replies] == [200, 200, 200]
    assert replies[0].json() == replies[1].json() == replies[2].json()
    again = await live.client.post(url, json=body, headers=headers)
    assert again.json() == replies[0].json()
    session = (await live.client.get(f"/apps/loop/users/u/sessions/{sid}")).json()
    answers = [e for e in session["events"] if e["author"] == "user" and "content" in e]
    assert len(answers) == 2  # the start message and one answer
    other_key = await live.client.post(url, json=body, headers={"Idempotency-Key": "answer-2"})
    assert other_key.status_code == 409  # a new key acts, and the pass it meant is answered
