"""What a tool asks for when it needs a user's credential, as the reference's
`google.adk.auth.auth_tool` names it: an `AuthConfig` (the scheme, the agent's own client
credential, what the user's side filled in, and the key the credential is kept under)
and the `AuthToolArguments` of the `adk_request_credential` call that carries it."""

from __future__ import annotations

import hashlib
import json
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, SerializeAsAny, alias_generators

from baton.auth.auth_credential import AuthCredential

__all__ = ["AuthConfig", "AuthToolArguments", "checked_config", "scheme_json", "scheme_type"]

# Fields of an OAuth2 credential that a flow fills in: left out of the credential key, so
# the key names the client, not one sign-in.
_FLOW_FIELDS = (
    "auth_uri",
    "state",
    "auth_response_uri",
    "auth_code",
    "access_token",
    "refresh_token",
    "expires_at",
    "expires_in",
    "redirect_uri",
)


class _Model(BaseModel, hide_input_in_errors=True):
    model_config = ConfigDict(
        extra="allow",
        alias_generator=alias_generators.to_camel,
        populate_by_name=True,
        arbitrary_types_allowed=True,
        defer_build=True,  # see WireModel
    )


class AuthConfig(_Model):
    """A credential a tool needs, and where the user's side fills it in.

    Args:
        auth_scheme: how the service takes the credential: fastapi's OpenAPI security
            schemes (`APIKey`, `HTTPBearer`, `OAuth2(flows=...)`, `OpenIdConnect`), or
            their JSON (a dict) as an answer carries it.
        raw_auth_credential: the agent's own part (an OAuth2 client's id, secret and
            redirect URI); its secrets never leave the process.
        exchanged_auth_credential: what the user's side gives back: a credential whole
            (an API key, a token), or an OAuth2 sign-in's `auth_response_uri` /
            `auth_code`, which baton exchanges for a token.
        credential_key: the key the credential is kept under (default: derived from
            the scheme and the client, the same for the same configuration).
    """

    auth_scheme: SerializeAsAny[Any]
    raw_auth_credential: AuthCredential | None = None
    exchanged_auth_credential: AuthCredential | None = None
    credential_key: str | None = None

    def model_post_init(self, context: Any, /) -> None:
        if not self.credential_key:
            self.credential_key = self._derived_key()

    def _derived_key(self) -> str:
        """`adk_<scheme type>_<digest>_<credential type>_<digest>`, as the reference spells
        its keys: the same for the same scheme and client, whatever a flow filled in."""
        scheme = scheme_json(self.auth_scheme)
        name = f"{scheme_type(self.auth_scheme)}_{_digest(scheme)}"
        raw = self.raw_auth_credential
        if raw is None:
            return f"adk_{name}_"
        dumped = raw.model_dump(mode="json", by_alias=True, exclude_none=True)
        oauth2: object = dumped.get("oauth2")
        if isinstance(oauth2, dict):
            for field in _FLOW_FIELDS:
                cast(dict[str, Any], oauth2).pop(alias_generators.to_camel(field), None)
        return f"adk_{name}_{raw.auth_type.value}_{_digest(dumped)}"


class AuthToolArguments(_Model):
    """The arguments of an `adk_request_credential` call: the tool call that needs the
    credential, and what it needs."""

    function_call_id: str
    auth_config: AuthConfig


def checked_config(auth_config: object, method: str) -> AuthConfig:
    """`auth_config`, once it is an AuthConfig.

    Raises:
        TypeError: it is not, named with what to pass.
    """
    if not isinstance(auth_config, AuthConfig):
        raise TypeError(
            f"{method} takes an AuthConfig (from baton.auth.auth_tool: its auth_scheme and "
            f"raw_auth_credential), got {type(auth_config).__name__}."
        )
    return auth_config


def scheme_json(scheme: object) -> dict[str, Any]:
    """A scheme as JSON (an OpenAPI security scheme's own field names)."""
    if isinstance(scheme, BaseModel):
        return scheme.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dict(scheme) if isinstance(scheme, dict) else {}  # pyright: ignore[reportUnknownArgumentType] -- a JSON object


def scheme_type(scheme: object) -> str:
    """The scheme's type (`apiKey`, `http`, `oauth2`, `openIdConnect`), '' when unknown."""
    value = scheme_json(scheme).get("type")
    return value if isinstance(value, str) else ""


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
