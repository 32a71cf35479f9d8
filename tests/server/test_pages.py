"""Listings over HTTP a page at a time: the body keeps its shape, `X-Next-Cursor` names
the next page, and a bad cursor or page size is a specific 4xx."""

from __future__ import annotations

from typing import Any

from baton.sessions.paging import encode_cursor
from tests.server.conftest import Live


async def _walk(live: Live, path: str, limit: int, **params: Any) -> list[list[Any]]:
    """Every page of a listing, following X-Next-Cursor."""
    pages: list[list[Any]] = []
    query: dict[str, Any] = {"limit": limit, **params}
    while True:
        r = await live.client.get(path, params=query)
        assert r.status_code == 200, r.text
        pages.append(r.json())
        if "x-next-cursor" not in r.headers:
            return pages
        query["cursor"] = r.headers["x-next-cursor"]


async def test_sessions_list_whole_as_the_reference_or_a_page_at_a_time(live: Live) -> None:
    made = sorted([await live.create("approval", "u") for _ in range(5)])
    base = "/apps/approval/users/u/sessions"
    whole = await live.client.get(base)
    assert sorted(s["id"] for s in whole.json()) == made
    assert "x-next-cursor" not in whole.headers
    pages = await _walk(live, base, 2)
    assert [[s["id"] for s in page] for page in pages] == [made[0:2], made[2:4], made[4:]]


async def test_a_sessions_runs_a_page_at_a_time_without_checkpoints(live: Live) -> None:
    sid = await live.create("approval", "u")
    for _ in range(3):
        await live.start("approval", "u", sid)  # each start is a new run (the last waits)
    base = f"/apps/approval/users/u/sessions/{sid}/invocations"
    pages = await _walk(live, base, 2)
    assert [len(page) for page in pages] == [2, 1]
    runs = [run for page in pages for run in page]
    assert {run["status"] for run in runs} == {"paused"}
    assert all("checkpoint" not in run and "fingerprint" not in run for run in runs)
    created = [run["createdAt"] for run in runs]
    assert created == sorted(created)
    missing = await live.client.get("/apps/approval/users/u/sessions/nope/invocations")
    assert missing.status_code == 404
    assert missing.json()["error"] == "SessionNotFoundError"


async def test_pending_pages_default_to_100_and_follow_the_cursor(live: Live) -> None:
    sessions = [await live.create("approval", "u") for _ in range(3)]
    for sid in sessions:
        await live.start("approval", "u", sid)
    pages = await _walk(live, "/apps/approval/users/u/pending", 1)
    assert [[p["sessionId"] for p in page] for page in pages] == [[s] for s in sessions]
    whole = await live.client.get("/apps/approval/users/u/pending")
    assert len(whole.json()) == 3
    assert "x-next-cursor" not in whole.headers


async def test_the_inbox_snapshot_pages_its_questions(live: Live) -> None:
    for _ in range(3):
        await live.start("approval", "u", await live.create("approval", "u"))
    first = (await live.client.get("/users/u/inbox", params={"limit": 2})).json()
    assert len(first["pending"]) == 2
    rest = await live.client.get(
        "/users/u/inbox", params={"limit": 2, "cursor": first["nextCursor"]}
    )
    assert len(rest.json()["pending"]) == 1
    assert "nextCursor" not in rest.json()
    shown = [p["sessionId"] for p in first["pending"] + rest.json()["pending"]]
    assert len(set(shown)) == 3


async def test_bad_cursors_and_page_sizes_are_specific_refusals(live: Live) -> None:
    sid = await live.create("approval", "u")
    await live.start("approval", "u", sid)
    before = (await live.client.get("/apps/approval/users/u/pending")).json()
    wrong_listing = encode_cursor("sessions", ("u", sid))
    for path in (
        "/apps/approval/users/u/pending",
        "/apps/approval/users/u/sessions",
        f"/apps/approval/users/u/sessions/{sid}/invocations",
        "/users/u/inbox",
    ):
        for params, status, error in (
            ({"cursor": "garbage!"}, 400, "InvalidCursorError"),
            ({"limit": 0}, 422, "RequestValidationError"),
            ({"limit": 1001}, 422, "RequestValidationError"),
        ):
            r = await live.client.get(path, params=params)
            assert r.status_code == status, (path, params, r.text)
            body = r.json()
            if error == "InvalidCursorError":
                assert body["error"] == error
                assert "cursor 'garbage!'" in body["detail"]
    r = await live.client.get("/apps/approval/users/u/pending", params={"cursor": wrong_listing})
    assert r.status_code == 400
    assert "pending listing" in r.json()["detail"]
    assert (await live.client.get("/apps/approval/users/u/pending")).json() == before
