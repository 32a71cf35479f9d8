"""The request headers a credential becomes, as the reference builds them: an API key
under the header its scheme names, an HTTP scheme's `Authorization` (bearer, basic, or
any scheme with a token) and its additional headers, an OAuth2 / OpenID Connect access
token as a bearer token, or one the client-credentials grant gets from the scheme's token
endpoint. What needs a user's consent is refused when the tool is built."""

from __future__ import annotations

import base64
import time
from enum import Enum
from typing import TYPE_CHECKING, cast, final

from baton.auth.auth_credential import AuthCredential, AuthCredentialTypes, OAuth2Auth

if TYPE_CHECKING:
    # httpx is imported where a token is requested: `import baton` (and `baton --help`)
    # never needs it, and it is a sixth of a server's imports.
    import httpx

__all__ = ["ClientCredentialsGrant", "auth_headers", "token_answer"]

_TOKEN_REQUEST_SECONDS = 10.0
_EXPIRY_MARGIN_SECONDS = 10.0
_CLIENT_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none")

_CONSENT = (
    "{what} needs {need}, and a toolset asks no user for consent (a tool's "
    "request_credential does); pass the access token as "
    "AuthCredential(auth_type=AuthCredentialTypes.HTTP, http=HttpAuth(scheme='bearer', "
    "credentials=HttpCredentials(token=...))), or send it from a header_provider."
)


def auth_headers(
    auth_scheme: object | None, auth_credential: AuthCredential | None, *, owner: str
) -> dict[str, str] | ClientCredentialsGrant:
    """The headers that carry this credential (none without a scheme or credential), or,
    for an OAuth2 / OpenID Connect client without an access token whose scheme offers the
    client-credentials grant, the grant that gets them when they are needed.

    Args:
        auth_scheme: the scheme, e.g. fastapi's `APIKey(in_=APIKeyIn.header,
            name="X-API-Key")` or `HTTPBearer()` (read by its `type_`, `in_`, `name`).
        auth_credential: the credential for it.
        owner: who takes them, for messages (e.g. "McpToolset").

    Raises:
        NotImplementedError: the credential needs what baton lacks: a user's consent (an
            OAuth2 / OpenID Connect credential without an access token whose scheme has
            no client-credentials grant), a Google token exchange (a service account),
            a client authentication by signed JWT, or a scheme came without its
            credential (the reference asks the user for it).
        ValueError: the credential does not fit its scheme (an API key outside a header
            or without a header name, an HTTP scheme without its secret, an OAuth2 one
            without `oauth2`, or with neither an access token nor a client id for the
            client-credentials grant, or a grant without its token URL).
        TypeError: auth_credential is not an AuthCredential.
    """
    if auth_scheme is None and auth_credential is None:
        return {}
    if auth_credential is None:
        raise NotImplementedError(
            f"{owner}'s auth_scheme ({_scheme_type(auth_scheme)}) came without an "
            "auth_credential: the reference asks the user for one through its credential "
            "service, which baton lacks; give auth_credential."
        )
    if not isinstance(auth_credential, AuthCredential):  # pyright: ignore[reportUnnecessaryIsInstance] -- the caller's value
        raise TypeError(
            f"{owner}'s auth_credential must be a baton.auth.AuthCredential, got "
            f"{type(auth_credential).__name__}."
        )
    kind = auth_credential.auth_type
    if kind is AuthCredentialTypes.API_KEY:
        return _api_key(auth_scheme, auth_credential, owner)
    if kind is AuthCredentialTypes.HTTP:
        return _http(auth_credential, owner)
    if kind is AuthCredentialTypes.SERVICE_ACCOUNT:
        need = "exchanging for a Google access token (google-auth)"
        raise NotImplementedError(_CONSENT.format(what=f"{owner}'s service account", need=need))
    return _oauth2(auth_scheme, auth_credential, owner)


def _oauth2(
    scheme: object | None, credential: AuthCredential, owner: str
) -> dict[str, str] | ClientCredentialsGrant:
    """An OAuth2 / OpenID Connect credential: its access token, else the client-credentials
    grant its scheme offers."""
    what = f"{owner}'s {credential.auth_type.value} credential"
    oauth2 = credential.oauth2
    if oauth2 is None:
        raise ValueError(f"{what} has no oauth2 (OAuth2Auth with access_token or client_id).")
    if oauth2.access_token:
        return {"Authorization": f"Bearer {oauth2.access_token}"}
    token_url = _client_credentials_token_url(scheme, owner)
    if token_url is None:
        need = (
            "a user's consent (its scheme offers no clientCredentials flow and it holds no "
            "access_token; put one in OAuth2Auth(access_token=...))"
        )
        raise NotImplementedError(_CONSENT.format(what=what, need=need))
    if not oauth2.client_id:
        raise ValueError(
            f"{what} has neither an access_token nor a client_id (and client_secret) for "
            "the client-credentials grant its scheme offers; give one of them."
        )
    return ClientCredentialsGrant(token_url, oauth2, owner=owner)


def _client_credentials_token_url(scheme: object | None, owner: str) -> str | None:
    """The token URL of the scheme's client-credentials grant (None: it offers none):
    an OAuth2 scheme with a clientCredentials flow, or an OpenID Connect configuration
    listing the grant (`grant_types_supported`, `token_endpoint`)."""
    flows = getattr(scheme, "flows", None)
    if flows is not None:
        if getattr(flows, "clientCredentials", None) is None:
            return None
        urls = [getattr(getattr(flows, f, None), "tokenUrl", None) for f in _TOKEN_FLOWS]
        where = "the clientCredentials flow's tokenUrl"
    else:
        if "client_credentials" not in (getattr(scheme, "grant_types_supported", None) or []):
            return None
        urls = [getattr(scheme, "token_endpoint", None)]
        where = "the OpenID Connect configuration's token_endpoint"
    url = next((u for u in urls if isinstance(u, str) and u), None)
    if url is None:
        raise ValueError(f"{owner}'s client-credentials grant needs {where}; give it.")
    return url


_TOKEN_FLOWS = ("authorizationCode", "clientCredentials")
"""Where the reference looks for the token URL, in order."""


@final
class ClientCredentialsGrant:
    """The OAuth2 client-credentials grant (RFC 6749 4.4): an access token the token
    endpoint gives the client itself, no user involved, requested when first needed and
    again once it expires (it is kept until then, or for good when the endpoint gives
    no `expires_in`). The client authenticates as its `token_endpoint_auth_method` says:
    HTTP basic by default, as the reference; `client_secret_post`; or `none` (without a
    client_secret).

    Raises:
        NotImplementedError: a client authentication by signed JWT.
    """

    def __init__(self, token_url: str, oauth2: OAuth2Auth, *, owner: str) -> None:
        extra = oauth2.model_extra or {}
        method = extra.get("token_endpoint_auth_method") or "client_secret_basic"
        if not oauth2.client_secret:
            method = "none"  # a public client, as the reference treats one
        if method not in _CLIENT_AUTH_METHODS:
            raise NotImplementedError(
                f"{owner}'s OAuth2 client authenticates by {method}, which baton does not "
                f"sign; use one of {', '.join(_CLIENT_AUTH_METHODS)}, or pass the "
                "access_token."
            )
        self.token_url, self._owner, self._method = token_url, owner, method
        self._client_id, self._secret = oauth2.client_id or "", oauth2.client_secret or ""
        self._token: str | None = None
        self._until = float("inf")

    async def headers(self) -> dict[str, str]:
        """`Authorization: Bearer <token>`, with a token that has not expired.

        Raises:
            ConnectionError: the token endpoint could not be reached, refused the client
                or answered without an access_token.
        """
        if self._token is None or time.monotonic() >= self._until:
            self._token, self._until = await self._request()
        return {"Authorization": f"Bearer {self._token}"}

    async def _request(self) -> tuple[str, float]:
        form = {"grant_type": "client_credentials"}
        headers = {"Accept": "application/json"}
        if self._method == "client_secret_basic":
            pair = f"{self._client_id}:{self._secret}".encode("latin-1")
            headers["Authorization"] = f"Basic {base64.b64encode(pair).decode()}"
        else:
            form["client_id"] = self._client_id
            if self._method == "client_secret_post":
                form["client_secret"] = self._secret
        import httpx  # loaded here, when a token is requested: see the import above

        failed = f"{self._owner}'s client-credentials token request to {self.token_url} failed"
        try:
            async with httpx.AsyncClient(timeout=_TOKEN_REQUEST_SECONDS) as client:
                answer = await client.post(self.token_url, data=form, headers=headers)
        except httpx.HTTPError as error:
            raise ConnectionError(f"{failed}: {error}") from error
        fields = token_answer(answer, failed)
        token, expires_in = str(fields["access_token"]), fields.get("expires_in")
        until = float("inf")
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
            until = time.monotonic() + max(0.0, expires_in - _EXPIRY_MARGIN_SECONDS)
        return token, until


def token_answer(answer: httpx.Response, failed: str) -> dict[str, object]:
    """A token endpoint's answer's fields, once it gave an access token.

    Raises:
        ConnectionError: it refused (`failed` says what failed), or gave no access_token.
    """
    if answer.status_code != 200:
        raise ConnectionError(f"{failed}: HTTP {answer.status_code} {answer.text[:200]}")
    try:
        body: object = answer.json()
    except ValueError:
        body = None
    fields = cast(dict[str, object], body) if isinstance(body, dict) else {}
    token = fields.get("access_token")
    if not isinstance(token, str) or not token:
        raise ConnectionError(f"{failed}: its answer has no access_token.")
    return fields


def _api_key(scheme: object | None, credential: AuthCredential, owner: str) -> dict[str, str]:
    if not credential.api_key:
        raise ValueError(f"{owner}'s API key credential has no api_key.")
    where, name = _value(getattr(scheme, "in_", None)), getattr(scheme, "name", None)
    if where != "header" or not isinstance(name, str) or not name:
        raise ValueError(
            f"{owner} sends an API key only in a header: its auth_scheme must be an apiKey "
            f"scheme in 'header' with the header's name (e.g. fastapi's APIKey(in_="
            f"APIKeyIn.header, name='X-API-Key')), got in={where!r}, name={name!r}."
        )
    return {name: credential.api_key}


def _http(credential: AuthCredential, owner: str) -> dict[str, str]:
    http = credential.http
    if http is None:
        raise ValueError(f"{owner}'s HTTP credential has no http (HttpAuth).")
    secret, scheme = http.credentials, http.scheme.lower()
    headers: dict[str, str] = {}
    if scheme == "basic" and secret.username and secret.password:
        pair = f"{secret.username}:{secret.password}".encode()
        headers["Authorization"] = f"Basic {base64.b64encode(pair).decode()}"
    elif scheme != "basic" and secret.token:
        name = "Bearer" if scheme == "bearer" else http.scheme
        headers["Authorization"] = f"{name} {secret.token}"
    headers.update(http.additional_headers or {})
    if not headers:
        needs = "username and password" if scheme == "basic" else "token"
        raise ValueError(f"{owner}'s HTTP '{http.scheme}' credential has no {needs}.")
    return headers


def _scheme_type(scheme: object) -> str:
    return str(_value(getattr(scheme, "type_", None)) or type(scheme).__name__)


def _value(value: object) -> object:
    return value.value if isinstance(value, Enum) else value
