"""Credentials for tools that call other services, as the reference's `google.adk.auth`
names them (`AuthCredential` and its parts), and the request headers they become.

baton has no credential service and asks no user for consent: a credential given whole
(an API key, an HTTP scheme's token or user and password) is used as it is; one that
needs an exchange or a person's consent (OAuth2, OpenID Connect, a service account) is
refused, naming what is missing.
"""

from baton.auth.auth_credential import (
    AuthCredential,
    AuthCredentialTypes,
    HttpAuth,
    HttpCredentials,
    OAuth2Auth,
    ServiceAccount,
)
from baton.auth.auth_headers import auth_headers

__all__ = [
    "AuthCredential",
    "AuthCredentialTypes",
    "HttpAuth",
    "HttpCredentials",
    "OAuth2Auth",
    "ServiceAccount",
    "auth_headers",
]
