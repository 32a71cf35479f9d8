"""Time travel over HTTP on SQLite and PostgreSQL: rewind, with its refusals changing nothing."""

from __future__ import annotations

from typing import Any

from tests.server.conftest import Live, StartLive


async def paused_twice(live: Live) -> tuple[str, str, str]:
    """A session whose first run completed (approved) and whose second waits."""
    sid = await live.create("approval", "u")
    first = (await live.start("approval", "u", sid, "one"))[-1]["invocationId"]
    await respond(live, sid, {"approved": True})
    second = (await live.start("approval", "u", sid, "two"))[-1]["invocationId"]
    return sid, first, second


async def respond(live: Live, sid: str, answer: Any) -> Any:
    path = f"/apps/approval/users/u/sessions/{sid}/interrupts/approve/respond"
    return await live.client.post(path, json={"response": answer})


async def rewind(live: Live, sid: str, body: Any) -> Any:
    return await live.client.post(f"/apps/approval/users/u/sessions/{sid}/rewind", json=body)


async def test_rewind_route_undoes_a_waiting_run(
    emptied_store_url: str, start_live: StartLive
) -> None:
    live: Live = await start_live(db_url=emptied_store_url)
    sid, first, second = await paused_twice(live)
    base = f"/apps/approval/users/u/sessions/{sid}"
    events = (await live.client.get(base)).json()["events"]

    reply = await rewind(live, sid, {"rewindBeforeInvocationId": second})
    assert reply.status_code == 200, reply.text
    assert reply.json()["actions"]["rewindBeforeInvocationId"] == second
    assert reply.json()["author"] == "user"
    assert (await live.client.get("/apps/approval/users/u/pending")).json() == []
    timeline = (await live.client.get(f"{base}/timeline")).json()
    assert [(r["id"], r["status"]) for r in timeline["invocations"]] == [
        (first, "completed"),
        (second, "rewound"),
    ]
    assert all("two" not in str(e["detail"]) for e in timeline["entries"])
    after = (await live.client.get(base)).json()["events"]
    assert after[: len(events)] == events

    # Refusals: specific, and nothing changes.
    late = await respond(live, sid, {"approved": False})
    assert late.status_code == 409
    assert "rewound" in late.json()["detail"]
    again = await rewind(live, sid, {"rewindBeforeInvocationId": second})
    assert again.status_code == 409
    assert "already rewound" in again.json()["detail"]
    unknown = await rewind(live, sid, {"rewindBeforeInvocationId": "e-nope"})
    assert unknown.status_code == 404
    assert "'e-nope' has no event" in unknown.json()["detail"]
    missing = await rewind(live, sid, {})
    assert missing.status_code == 422
    no_session = await rewind(live, "nope", {"rewindBeforeInvocationId": first})
    assert no_session.status_code == 404
    assert (await live.client.get(base)).json()["events"] == after

    # A new run after the rewind asks again, and the new answer is the one used.
    await live.start("approval", "u", sid, "three")
    done = await respond(live, sid, {"approved": False})
    assert done.json()[-1]["output"] == 'done:{"approved": false}'


async def test_checkpoints_and_fork_routes(emptied_store_url: str, start_live: StartLive) -> None:
    live: Live = await start_live(db_url=emptied_store_url)
    sid, first, second = await paused_twice(live)
    base = f"/apps/approval/users/u/sessions/{sid}"
    listed = await live.client.get(f"{base}/checkpoints")
    assert listed.status_code == 200, listed.text
    points = listed.json()
    assert [(p["kind"], p["invocationId"]) for p in points] == [
        ("start", first),
        ("question", first),
        ("step", first),
        ("step", first),
        ("end", first),
        ("start", second),
        ("question", second),
    ]
    assert points[1]["answers"] == {"approve": {"approved": True}}
    assert points[1]["answeredBy"] == {"approve": "u"}
    source = (await live.client.get(base)).json()["events"]

    forked = await live.client.post(
        f"{base}/fork", json={"checkpointId": points[1]["id"], "newSessionId": "f1"}
    )
    assert forked.status_code == 200, forked.text
    assert forked.json()["id"] == "f1"
    [waiting] = (await live.client.get("/apps/approval/users/u/pending?session_id=f1")).json()
    assert waiting["interruptId"] == "approve"
    path = "/apps/approval/users/u/sessions/f1/interrupts/approve/respond"
    done = await live.client.post(path, json={"response": {"approved": False}})
    assert done.json()[-1]["output"] == 'done:{"approved": false}'
    assert (await live.client.get(base)).json()["events"] == source

    # Refusals: specific, and no session is made.
    sessions = (await live.client.get("/apps/approval/users/u/sessions")).json()
    unknown = await live.client.post(f"{base}/fork", json={"checkpointId": "start:e-nope"})
    assert unknown.status_code == 404
    assert "no checkpoint 'start:e-nope'" in unknown.json()["detail"]
    taken = await live.client.post(
        f"{base}/fork", json={"checkpointId": points[0]["id"], "newSessionId": "f1"}
    )
    assert taken.status_code == 409
    bad_id = await live.client.post(
        f"{base}/fork", json={"checkpointId": points[0]["id"], "newSessionId": "a\u0000b"}
    )
    assert bad_id.status_code == 422
    assert (await live.client.post(f"{base}/fork", json={})).status_code == 422
    missing = await live.client.get("/apps/approval/users/u/sessions/nope/checkpoints")
    assert missing.status_code == 404
    after = (await live.client.get("/apps/approval/users/u/sessions")).json()
    assert sorted(s["id"] for s in after) == sorted(s["id"] for s in sessions)


async def test_a_fork_at_a_step_is_continued_from_there(
    emptied_store_url: str, start_live: StartLive
) -> None:
    live: Live = await start_live(db_url=emptied_store_url, recover=False)
    sid, first, _ = await paused_twice(live)
    base = f"/apps/approval/users/u/sessions/{sid}"
    points = (await live.client.get(f"{base}/checkpoints")).json()
    answered = next(p for p in points if p["kind"] == "step" and p["invocationId"] == first)
    assert answered["label"].endswith('after ask_approval@1: {"approved": true}')
    source = (await live.client.get(base)).json()["events"]

    forked = await live.client.post(f"{base}/fork", json={"checkpointId": answered["id"]})
    assert forked.status_code == 200, forked.text
    fork = forked.json()["id"]
    [run] = (await live.client.get(f"/apps/approval/users/u/sessions/{fork}/invocations")).json()
    assert run["status"] == "running"
    # Continued (the page's "Continue run"): the question is not asked again.
    events = await live.run("approval", "u", fork, invocationId=run["id"])
    assert [e.get("output") for e in events] == ['done:{"approved": true}']
    pending = await live.client.get(f"/apps/approval/users/u/pending?session_id={fork}")
    assert pending.json() == []
    assert (await live.client.get(base)).json()["events"] == source
