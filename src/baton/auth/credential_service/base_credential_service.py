"""The credential service a Runner is given (`Runner(credential_service=...)`): a tool's
`save_credential` / `load_credential` reach it through its context."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from baton.auth.auth_credential import AuthCredential
from baton.auth.auth_tool import AuthConfig, checked_config
from baton.auth.token_requests import needs_refresh, refreshed
from baton.readonly_context import refuse_credentials

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    # Only a type here: the contexts build on the auth package.
    from baton.callback_context import CallbackContext
    from baton.context import Context

__all__ = [
    "BaseCredentialService",
    "load_fresh_credential",
    "load_from_service",
    "save_to_service",
]


class BaseCredentialService(ABC):
    """Keeps credentials by user and `AuthConfig.credential_key`; subclass it to keep them
    in a vault of your own."""

    @abstractmethod
    async def load_credential(
        self, auth_config: AuthConfig, callback_context: CallbackContext | Context
    ) -> AuthCredential | None:
        """The credential kept for `auth_config.credential_key` and the context's user.

        Args:
            auth_config: names the credential (its `credential_key`).
            callback_context: the context asking (its app, user, state).

        Returns:
            The credential, or None when none is kept.
        """

    @abstractmethod
    async def save_credential(
        self, auth_config: AuthConfig, callback_context: CallbackContext | Context
    ) -> None:
        """Keep `auth_config.exchanged_auth_credential` under its `credential_key` for the
        context's user.

        Args:
            auth_config: the credential (`exchanged_auth_credential`) and its key.
            callback_context: the context asking (its app, user, state).
        """


async def load_fresh_credential(
    service: BaseCredentialService, config: AuthConfig, context: CallbackContext | Context
) -> AuthCredential | None:
    """What `service` keeps for `config`, its OAuth2 token refreshed (and kept back in
    `service`) when it has expired, as the reference's credential manager hands a tool
    its credential; None when none is kept, or the expired token could not be refreshed
    (the user is then asked again).

    Raises:
        ValueError: an expired token's scheme names no token endpoint.
    """
    credential = await service.load_credential(config, context)
    if credential is None or not needs_refresh(config, credential):
        return credential
    fresh = await refreshed(config, credential)
    if fresh is not None:
        kept = config.model_copy(update={"exchanged_auth_credential": fresh})
        await service.save_credential(kept, context)
    return fresh


async def save_to_service(
    service: BaseCredentialService | None, auth_config: object, context: CallbackContext | Context
) -> None:
    """A context's `save_credential`: `auth_config`, checked, kept in `service`.

    Raises:
        TypeError: `auth_config` is not an AuthConfig.
        NoCredentialServiceError: there is no service (the Runner was given none).
    """
    if service is None:
        refuse_credentials("save_credential")
    await service.save_credential(checked_config(auth_config, "save_credential"), context)


async def load_from_service(
    service: BaseCredentialService | None, auth_config: object, context: CallbackContext | Context
) -> AuthCredential | None:
    """A context's `load_credential`: what `service` keeps for `auth_config`, checked, an
    expired OAuth2 token refreshed first (see `load_fresh_credential`).

    Raises:
        TypeError: `auth_config` is not an AuthConfig.
        NoCredentialServiceError: there is no service (the Runner was given none).
    """
    if service is None:
        refuse_credentials("load_credential")
    config = checked_config(auth_config, "load_credential")
    return await load_fresh_credential(service, config, context)
