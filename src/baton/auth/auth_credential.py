"""A credential, as the reference's `AuthCredential` carries it: its type and the part
for that type. Field names are the reference's (camelCase accepted too); secrets stay
out of reprs."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, alias_generators

__all__ = [
    "AuthCredential",
    "AuthCredentialTypes",
    "HttpAuth",
    "HttpCredentials",
    "OAuth2Auth",
    "ServiceAccount",
]

_Secret = Annotated[str | None, Field(repr=False)]


class _Part(BaseModel, hide_input_in_errors=True):
    """A credential's part: snake_case fields, camelCase accepted; other fields kept
    (the reference allows them) but never shown."""

    model_config = ConfigDict(
        extra="allow",
        alias_generator=alias_generators.to_camel,
        populate_by_name=True,
        defer_build=True,  # see WireModel
    )

    def __repr_args__(self) -> Any:
        extra = self.__pydantic_extra__ or {}
        for key, value in super().__repr_args__():
            yield key, "<redacted>" if key in extra else value


class AuthCredentialTypes(str, Enum):
    """What kind of credential it is (the reference's values)."""

    API_KEY = "apiKey"
    HTTP = "http"
    OAUTH2 = "oauth2"
    OPEN_ID_CONNECT = "openIdConnect"
    SERVICE_ACCOUNT = "serviceAccount"


class HttpCredentials(_Part):
    """An HTTP scheme's secret: a token, or a user name and password."""

    username: str | None = None
    password: _Secret = None
    token: _Secret = None


class HttpAuth(_Part):
    """An HTTP authentication scheme (RFC 7235, e.g. "bearer", "basic") and its secret,
    with headers to send besides."""

    scheme: str
    credentials: HttpCredentials
    additional_headers: Annotated[dict[str, str] | None, Field(repr=False)] = None


class OAuth2Auth(_Part):
    """An OAuth2 client and what its flow has produced (baton runs only the
    client-credentials grant, see `baton.auth.auth_headers`)."""

    client_id: str | None = None
    client_secret: _Secret = None
    auth_uri: str | None = None
    state: str | None = None
    redirect_uri: str | None = None
    auth_response_uri: _Secret = None
    auth_code: _Secret = None
    access_token: _Secret = None
    refresh_token: _Secret = None
    expires_at: int | None = None
    expires_in: int | None = None
    audience: str | None = None


class ServiceAccount(_Part):
    """A Google service account (baton exchanges none for a token)."""

    service_account_credential: dict[str, Any] | None = None
    scopes: list[str] | None = None
    use_default_credential: bool | None = False


class AuthCredential(_Part):
    """A credential: its type and the part that type uses.

    Args:
        auth_type: which kind it is.
        api_key: the key, for API_KEY (the scheme names the header).
        http: the scheme and secret, for HTTP.
        oauth2: the OAuth2 client and tokens, for OAUTH2 and OPEN_ID_CONNECT.
        service_account: for SERVICE_ACCOUNT.
        resource_ref: a reference to where the credential lives (unused, as in the
            reference).
    """

    auth_type: AuthCredentialTypes
    resource_ref: str | None = None
    api_key: _Secret = None
    http: HttpAuth | None = None
    service_account: ServiceAccount | None = None
    oauth2: OAuth2Auth | None = None
