"""A workflow node that needs a user's credential (`@node(auth_config=...)`, as the
reference's) on every backend: the run pauses with `adk_request_credential` (id
`wf_auth:<node path>`), the answer after a restart runs the node with its credential, and
a malformed answer is refused with nothing stored."""

from __future__ import annotations

import pytest
from fastapi.openapi.models import APIKey, APIKeyIn
from pydantic import JsonValue

from baton import (
    App,
    Context,
    FunctionNode,
    RequestInput,
    ResumabilityConfig,
    Runner,
    Workflow,
    node,
)
from baton.auth import AuthCredential, AuthCredentialTypes
from baton.auth.auth_tool import AuthConfig
from baton.auth.credential_service import InMemoryCredentialService
from baton.errors import InvalidResponseError, NoCredentialServiceError, WorkflowChangedError
from baton.events import REQUEST_CREDENTIAL_FUNCTION, Event
from baton.sessions.services import BaseSessionService
from baton.sessions.store import InterruptStatus, InvocationStatus
from tests.agents.test_tool_credentials import (
    TokenEndpoint,
    expired,
    oauth2_config,
    request_of,
    signed_in,
)
from tests.conftest import StoreFactory
from tests.harness import Counter, Harness, asked, outputs
from tests.runner.test_guarantees import snapshot

CONFIG = AuthConfig(
    auth_scheme=APIKey.model_validate({"in": APIKeyIn.header, "name": "X-Key"}),
    raw_auth_credential=AuthCredential(auth_type=AuthCredentialTypes.API_KEY),
)
KEY = "adk_apiKey_9a46dad5a84303f3_apiKey_0e0c64790d90ab22"


def build(counter: Counter, *, auth_config: AuthConfig | None = CONFIG) -> Workflow:
    @node(auth_config=auth_config, rerun_on_resume=True)
    def fetch(ctx: Context) -> str:
        credential = ctx.get_auth_response(CONFIG)
        counter.bump("fetch")
        return f"fetched with {credential.api_key if credential else None}"

    return Workflow(name="wf", edges=[("START", fetch)])


def harness(
    stores: StoreFactory, counter: Counter, session_id: str, workflow: Workflow | None = None
) -> Harness:
    service = BaseSessionService(stores.open())
    config = ResumabilityConfig(is_resumable=True)
    root = workflow or build(counter)
    app = App(name="app", root_agent=root, resumability_config=config)
    return Harness(Runner(app=app, session_service=service), service, session_id)


async def start(stores: StoreFactory, counter: Counter) -> tuple[Harness, list[Event]]:
    session = await BaseSessionService(stores.open()).create_session(app_name="app", user_id="u")
    h = harness(stores, counter, session.id)
    return h, await h.start()


async def test_a_node_asks_for_its_credential_and_runs_with_it_after_a_restart(
    stores: StoreFactory,
) -> None:
    counter = Counter()
    h, first = await start(stores, counter)

    request = request_of(first)
    assert request.model_dump(by_alias=True, exclude_none=True) == {
        "id": "wf_auth:wf@1/fetch@1",
        "name": REQUEST_CREDENTIAL_FUNCTION,
        "args": {
            "functionCallId": "wf_auth:wf@1/fetch@1",
            "authConfig": {
                "authScheme": {"type": "apiKey", "in": "header", "name": "X-Key"},
                "rawAuthCredential": {"authType": "apiKey"},
                "credentialKey": KEY,
            },
            "message": "A credential (apiKey) is needed to go on.",
        },
    }
    assert asked(first) == ["wf_auth:wf@1/fetch@1"]
    assert counter.runs == {}
    [row] = await h.runner.pending(session_id=h.session_id)
    assert row.function_name == REQUEST_CREDENTIAL_FUNCTION
    again = harness(stores, counter, h.session_id)
    config: dict[str, JsonValue] = dict(request.args or {})["authConfig"]  # type: ignore[assignment]
    answer: dict[str, JsonValue] = {
        **config,
        "exchangedAuthCredential": {"authType": "apiKey", "apiKey": "K7"},
    }

    resumed = await again.answer(
        ("wf_auth:wf@1/fetch@1", answer), name=REQUEST_CREDENTIAL_FUNCTION, wrap=False
    )

    assert outputs(resumed) == [("fetch", "fetched with K7")]
    assert counter.runs == {"fetch": 1}
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


async def test_a_node_s_malformed_credential_is_refused_with_nothing_stored(
    stores: StoreFactory,
) -> None:
    counter = Counter()
    h, _ = await start(stores, counter)

    with pytest.raises(InvalidResponseError, match="lacks apiKey"):
        await h.answer(
            ("wf_auth:wf@1/fetch@1", {"exchangedAuthCredential": {"authType": "apiKey"}}),
            name=REQUEST_CREDENTIAL_FUNCTION,
            wrap=False,
        )

    [row] = await h.runner.pending(session_id=h.session_id)
    assert row.status == InterruptStatus.OPEN
    assert counter.runs == {}
    assert (await h.invocation()).status == InvocationStatus.PAUSED


async def test_a_node_that_stopped_asking_for_its_credential_does_not_resume_a_run_that_asked(
    stores: StoreFactory,
) -> None:
    """`auth_config` is in the fingerprint, as `require_confirmation` is: a run paused for
    a node's credential is refused by code whose node no longer asks (its body would run
    without the credential the answer gives), and nothing changes; code that asks
    resumes it."""
    counter = Counter()
    h, first = await start(stores, counter)
    before = await snapshot(h.service, h.key)
    changed = harness(stores, counter, h.session_id, build(counter, auth_config=None))
    config: dict[str, JsonValue] = dict(request_of(first).args or {})["authConfig"]  # type: ignore[assignment]
    answer: dict[str, JsonValue] = {
        **config,
        "exchangedAuthCredential": {"authType": "apiKey", "apiKey": "K7"},
    }
    iid = "wf_auth:wf@1/fetch@1"

    with pytest.raises(WorkflowChangedError) as caught:
        await changed.answer((iid, answer), name=REQUEST_CREDENTIAL_FUNCTION, wrap=False)

    invocation = await h.invocation()
    assert str(caught.value) == (
        f"workflow 'wf' changed since invocation '{invocation.id}' started: node 'fetch' "
        "changed (FunctionNode(rerun, auth) -> FunctionNode(rerun)). Resume with the "
        "code it started with, or start a new run."
    )
    assert await snapshot(h.service, h.key) == before
    assert counter.runs == {}
    resumed = await h.answer((iid, answer), name=REQUEST_CREDENTIAL_FUNCTION, wrap=False)
    assert outputs(resumed) == [("fetch", "fetched with K7")]


async def test_a_run_paused_before_its_node_asked_for_a_credential_resumes_and_asks(
    stores: StoreFactory,
) -> None:
    """A node that asks for a credential only in the code resuming the run (or a run
    recorded before credentials were fingerprinted) resumes: it asks before its body
    runs."""
    counter = Counter()

    def first() -> RequestInput:
        return RequestInput(interrupt_id="first")

    def flow(auth_config: AuthConfig | None) -> Workflow:
        @node(auth_config=auth_config, rerun_on_resume=True)
        def fetch(ctx: Context) -> str:
            credential = ctx.get_auth_response(CONFIG)
            counter.bump("fetch")
            return f"fetched with {credential.api_key if credential else None}"

        return Workflow(name="wf", edges=[("START", first, fetch)])

    session = await BaseSessionService(stores.open()).create_session(app_name="app", user_id="u")
    h = harness(stores, counter, session.id, flow(None))
    await h.start()
    later = harness(stores, counter, h.session_id, flow(CONFIG))

    events = await later.answer(("first", "go"))

    assert asked(events) == ["wf_auth:wf@1/fetch@1"]
    assert counter.runs == {}


async def test_a_node_s_oauth2_sign_in_is_exchanged_for_a_token(stores: StoreFactory) -> None:
    with TokenEndpoint() as endpoint:
        config = oauth2_config(endpoint.url)
        tokens: list[str | None] = []

        @node(auth_config=config)
        def fetch(ctx: Context) -> str:
            credential = ctx.get_auth_response(config)
            tokens.append(
                credential.oauth2.access_token if credential and credential.oauth2 else None
            )
            return "fetched"

        service = BaseSessionService(stores.open())
        session = await service.create_session(app_name="app", user_id="u")
        app = App(
            name="app",
            root_agent=Workflow(name="wf", edges=[("START", fetch)]),
            resumability_config=ResumabilityConfig(is_resumable=True),
        )
        h = Harness(Runner(app=app, session_service=service), service, session.id)
        request = request_of(await h.start())

        await h.answer(
            ("wf_auth:wf@1/fetch@1", signed_in(request)),
            name=REQUEST_CREDENTIAL_FUNCTION,
            wrap=False,
        )

        assert tokens == ["AT-1"]
        [(_, form)] = endpoint.requests
        assert form["code"] == ["abc"]


def test_a_node_asking_for_a_credential_must_run_again_once_answered() -> None:
    def fetch(node_input: str) -> str:
        return node_input

    with pytest.raises(ValueError, match="auth_config needs rerun_on_resume=True"):
        FunctionNode(fetch, auth_config=CONFIG, rerun_on_resume=False)
    assert FunctionNode(fetch, auth_config=CONFIG).rerun_on_resume


async def test_a_node_without_ctx_leaves_its_credential_for_the_nodes_after_it(
    stores: StoreFactory,
) -> None:
    """A credential gate writes the run's state (`temp:<credential_key>`) before the
    function runs, a function that takes no `ctx` too: the write is taken with the run's
    output, and the nodes after it in the invocation read it."""
    counter = Counter()

    @node(auth_config=CONFIG)
    async def fetch(node_input: JsonValue) -> str:
        counter.bump("fetch")
        return "fetched"

    def use(ctx: Context, node_input: str) -> str:
        credential = ctx.get_auth_response(CONFIG)
        return f"{node_input} with {credential.api_key if credential else None}"

    workflow = Workflow(name="wf", edges=[("START", fetch, use)])
    session = await BaseSessionService(stores.open()).create_session(app_name="app", user_id="u")
    h = harness(stores, counter, session.id, workflow)
    first = await h.start()
    config: dict[str, JsonValue] = dict(request_of(first).args or {})["authConfig"]  # type: ignore[assignment]
    answer: dict[str, JsonValue] = {
        **config,
        "exchangedAuthCredential": {"authType": "apiKey", "apiKey": "K7"},
    }
    again = harness(stores, counter, h.session_id, workflow)

    resumed = await again.answer(
        ("wf_auth:wf@1/fetch@1", answer), name=REQUEST_CREDENTIAL_FUNCTION, wrap=False
    )

    assert outputs(resumed) == [("fetch", "fetched"), ("use", "fetched with K7")]
    assert counter.runs == {"fetch": 1}
    assert (await again.invocation()).status == InvocationStatus.COMPLETED


async def test_a_node_s_expired_token_is_refreshed_before_it_runs(stores: StoreFactory) -> None:
    with TokenEndpoint() as endpoint:
        config = oauth2_config(endpoint.url)
        key = config.credential_key or ""
        tokens: list[str | None] = []

        @node(auth_config=config)
        async def fetch(ctx: Context) -> str:
            credential = ctx.get_auth_response(config)
            tokens.append(
                credential.oauth2.access_token if credential and credential.oauth2 else None
            )
            return "fetched"

        service = BaseSessionService(stores.open())
        session = await service.create_session(
            app_name="app", user_id="u", state={key: expired("RT-1")}
        )
        h = harness(stores, Counter(), session.id, Workflow(name="wf", edges=[("START", fetch)]))

        events = await h.start()

        assert asked(events) == []
        assert tokens == ["AT-2"]
        [(_, form)] = endpoint.requests
        assert form == {"grant_type": ["refresh_token"], "refresh_token": ["RT-1"]}
        stored = await service.get_session(app_name="app", user_id="u", session_id=session.id)
        assert stored is not None
        kept = AuthCredential.model_validate(stored.state[key])
        assert kept.oauth2 is not None
        assert (kept.oauth2.access_token, kept.oauth2.client_secret) == ("AT-2", None)


async def test_a_node_whose_token_cannot_be_refreshed_asks_again(stores: StoreFactory) -> None:
    with TokenEndpoint() as endpoint:
        config = oauth2_config(endpoint.url)
        counter = Counter()

        @node(auth_config=config)
        def fetch(ctx: Context) -> str:
            counter.bump("fetch")
            return "fetched"

        session = await BaseSessionService(stores.open()).create_session(
            app_name="app", user_id="u", state={config.credential_key or "": expired("RT-gone")}
        )
        h = harness(stores, counter, session.id, Workflow(name="wf", edges=[("START", fetch)]))

        events = await h.start()

        assert asked(events) == ["wf_auth:wf@1/fetch@1"]
        assert counter.runs == {}
        [(_, form)] = endpoint.requests
        assert form["refresh_token"] == ["RT-gone"]


async def test_a_node_keeps_and_loads_credentials_in_the_credential_service(
    stores: StoreFactory,
) -> None:
    """A node's context has the reference's `save_credential` / `load_credential`: one
    node keeps a credential, the next loads it, its expired token refreshed (and kept
    refreshed in the service)."""
    with TokenEndpoint() as endpoint:
        config = oauth2_config(endpoint.url)
        credentials = InMemoryCredentialService()

        async def keep(ctx: Context) -> str:
            given = AuthCredential.model_validate(expired("RT-1"))
            await ctx.save_credential(
                config.model_copy(update={"exchanged_auth_credential": given})
            )
            return "kept"

        async def use(ctx: Context, node_input: str) -> str:
            loaded = await ctx.load_credential(config)
            token = loaded.oauth2.access_token if loaded and loaded.oauth2 else None
            return f"{node_input}, used {token}"

        use_again = FunctionNode(use, name="use_again")

        service = BaseSessionService(stores.open())
        session = await service.create_session(app_name="app", user_id="u")
        app = App(
            name="app",
            root_agent=Workflow(name="wf", edges=[("START", keep, use, use_again)]),
            resumability_config=ResumabilityConfig(is_resumable=True),
        )
        runner = Runner(app=app, session_service=service, credential_service=credentials)
        h = Harness(runner, service, session.id)

        events = await h.start()

        assert outputs(events) == [
            ("keep", "kept"),
            ("use", "kept, used AT-2"),
            ("use_again", "kept, used AT-2, used AT-2"),
        ]
        [(_, form)] = endpoint.requests  # the refreshed token was kept for the next load
        assert form["grant_type"] == ["refresh_token"]


async def test_a_node_s_credential_methods_say_what_to_do(stores: StoreFactory) -> None:
    errors: list[str] = []

    async def fetch(ctx: Context) -> str:
        try:
            await ctx.load_credential(CONFIG)
        except NoCredentialServiceError as error:
            errors.append(str(error))
        try:
            ctx.request_credential(CONFIG)
        except ValueError as error:
            errors.append(str(error))
        return "done"

    session = await BaseSessionService(stores.open()).create_session(app_name="app", user_id="u")
    h = harness(stores, Counter(), session.id, Workflow(name="wf", edges=[("START", fetch)]))

    await h.start()

    [no_service, no_call] = errors
    assert "Runner(credential_service=InMemoryCredentialService())" in no_service
    assert "request_credential needs the function call it belongs to" in no_call
