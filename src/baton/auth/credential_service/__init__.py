"""Where tools keep the credentials users gave them, as the reference's
`google.adk.auth.credential_service` names the services."""

from baton.auth.credential_service.base_credential_service import BaseCredentialService
from baton.auth.credential_service.in_memory_credential_service import (
    InMemoryCredentialService,
)
from baton.auth.credential_service.session_state_credential_service import (
    SessionStateCredentialService,
)

__all__ = ["BaseCredentialService", "InMemoryCredentialService", "SessionStateCredentialService"]
