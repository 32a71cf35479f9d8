"""OAuth2 token requests a user's credential needs at its scheme's token endpoint: the
authorization-code exchange (RFC 6749 4.1.3) that turns a signed-in user's code into a
token, and the refresh (RFC 6749 6) of a token that expired. Each is built once
(`code_request`, `refresh_request`) and sent either on the event loop (`send`) or from a
worker thread (`send_blocking`), so the loop never waits for the endpoint."""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final, cast
from urllib.parse import parse_qs, urlsplit

from baton.auth.auth_credential import AuthCredential, OAuth2Auth
from baton.auth.auth_flow import stored_credential_at, with_client
from baton.auth.auth_headers import token_answer
from baton.auth.auth_tool import AuthConfig, scheme_json, scheme_type

__all__ = [
    "EXPIRY_MARGIN_SECONDS",
    "TokenRequest",
    "code_request",
    "exchanged",
    "exchanged_now",
    "fresh_stored_credential",
    "holds_expired_token",
    "is_expired",
    "kept_form",
    "needs_refresh",
    "refresh_request",
    "refreshed",
    "refreshed_now",
    "send",
    "send_blocking",
    "with_tokens",
]

logger = logging.getLogger("baton")

EXPIRY_MARGIN_SECONDS: Final = 60
"""A token this close to its `expires_at` counts as expired (the reference's margin), so
it is not handed over just before it stops working."""

_TOKEN_REQUEST_SECONDS = 10.0
_OAUTH2_SCHEMES = ("oauth2", "openIdConnect")


@dataclass(frozen=True)
class TokenRequest:
    """One POST to a token endpoint, and what it is for (said when it fails)."""

    url: str
    form: dict[str, str]
    headers: dict[str, str]
    purpose: str


def code_request(config: AuthConfig, credential: AuthCredential) -> TokenRequest:
    """The request that exchanges `credential`'s authorization code for a token, the
    client authenticated with the client id and secret of `config` (HTTP basic, or in
    the form for `client_secret_post`; none for a public client).

    Raises:
        ValueError: the scheme names no token endpoint, or the answer has no code.
    """
    assert credential.oauth2 is not None  # auth_flow.is_exchangeable
    oauth2 = credential.oauth2
    form = {"grant_type": "authorization_code", "code": _code(oauth2)}
    if oauth2.redirect_uri:
        form["redirect_uri"] = oauth2.redirect_uri
    url = _token_url(config, "the signed-in user's code cannot be exchanged")
    return _authenticated(config, oauth2, url, form, "authorization-code token request")


def refresh_request(config: AuthConfig, credential: AuthCredential) -> TokenRequest | None:
    """The request that refreshes `credential`'s token with its refresh token, the client
    authenticated as for `code_request`; None when it has no refresh token.

    Raises:
        ValueError: the scheme names no token endpoint.
    """
    oauth2 = credential.oauth2
    if oauth2 is None or not oauth2.refresh_token:
        return None
    form = {"grant_type": "refresh_token", "refresh_token": oauth2.refresh_token}
    url = _token_url(config, "the expired token cannot be refreshed")
    return _authenticated(config, oauth2, url, form, "token refresh")


def is_expired(credential: AuthCredential, *, now: float | None = None) -> bool:
    """Whether `credential`'s OAuth2 token has expired (or will within
    `EXPIRY_MARGIN_SECONDS`) by its `expires_at`; one without `expires_at` has not."""
    oauth2 = credential.oauth2
    if oauth2 is None or not oauth2.access_token or oauth2.expires_at is None:
        return False
    return oauth2.expires_at - EXPIRY_MARGIN_SECONDS < (time.time() if now is None else now)


def holds_expired_token(values: Iterable[object], *, now: float | None = None) -> bool:
    """Whether one of `values` (a session state's) is a credential's JSON whose OAuth2
    token has expired, so reading it may refresh it (see `fresh_stored_credential`).

    Speed: asked for every tool call, so a value that is no credential costs one type
    test (~0.1 us), and the clock is read only for one that is."""
    for value in values:
        fields = cast(dict[str, object], value)
        if type(value) is dict and "oauth2" in fields and _has_expired(fields["oauth2"], now):
            return True
    return False


def _has_expired(oauth2: object, now: float | None) -> bool:
    fields = _object(oauth2)
    expires = fields.get("expiresAt") or fields.get("expires_at")
    if not isinstance(expires, int | float):
        return False
    return expires - EXPIRY_MARGIN_SECONDS < (time.time() if now is None else now)


def with_tokens(credential: AuthCredential, fields: dict[str, object]) -> AuthCredential:
    """`credential` with the access token (and refresh token, expiry) a token endpoint
    answered; a refresh that gives no new refresh token keeps the old one."""
    assert credential.oauth2 is not None  # code_request / refresh_request
    oauth2 = credential.oauth2.model_copy()
    oauth2.access_token = str(fields["access_token"])
    refresh, expires_in = fields.get("refresh_token"), fields.get("expires_in")
    if isinstance(refresh, str):
        oauth2.refresh_token = refresh
    oauth2.expires_in = oauth2.expires_at = None
    if isinstance(expires_in, int) and not isinstance(expires_in, bool):
        oauth2.expires_in = expires_in
        oauth2.expires_at = int(time.time()) + expires_in
    return credential.model_copy(update={"oauth2": oauth2})


async def send(request: TokenRequest) -> dict[str, object]:
    """The token endpoint's answer's fields, asked from the event loop.

    Raises:
        ConnectionError: the endpoint could not be reached, refused the request, or
            answered without an access token.
    """
    import httpx  # here, not at the top: `import baton` and `baton --help` never need it

    try:
        async with httpx.AsyncClient(timeout=_TOKEN_REQUEST_SECONDS) as client:
            answer = await client.post(request.url, data=request.form, headers=request.headers)
    except httpx.HTTPError as error:
        raise ConnectionError(f"{_failed(request)}: {error}") from error
    return token_answer(answer, _failed(request))


def send_blocking(request: TokenRequest) -> dict[str, object]:
    """`send`, for a worker thread (it blocks the thread that calls it).

    Raises:
        ConnectionError: see `send`.
    """
    import httpx  # here, not at the top: see `send`

    try:
        with httpx.Client(timeout=_TOKEN_REQUEST_SECONDS) as client:
            answer = client.post(request.url, data=request.form, headers=request.headers)
    except httpx.HTTPError as error:
        raise ConnectionError(f"{_failed(request)}: {error}") from error
    return token_answer(answer, _failed(request))


async def exchanged(config: AuthConfig, credential: AuthCredential) -> AuthCredential:
    """`credential` with the token its sign-in's code is exchanged for (`code_request`).

    Raises:
        ValueError: see `code_request`.
        ConnectionError: see `send`.
    """
    return with_tokens(credential, await send(code_request(config, credential)))


def exchanged_now(config: AuthConfig, credential: AuthCredential) -> AuthCredential:
    """`exchanged`, for plain code: awaited on the loop inside `run_waitable` (an async
    tool's call), else sent from the calling thread (a sync tool's worker thread)."""
    return with_tokens(credential, _send_now(code_request(config, credential)))


def needs_refresh(config: AuthConfig, credential: AuthCredential) -> bool:
    """Whether `credential` is an OAuth2 token of an OAuth2 scheme that has expired."""
    return scheme_type(config.auth_scheme) in _OAUTH2_SCHEMES and is_expired(credential)


async def refreshed(config: AuthConfig, credential: AuthCredential) -> AuthCredential | None:
    """`credential` with a refreshed token, or None when it has no refresh token or the
    token endpoint refused it (logged): the user is then asked again.

    Raises:
        ValueError: the scheme names no token endpoint.
    """
    request = refresh_request(config, with_client(config, credential))
    if request is None:
        return None
    try:
        return with_tokens(credential, await send(request))
    except ConnectionError as error:
        logger.warning(
            "the expired token of %s was not refreshed: %s", config.credential_key, error
        )
        return None


def refreshed_now(config: AuthConfig, credential: AuthCredential) -> AuthCredential | None:
    """`refreshed`, for plain code (see `exchanged_now`)."""
    request = refresh_request(config, with_client(config, credential))
    if request is None:
        return None
    try:
        fields = _send_now(request)
    except ConnectionError as error:
        logger.warning(
            "the expired token of %s was not refreshed: %s", config.credential_key, error
        )
        return None
    return with_tokens(credential, fields)


def fresh_stored_credential(
    config: AuthConfig, state: MutableMapping[str, Any]
) -> AuthCredential | None:
    """The credential `state` holds for `config` (see `auth_flow.stored_credential`), its
    token refreshed and kept back where it was found (without the client secret) when it
    had expired; None when there is none, or it expired and could not be refreshed.

    Raises:
        ValueError: an expired token's scheme names no token endpoint.
    """
    found = stored_credential_at(config, state)
    if found is None:
        return None
    key, credential = found
    if not needs_refresh(config, credential):
        return credential
    fresh = refreshed_now(config, credential)
    if fresh is not None:
        state[key] = kept_form(fresh)
    return fresh


def kept_form(credential: AuthCredential) -> dict[str, object]:
    """`credential` as the session state keeps it: JSON, without the client secret (the
    state is readable by clients)."""
    kept = credential.model_copy(deep=True)
    if kept.oauth2 is not None:
        kept.oauth2.client_secret = None
    return kept.model_dump(mode="json")


def _send_now(request: TokenRequest) -> dict[str, object]:
    """`send` from plain code: awaited on the loop inside `run_waitable` (an async tool
    answered with a credential), else sent from the calling thread."""
    # Here, not at the top: greenlet loads only for a run that may wait (`import baton`
    # never needs it).
    from baton.loop_waits import can_wait, wait

    return wait(send(request)) if can_wait() else send_blocking(request)


def _failed(request: TokenRequest) -> str:
    return f"the {request.purpose} to {request.url} failed"


def _authenticated(
    config: AuthConfig, oauth2: OAuth2Auth, url: str, form: dict[str, str], purpose: str
) -> TokenRequest:
    """The request with the client's authentication: the agent's client of `config`,
    else what the credential itself carries."""
    client = config.raw_auth_credential.oauth2 if config.raw_auth_credential else None
    client_id = (client.client_id if client else None) or oauth2.client_id or ""
    secret = (client.client_secret if client else None) or oauth2.client_secret
    headers = {"Accept": "application/json"}
    extra = (client.model_extra if client else None) or {}
    if secret and extra.get("token_endpoint_auth_method") != "client_secret_post":
        pair = f"{client_id}:{secret}".encode("latin-1")
        headers["Authorization"] = f"Basic {base64.b64encode(pair).decode()}"
    else:
        form = {**form, "client_id": client_id}
        if secret:
            form["client_secret"] = secret
    return TokenRequest(url=url, form=form, headers=headers, purpose=purpose)


def _token_url(config: AuthConfig, otherwise: str) -> str:
    fields = scheme_json(config.auth_scheme)
    flow = _object(_object(fields.get("flows")).get("authorizationCode"))
    url = flow.get("tokenUrl") or fields.get("token_endpoint") or fields.get("tokenEndpoint")
    if not isinstance(url, str) or not url:
        raise ValueError(
            f"the {scheme_type(config.auth_scheme)} scheme names no token endpoint (an "
            "authorizationCode flow's tokenUrl, or an OpenID Connect configuration's "
            f"token_endpoint), so {otherwise}; give one."
        )
    return url


def _code(oauth2: OAuth2Auth) -> str:
    if oauth2.auth_code:
        return oauth2.auth_code
    codes = parse_qs(urlsplit(oauth2.auth_response_uri or "").query).get("code")
    if not codes:
        raise ValueError("the auth_response_uri carries no code to exchange for a token.")
    return codes[0]


def _object(value: object) -> dict[str, object]:
    """A JSON object's fields ({} for anything else)."""
    return cast(dict[str, object], value) if isinstance(value, dict) else {}
