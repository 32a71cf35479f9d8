"""The hot routes answer exactly as FastAPI's routes do, good requests and bad.

Two servers over their own databases get the same requests in the same order: one
serves a run's requests through `HotRoutes`, the other through FastAPI alone. Every
reply must match: status, headers and body bytes, once the values each server
generates (ids, times) are masked.

Most tests share one such pair (the module's), each test as its own user, so no test
sees another's sessions; the tests that change how the servers run start their own.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from baton.server.app import drain_server
from baton.server.guard import BodyGuard
from baton.server.hot_routes import HotRoute, HotRoutes
from baton.server.security import ApiKeys
from baton.server.settings import Limits
from tests.server.conftest import Live, Servers, StartLive

JSON = {"content-type": "application/json"}
STREAM = {**JSON, "accept": "text/event-stream"}
LIMITS = Limits(max_body=4096)

# What differs between two servers given the same requests: generated ids and times.
_GENERATED = re.compile(
    rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    rb"|\b[0-9a-f]{32}\b"
    rb'|(?<="timestamp":)[0-9.e+-]+|(?<="lastUpdateTime":)[0-9.e+-]+'
)
_SERVER = re.compile(r"http://127\.0\.0\.1:\d+")


def run_body(session: str, text: str = "go", user: str = "u") -> bytes:
    return (
        b'{"appName": "approval", "userId": "%s", "sessionId": "%s", '
        b'"newMessage": {"role": "user", "parts": [{"text": "%s"}]}}'
        % (user.encode(), session.encode(), text.encode())
    )


Reply = tuple[int, list[tuple[str, str]], bytes]


def comparable(response: httpx.Response) -> Reply:
    """Status, headers (but the date, and the length checked against the body) and body,
    with generated values masked."""
    length = response.headers.get("content-length")
    assert length is None or int(length) == len(response.content)
    headers = sorted(
        (name, _SERVER.sub("<server>", value))
        for name, value in response.headers.multi_items()
        if name not in ("date", "content-length")
    )
    return response.status_code, headers, _GENERATED.sub(b"<generated>", response.content)


@dataclass
class Pair:
    """A server with the hot routes and one without, sent the same requests, by `user`."""

    hot: Live
    plain: Live
    user: str = "u"

    @property
    def sessions(self) -> str:
        return f"/apps/approval/users/{self.user}/sessions"

    def respond(self, session: str, interrupt: str = "approve") -> str:
        return f"{self.sessions}/{session}/interrupts/{interrupt}/respond"

    def run_body(self, session: str, text: str = "go") -> bytes:
        return run_body(session, text, self.user)

    def as_user(self, content: bytes | None) -> bytes | None:
        """`content` with its `"userId": "u"` made this pair's user."""
        if content is None:
            return None
        return content.replace(b'"userId": "u"', b'"userId": "%s"' % self.user.encode())

    async def same(
        self,
        url: str,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        *,
        status: int,
    ) -> httpx.Response:
        """POST to both; assert identical replies of `status`; return the hot one's."""
        replies = [
            await live.client.post(url, content=content, headers=headers)
            for live in (self.hot, self.plain)
        ]
        hot, plain = (comparable(reply) for reply in replies)
        assert hot == plain, (url, content)
        assert hot[0] == status, hot
        return replies[0]


async def pair_of(start_live: StartLive, **options: object) -> Pair:
    hot: Live = await start_live(hot_routes=True, limits=LIMITS, **options)
    plain: Live = await start_live(hot_routes=False, limits=LIMITS, **options)
    return Pair(hot, plain)


@pytest_asyncio.fixture(scope="module", loop_scope="module")  # pyright: ignore[reportUnknownMemberType, reportUntypedFunctionDecorator] -- pytest-asyncio 0.25 types it partly
async def shared_pair(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Pair]:
    """One pair for the module's tests (starting two servers costs more than most tests)."""
    servers = Servers(Path(tmp_path_factory.mktemp("hot_routes")))
    try:
        yield await pair_of(servers.start)
    finally:
        await servers.close()


@pytest.fixture
def pair(shared_pair: Pair) -> Pair:
    """The shared pair, used by a user of this test's own."""
    return Pair(shared_pair.hot, shared_pair.plain, f"u-{uuid.uuid4().hex[:12]}")


# Tests on the shared pair run in the module's event loop, the one its servers run in.
shared = pytest.mark.asyncio(loop_scope="module")


@shared
@pytest.mark.parametrize(
    ("content", "headers", "status"),
    [
        (b'{"sessionId": "s1", "state": {"k": [1, 2.5, null]}}', JSON, 200),
        (b'{"session_id": "s2", "unknown": true}', JSON, 200),
        (b"{}", JSON, 200),
        (None, None, 200),
        (None, JSON, 200),
        (b"null", JSON, 200),
        (b'{"sessionId": "s3",}', JSON, 200),  # a trailing comma, repaired
        (b'{"sessionId": "s4"}', {"content-type": "application/json; charset=utf-8"}, 200),
        (b'{"sessionId": "s5"}', {"content-type": "application/vnd.api+json"}, 200),
        (b'{"sessionId": "s6"}', {"content-type": "Application/JSON"}, 200),
        (b'{"sessionId": "s7"}', {"content-type": "text/plain"}, 422),
        (b'{"sessionId": "s8"}', None, 422),
        (b'{"sessionId": ', JSON, 422),
        (b'{"sessionId": ""}', JSON, 422),
        (b'{"sessionId": 7}', JSON, 422),
        (b'{"state": 3}', JSON, 422),
        (b'{"events": [{"author": 5}]}', JSON, 422),
        (b"[]", JSON, 422),
        (b'"s9"', JSON, 422),
        (b'{"sessionId": "\\u0000"}', JSON, 422),
        (b'{"sessionId": "%s"}' % (b"x" * 300), JSON, 422),
        (b'{"sessionId": "\xff"}', JSON, 400),  # not UTF-8
        (b'{"state": {"k": "%s"}}' % (b"x" * 5000), JSON, 413),
        (b"[" * 150 + b"]" * 150, JSON, 400),  # too deep
    ],
)
async def test_creating_a_session_replies_as_fastapi_does(
    pair: Pair, content: bytes | None, headers: dict[str, str] | None, status: int
) -> None:
    await pair.same(pair.sessions, content, headers, status=status)


@shared
async def test_session_routes_refuse_as_fastapi_does(pair: Pair) -> None:
    sessions = pair.sessions
    await pair.same(sessions, b'{"sessionId": "s1"}', JSON, status=200)
    await pair.same(sessions, b'{"sessionId": "s1"}', JSON, status=409)  # exists
    await pair.same(f"/apps/nope/users/{pair.user}/sessions", b"{}", JSON, status=404)
    await pair.same("/apps/approval/users/u%01/sessions", b"{}", JSON, status=422)
    await pair.same(f"/apps/approval/users/{'u' * 300}/sessions", b"{}", JSON, status=422)
    await pair.same(f"{sessions}?session_id=a%00b", b"{}", JSON, status=422)
    await pair.same(f"{sessions}?x=1", b'{"sessionId": "s2"}', JSON, status=200)
    await pair.same(f"{sessions}/", b"{}", JSON, status=307)  # FastAPI's redirect


@shared
async def test_a_whole_run_replies_as_fastapi_does(pair: Pair) -> None:
    respond = pair.respond
    await pair.same(pair.sessions, b'{"sessionId": "s1"}', JSON, status=200)
    asked = await pair.same("/run", pair.run_body("s1"), JSON, status=200)
    assert asked.json()[-1]["longRunningToolIds"] == ["approve"]
    await pair.same(respond("s1"), b'{"response": {"approved": "maybe"}}', JSON, status=422)
    await pair.same(
        respond("s1"), b'{"response": {"approved": true}, "willContinue": 3}', JSON, status=422
    )
    await pair.same(respond("s1"), None, None, status=422)
    await pair.same(respond("s1"), b'{"response": ', JSON, status=422)
    await pair.same(respond("s1", "nope"), b'{"response": 1}', JSON, status=404)
    await pair.same(respond("nope"), b'{"response": 1}', JSON, status=404)
    await pair.same(respond("s1", "a%09b"), b'{"response": 1}', JSON, status=422)
    answer = b'{"response": {"approved": true}, "answeredBy": "%s"}' % pair.user.encode()
    keyed = {**JSON, "idempotency-key": "k1"}
    done = await pair.same(respond("s1"), answer, keyed, status=200)
    assert done.json()[-1]["output"].startswith("done:")
    await pair.same(respond("s1"), answer, keyed, status=200)  # the same reply again
    await pair.same(respond("s1"), answer, JSON, status=409)  # already answered
    await pair.same("/run", pair.run_body("s1", "again"), JSON, status=200)  # a second run asks


@shared
@pytest.mark.parametrize(
    ("content", "headers", "status"),
    [
        (b'{"appName": "approval", "userId":', JSON, 422),
        (b'{"appName": "approval"}', JSON, 422),
        (b'{"appName": "approval", "userId": 5, "sessionId": "s1"}', JSON, 422),
        (b'{"appName": "approval", "userId": "u", "sessionId": "s1"}', None, 422),
        (b'{"appName": "approval", "userId": "u", "sessionId": "s1", "newMessage": 1}', JSON, 422),
        (b'{"appName": "nope", "userId": "u", "sessionId": "s1"}', JSON, 404),
        (b'{"appName": "approval", "userId": "u", "sessionId": "nope"}', JSON, 404),
        (b'{"appName": "approval", "userId": "u", "sessionId": "s1", "stateDelta": []}', JSON, 422),
        (None, JSON, 422),
    ],
)
@pytest.mark.parametrize("route", ["/run", "/run_sse"])
@pytest.mark.parametrize("accept", ["application/json", "text/event-stream"])
async def test_refused_runs_reply_as_fastapi_does(
    pair: Pair,
    route: str,
    accept: str,
    content: bytes | None,
    headers: dict[str, str] | None,
    status: int,
) -> None:
    await pair.same(pair.sessions, b'{"sessionId": "s1"}', JSON, status=200)
    asked = {**(headers or {}), "accept": accept}
    await pair.same(route, pair.as_user(content), asked, status=status)


@shared
async def test_a_streamed_run_replies_as_fastapi_does(pair: Pair) -> None:
    await pair.same(pair.sessions, b'{"sessionId": "s1"}', JSON, status=200)
    streamed = await pair.same("/run_sse", pair.run_body("s1"), STREAM, status=200)
    assert streamed.text.startswith("data: ")
    await pair.same("/run_sse", pair.run_body("s1", "again"), STREAM, status=200)


async def test_keys_are_checked_as_fastapi_checks_them(start_live: StartLive) -> None:
    pair = await pair_of(start_live, keys=["alice:ka", "bob:kb", "op"])
    alice, bob = {**JSON, "x-api-key": "ka"}, {**JSON, "authorization": "Bearer kb"}
    alices = "/apps/approval/users/alice/sessions"
    await pair.same(alices, b'{"sessionId": "s1"}', JSON, status=401)
    await pair.same(alices, b'{"sessionId": "s1"}', bob, status=403)
    await pair.same(alices, b'{"sessionId": "s1"}', alice, status=200)
    body = run_body("s1", user="alice")
    await pair.same("/run", body, bob, status=403)
    await pair.same("/run", body, {**JSON, "x-api-key": "op"}, status=200)
    answer = b'{"response": {"approved": true}}'
    url = f"{alices}/s1/interrupts/approve/respond"
    await pair.same(url, answer, JSON, status=401)
    await pair.same(url, answer, bob, status=403)
    await pair.same(
        url, b'{"response": {"approved": true}, "answeredBy": "bob"}', alice, status=403
    )
    await pair.same(url, answer, alice, status=200)


async def test_a_draining_server_refuses_runs_as_fastapi_does(start_live: StartLive) -> None:
    pair = await pair_of(start_live)  # its own: a drained server serves no other test
    await pair.same(pair.sessions, b'{"sessionId": "s1"}', JSON, status=200)
    await pair.same("/run", pair.run_body("s1"), JSON, status=200)
    for live in (pair.hot, pair.plain):
        assert live.app is not None
        drain_server(live.app, 0.0)
    await pair.same("/run", pair.run_body("s1"), JSON, status=503)
    await pair.same("/run_sse", pair.run_body("s1"), STREAM, status=503)
    await pair.same(pair.respond("s1"), b'{"response": {"approved": true}}', JSON, status=503)
    await pair.same(pair.sessions, b'{"sessionId": "s2"}', JSON, status=200)


class Thing(BaseModel):
    size: int


@pytest.mark.parametrize(
    ("method", "url", "content", "headers", "taken"),
    [
        ("POST", "/things/a", b'{"size": 1}', JSON, True),
        (
            "POST",
            "/things/a",
            b'{"size": 1}',
            {"content-type": "application/json; charset=utf-8"},
            True,
        ),
        ("POST", "/things/a", b"", JSON, True),  # the route's empty body
        ("POST", "/things/a", b'{"size": "x"}', JSON, False),
        ("POST", "/things/a", b'{"size": 1', JSON, False),
        ("POST", "/things/a", b"[1]", JSON, False),
        ("POST", "/things/a", b'{"size": 1}', {"content-type": "text/plain"}, False),
        ("POST", "/things/a", b'{"size": 1}', {}, False),
        ("POST", "/things/a?x=1", b'{"size": 1}', JSON, False),
        ("POST", "/things/a/", b'{"size": 1}', JSON, False),
        ("POST", "/things/a/b", b'{"size": 1}', JSON, False),
        ("PUT", "/things/a", b'{"size": 1}', JSON, False),
        ("POST", "/other", b'{"size": 1}', JSON, False),
    ],
)
@pytest.mark.parametrize("traced", [False, True])
async def test_hot_routes_take_only_requests_they_take_whole(
    method: str, url: str, content: bytes, headers: dict[str, str], taken: bool, traced: bool
) -> None:
    served: list[tuple[str, int]] = []
    passed: list[bytes] = []

    async def serve(_: Request, path: dict[str, str], body: Thing) -> Response:
        served.append((path["name"], body.size))
        return Response(b"hot")

    async def fastapi(scope: Scope, receive: Receive, send: Send) -> None:
        passed.append(await Request(scope, receive).body())
        await Response(b"passed")(scope, receive, send)

    route = HotRoute("/things/{name}", Thing, serve, when_empty=lambda: Thing(size=0))
    hot = HotRoutes(fastapi, routes=[route], guard=BodyGuard(ApiKeys(), LIMITS))

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        # What FastAPI puts in the scope while its OpenTelemetry spans record the request.
        await hot({**scope, "fastapi.telemetry": object() if traced else None}, receive, send)

    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        reply = await client.request(method, url, content=content, headers=headers)
    if taken and not traced:
        assert (reply.content, passed, len(served)) == (b"hot", [], 1)
    else:  # FastAPI gets the body as sent
        assert (reply.content, passed, served) == (b"passed", [content], [])
