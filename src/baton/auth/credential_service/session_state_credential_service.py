"""Credentials kept in the session's state under their credential key: durable with the
session, on every backend, and readable by whoever reads the session's state (the
agent's OAuth2 client secret is left out, and put back from the AuthConfig on load)."""

from __future__ import annotations

from typing import TYPE_CHECKING, final

from pydantic import ValidationError

from baton.auth.auth_credential import AuthCredential
from baton.auth.auth_tool import AuthConfig
from baton.auth.credential_service.base_credential_service import BaseCredentialService

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from baton.callback_context import CallbackContext
    from baton.context import Context

__all__ = ["SessionStateCredentialService"]


@final
class SessionStateCredentialService(BaseCredentialService):
    """Credentials in session state (`state[credential_key]`), saved with the step that
    saves them."""

    async def load_credential(
        self, auth_config: AuthConfig, callback_context: CallbackContext | Context
    ) -> AuthCredential | None:
        stored = callback_context.state.get(auth_config.credential_key or "")
        if not isinstance(stored, dict):
            return None  # nothing, or not what save_credential wrote
        try:
            credential = AuthCredential.model_validate(stored)
        except ValidationError:
            return None
        raw = auth_config.raw_auth_credential
        secret = raw.oauth2.client_secret if raw and raw.oauth2 else None
        if credential.oauth2 is not None and secret and not credential.oauth2.client_secret:
            credential.oauth2.client_secret = secret
        return credential

    async def save_credential(
        self, auth_config: AuthConfig, callback_context: CallbackContext | Context
    ) -> None:
        credential = auth_config.exchanged_auth_credential
        if credential is None:
            callback_context.state[auth_config.credential_key or ""] = None
            return
        kept = credential.model_copy(deep=True)
        if kept.oauth2 is not None:
            kept.oauth2.client_secret = None
        callback_context.state[auth_config.credential_key or ""] = kept.model_dump(
            mode="json", exclude_none=True
        )
