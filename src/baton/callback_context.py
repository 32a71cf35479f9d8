"""CallbackContext: what an agent or model callback receives, and the base of a tool's
`ToolContext`, as in the reference (where both are one class built on ReadonlyContext).

It reads the run as a `ReadonlyContext` does and adds what a callback may change: the
state (writes are recorded in `actions.state_delta`, and land with the event the
callback shapes), artifacts and memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from itertools import chain
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from baton.artifacts import ArtifactMethods, ArtifactScope
from baton.auth.auth_credential import AuthCredential
from baton.auth.auth_tool import AuthConfig, checked_config
from baton.auth.credential_service.base_credential_service import (
    load_from_service,
    save_to_service,
)
from baton.auth.token_requests import fresh_stored_credential
from baton.context import InvocationContext
from baton.events import EventActions, RouteValue, to_json_value
from baton.memory import MemoryMethods, MemoryScope, no_memory
from baton.readonly_context import (
    ReadonlyContext,
    refuse_confirmation,
    refuse_credential_request,
)
from baton.sessions.store import Session, StatePrefixes, UndeletableKeys
from baton.types import Content
from baton.ui_widget import UiWidget, add_ui_widget

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    # Only types here: baton.tools builds on this module, baton.workflow on baton.tools.
    from baton.context import Context
    from baton.tools.confirmation import ToolConfirmation
    from baton.workflow.nodes import Node

__all__ = ["CallbackContext", "ToolState"]


class ToolState(UndeletableKeys, StatePrefixes, MutableMapping[str, JsonValue]):
    """Session state as a tool or callback sees it: the state it was given, overlaid with
    its writes.

    Writes go to `delta` (and never to the mapping it was given).

    Args:
        base: the state before the call (read, never written).
        delta: where writes are recorded (shared with the context's EventActions).
        shared: the latest writes of the calls this one runs at once with, its own
            included: read first, and written too (see `ToolContext`).
    """

    def __init__(
        self,
        base: Mapping[str, JsonValue],
        delta: dict[str, JsonValue],
        *,
        shared: MutableMapping[str, JsonValue] | None = None,
    ) -> None:
        self._base = base
        self._delta = delta
        self._written: MutableMapping[str, JsonValue] = delta if shared is None else shared

    def __getitem__(self, key: str) -> JsonValue:
        if key in self._written:
            return self._written[key]
        if key in self._delta:
            return self._delta[key]
        return self._base[key]

    def __setitem__(self, key: str, value: JsonValue) -> None:
        converted = to_json_value(value, what=f"state value '{key}'")
        self._delta[key] = converted
        self._written[key] = converted

    def __iter__(self) -> Iterator[str]:
        yield from self._written
        yield from (key for key in self._delta if key not in self._written)
        yield from (
            key for key in self._base if key not in self._written and key not in self._delta
        )

    def __len__(self) -> int:
        return len(self._base.keys() | self._delta.keys() | self._written.keys())

    def __contains__(self, key: object) -> bool:
        return key in self._written or key in self._delta or key in self._base

    def every_value(self) -> Iterator[JsonValue]:
        """Every value it holds, those its writes replaced too (quicker than `values()`,
        for a scan that may over-match)."""
        return chain(self._written.values(), self._delta.values(), self._base.values())

    def has_delta(self) -> bool:
        """Whether the call (or callback) wrote any key."""
        return bool(self._delta)

    def to_dict(self) -> dict[str, JsonValue]:
        """A plain copy of what this view shows, as the reference's `State.to_dict()`."""
        return {key: self[key] for key in self}


class CallbackContext(ReadonlyContext, ArtifactMethods, MemoryMethods):
    """What an agent or model callback sees: the run (as `ReadonlyContext`), the state
    (writes are recorded), artifacts and memory.

    Args:
        state: the session state before the callback (read, never written).
        agent_name: the agent the callback belongs to.
        invocation_context: the invocation. Without one (a context made by hand, as a
            test does), `invocation_id`, `user_id`, `user_content`, `app_name` and
            `session_id` stand for it, and `session` / `invocation_context` raise.
        artifacts: the artifacts the callback reaches (none by default: its artifact
            methods then say how to set an artifact service).
        memory: the user's memory (none by default, likewise).
        actions: the actions the callback's event will carry (a fresh one by default).
        shared_writes: see `ToolState`'s `shared`.
    """

    # An agent or model callback answers no function call (a `ToolContext` does).
    function_call_id: str | None = None
    tool_confirmation: ToolConfirmation | None = None
    # A node run's fields, as the reference's tool and callback contexts (its node
    # `Context` itself) have them: code written for a node's ctx reads them here too, and
    # finds no node run of the context's own (the agent's run is its node's).
    output: Any = None
    route: RouteValue | list[RouteValue] | None = None
    isolation_scope: str | None = None

    @property
    def node(self) -> Node | None:
        """None: a callback or a tool call is no node run (see `node_path`)."""
        return None

    @property
    def parent_ctx(self) -> Context | None:
        """None, as in the reference: a callback or a tool call runs inside no node run
        of its own."""
        return None

    @property
    def resume_inputs(self) -> dict[str, Any]:
        """Empty: a tool's answers come as its `tool_confirmation` or its credentials."""
        return {}

    @property
    def interrupt_ids(self) -> set[str]:
        """Empty: a tool call asks through `request_confirmation` / `request_credential`."""
        return set()

    @property
    def error(self) -> BaseException | None:
        """None: only a `NodeRunner`'s context of a failed child run has one."""
        return None

    @property
    def error_node_path(self) -> str:
        """Empty: see `error`."""
        return ""

    def __init__(
        self,
        *,
        state: Mapping[str, JsonValue] | None = None,
        agent_name: str = "",
        invocation_context: InvocationContext | None = None,
        artifacts: ArtifactScope | None = None,
        memory: MemoryScope | None = None,
        actions: EventActions | None = None,
        shared_writes: MutableMapping[str, JsonValue] | None = None,
        invocation_id: str = "",
        user_id: str = "",
        user_content: Content | None = None,
        app_name: str = "",
        session_id: str = "",
    ) -> None:
        if invocation_context is None:
            invocation_context = _stand_in(invocation_id, app_name, user_id, session_id)
            invocation_context.user_content = user_content
            self._made_by_hand = True
        super().__init__(invocation_context, agent_name=agent_name)
        self.actions = actions if actions is not None else EventActions()
        self._state = ToolState(
            state if state is not None else {}, self.actions.state_delta, shared=shared_writes
        )
        self._artifact_scope = artifacts or ArtifactScope(
            None, app_name="", user_id="", session_id="", saver=""
        )
        self._artifact_scope.delta = self.actions.artifact_delta
        self._memory_scope = memory or no_memory()

    @property
    def state(self) -> ToolState:
        """The session state: read it, write it (writes become `state_delta`)."""
        return self._state

    @property
    def state_delta(self) -> dict[str, JsonValue]:
        """A copy of the state written so far."""
        return dict(self.actions.state_delta)

    @property
    def custom_metadata(self) -> dict[str, Any]:
        """The call's `RunConfig.custom_metadata`: one dict per call of `run_async`, shared
        by the run's contexts; writes stay in memory."""
        return self._invocation_context.custom_metadata

    @property
    def branch(self) -> str | None:
        """The conversation branch of the run."""
        return self.invocation_context.branch

    @property
    def node_path(self) -> str:
        """The path of the node run executing the agent ("" outside one)."""
        run = self._invocation_context.node_run
        return run.node_path if run is not None else ""

    @property
    def run_id(self) -> str:
        """The run id of the node run executing the agent ("" outside one)."""
        run = self._invocation_context.node_run
        return run.run_id if run is not None else ""

    @property
    def attempt_count(self) -> int:
        """Which attempt of the node run executing the agent this is (1 for the first)."""
        run = self._invocation_context.node_run
        return run.attempt_count if run is not None else 1

    @property
    def event_author(self) -> str:
        """Always "": the agent signs its events with its own name."""
        return ""

    def get_invocation_context(self) -> InvocationContext:
        """The invocation as the agent sees it (`invocation_context`).

        Raises:
            ValueError: the context was made by hand, outside a run.
        """
        return self.invocation_context

    def request_confirmation(self, *, hint: str | None = None, payload: JsonValue = None) -> None:
        """Ask a person to confirm the function call this context belongs to; only a
        `ToolContext` belongs to one.

        Raises:
            ValueError: this context belongs to no function call.
        """
        refuse_confirmation(type(self).__name__)

    def render_ui_widget(self, ui_widget: UiWidget) -> None:
        """Show `ui_widget` beside the event this context's work lands in: a tool's
        response, the model turn of a model callback, an agent callback's event.

        Raises:
            TypeError: `ui_widget` is not a UiWidget.
            ValueError: a widget with its id was already rendered for that event.
        """
        actions = self.actions
        widgets = actions.render_ui_widgets if actions.render_ui_widgets is not None else []
        call = self.function_call_id
        where = f"tool call '{call}'" if call else "a callback"
        add_ui_widget(widgets, ui_widget, where=f"{where} of agent '{self.agent_name}'")
        actions.render_ui_widgets = widgets

    @property
    def memory_scope(self) -> MemoryScope:
        """The user's memory."""
        return self._memory_scope

    @property
    def artifact_scope(self) -> ArtifactScope:
        """The artifacts the context reaches (its session's and its user's)."""
        return self._artifact_scope

    async def save_credential(self, auth_config: AuthConfig) -> None:
        """Keep `auth_config.exchanged_auth_credential` in the Runner's credential service,
        under `auth_config.credential_key`, for this user.

        Raises:
            NoCredentialServiceError: the Runner has no credential service.
        """
        service = self._invocation_context.credential_service
        await save_to_service(service, auth_config, self)

    async def load_credential(self, auth_config: AuthConfig) -> AuthCredential | None:
        """The credential the Runner's credential service keeps under
        `auth_config.credential_key` for this user, or None; an OAuth2 token that has
        expired is refreshed first (see `load_fresh_credential`).

        Raises:
            NoCredentialServiceError: the Runner has no credential service.
        """
        service = self._invocation_context.credential_service
        return await load_from_service(service, auth_config, self)

    def get_auth_response(self, auth_config: AuthConfig) -> AuthCredential | None:
        """The credential a user gave for `auth_config`, as the session state holds it
        (`temp:<credential_key>` or `<credential_key>`), or None. An OAuth2 token that
        has expired is refreshed with its refresh token and kept back in the state (None
        when it cannot be: ask again). A tool's context also has the answer to its own
        `request_credential`.

        Raises:
            TypeError: `auth_config` is not an AuthConfig.
            ValueError: an expired token's scheme names no token endpoint.
        """
        config = checked_config(auth_config, "get_auth_response")
        return fresh_stored_credential(config, self.state)

    def request_credential(self, auth_config: AuthConfig) -> None:
        """Ask the user for a credential for the function call this context belongs to;
        only a `ToolContext` belongs to one.

        Raises:
            ValueError: this context belongs to no function call.
        """
        refuse_credential_request(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(agent_name={self.agent_name!r})"


def _stand_in(
    invocation_id: str, app_name: str, user_id: str, session_id: str
) -> InvocationContext:
    """The invocation a context made by hand reads its ids from."""
    session = Session(id=session_id, app_name=app_name, user_id=user_id)
    return InvocationContext(invocation_id=invocation_id, session=session)
