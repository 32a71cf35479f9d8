"""`ctx.actions` of a node run: the reference's `EventActions` as a node sees them.

What a node run may do through them it does: `state_delta` shows the run's state writes
not yet on an event and writes through to `ctx.state`; `route` is `ctx.route`;
`artifact_delta` shows the versions `ctx.save_artifact` recorded. The actions only an
agent or a tool call takes (escalating, handing over to an agent, skipping a tool
response's summary, agents' checkpoints, asking for credentials or confirmation) the
reference drops silently when a node sets them, or fails the run after its output went
out (`transfer_to_agent`); here setting one raises `NodeActionError` at once, saying
what a node does instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar, cast, final

from pydantic import JsonValue

from baton.errors import NodeActionError
from baton.events import RouteValue
from baton.sessions.state import State
from baton.sessions.store import UndeletableKeys
from baton.ui_widget import UiWidget

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    # Only a type here: baton.context hands its Context to NodeActions.
    from baton.context import Context

__all__ = ["NodeActions", "PendingStateDelta"]

_T = TypeVar("_T")

_TRANSFER = (
    "only an agent hands the conversation over to another (an LlmAgent's "
    "transfer_to_agent tool). In a workflow, route to the agent's node instead: an edge "
    "{'<route>': agent} from this node, and ctx.route = '<route>'."
)
_ARTIFACT = (
    "an artifact's version is recorded by saving it: await ctx.save_artifact(filename, part) "
    "records the version it saved here."
)
_AUTH = (
    "a credential is requested by a tool call (tool_context.request_credential("
    "auth_config)), and a node run answers no call: request it from a tool, or ask a "
    "person with RequestInput."
)
_CONFIRMATION = (
    "a confirmation is asked by a tool call (tool_context.request_confirmation); a node "
    "asks a person with RequestInput: return RequestInput(interrupt_id=..., message=...)."
)
_CHECKPOINT = (
    "agents' checkpoints are written by agents (a BaseAgent's ctx.set_agent_state or "
    "self._create_agent_state_event); the engine checkpoints a node run with each step."
)


@final
class PendingStateDelta(UndeletableKeys, MutableMapping[str, Any]):
    """The run's state writes not yet on an event (`ctx.actions.state_delta`), as they
    stand when read: a write through it is a write to `ctx.state` (made JSON, checked
    against the state schema, seen by the run's next reads)."""

    __slots__ = ("_state",)

    def __init__(self, state: State) -> None:
        self._state = state

    def __getitem__(self, key: str) -> JsonValue:
        return self._state.pending[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._state[key] = value

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._state.pending))

    def __len__(self) -> int:
        return len(self._state.pending)

    def __repr__(self) -> str:
        return repr(self._state.pending)


@final
class _ReadOnlyView(Mapping[str, _T]):
    """A mapping a node run reads through `ctx.actions` but cannot write: a write raises
    `NodeActionError` with `advice`."""

    __slots__ = ("_advice", "_name", "_path", "_read")

    def __init__(
        self, read: Callable[[], Mapping[str, _T]], name: str, path: str, advice: str
    ) -> None:
        self._read, self._name, self._path, self._advice = read, name, path, advice

    def __getitem__(self, key: str) -> _T:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._read()))

    def __len__(self) -> int:
        return len(self._read())

    def __setitem__(self, key: str, value: object) -> NoReturn:
        _refuse(self._path, f"{self._name}[{key!r}]", value, self._advice)

    def __repr__(self) -> str:
        return repr(dict(self._read()))


class _Refused(Generic[_T]):
    """An action a node run cannot take: it reads as not taken, and setting it (to
    anything but its default, which asks for nothing) raises `NodeActionError`."""

    def __init__(self, advice: str) -> None:
        self._advice = advice
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, actions: object, owner: type | None = None) -> _T | None:
        return None

    def __set__(self, actions: NodeActions, value: _T | None) -> None:
        if value is None or value is False:
            return
        _refuse(actions.node_path, self._name, value, self._advice)


def _refuse(path: str, field: str, value: object, advice: str) -> NoReturn:
    raise NodeActionError(
        f"node run '{path}' set ctx.actions.{field} = {value!r}, which a node cannot do: "
        f"{advice}"
    )


_EMPTY: Mapping[str, Any] = {}


def _nothing() -> Mapping[str, Any]:
    return _EMPTY


@final
class NodeActions:
    """A node run's `ctx.actions`: what its next event will carry (see the module doc).

    Raises:
        NodeActionError: an action only an agent or a tool takes was set, or an
            artifact version or a request written by hand.
    """

    __slots__ = ("_ctx",)

    escalate = _Refused[bool](
        "escalation ends a LoopAgent from one of its sub-agents, and a workflow node is "
        "not one. To leave a loop in a workflow, route out of it: set ctx.route (or return "
        "Event(route=...)) to a route whose edge leaves the loop; to end a LoopAgent, "
        "escalate from its sub-agent (tool_context.actions.escalate, or the exit_loop tool)."
    )
    skip_summarization = _Refused[bool](
        "it tells an agent not to summarize a tool's response, and a node run is not a tool "
        "call: set it on tool_context.actions in a tool. A node's output reaches the nodes "
        "after it as it is."
    )
    transfer_to_agent = _Refused[str](_TRANSFER)
    transfer_reason = _Refused[str](_TRANSFER)
    end_of_agent = _Refused[bool](_CHECKPOINT)
    agent_state = _Refused[dict[str, JsonValue]](_CHECKPOINT)
    rewind_before_invocation_id = _Refused[str](
        "rewind an invocation with Runner.rewind_async(user_id=..., session_id=..., "
        "rewind_before_invocation_id=...)."
    )
    compaction = _Refused[object]("the runtime compacts events, not a node.")
    set_model_response = _Refused[object](
        "it marks a model's structured response, which only an LlmAgent gives."
    )

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    @property
    def node_path(self) -> str:
        """The path of the node run these actions belong to."""
        return self._ctx.node_path

    @property
    def state_delta(self) -> PendingStateDelta:
        """The run's state writes not yet on an event; writes go to `ctx.state`."""
        return PendingStateDelta(self._ctx.state)

    @state_delta.setter
    def state_delta(self, delta: object) -> None:
        # The reference swaps the dict, losing the run's earlier writes and any later
        # `ctx.state` write; here each key is written, and nothing is lost.
        if not isinstance(delta, Mapping):
            raise TypeError(
                f"ctx.actions.state_delta of node run '{self.node_path}' takes a mapping of "
                f"state keys to values, got {type(delta).__name__}."
            )
        state = self._ctx.state
        for key, value in cast(Mapping[object, Any], delta).items():
            state[str(key)] = value

    @property
    def artifact_delta(self) -> Mapping[str, int]:
        """Versions `ctx.save_artifact` saved since the run's last event, by file name."""
        ctx = self._ctx
        return _ReadOnlyView(ctx.pending_artifact_delta, "artifact_delta", ctx.node_path, _ARTIFACT)

    @artifact_delta.setter
    def artifact_delta(self, delta: object) -> None:
        _refuse(self.node_path, "artifact_delta", delta, _ARTIFACT)

    @property
    def requested_auth_configs(self) -> Mapping[str, Any]:
        """Empty: a node run asks for no credential (refused when written)."""
        return _ReadOnlyView(_nothing, "requested_auth_configs", self.node_path, _AUTH)

    @requested_auth_configs.setter
    def requested_auth_configs(self, requests: object) -> None:
        _refuse(self.node_path, "requested_auth_configs", requests, _AUTH)

    @property
    def requested_tool_confirmations(self) -> Mapping[str, Any]:
        """Empty: a node run asks for no tool confirmation (refused when written)."""
        return _ReadOnlyView(
            _nothing, "requested_tool_confirmations", self.node_path, _CONFIRMATION
        )

    @requested_tool_confirmations.setter
    def requested_tool_confirmations(self, requests: object) -> None:
        _refuse(self.node_path, "requested_tool_confirmations", requests, _CONFIRMATION)

    @property
    def route(self) -> RouteValue | list[RouteValue] | None:
        """The run's route (`ctx.route`): setting it routes, as `ctx.route = ...` does."""
        return self._ctx.route

    @route.setter
    def route(self, value: RouteValue | list[RouteValue]) -> None:
        self._ctx.route = value

    @property
    def render_ui_widgets(self) -> tuple[UiWidget, ...] | None:
        """Widgets rendered since the run's last event (`ctx.render_ui_widget` adds one)."""
        return self._ctx.pending_ui_widgets or None

    @render_ui_widgets.setter
    def render_ui_widgets(self, widgets: object) -> None:
        _refuse(
            self.node_path,
            "render_ui_widgets",
            widgets,
            "render each widget with ctx.render_ui_widget(widget); it goes on the run's next "
            "event.",
        )

    def __repr__(self) -> str:
        return (
            f"NodeActions(node_path={self.node_path!r}, state_delta={self.state_delta!r}, "
            f"artifact_delta={self.artifact_delta!r}, route={self.route!r})"
        )
