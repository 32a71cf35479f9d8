"""Credentials for tools that call other services, as the reference's `google.adk.auth`
names them (`AuthCredential` and its parts, `AuthConfig`), and the request headers they
become.

A tool asks its user for a credential with `tool_context.request_credential(auth_config)`
(see `baton.auth.auth_flow`) and may keep it in a credential service
(`baton.auth.credential_service`). A toolset given a credential (`auth_headers`) asks no
user: a credential given whole (an API key, an HTTP scheme's token or user and password,
an OAuth2 / OpenID Connect access token) is used as it is, and an OAuth2 client whose
scheme offers the client-credentials grant gets its token from the token endpoint; one
that needs a person's consent or a Google token exchange (a service account) is refused,
naming what is missing.
"""

from baton.auth.auth_credential import (
    AuthCredential,
    AuthCredentialTypes,
    HttpAuth,
    HttpCredentials,
    OAuth2Auth,
    ServiceAccount,
)
from baton.auth.auth_headers import ClientCredentialsGrant, auth_headers
from baton.auth.auth_tool import AuthConfig, AuthToolArguments

__all__ = [
    "AuthConfig",
    "AuthCredential",
    "AuthCredentialTypes",
    "AuthToolArguments",
    "ClientCredentialsGrant",
    "HttpAuth",
    "HttpCredentials",
    "OAuth2Auth",
    "ServiceAccount",
    "auth_headers",
]
