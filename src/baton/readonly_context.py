"""ReadonlyContext: the reference's read-only view of an invocation, and the base of
every context user code receives: a node run's `Context`, a callback's
`CallbackContext` and a tool's `ToolContext` (each adds what it may change), so code
annotated with `ReadonlyContext` accepts any of them, as in the reference."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NoReturn

from baton.errors import NoCredentialServiceError
from baton.run_config import RunConfig
from baton.sessions.store import Session
from baton.types import Content

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    # Only a type here: baton.context's Context is itself a ReadonlyContext.
    from baton.context import InvocationContext

__all__ = [
    "ReadonlyContext",
    "refuse_confirmation",
    "refuse_credential_request",
    "refuse_credentials",
]


class ReadonlyContext:
    """What code that must not change the run reads of it: ids, the user's message, the
    session and its state (read-only views), whether the caller aborted the run.

    Args:
        invocation_context: the invocation to read (an agent's ctx: its state then
            includes the run's writes not yet committed).
        agent_name: the agent running (default: the invocation's `agent_name`).
    """

    _invocation_context: InvocationContext
    # Class defaults, so a subclass made once per node run sets only its invocation.
    _agent_name: str | None = None
    # A context a test made by hand reads a stand-in invocation made of the ids it was
    # given, and refuses to show it (see `invocation_context`).
    _made_by_hand = False

    def __init__(
        self, invocation_context: InvocationContext, *, agent_name: str | None = None
    ) -> None:
        self._invocation_context = invocation_context
        self._agent_name = agent_name

    @property
    def invocation_context(self) -> InvocationContext:
        """The invocation this context reads.

        Raises:
            ValueError: the context was made by hand, outside a run.
        """
        if self._made_by_hand:
            raise ValueError(
                f"this {type(self).__name__} was made outside a run and has no invocation; "
                "pass invocation_context= when making it."
            )
        return self._invocation_context

    @property
    def invocation_id(self) -> str:
        """The invocation's id."""
        return self._invocation_context.invocation_id

    @property
    def user_content(self) -> Content | None:
        """The message that started the invocation."""
        return self._invocation_context.user_content

    @property
    def agent_name(self) -> str:
        """The name of the agent running ("unknown" when none is)."""
        return self._agent_name or self._invocation_context.agent_name or "unknown"

    @property
    def state(self) -> Mapping[str, Any]:
        """The session state as the run sees it, read-only."""
        return MappingProxyType(self._invocation_context.state)

    @property
    def session(self) -> Session:
        """The session the invocation runs in (as it was when the invocation loaded it)."""
        return self.invocation_context.session

    @property
    def user_id(self) -> str:
        """The user's id."""
        return self._invocation_context.user_id

    @property
    def app_name(self) -> str:
        """The app's name (a credential service keeps credentials by app and user)."""
        return self._invocation_context.app_name

    @property
    def run_config(self) -> RunConfig:
        """What the run was asked for (`run_async(run_config=...)`)."""
        return self._invocation_context.run_config

    @property
    def custom_metadata(self) -> Mapping[str, Any]:
        """The run's custom metadata (`RunConfig(custom_metadata=...)`), read-only."""
        return MappingProxyType(self._invocation_context.custom_metadata)

    @property
    def is_aborted(self) -> bool:
        """Whether the run's caller set its abort signal (`run_async(abort_signal=...)`):
        a long tool or node may check it and stop early; the run stops at its next step
        either way."""
        return self._invocation_context.is_aborted

    def get_credential(self, key: str) -> NoReturn:
        """The reference's credential resolved for a tool that declares its auth config
        (its `CredentialManager`); baton resolves none that way.

        Raises:
            NoCredentialServiceError: always; a tool asks with
                `tool_context.request_credential(auth_config)` and reads the answer with
                `get_auth_response(auth_config)`, or `load_credential(auth_config)`.
        """
        raise NoCredentialServiceError(
            f"get_credential('{key}') reads a credential the reference resolves for a tool "
            "that declares its auth config, which baton does not do; in the tool, call "
            "tool_context.get_auth_response(auth_config) (and request_credential when it "
            "returns None), or load_credential(auth_config) with a Runner credential_service."
        )


def refuse_credentials(method: str) -> NoReturn:
    """Raise the error `save_credential` / `load_credential` raise without a credential
    service."""
    raise NoCredentialServiceError(
        f"{method} needs a credential service, and the Runner was given none; pass "
        "Runner(credential_service=InMemoryCredentialService()) (or "
        "SessionStateCredentialService(), from baton.auth.credential_service)."
    )


def refuse_credential_request(context: str) -> NoReturn:
    """Raise the error `request_credential` raises outside a tool call."""
    raise ValueError(
        f"request_credential needs the function call it belongs to, and this {context} has "
        "none; call it from a tool the model called, or keep credentials with "
        "save_credential / load_credential."
    )


def refuse_confirmation(context: str) -> NoReturn:
    """Raise the error `request_confirmation` raises outside a tool call."""
    raise ValueError(
        f"request_confirmation needs the function call it belongs to, and this {context} "
        "has none; call it from a tool the model called (its tool_context has a "
        "function_call_id)."
    )
