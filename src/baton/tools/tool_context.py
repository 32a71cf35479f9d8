"""ToolContext: what a tool sees when the model calls it.

A `CallbackContext` (so a `ReadonlyContext` too, as in the reference) with the call's
id, its confirmation and the lock its turn's sync tools share. The agent layer builds
one per function call; nothing here depends on the engine. State writes land in
`actions.state_delta`, so the event carrying the tool's response carries its state
changes too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, MutableMapping
from typing import final

from pydantic import JsonValue

from baton.artifacts import ArtifactScope, BaseArtifactService
from baton.auth.auth_credential import AuthCredential
from baton.auth.auth_flow import auth_request, is_exchangeable, with_client
from baton.auth.auth_tool import AuthConfig, checked_config
from baton.auth.token_requests import (
    exchanged_now,
    holds_expired_token,
    needs_refresh,
    refreshed_now,
)
from baton.callback_context import CallbackContext, ToolState
from baton.context import InvocationContext
from baton.events import EventActions, to_json_value
from baton.memory import MemoryScope
from baton.readonly_context import refuse_confirmation, refuse_credential_request
from baton.tools.confirmation import ToolConfirmation
from baton.types import Content

__all__ = ["ToolContext", "ToolState"]


@final
class ToolContext(CallbackContext):
    """The context of one tool call.

    Args:
        state: the session state before the call (not modified; writes are recorded
            in `state_delta`).
        function_call_id: the id of the model's function call being answered.
        invocation_id: the invocation the call belongs to (read from
            `invocation_context` when one is given).
        agent_name: the agent whose model made the call.
        idempotency_key: a key that stays the same when this call runs again after a
            crash (default: "<invocation_id>:<function_call_id>"); use it to
            deduplicate side effects such as payments.
        actions: the actions the tool's response event will carry (a fresh one by default).
        tool_confirmation: the person's answer, when this call waited for confirmation.
        artifact_service: the Runner's artifact service, for `save_artifact` and its
            siblings (saves are keyed by `idempotency_key`, so a call run again after a
            crash saves onto the versions it saved before).
        app_name: the app, for artifacts.
        user_id: the user, for artifacts.
        session_id: the session, for artifacts.
        memory: the user's memory (the Runner's memory service), for `search_memory`.
        user_content: a context made by hand: the message that started the invocation.
        shared_writes: the state written by the calls of the same model turn, which run
            at once: the call reads their writes as they are made, and writes there too
            (as the reference's calls of one turn share the session's state).
        sync_tools: held by a sync (`def`) tool of the same model turn while it runs:
            the turn's sync tools run one after another (in the turn's order), as the
            reference runs them on its event loop, so one's read-modify-write of the
            state never interleaves with another's; async tools run at once.
        invocation_context: the invocation (ids, `session`, `branch`, `run_config` read
            it); without one, see `CallbackContext`.
        auth_responses: the credentials the user gave in answer to this call's
            `request_credential`, by credential key (checked when they were answered).
    """

    def __init__(
        self,
        *,
        state: Mapping[str, JsonValue] | None = None,
        function_call_id: str | None = None,
        invocation_id: str = "",
        agent_name: str = "",
        idempotency_key: str | None = None,
        actions: EventActions | None = None,
        tool_confirmation: ToolConfirmation | None = None,
        artifact_service: BaseArtifactService | None = None,
        app_name: str = "",
        user_id: str = "",
        session_id: str = "",
        memory: MemoryScope | None = None,
        user_content: Content | None = None,
        shared_writes: MutableMapping[str, JsonValue] | None = None,
        sync_tools: asyncio.Lock | None = None,
        invocation_context: InvocationContext | None = None,
        auth_responses: Mapping[str, JsonValue] | None = None,
    ) -> None:
        if invocation_context is not None:
            invocation_id = invocation_context.invocation_id
        idempotency_key = idempotency_key or f"{invocation_id}:{function_call_id or ''}"
        actions = actions if actions is not None else EventActions()
        super().__init__(
            state=state,
            agent_name=agent_name,
            invocation_context=invocation_context,
            artifacts=ArtifactScope(
                artifact_service,
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                saver=idempotency_key,
                delta=actions.artifact_delta,
            ),
            memory=memory,
            actions=actions,
            shared_writes=shared_writes,
            invocation_id=invocation_id,
            user_id=user_id,
            user_content=user_content,
            app_name=app_name,
            session_id=session_id,
        )
        self.function_call_id = function_call_id
        self.idempotency_key = idempotency_key
        self.tool_confirmation = tool_confirmation
        self._sync_tools = sync_tools
        self._auth_responses = dict(auth_responses or {})
        self._exchanged: dict[str, AuthCredential] = {}

    @property
    def sync_tools(self) -> asyncio.Lock | None:
        """The lock the sync tools of this call's model turn take in turn, if any."""
        return self._sync_tools

    def request_confirmation(self, *, hint: str | None = None, payload: JsonValue = None) -> None:
        """Ask a person to confirm this call before its result counts.

        The call's result is not sent to the model; the run pauses with an
        `adk_request_confirmation` call, and once answered the tool runs again with
        `tool_context.tool_confirmation` set (`confirmed`, and the answer's `payload`).

        Args:
            hint: what the person is asked, shown with the call's arguments.
            payload: data the person may fill in or check (returned in the answer).

        Raises:
            ValueError: this context belongs to no function call.
        """
        if not self.function_call_id:
            refuse_confirmation(type(self).__name__)
        asked = ToolConfirmation(hint=hint or "", payload=to_json_value(payload, what="payload"))
        requested = dict(self.actions.requested_tool_confirmations or {})
        requested[self.function_call_id] = asked.to_json()
        self.actions.requested_tool_confirmations = requested

    def request_credential(self, auth_config: AuthConfig) -> None:
        """Ask the user for the credential `auth_config` describes before this call's
        result counts.

        The call's result is not sent to the model; the run pauses with an
        `adk_request_credential` call (args `functionCallId` and `authConfig`: for an
        OAuth2 client, a sign-in link in `exchangedAuthCredential.oauth2.authUri`; none
        of the agent's secrets). Once answered, the tool runs again and
        `get_auth_response(auth_config)` returns the credential.

        Raises:
            TypeError: `auth_config` is not an AuthConfig.
            ValueError: this context belongs to no function call, or an OAuth2 config
                has no client or names no authorization endpoint.
        """
        if not self.function_call_id:
            refuse_credential_request(type(self).__name__)
        request = auth_request(checked_config(auth_config, "request_credential"))
        asked = request.model_dump(mode="json", by_alias=True, exclude_none=True)
        requested = dict(self.actions.requested_auth_configs)
        requested[self.function_call_id] = to_json_value(asked, what="auth_config")
        self.actions.requested_auth_configs = requested

    def get_auth_response(self, auth_config: AuthConfig) -> AuthCredential | None:
        """The credential the user gave for `auth_config` in answer to this call's
        `request_credential` (else what the session state holds, see
        `CallbackContext.get_auth_response`), or None: then ask with
        `request_credential`.

        An OAuth2 sign-in's answer (`auth_response_uri` or `auth_code`) is exchanged for
        a token at the scheme's token endpoint here, with the client id and secret of
        `auth_config` (once per call), and an OAuth2 token that has expired is refreshed
        with its refresh token (None when it cannot be: ask again). The request never
        holds the event loop: an async tool's call waits for it on the loop (see
        `baton.loop_waits`), a sync tool's in its worker thread.

        Raises:
            TypeError: `auth_config` is not an AuthConfig.
            ConnectionError: the token endpoint could not be reached or refused the code.
            ValueError: the scheme names no token endpoint.
        """
        key = checked_config(auth_config, "get_auth_response").credential_key or ""
        if key in self._exchanged:
            return self._exchanged[key].model_copy(deep=True)
        answer = self._auth_responses.get(key)
        if answer is None:
            return super().get_auth_response(auth_config)
        credential = with_client(auth_config, AuthCredential.model_validate(answer))
        if is_exchangeable(auth_config, credential):
            credential = exchanged_now(auth_config, credential)
        elif needs_refresh(auth_config, credential):
            fresh = refreshed_now(auth_config, credential)
            if fresh is None:
                return None
            credential = fresh
        self._exchanged[key] = credential
        return credential.model_copy(deep=True)

    @property
    def may_request_tokens(self) -> bool:
        """Whether `get_auth_response` may ask a token endpoint: the user answered a
        credential request of this call, or the state holds an expired OAuth2 token."""
        return bool(self._auth_responses) or holds_expired_token(self.state.every_value())

    def __repr__(self) -> str:
        return (
            f"ToolContext(agent_name={self.agent_name!r}, invocation_id={self.invocation_id!r}, "
            f"function_call_id={self.function_call_id!r})"
        )
