"""A credential request in a person's words, and the answer built from the one line they
type: what the terminal (`baton run`) asks, as the web inbox's credential card does
(static/inbox.js). An API key or a token is a secret, typed without being shown; an
OAuth2 sign-in gives its link, and the person pastes the address it sent them to. Where
an answer is shown afterwards (a session's timeline), its secrets are masked
(`masked_credential`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

from pydantic import JsonValue

__all__ = [
    "MASK",
    "CredentialAsk",
    "credential_ask",
    "masked_credential",
    "masked_credentials_in",
]

MASK = "•••"
"""What a secret of a credential answer is shown as."""

# The fields of a credential (camelCase as answers carry them, snake_case too) that hold a
# secret of the user's or the agent's, or a code that becomes one.
_SECRET_FIELDS = frozenset(
    {
        "apiKey",
        "clientSecret",
        "accessToken",
        "refreshToken",
        "idToken",
        "authCode",
        "authResponseUri",
        "password",
        "token",
        "additionalHeaders",
    }
)
_SECRET_FIELDS_SNAKE = frozenset(
    "".join(f"_{c.lower()}" if c.isupper() else c for c in name) for name in _SECRET_FIELDS
)


@dataclass(frozen=True)
class CredentialAsk:
    """What a credential request asks for, and how a typed line answers it."""

    what: str
    """What is asked for, e.g. "API key (sent in the header X-Key)"."""
    typed: str
    """What the person types: "API key", "token" or "redirect URL"."""
    link: str | None
    """Where to sign in (an OAuth2 request's authUri), if anywhere."""
    config: dict[str, JsonValue]
    """The request's AuthConfig, as sent."""

    @property
    def is_secret(self) -> bool:
        """Whether the typed line is a secret (read without echo)."""
        return self.typed != "redirect URL"

    @property
    def provider(self) -> str | None:
        """The sign-in link's host, for saying where the person signs in."""
        return (urlsplit(self.link).hostname or self.link) if self.link else None

    def answer(self, typed: str) -> JsonValue:
        """The answer the server checks: the request's AuthConfig with the typed key,
        token or sign-in address in `exchangedAuthCredential`."""
        return {**self.config, "exchangedAuthCredential": self._credential(typed.strip())}

    def _credential(self, typed: str) -> JsonValue:
        scheme = _object(self.config.get("authScheme"))
        if self.typed == "API key":
            return {"authType": "apiKey", "apiKey": typed}
        if scheme.get("type") == "http":
            name = str(scheme.get("scheme") or "bearer")
            return {"authType": "http", "http": {"scheme": name, "credentials": {"token": typed}}}
        if self.link is not None:
            exchanged = _object(self.config.get("exchangedAuthCredential"))
            oauth2 = {**_object(exchanged.get("oauth2")), "authResponseUri": typed}
            return cast(JsonValue, {**exchanged, "oauth2": oauth2})
        return {"authType": "oauth2", "oauth2": {"accessToken": typed}}


def credential_ask(request: JsonValue) -> CredentialAsk:
    """What the `adk_request_credential` call's arguments `request` ask for."""
    config = _object(_object(request).get("authConfig"))
    scheme = _object(config.get("authScheme"))
    oauth2 = _object(_object(config.get("exchangedAuthCredential")).get("oauth2"))
    link = oauth2.get("authUri")
    kind = scheme.get("type")
    if kind == "apiKey":
        where = f"the {scheme.get('in') or 'header'} {scheme.get('name') or ''}".strip()
        return CredentialAsk(f"API key (sent in {where})", "API key", None, config)
    if kind == "http":
        name = scheme.get("scheme") or "bearer"
        return CredentialAsk(f"{name} token (HTTP {name} authentication)", "token", None, config)
    if isinstance(link, str) and link:
        host = urlsplit(link).hostname or link
        return CredentialAsk(f"sign in at {host} ({kind})", "redirect URL", link, config)
    return CredentialAsk(f"access token ({kind or 'unknown scheme'})", "token", None, config)


def masked_credential(answer: JsonValue) -> JsonValue:
    """A credential answer as it may be shown: every secret in it (an API key, a token, a
    password, a sign-in's code or the address carrying it) replaced by `MASK`, and an
    answer given as text (an API key) masked whole."""
    return MASK if isinstance(answer, str) else _masked(answer)


def masked_credentials_in(delta: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """A state delta as it may be shown: a value that is a credential's JSON (a credential
    service's or a node's `auth_config` keeps one there) with its secrets masked."""
    return {
        key: _masked(value)
        if isinstance(value, dict) and ("authType" in value or "auth_type" in value)
        else value
        for key, value in delta.items()
    }


def _masked(value: JsonValue) -> JsonValue:
    if isinstance(value, list):
        return [_masked(item) for item in value]
    if not isinstance(value, dict):
        return value  # a field that is no secret
    shown: dict[str, JsonValue] = {}
    for name, item in value.items():
        is_secret = name in _SECRET_FIELDS or name in _SECRET_FIELDS_SNAKE
        shown[name] = MASK if is_secret and item is not None else _masked(item)
    return shown


def _object(value: object) -> dict[str, Any]:
    """A JSON object's fields ({} for anything else)."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}
