"""BaseAgentState: what an agent checkpoints so a resumed run continues where it stopped.

A state is a pydantic model stored as JSON in `EventActions.agent_state`. A field
written without an annotation but with a type as its value (`step = WorkflowStep`,
as the reference's resume guide writes it) is read as `step: WorkflowStep`.
"""

from __future__ import annotations

import contextlib
import enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, JsonValue

__all__ = [
    "BaseAgentState",
    "LoopAgentState",
    "ParallelAgentState",
    "SequentialAgentState",
    "parse_agent_state",
]

_ModelMeta = type(BaseModel)


class _AgentStateMeta(_ModelMeta):
    """Reads `name = SomeType` in a state class body as the field `name: SomeType`."""

    def __new__(
        mcs,
        cls_name: str,
        bases: tuple[type, ...],
        namespace: dict[str, Any],
        **kwargs: Any,
    ) -> type:
        annotations: dict[str, Any] = dict(namespace.get("__annotations__", {}))
        qualname = str(namespace.get("__qualname__", cls_name))
        for key, value in list(namespace.items()):
            if key.startswith("_") or key in annotations or not isinstance(value, type):
                continue
            if getattr(value, "__qualname__", "").startswith(f"{qualname}."):
                continue  # a class defined inside the body is a nested class, not a field
            annotations[key] = value
            del namespace[key]
        namespace["__annotations__"] = annotations
        return super().__new__(mcs, cls_name, bases, namespace, **kwargs)


class BaseAgentState(BaseModel, metaclass=_AgentStateMeta):
    """Base class of an agent's checkpoint: subclass it with the fields your agent needs.

    Yield `self._create_agent_state_event(ctx, state)` after each step your agent
    must not redo, and read the last one back with `self._load_agent_state(ctx, StateCls)`.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)  # see WireModel


class SequentialAgentState(BaseAgentState):
    """A SequentialAgent's checkpoint: the sub-agent it is running."""

    current_sub_agent: str = ""


class LoopAgentState(BaseAgentState):
    """A LoopAgent's checkpoint: the sub-agent it is running and the finished iterations."""

    current_sub_agent: str = ""
    times_looped: int = 0


class ParallelAgentState(BaseAgentState):
    """A ParallelAgent's checkpoint: that it started (finished branches are tracked as ended)."""


class _LooseAgentState(BaseAgentState):
    """A checkpoint read without its class: every stored key becomes an attribute."""

    model_config = ConfigDict(extra="allow")

    if TYPE_CHECKING:  # pragma: no cover - for type checkers only

        def __getattr__(self, name: str) -> Any: ...


def parse_agent_state(data: dict[str, JsonValue], state_type: type) -> BaseAgentState:
    """Rebuild a stored checkpoint as `state_type`.

    When `state_type` is not a BaseAgentState class (the reference's resume guide
    passes its step enum), the result is a permissive state whose values are
    converted to `state_type` where they are members of that enum.

    Args:
        data: the stored `agent_state`.
        state_type: a BaseAgentState subclass, or the enum its values come from.

    Returns:
        The state.
    """
    if issubclass(state_type, BaseAgentState):
        return state_type.model_validate(data)
    converted: dict[str, JsonValue | enum.Enum] = dict(data)
    if issubclass(state_type, enum.Enum):
        members: type[enum.Enum] = state_type
        for key, value in data.items():
            with contextlib.suppress(ValueError):
                converted[key] = members(value)
    return _LooseAgentState(**converted)
