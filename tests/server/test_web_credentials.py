"""The inbox answers a credential request in a person's words (Chromium, against `baton
web` as its own process): an API key typed into a password field and never shown again,
an OAuth2 "Sign in" link with the request's state, the address the sign-in lands on
pasted back (a refused one shows the server's reason and the question stays open), the
code exchanged at a real token endpoint on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.async_api import Browser, expect

from tests.agents.test_tool_credentials import TokenEndpoint
from tests.server.processes import BATON, serving
from tests.server.test_web_page import browser

__all__ = ["browser"]  # the fixture, used by name

pytestmark = pytest.mark.browser

VAULT = """
import os

from fastapi.openapi.models import APIKey, APIKeyIn, OAuth2, OAuthFlowAuthorizationCode, OAuthFlows

from baton import App, Context, ResumabilityConfig, Workflow, node
from baton.auth import AuthCredential, AuthCredentialTypes, OAuth2Auth
from baton.auth.auth_tool import AuthConfig

KEY = AuthConfig(
    auth_scheme=APIKey.model_validate({"in": APIKeyIn.header, "name": "X-Key"}),
    raw_auth_credential=AuthCredential(auth_type=AuthCredentialTypes.API_KEY),
)
FLOW = OAuthFlowAuthorizationCode(
    authorizationUrl="https://login.example/auth",
    tokenUrl=os.environ["VAULT_TOKEN_URL"],
    scopes={"read": "r"},
)
SIGN_IN = AuthConfig(
    auth_scheme=OAuth2(flows=OAuthFlows(authorizationCode=FLOW)),
    raw_auth_credential=AuthCredential(
        auth_type=AuthCredentialTypes.OAUTH2,
        oauth2=OAuth2Auth(client_id="cid", client_secret="sec", redirect_uri="https://app.example/cb"),
    ),
)


@node(auth_config=KEY)
def with_key(ctx: Context) -> str:
    credential = ctx.get_auth_response(KEY)
    return f"a key of {len(credential.api_key)} characters"


@node(auth_config=SIGN_IN)
def signed_in(ctx: Context) -> str:
    credential = ctx.get_auth_response(SIGN_IN)
    return f"token {credential.oauth2.access_token}"


app = App(
    name="vault",
    root_agent=Workflow(name="vault", edges=[("START", with_key, signed_in)]),
    resumability_config=ResumabilityConfig(is_resumable=True),
)
"""
SECRET = "sekrit-KEY-42"


@pytest.fixture
def token_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[TokenEndpoint]:
    with TokenEndpoint() as endpoint:
        monkeypatch.setenv("VAULT_TOKEN_URL", endpoint.url)  # read by the served app
        yield endpoint


@pytest.fixture
def vault_server(tmp_path: Path, token_endpoint: TokenEndpoint) -> Iterator[str]:
    folder = tmp_path / "apps" / "vault"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(VAULT)
    args = [str(BATON), "web", str(folder.parent), "--port", "0", "--db", str(tmp_path / "w.db")]
    with serving(args) as url:
        yield url


def pending(client: httpx.Client) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = client.get("/apps/vault/users/user/pending").json()
    return rows


async def test_a_credential_request_is_answered_in_the_inbox(
    vault_server: str, token_endpoint: TokenEndpoint, browser: Browser
) -> None:
    client = httpx.Client(base_url=vault_server, timeout=30)
    sid = client.post("/apps/vault/users/user/sessions", json={}).json()["id"]
    started = client.post("/run", json={"appName": "vault", "userId": "user", "sessionId": sid})
    assert started.status_code == 200, started.text
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    logged: list[str] = []
    page.on("console", lambda message: logged.append(message.text))
    await page.goto(vault_server)

    # An API key: what is asked and where it goes, typed into a password field.
    card = page.locator("form.card.credential")
    await expect(card.locator("h3")).to_have_text("Asks for: API key (sent in the header X-Key)")
    field = card.locator("input[name=credential]")
    await expect(field).to_have_attribute("type", "password")
    await field.fill(SECRET)
    await card.locator("button[type=submit]").click()

    # Then a sign-in: the link is the request's, with its state.
    await expect(card.locator("h3")).to_have_text("Asks for: sign in at login.example (oauth2)")
    [row] = pending(client)
    sent: dict[str, str] = row["payload"]["authConfig"]["exchangedAuthCredential"]["oauth2"]
    link = card.locator("a.sign-in")
    await expect(link).to_have_text("Sign in at login.example")
    await expect(link).to_have_attribute("href", sent["authUri"])
    [state] = parse_qs(urlsplit(sent["authUri"]).query)["state"]

    # An address from another sign-in: the server's reason, the question still open.
    field = card.locator("input[name=credential]")
    await field.fill("https://app.example/cb?code=abc&state=forged")
    await card.locator("button[type=submit]").click()
    await expect(card.locator(".error")).to_contain_text("state is not the one this request sent")
    assert [r["interruptId"] for r in pending(client)] == [row["interruptId"]]
    assert token_endpoint.requests == []

    await field.fill(f"https://app.example/cb?code=abc&state={state}")
    await card.locator("button[type=submit]").click()
    await expect(page.locator("#activity")).to_contain_text("token AT-1")
    await expect(card).to_have_count(0)

    assert pending(client) == []
    [(_, form)] = token_endpoint.requests
    assert form["code"] == ["abc"]
    # The key typed went to the server only: nowhere on the page, in its storage or log.
    assert SECRET not in await page.content()
    assert SECRET not in await page.evaluate("JSON.stringify(localStorage)")
    assert not [text for text in logged if SECRET in text]
    client.close()
