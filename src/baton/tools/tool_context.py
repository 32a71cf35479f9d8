"""ToolContext: what a tool sees when the model calls it.

The agent layer builds one per function call from plain values; nothing here
depends on the engine. State writes land in `actions.state_delta`, so the event
carrying the tool's response carries its state changes too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, MutableMapping
from typing import final

from pydantic import JsonValue

from baton.artifacts import ArtifactMethods, ArtifactScope, BaseArtifactService
from baton.context import InvocationContext
from baton.events import EventActions, to_json_value
from baton.memory import MemoryMethods, MemoryScope, no_memory
from baton.run_config import RunConfig
from baton.sessions.store import Session
from baton.tools.confirmation import ToolConfirmation
from baton.types import Content

__all__ = ["StateWriter", "ToolContext", "ToolState"]


@final
class ToolState(MutableMapping[str, JsonValue]):
    """Session state as a tool sees it: the state it was given, overlaid with its writes.

    Writes go to `delta` (and never to the mapping it was given).

    Args:
        base: the state before the call (read, never written).
        delta: where writes are recorded (shared with the tool's EventActions).
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

    def __delitem__(self, key: str) -> None:
        raise TypeError(f"state key '{key}' cannot be deleted; set it to None instead.")

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


class StateWriter:
    """State as a callback or tool sees it: reads of the state, writes into `actions`."""

    actions: EventActions
    _state: ToolState

    @property
    def state(self) -> ToolState:
        """The session state: read it, write it (writes become `state_delta`)."""
        return self._state

    @property
    def state_delta(self) -> dict[str, JsonValue]:
        """A copy of the state written so far."""
        return dict(self.actions.state_delta)


class RunReader:
    """What a callback or tool reads of the run it is called in: the invocation, its
    session, branch and run config (the reference's read-only context)."""

    _invocation_context: InvocationContext | None

    @property
    def invocation_context(self) -> InvocationContext:
        """The invocation this context belongs to.

        Raises:
            ValueError: the context was made by hand, outside a run.
        """
        if self._invocation_context is None:
            raise ValueError(
                f"this {type(self).__name__} was made outside a run and has no invocation; "
                "pass invocation_context= when making it."
            )
        return self._invocation_context

    @property
    def session(self) -> Session:
        """The session of the run (as it was when the invocation loaded it)."""
        return self.invocation_context.session

    @property
    def branch(self) -> str | None:
        """The conversation branch of the run."""
        return self.invocation_context.branch

    @property
    def run_config(self) -> RunConfig:
        """What the run was asked for (`Runner.run_async(run_config=...)`)."""
        return self.invocation_context.run_config


@final
class ToolContext(StateWriter, RunReader, ArtifactMethods, MemoryMethods):
    """The context of one tool call.

    Args:
        state: the session state before the call (not modified; writes are recorded
            in `state_delta`).
        function_call_id: the id of the model's function call being answered.
        invocation_id: the invocation the call belongs to.
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
        user_content: the message that started the invocation, if any.
        shared_writes: the state written by the calls of the same model turn, which run
            at once: the call reads their writes as they are made, and writes there too
            (as the reference's calls of one turn share the session's state).
        sync_tools: held by a sync (`def`) tool of the same model turn while it runs:
            the turn's sync tools run one after another (in the turn's order), as the
            reference runs them on its event loop, so one's read-modify-write of the
            state never interleaves with another's; async tools run at once.
        invocation_context: the invocation (`session`, `branch`, `run_config` read it).
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
    ) -> None:
        self._invocation_context = invocation_context
        self.user_id = user_id
        self.function_call_id = function_call_id
        self.invocation_id = invocation_id
        self.agent_name = agent_name
        self.idempotency_key = idempotency_key or f"{invocation_id}:{function_call_id or ''}"
        self.actions = actions if actions is not None else EventActions()
        self._state = ToolState(
            state if state is not None else {}, self.actions.state_delta, shared=shared_writes
        )
        self.tool_confirmation = tool_confirmation
        self._artifact_scope = ArtifactScope(
            artifact_service,
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            saver=self.idempotency_key,
            delta=self.actions.artifact_delta,
        )
        self._memory_scope = memory or no_memory()
        self.user_content = user_content
        self._sync_tools = sync_tools

    @property
    def sync_tools(self) -> asyncio.Lock | None:
        """The lock the sync tools of this call's model turn take in turn, if any."""
        return self._sync_tools

    @property
    def memory_scope(self) -> MemoryScope:
        """The user's memory."""
        return self._memory_scope

    @property
    def artifact_scope(self) -> ArtifactScope:
        """The call's artifacts: its session's and its user's."""
        return self._artifact_scope

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
            raise ValueError(
                "request_confirmation needs the function call it belongs to; call it from a "
                "tool the model called (its tool_context has a function_call_id)."
            )
        asked = ToolConfirmation(hint=hint or "", payload=to_json_value(payload, what="payload"))
        requested = dict(self.actions.requested_tool_confirmations or {})
        requested[self.function_call_id] = asked.to_json()
        self.actions.requested_tool_confirmations = requested

    def __repr__(self) -> str:
        return (
            f"ToolContext(agent_name={self.agent_name!r}, invocation_id={self.invocation_id!r}, "
            f"function_call_id={self.function_call_id!r})"
        )
