"""Every refusal is JSON that names the error and the next step, and changes nothing."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from baton.agents import MissingArtifactError, MissingStateKeyError
from baton.errors import (
    InvalidResponseError,
    InvocationWaitingError,
    NodeFailedError,
    NodeTimeoutError,
    UnknownInterruptError,
)
from baton.server.catalog import DatabaseUnavailableError
from baton.server.refusals import status_of
from tests.server.conftest import Live, StartLive
from tests.server.test_refusals import paused, snapshot

JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("sent", "headers", "message"),
    [
        (
            '{"appName": "approval", "userId":',
            JSON,
            "the body is not valid JSON (Expecting value at character 33); "
            "send one JSON object.",
        ),
        (
            '{"appName": "approval"}',
            JSON,
            "body.userId: Field required; body.sessionId: Field required. Correct the "
            "request and send it again (schemas at /docs).",
        ),
        (
            '{"appName": "approval", "userId": "u", "sessionId": "s"}',
            {},
            "the body must be a JSON object, sent with `Content-Type: application/json`; "
            "the request schemas are at /docs.",
        ),
    ],
)
async def test_malformed_run_requests_say_how_to_fix_them(
    live: Live, sent: str, headers: dict[str, str], message: str
) -> None:
    sid, _ = await paused(live)
    before = await snapshot(live.service.store, "approval", "u", sid)
    for route in ("/run", "/run_sse"):
        r = await live.client.post(route, content=sent, headers=headers)
        assert r.status_code == 422
        body = r.json()
        # FastAPI's list of problems stays in `detail`, as the reference server sends it.
        assert isinstance(body["detail"], list)
        assert {k: v for k, v in body.items() if k != "detail"} == {
            "error": "RequestValidationError",
            "message": message,
        }
    assert await snapshot(live.service.store, "approval", "u", sid) == before


async def test_a_respond_without_a_body_asks_for_one(live: Live) -> None:
    sid, _ = await paused(live)
    before = await snapshot(live.service.store, "approval", "u", sid)
    url = f"/apps/approval/users/u/sessions/{sid}/interrupts/approve/respond"
    r = await live.client.post(url)
    assert (r.status_code, r.json()["error"], r.json()["message"]) == (
        422,
        "RequestValidationError",
        "the body must be a JSON object, sent with `Content-Type: application/json`; "
        "the request schemas are at /docs.",
    )
    assert await snapshot(live.service.store, "approval", "u", sid) == before


async def test_pending_of_an_unknown_session_is_404(live: Live) -> None:
    sid, _ = await paused(live)
    mine = await live.client.get("/apps/approval/users/u/pending", params={"session_id": sid})
    assert [row["interruptId"] for row in mine.json()] == ["approve"]
    r = await live.client.get("/apps/approval/users/bob/pending", params={"session_id": sid})
    assert (r.status_code, r.json()) == (
        404,
        {
            "detail": f"session '{sid}' of user 'bob' does not exist in app 'approval'; list "
            "that user's sessions with GET /apps/approval/users/bob/sessions.",
            "error": "SessionNotFoundError",
        },
    )


async def test_unknown_routes_and_methods_point_to_the_docs(live: Live) -> None:
    r = await live.client.get("/nothing")
    assert (r.status_code, r.json()) == (
        404,
        {
            "detail": "GET /nothing: not found; the routes and their methods are listed at /docs.",
            "error": "NotFound",
        },
    )
    r = await live.client.put("/run")
    assert (r.status_code, r.json()) == (
        405,
        {
            "detail": "PUT /run: method not allowed; the routes and their methods are listed "
            "at /docs.",
            "error": "MethodNotAllowed",
        },
    )


async def test_deleting_an_unknown_or_foreign_session_is_404_and_deletes_nothing(
    live: Live,
) -> None:
    sid, _ = await paused(live, user="alice")
    before = await snapshot(live.service.store, "approval", "alice", sid)
    r = await live.client.delete(f"/apps/approval/users/bob/sessions/{sid}")
    assert (r.status_code, r.json()) == (
        404,
        {
            "detail": f"session '{sid}' of user 'bob' does not exist in app 'approval'; list "
            "that user's sessions with GET /apps/approval/users/bob/sessions.",
            "error": "SessionNotFoundError",
        },
    )
    assert await snapshot(live.service.store, "approval", "alice", sid) == before

    own = f"/apps/approval/users/alice/sessions/{sid}"
    deleted = await live.client.delete(own)
    assert (deleted.status_code, deleted.json()) == (200, None)
    gone = await live.client.delete(own)
    assert (gone.status_code, gone.json()["error"]) == (404, "SessionNotFoundError")
    assert await snapshot(live.service.store, "approval", "alice", sid) == [None, [], []]


async def test_key_refusals_name_the_error_and_change_nothing(start_live: StartLive) -> None:
    live: Live = await start_live(keys=["alice:alice-key"])
    alice = {"X-API-Key": "alice-key"}
    created = await live.client.post("/apps/approval/users/alice/sessions", headers=alice)
    sid = created.json()["id"]
    before = await snapshot(live.service.store, "approval", "alice", sid)
    answer: JsonValue = {"response": {"approved": True}}
    respond = f"/apps/approval/users/alice/sessions/{sid}/interrupts/approve/respond"

    r = await live.client.post(respond, json=answer)
    assert (r.status_code, r.json()) == (
        401,
        {
            "detail": "missing or unknown API key; send it as `Authorization: Bearer <key>` or "
            "`X-API-Key: <key>`.",
            "error": "Unauthorized",
        },
    )
    r = await live.client.delete(f"/apps/approval/users/bob/sessions/{sid}", headers=alice)
    assert (r.status_code, r.json()) == (
        403,
        {
            "detail": "this API key acts for user 'alice' only, not 'bob'; use "
            "/apps/{app}/users/alice/... or a key of that user.",
            "error": "Forbidden",
        },
    )
    assert await snapshot(live.service.store, "approval", "alice", sid) == before


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (UnknownInterruptError("x"), 404),
        (InvocationWaitingError("x"), 409),
        (InvalidResponseError("x"), 422),
        (MissingStateKeyError("x"), 422),
        (MissingArtifactError("x"), 422),
        (DatabaseUnavailableError("x"), 503),
        (NodeTimeoutError("slow", 1.0), 504),
        (NodeFailedError("x"), 500),
        (RuntimeError("x"), 500),
    ],
)
def test_each_error_has_its_status_from_the_one_table(error: Exception, status: int) -> None:
    assert status_of(error) == status
