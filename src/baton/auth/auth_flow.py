"""A user's consent, asked and answered: the request a tool's `request_credential` sends
(an OAuth2 sign-in link with a fresh `state` when the client is to get one; no secret of
the agent's), and the answer checked before anything is stored (the token requests a
sign-in's code or an expired token needs are in `baton.auth.token_requests`)."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Mapping
from typing import Any, Final, cast
from urllib.parse import parse_qs, urlencode, urlsplit

from pydantic import JsonValue, ValidationError

from baton.auth.auth_credential import (
    AuthCredential,
    AuthCredentialTypes,
    HttpAuth,
    HttpCredentials,
    OAuth2Auth,
)
from baton.auth.auth_tool import AuthConfig, scheme_json, scheme_type
from baton.errors import InvalidResponseError

__all__ = [
    "CREDENTIAL_SCHEMA",
    "answered_config",
    "auth_request",
    "credential_message",
    "is_exchangeable",
    "read_answer",
    "stored_credential",
    "stored_credential_at",
    "with_client",
]

CREDENTIAL_SCHEMA: Final[dict[str, JsonValue]] = {
    "anyOf": [
        {"type": "object", "required": ["exchangedAuthCredential"]},
        {"type": "object", "required": ["exchanged_auth_credential"]},
        {"type": "object", "required": ["authType"]},
        {"type": "object", "required": ["auth_type"]},
        {"type": "string", "minLength": 1},
    ]
}
"""What an answer to a credential request looks like on its face (the request's
`AuthConfig` with `exchangedAuthCredential` filled in, an `AuthCredential`, or an API key
as text); `read_answer` checks the rest before it is stored."""

_OAUTH2_SCHEMES = ("oauth2", "openIdConnect")
_AUTHORIZATION_FLOWS = ("authorizationCode", "implicit")


def auth_request(config: AuthConfig) -> AuthConfig:
    """The request the user's side gets for `config`: an OAuth2 client without a sign-in
    link gets one (the authorization endpoint with its client id, redirect URI, scopes and
    a fresh `state`), and no secret of the agent's (client secret, API key, password,
    token) is in it.

    Raises:
        ValueError: an OAuth2 scheme whose config has no client (raw_auth_credential's
            oauth2 with a client_id) or whose scheme names no authorization endpoint.
    """
    request = config.model_copy(deep=True)
    if scheme_type(config.auth_scheme) in _OAUTH2_SCHEMES and not _auth_uri(
        config.exchanged_auth_credential
    ):
        request.exchanged_auth_credential = _signed_in_link(config)
    request.raw_auth_credential = _without_secrets(request.raw_auth_credential)
    request.exchanged_auth_credential = _without_secrets(request.exchanged_auth_credential)
    return request


def answered_config(request: JsonValue, answer: JsonValue) -> JsonValue:
    """The request's AuthConfig (JSON) with the credential the answer gives in
    `exchangedAuthCredential`: what is kept as the answer to a credential request.

    Raises:
        InvalidResponseError: see `read_answer`.
    """
    asked = _asked_config(request)
    asked.exchanged_auth_credential = read_answer(request, answer)
    return cast(JsonValue, asked.model_dump(mode="json", by_alias=True, exclude_none=True))


def read_answer(request: JsonValue, answer: JsonValue) -> AuthCredential:
    """The credential an answer to a credential request gives, once it is one the tool
    can use: the request's own OAuth2 client fields filled in where the answer left them
    out.

    Args:
        request: the `adk_request_credential` call's arguments.
        answer: the answer's value.

    Raises:
        InvalidResponseError: the answer holds no credential, one of the wrong kind or
            an incomplete one, or an OAuth2 `state` other than the one sent.
    """
    asked = _asked_config(request)
    credential = _credential_of(asked, answer)
    _check_complete(credential)
    sent = asked.exchanged_auth_credential or asked.raw_auth_credential
    if credential.oauth2 is not None and sent is not None and sent.oauth2 is not None:
        _check_state(sent.oauth2, credential.oauth2)
        credential.oauth2 = _filled_from(credential.oauth2, sent.oauth2)
    return credential


def credential_message(request: JsonValue) -> str:
    """What a credential request asks, for a person reading the pending question."""
    fields = _fields(_fields(request).get("authConfig"))
    link = _fields(_fields(fields.get("exchangedAuthCredential")).get("oauth2")).get("authUri")
    kind = scheme_type(fields.get("authScheme")) or "unknown scheme"
    if isinstance(link, str) and link:
        return f"Sign in to grant access ({kind}): {link}"
    return f"A credential ({kind}) is needed to go on."


def is_exchangeable(config: AuthConfig, credential: AuthCredential) -> bool:
    """Whether `credential` is an OAuth2 sign-in's code still to exchange for a token."""
    oauth2 = credential.oauth2
    if scheme_type(config.auth_scheme) not in _OAUTH2_SCHEMES or oauth2 is None:
        return False
    return not oauth2.access_token and bool(oauth2.auth_code or oauth2.auth_response_uri)


def stored_credential(config: AuthConfig, state: Mapping[str, object]) -> AuthCredential | None:
    """The credential for `config` that the session state holds (`temp:<credential_key>`,
    then `<credential_key>`): a credential's JSON, or a token or API key as text."""
    found = stored_credential_at(config, state)
    return found[1] if found is not None else None


def stored_credential_at(
    config: AuthConfig, state: Mapping[str, object]
) -> tuple[str, AuthCredential] | None:
    """`stored_credential`, with the state key it is kept under."""
    key = config.credential_key or ""
    for name in (f"temp:{key}", key):
        value = state.get(name)
        if isinstance(value, dict):
            with contextlib.suppress(ValidationError):
                return name, AuthCredential.model_validate(value)
        elif isinstance(value, str) and value:
            return name, _credential_from_text(config, value)
    return None


def _credential_from_text(config: AuthConfig, text: str) -> AuthCredential:
    kind = scheme_type(config.auth_scheme)
    if kind == "apiKey":
        return AuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key=text)
    if kind == "http":
        scheme = scheme_json(config.auth_scheme).get("scheme") or "bearer"
        http = HttpAuth(scheme=str(scheme), credentials=HttpCredentials(token=text))
        return AuthCredential(auth_type=AuthCredentialTypes.HTTP, http=http)
    return AuthCredential(
        auth_type=AuthCredentialTypes.OAUTH2, oauth2=OAuth2Auth(access_token=text)
    )


def with_client(config: AuthConfig, credential: AuthCredential) -> AuthCredential:
    """`credential` with the OAuth2 client id and secret of `config` (the agent's, which
    never left the process), where it has none."""
    client = config.raw_auth_credential.oauth2 if config.raw_auth_credential else None
    if credential.oauth2 is None or client is None:
        return credential
    oauth2 = credential.oauth2.model_copy()
    oauth2.client_id = oauth2.client_id or client.client_id
    oauth2.client_secret = oauth2.client_secret or client.client_secret
    return credential.model_copy(update={"oauth2": oauth2})


def _signed_in_link(config: AuthConfig) -> AuthCredential:
    """The raw OAuth2 client with the sign-in link the user follows (its own, or one
    built from the scheme's authorization endpoint with a fresh state)."""
    raw = config.raw_auth_credential
    kind = scheme_type(config.auth_scheme)
    if raw is None or raw.oauth2 is None or not (raw.oauth2.client_id or raw.oauth2.auth_uri):
        raise ValueError(
            f"an {kind} credential request needs the agent's OAuth2 client: give the "
            "AuthConfig raw_auth_credential=AuthCredential(auth_type=AuthCredentialTypes."
            "OAUTH2, oauth2=OAuth2Auth(client_id=..., client_secret=..., redirect_uri=...))."
        )
    linked = raw.model_copy(deep=True)
    assert linked.oauth2 is not None
    if linked.oauth2.auth_uri:
        return linked
    endpoint, scopes = _authorization_endpoint(config.auth_scheme)
    state = secrets.token_urlsafe(24)
    query = {"response_type": "code", "client_id": raw.oauth2.client_id or ""}
    if raw.oauth2.redirect_uri:
        query["redirect_uri"] = raw.oauth2.redirect_uri
    if scopes:
        query["scope"] = " ".join(scopes)
    query |= {"state": state, "access_type": "offline", "prompt": "consent"}
    separator = "&" if urlsplit(endpoint).query else "?"
    linked.oauth2.auth_uri = f"{endpoint}{separator}{urlencode(query)}"
    linked.oauth2.state = state
    return linked


def _authorization_endpoint(scheme: object) -> tuple[str, list[str]]:
    """Where the user signs in, and the scopes asked for."""
    fields = scheme_json(scheme)
    flows = _fields(fields.get("flows"))
    for name in _AUTHORIZATION_FLOWS:
        flow = _fields(flows.get(name))
        if flow.get("authorizationUrl"):
            return str(flow["authorizationUrl"]), [str(s) for s in _fields(flow.get("scopes"))]
    endpoint = fields.get("authorization_endpoint") or fields.get("authorizationEndpoint")
    scopes: object = fields.get("scopes")
    if isinstance(endpoint, str) and endpoint:
        listed = cast(list[object], scopes) if isinstance(scopes, list) else []
        return endpoint, [str(s) for s in listed]
    raise ValueError(
        f"the {scheme_type(scheme)} scheme names no authorization endpoint (an "
        "authorizationCode flow's authorizationUrl, or an OpenID Connect configuration's "
        "authorization_endpoint); give one, or an OAuth2Auth(auth_uri=...) to send as is."
    )


def _asked_config(request: JsonValue) -> AuthConfig:
    config = request.get("authConfig") if isinstance(request, dict) else None
    return AuthConfig.model_validate(config or {"authScheme": {}})


def _credential_of(asked: AuthConfig, answer: JsonValue) -> AuthCredential:
    """The credential in an answer: an AuthConfig's exchanged credential, a credential
    itself, or an API key as text."""
    raw = asked.raw_auth_credential
    if isinstance(answer, str):
        if raw is None or raw.auth_type is not AuthCredentialTypes.API_KEY:
            raise InvalidResponseError(
                "a credential answer given as text is an API key, and this request is not "
                "for one; send the request's AuthConfig with exchangedAuthCredential filled "
                "in. Nothing was stored."
            )
        return AuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key=answer)
    assert isinstance(answer, dict)  # CREDENTIAL_SCHEMA
    value = answer.get("exchangedAuthCredential", answer.get("exchanged_auth_credential", answer))
    if not isinstance(value, dict):
        raise InvalidResponseError(
            f"exchangedAuthCredential must be an AuthCredential object, got {value!r}. "
            "Nothing was stored; send the request's AuthConfig with it filled in."
        )
    try:
        return AuthCredential.model_validate(value)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'the credential'}: {e['msg']}"
            for e in error.errors()
        )
        raise InvalidResponseError(
            f"the credential answer is not an AuthCredential ({problems}). Nothing was "
            "stored; correct it and send it again."
        ) from None


def _check_complete(credential: AuthCredential) -> None:
    kind = credential.auth_type
    missing: str | None = None
    if kind is AuthCredentialTypes.API_KEY and not credential.api_key:
        missing = "apiKey"
    elif kind is AuthCredentialTypes.HTTP and not _has_http_secret(credential):
        missing = "http.credentials (a token, or a username and password)"
    elif kind in (AuthCredentialTypes.OAUTH2, AuthCredentialTypes.OPEN_ID_CONNECT):
        oauth2 = credential.oauth2
        if oauth2 is None or not (
            oauth2.access_token or oauth2.auth_code or oauth2.auth_response_uri
        ):
            missing = (
                "oauth2.authResponseUri (where the sign-in redirected), authCode or accessToken"
            )
    elif kind is AuthCredentialTypes.SERVICE_ACCOUNT:
        missing = "a kind baton can use: a service account is not exchanged for a token"
    if missing is not None:
        raise InvalidResponseError(
            f"the {kind.value} credential answer lacks {missing}. Nothing was stored; "
            "complete it and send it again."
        )


def _has_http_secret(credential: AuthCredential) -> bool:
    http = credential.http
    if http is None:
        return False
    secret = http.credentials
    return bool(secret.token or (secret.username and secret.password))


def _check_state(sent: OAuth2Auth, given: OAuth2Auth) -> None:
    """Refuse a sign-in answer whose OAuth2 `state` is not the one sent (RFC 6749 10.12)."""
    if not sent.state:
        return
    returned = parse_qs(urlsplit(given.auth_response_uri or "").query).get("state")
    states = {s for s in [given.state, *(returned or [])] if s}
    if states and states != {sent.state}:
        raise InvalidResponseError(
            "the sign-in answer's OAuth2 state is not the one this request sent, so it may "
            "belong to another sign-in; nothing was stored. Sign in again from this "
            "request's authUri."
        )


def _filled_from(given: OAuth2Auth, sent: OAuth2Auth) -> OAuth2Auth:
    filled = given.model_copy()
    for field in ("client_id", "redirect_uri", "auth_uri", "state"):
        if getattr(filled, field) is None:
            setattr(filled, field, getattr(sent, field))
    return filled


def _fields(value: object) -> dict[str, Any]:
    """A JSON object's fields ({} for anything else)."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _auth_uri(credential: AuthCredential | None) -> str | None:
    return credential.oauth2.auth_uri if credential and credential.oauth2 else None


def _without_secrets(credential: AuthCredential | None) -> AuthCredential | None:
    """The credential without the agent's secrets, for what leaves the process."""
    if credential is None:
        return None
    kept = credential.model_copy(deep=True)
    kept.api_key = None
    if kept.oauth2 is not None:
        kept.oauth2.client_secret = None
    if kept.http is not None:
        kept.http.credentials.password = None
        kept.http.credentials.token = None
        kept.http.additional_headers = None
    return kept
