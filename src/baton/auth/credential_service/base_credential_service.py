"""The credential service a Runner is given (`Runner(credential_service=...)`): a tool's
`save_credential` / `load_credential` reach it through its context."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from baton.auth.auth_credential import AuthCredential
from baton.auth.auth_tool import AuthConfig

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    # Only a type here: the contexts build on the auth package.
    from baton.callback_context import CallbackContext

__all__ = ["BaseCredentialService"]


class BaseCredentialService(ABC):
    """Keeps credentials by user and `AuthConfig.credential_key`; subclass it to keep them
    in a vault of your own."""

    @abstractmethod
    async def load_credential(
        self, auth_config: AuthConfig, callback_context: CallbackContext
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
        self, auth_config: AuthConfig, callback_context: CallbackContext
    ) -> None:
        """Keep `auth_config.exchanged_auth_credential` under its `credential_key` for the
        context's user.

        Args:
            auth_config: the credential (`exchanged_auth_credential`) and its key.
            callback_context: the context asking (its app, user, state).
        """
