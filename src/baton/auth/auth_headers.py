"""The request headers a credential given whole becomes, as the reference builds them:
an API key under the header its scheme names, an HTTP scheme's `Authorization` (bearer,
basic, or any scheme with a token) and its additional headers. What baton cannot turn
into headers by itself is refused when the tool is built."""

from __future__ import annotations

import base64
from enum import Enum

from baton.auth.auth_credential import AuthCredential, AuthCredentialTypes

__all__ = ["auth_headers"]

_CONSENT = (
    "{what} needs {need}, and baton has no credential service nor asks a user for "
    "consent; pass the access token as AuthCredential(auth_type=AuthCredentialTypes.HTTP, "
    "http=HttpAuth(scheme='bearer', credentials=HttpCredentials(token=...))), or send it "
    "from a header_provider."
)


def auth_headers(
    auth_scheme: object | None, auth_credential: AuthCredential | None, *, owner: str
) -> dict[str, str]:
    """The headers that carry this credential (none without a scheme or credential).

    Args:
        auth_scheme: the scheme, e.g. fastapi's `APIKey(in_=APIKeyIn.header,
            name="X-API-Key")` or `HTTPBearer()` (read by its `type_`, `in_`, `name`).
        auth_credential: the credential for it.
        owner: who takes them, for messages (e.g. "McpToolset").

    Raises:
        NotImplementedError: the credential needs what baton lacks: a user's consent or
            a token exchange (OAuth2, OpenID Connect, a service account), or a scheme
            came without its credential (the reference asks the user for it).
        ValueError: the credential does not fit its scheme (an API key outside a header
            or without a header name, an HTTP scheme without its secret).
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
    need = "a user's consent (adk_request_credential) or a token exchange"
    raise NotImplementedError(_CONSENT.format(what=f"{owner}'s {kind.value} credential", need=need))


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
