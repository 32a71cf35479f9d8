"""Credentials kept in the process, by app, user and credential key (gone when it ends)."""

from __future__ import annotations

from typing import TYPE_CHECKING, final

from baton.auth.auth_credential import AuthCredential
from baton.auth.auth_tool import AuthConfig
from baton.auth.credential_service.base_credential_service import BaseCredentialService

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from baton.callback_context import CallbackContext
    from baton.context import Context

__all__ = ["InMemoryCredentialService"]


@final
class InMemoryCredentialService(BaseCredentialService):
    """Credentials in a dict of this process: for tests and single-process apps."""

    def __init__(self) -> None:
        self._credentials: dict[tuple[str, str, str | None], AuthCredential | None] = {}

    async def load_credential(
        self, auth_config: AuthConfig, callback_context: CallbackContext | Context
    ) -> AuthCredential | None:
        found = self._credentials.get(_key(auth_config, callback_context))
        return None if found is None else found.model_copy(deep=True)

    async def save_credential(
        self, auth_config: AuthConfig, callback_context: CallbackContext | Context
    ) -> None:
        credential = auth_config.exchanged_auth_credential
        kept = None if credential is None else credential.model_copy(deep=True)
        self._credentials[_key(auth_config, callback_context)] = kept


def _key(
    auth_config: AuthConfig, context: CallbackContext | Context
) -> tuple[str, str, str | None]:
    return (context.app_name, context.user_id, auth_config.credential_key)
