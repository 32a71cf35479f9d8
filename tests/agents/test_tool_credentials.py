"""A tool that needs a user's credential (the reference's `request_credential` /
`get_auth_response`) on every backend: the run pauses with `adk_request_credential`, the
pending question shows it, the answer (after a restart) resumes the tool with its
credential, an OAuth2 sign-in's code is exchanged at a real token endpoint, and bad
answers are refused with nothing stored."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.server
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.openapi.models import APIKey, APIKeyIn, OAuth2, OAuthFlowAuthorizationCode, OAuthFlows
from pydantic import JsonValue

from baton import App, ResumabilityConfig, Runner
from baton.agents import LlmAgent
from baton.auth import AuthCredential, AuthCredentialTypes, OAuth2Auth
from baton.auth.auth_tool import AuthConfig
from baton.auth.credential_service import (
    BaseCredentialService,
    InMemoryCredentialService,
    SessionStateCredentialService,
)
from baton.errors import InvalidResponseError, NoCredentialServiceError
from baton.events import REQUEST_CREDENTIAL_FUNCTION, Event
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InterruptStatus, InvocationStatus
from baton.tools import FunctionTool, ToolContext
from baton.types import FunctionCall
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, asked

CALL = FunctionCall(id="call-1", name="fetch", args={})
API_KEY = AuthConfig(
    auth_scheme=APIKey.model_validate({"in": APIKeyIn.header, "name": "X-Key"}),
    raw_auth_credential=AuthCredential(auth_type=AuthCredentialTypes.API_KEY),
)
KEY = "adk_apiKey_9a46dad5a84303f3_apiKey_0e0c64790d90ab22"  # the reference's key for it


def responses(request: LlmRequest) -> dict[str, object]:
    return {r.id or "": r.response for c in request.contents for r in c.function_responses}


def build_agent(counter: Counter, model: ScriptedModel, config: AuthConfig) -> LlmAgent:
    def fetch(tool_context: ToolContext) -> dict[str, JsonValue]:
        """Fetch the user's data."""
        credential = tool_context.get_auth_response(config)
        if credential is None:
            tool_context.request_credential(config)
            return {"pending": True}
        counter.bump("fetch")
        token = credential.oauth2.access_token if credential.oauth2 else None
        return {"key": credential.api_key, "token": token}

    return LlmAgent(name="a", model=model, tools=[FunctionTool(fetch)])


def harness(stores: StoreFactory, agent: LlmAgent, session_id: str, **services: Any) -> Harness:
    service = BaseSessionService(stores.open())
    runner = Runner(
        app=App(
            name="app", root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True)
        ),
        session_service=service,
        **services,
    )
    return Harness(runner, service, session_id)


async def start(stores: StoreFactory, agent: LlmAgent, **services: Any) -> Harness:
    session = await BaseSessionService(stores.open()).create_session(app_name="app", user_id="u")
    return harness(stores, agent, session.id, **services)


def request_config(request: FunctionCall) -> dict[str, Any]:
    """The AuthConfig a credential request sends, as JSON."""
    config: dict[str, Any] = json.loads(json.dumps((request.args or {})["authConfig"]))
    return config


def given(request: FunctionCall, credential: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """The request's AuthConfig as a client sends it back, with `credential` filled in."""
    return {**request_config(request), "exchangedAuthCredential": credential}


def request_of(events: list[Event]) -> FunctionCall:
    [call] = [c for e in events for c in e.function_calls if c.name == REQUEST_CREDENTIAL_FUNCTION]
    return call


async def test_an_api_key_answered_after_a_restart_reaches_the_tool(stores: StoreFactory) -> None:
    counter = Counter()
    model = ScriptedModel(responses=[[CALL], "done"])
    h = await start(stores, build_agent(counter, model, API_KEY))

    first = await h.start("fetch my data")

    request = request_of(first)
    assert request.model_dump(by_alias=True, exclude_none=True) == {
        "id": "adk-auth-call-1",
        "name": REQUEST_CREDENTIAL_FUNCTION,
        "args": {
            "functionCallId": "call-1",
            "authConfig": {
                "authScheme": {"type": "apiKey", "in": "header", "name": "X-Key"},
                "rawAuthCredential": {"authType": "apiKey"},
                "credentialKey": KEY,
            },
        },
    }
    assert asked(first) == ["adk-auth-call-1"]
    assert counter.runs == {}
    assert (await h.invocation()).status == InvocationStatus.PAUSED
    [row] = await h.runner.pending(session_id=h.session_id)
    assert (row.interrupt_id, row.function_name) == ("adk-auth-call-1", REQUEST_CREDENTIAL_FUNCTION)
    assert row.payload == request.args
    again = harness(stores, build_agent(counter, model, API_KEY), h.session_id)
    answer = given(request, {"authType": "apiKey", "apiKey": "KEY123"})

    await again.answer(("adk-auth-call-1", answer), name=REQUEST_CREDENTIAL_FUNCTION, wrap=False)

    assert counter.runs == {"fetch": 1}
    assert responses(model.requests[-1]) == {"call-1": {"key": "KEY123", "token": None}}
    # The credential exchange is between the agent and the user; the model never sees it.
    names = {
        p.function_call.name
        for c in model.requests[-1].contents
        for p in c.parts or []
        if p.function_call
    }
    assert names == {"fetch"}
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"exchangedAuthCredential": {"authType": "nope"}}, "authType"),
        ({"exchangedAuthCredential": {"authType": "apiKey"}}, "lacks apiKey"),
        ({"exchangedAuthCredential": "KEY"}, "must be an AuthCredential object"),
        ({"confirmed": True}, "does not match its response_schema"),
    ],
)
async def test_a_malformed_credential_is_refused_and_nothing_is_stored(
    stores: StoreFactory, answer: JsonValue, says: str
) -> None:
    counter = Counter()
    model = ScriptedModel(responses=[[CALL], "done"])
    h = await start(stores, build_agent(counter, model, API_KEY))
    await h.start("fetch my data")
    before = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert before is not None

    with pytest.raises(InvalidResponseError, match=says):
        await h.answer(("adk-auth-call-1", answer), name=REQUEST_CREDENTIAL_FUNCTION, wrap=False)

    after = await h.service.get_session(app_name="app", user_id="u", session_id=h.session_id)
    assert after is not None
    assert [e.id for e in after.events] == [e.id for e in before.events]
    [row] = await h.runner.pending(session_id=h.session_id)
    assert row.status == InterruptStatus.OPEN
    assert counter.runs == {}
    assert (await h.invocation()).status == InvocationStatus.PAUSED


class TokenEndpoint:
    """An OAuth2 token endpoint on 127.0.0.1 (a real HTTP server in a thread): it gives
    'AT-1' (and the refresh token 'RT-1') for the code 'abc', 'AT-2' for the refresh
    token 'RT-1', and records each request's headers and form; `hold` runs in its thread
    before it answers."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, list[str]]]] = []
        self.hold: Callable[[], None] = lambda: None
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                form = parse_qs(body)
                endpoint.requests.append((dict(self.headers), form))
                endpoint.hold()
                answer: dict[str, JsonValue] = {"error": "invalid_grant"}
                if form.get("code") == ["abc"]:
                    answer = {"access_token": "AT-1", "refresh_token": "RT-1", "expires_in": 3600}
                elif form.get("refresh_token") == ["RT-1"]:
                    answer = {"access_token": "AT-2", "expires_in": 3600}
                ok = "access_token" in answer
                data = json.dumps(answer).encode()
                self.send_response(200 if ok else 400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token"
        self._serving = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> TokenEndpoint:
        """Serve until the `with` block ends."""
        self._serving.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._serving.join()


@pytest.fixture
def token_endpoint() -> Iterator[TokenEndpoint]:
    with TokenEndpoint() as endpoint:
        yield endpoint


def oauth2_config(token_url: str) -> AuthConfig:
    flow = OAuthFlowAuthorizationCode(
        authorizationUrl="https://login.example/auth", tokenUrl=token_url, scopes={"read": "r"}
    )
    return AuthConfig(
        auth_scheme=OAuth2(flows=OAuthFlows(authorizationCode=flow)),
        raw_auth_credential=AuthCredential(
            auth_type=AuthCredentialTypes.OAUTH2,
            oauth2=OAuth2Auth(
                client_id="cid", client_secret="sec", redirect_uri="https://app.example/cb"
            ),
        ),
    )


def signed_in(request: FunctionCall, *, code: str = "abc", state: str | None = None) -> JsonValue:
    """The request's AuthConfig as a client sends it back once the user signed in."""
    config = request_config(request)
    oauth2 = config["exchangedAuthCredential"]["oauth2"]
    state = oauth2["state"] if state is None else state
    oauth2["authResponseUri"] = f"https://app.example/cb?code={code}&state={state}"
    return config


async def test_an_oauth2_sign_in_is_exchanged_for_a_token(
    stores: StoreFactory, token_endpoint: TokenEndpoint
) -> None:
    counter = Counter()
    model = ScriptedModel(responses=[[CALL], "done"])
    config = oauth2_config(token_endpoint.url)
    h = await start(stores, build_agent(counter, model, config))

    request = request_of(await h.start("fetch my data"))

    sent = request_config(request)
    assert "sec" not in json.dumps(sent)  # the agent's secret never leaves the process
    link = str(sent["exchangedAuthCredential"]["oauth2"]["authUri"])
    query = parse_qs(urlsplit(link).query)
    assert link.startswith("https://login.example/auth?")
    assert {k: v for k, v in query.items() if k != "state"} == {
        "response_type": ["code"],
        "client_id": ["cid"],
        "redirect_uri": ["https://app.example/cb"],
        "scope": ["read"],
        "access_type": ["offline"],
        "prompt": ["consent"],
    }
    again = harness(stores, build_agent(counter, model, config), h.session_id)

    await again.answer(
        ("adk-auth-call-1", signed_in(request)), name=REQUEST_CREDENTIAL_FUNCTION, wrap=False
    )

    assert responses(model.requests[-1]) == {"call-1": {"key": None, "token": "AT-1"}}
    [(headers, form)] = token_endpoint.requests
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"cid:sec").decode()
    assert form == {
        "grant_type": ["authorization_code"],
        "code": ["abc"],
        "redirect_uri": ["https://app.example/cb"],
    }
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


@contextlib.asynccontextmanager
async def answered_only_while_the_loop_runs(endpoint: TokenEndpoint) -> AsyncIterator[None]:
    """The endpoint answers a request only once this loop has run a task after it came: a
    loop held by the request never lets it go (the client gives up first, and fails)."""
    loop = asyncio.get_running_loop()
    arrived, released = asyncio.Event(), threading.Event()

    def hold() -> None:
        loop.call_soon_threadsafe(arrived.set)
        released.wait(timeout=60)

    async def release_once_arrived() -> None:
        await arrived.wait()
        released.set()

    endpoint.hold = hold
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(release_once_arrived())
        yield
    endpoint.hold = lambda: None


def build_async_agent(model: ScriptedModel, config: AuthConfig) -> LlmAgent:
    async def fetch(tool_context: ToolContext) -> dict[str, JsonValue]:
        """Fetch the user's data."""
        credential = tool_context.get_auth_response(config)
        if credential is None:
            tool_context.request_credential(config)
            return {"pending": True}
        return {"token": credential.oauth2.access_token if credential.oauth2 else None}

    return LlmAgent(name="a", model=model, tools=[FunctionTool(fetch)])


async def test_an_async_tool_s_code_exchange_leaves_the_loop_running(
    stores: StoreFactory, token_endpoint: TokenEndpoint
) -> None:
    model = ScriptedModel(responses=[[CALL], "done"])
    config = oauth2_config(token_endpoint.url)
    h = await start(stores, build_async_agent(model, config))
    request = request_of(await h.start("fetch my data"))
    async with answered_only_while_the_loop_runs(token_endpoint):
        await h.answer(
            ("adk-auth-call-1", signed_in(request)), name=REQUEST_CREDENTIAL_FUNCTION, wrap=False
        )

    assert responses(model.requests[-1]) == {"call-1": {"token": "AT-1"}}
    assert len(token_endpoint.requests) == 1
    assert (await h.invocation()).status == InvocationStatus.COMPLETED


def expired(refresh_token: str) -> dict[str, JsonValue]:
    """An exchanged OAuth2 credential, as the state keeps it, whose token expired."""
    oauth2: dict[str, JsonValue] = {
        "clientId": "cid",
        "accessToken": "AT-old",
        "refreshToken": refresh_token,
        "expiresAt": int(time.time()) - 5,
    }
    return {"authType": "oauth2", "oauth2": oauth2}


async def test_an_async_tool_s_expired_token_is_refreshed_while_the_loop_runs(
    stores: StoreFactory, token_endpoint: TokenEndpoint
) -> None:
    model = ScriptedModel(responses=[[CALL], "done"])
    config = oauth2_config(token_endpoint.url)
    key = config.credential_key or ""
    service = BaseSessionService(stores.open())
    session = await service.create_session(
        app_name="app", user_id="u", state={key: expired("RT-1")}
    )
    h = harness(stores, build_async_agent(model, config), session.id)

    async with answered_only_while_the_loop_runs(token_endpoint):
        events = await h.start("fetch my data")

    assert asked(events) == []
    assert responses(model.requests[-1]) == {"call-1": {"token": "AT-2"}}
    [(headers, form)] = token_endpoint.requests
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"cid:sec").decode()
    assert form == {"grant_type": ["refresh_token"], "refresh_token": ["RT-1"]}
    stored = await service.get_session(app_name="app", user_id="u", session_id=session.id)
    assert stored is not None
    kept = AuthCredential.model_validate(stored.state[key])
    assert kept.oauth2 is not None
    assert (kept.oauth2.access_token, kept.oauth2.refresh_token) == ("AT-2", "RT-1")
    assert kept.oauth2.client_secret is None  # the state is readable by clients
    assert (kept.oauth2.expires_at or 0) > time.time() + 3000


async def test_a_token_that_cannot_be_refreshed_makes_the_tool_ask_again(
    stores: StoreFactory, token_endpoint: TokenEndpoint
) -> None:
    counter = Counter()
    model = ScriptedModel(responses=[[CALL], "done"])
    config = oauth2_config(token_endpoint.url)
    session = await BaseSessionService(stores.open()).create_session(
        app_name="app", user_id="u", state={config.credential_key or "": expired("RT-revoked")}
    )
    h = harness(stores, build_agent(counter, model, config), session.id)

    events = await h.start("fetch my data")

    assert asked(events) == ["adk-auth-call-1"]
    assert counter.runs == {}
    [(_, form)] = token_endpoint.requests
    assert form["refresh_token"] == ["RT-revoked"]


async def test_a_sign_in_with_another_state_is_refused(
    stores: StoreFactory, token_endpoint: TokenEndpoint
) -> None:
    counter = Counter()
    model = ScriptedModel(responses=[[CALL], "done"])
    h = await start(stores, build_agent(counter, model, oauth2_config(token_endpoint.url)))
    request = request_of(await h.start("fetch my data"))

    with pytest.raises(InvalidResponseError, match="state is not the one this request sent"):
        await h.answer(
            ("adk-auth-call-1", signed_in(request, state="forged")),
            name=REQUEST_CREDENTIAL_FUNCTION,
            wrap=False,
        )

    assert token_endpoint.requests == []
    [row] = await h.runner.pending(session_id=h.session_id)
    assert row.status == InterruptStatus.OPEN


@pytest.mark.parametrize(
    "credentials",
    [InMemoryCredentialService, SessionStateCredentialService],
)
async def test_a_tool_keeps_the_credential_in_the_credential_service(
    stores: StoreFactory, credentials: type[BaseCredentialService]
) -> None:
    counter = Counter()
    model = ScriptedModel(responses=[[CALL], "done", [CALL.model_copy(update={"id": "c2"})], "ok"])
    loaded: list[str | None] = []

    async def fetch(tool_context: ToolContext) -> dict[str, JsonValue]:
        """Fetch the user's data."""
        kept = await tool_context.load_credential(API_KEY)
        credential = kept or tool_context.get_auth_response(API_KEY)
        if credential is None:
            tool_context.request_credential(API_KEY)
            return {"pending": True}
        if kept is None:
            given_config = API_KEY.model_copy(update={"exchanged_auth_credential": credential})
            await tool_context.save_credential(given_config)
        loaded.append(credential.api_key)
        counter.bump("fetch")
        return {"ok": True}

    agent = LlmAgent(name="a", model=model, tools=[FunctionTool(fetch)])
    service = credentials()
    h = await start(stores, agent, credential_service=service)
    request = request_of(await h.start("fetch"))
    answer = given(request, {"authType": "apiKey", "apiKey": "K9"})
    await h.answer(("adk-auth-call-1", answer), name=REQUEST_CREDENTIAL_FUNCTION, wrap=False)

    second = await h.start("fetch again")

    assert asked(second) == []  # the kept credential served the second call
    assert loaded == ["K9", "K9"]


async def test_credential_methods_without_a_credential_service_say_what_to_pass(
    stores: StoreFactory,
) -> None:
    errors: list[str] = []

    async def fetch(tool_context: ToolContext) -> dict[str, JsonValue]:
        """Fetch the user's data."""
        try:
            await tool_context.load_credential(API_KEY)
        except NoCredentialServiceError as error:
            errors.append(str(error))
        return {"ok": True}

    agent = LlmAgent(name="a", model=ScriptedModel(responses=[[CALL], "done"]), tools=[fetch])
    h = await start(stores, agent)

    await h.start("fetch")

    [error] = errors
    assert "Runner(credential_service=InMemoryCredentialService())" in error
