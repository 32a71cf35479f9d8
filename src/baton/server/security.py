"""Optional API keys, and the rule that a request acts for exactly one user.

A key is either `SECRET` (may act for any user: an operator's key) or
`USER:SECRET` (may act only for USER). Keys come from `--api-key` and from the
`BATON_API_KEY` environment variable (comma-separated). With no keys the server
is open, as the reference server is; user scoping by path still applies.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import final

from fastapi import HTTPException
from starlette.requests import HTTPConnection

__all__ = ["ANY_USER", "MISSING_KEY", "ApiKeys", "other_user"]

ANY_USER = "*"

MISSING_KEY = (
    "missing or unknown API key; send it as `Authorization: Bearer <key>` or `X-API-Key: <key>`."
)


@final
@dataclass(frozen=True)
class ApiKeys:
    """Secret -> the user it may act for (ANY_USER for an operator's key)."""

    users_by_secret: dict[str, str] = field(default_factory=dict[str, str])

    @classmethod
    def parse(cls, specs: Iterable[str]) -> ApiKeys:
        """Keys from `SECRET` / `USER:SECRET` specs."""
        keys: dict[str, str] = {}
        for spec in specs:
            user, sep, secret = spec.partition(":")
            keys[secret if sep else user] = user if sep else ANY_USER
        return cls(keys)

    @property
    def enabled(self) -> bool:
        return bool(self.users_by_secret)

    def authorize(self, request: HTTPConnection, user_id: str | None) -> None:
        """Refuse the request unless it carries a key that may act for `user_id`.

        Raises:
            HTTPException: 401 without a valid key, 403 when the key is another user's.
        """
        allowed = self.caller(request)
        if allowed is None or allowed == ANY_USER or user_id is None or user_id == allowed:
            return
        raise other_user(allowed, user_id)

    def caller(self, request: HTTPConnection) -> str | None:
        """Whom the request's key acts for: a user, ANY_USER (an operator's key), or None
        when keys are off.

        Raises:
            HTTPException: 401 without a valid key.
        """
        if not self.enabled:
            return None
        allowed = self._user_for(_presented(request.headers))
        if allowed is None:
            raise HTTPException(401, MISSING_KEY)
        return allowed

    def admits(self, headers: Mapping[str, str]) -> bool:
        """Whether requests with these headers may be read: keys are off, or one is known.

        Checked before a body is read, so a caller without a key cannot make the server
        read (or parse) a large body; which user the key acts for is checked by the route.
        """
        return not self.enabled or self._user_for(_presented(headers)) is not None

    def _user_for(self, secret: str | None) -> str | None:
        if secret is None:
            return None
        for known, user in self.users_by_secret.items():
            # Constant-time comparison, so response timing does not reveal a key's prefix.
            if hmac.compare_digest(known.encode(), secret.encode()):
                return user
        return None


def other_user(allowed: str, user_id: str) -> HTTPException:
    """The 403 for a key of user `allowed` used to act for `user_id`."""
    return HTTPException(
        403,
        f"this API key acts for user '{allowed}' only, not '{user_id}'; use "
        f"/apps/{{app}}/users/{allowed}/... or a key of that user.",
    )


def _presented(headers: Mapping[str, str]) -> str | None:
    header = headers.get("x-api-key")
    if header:
        return header
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token:
        return token.strip()
    return None
