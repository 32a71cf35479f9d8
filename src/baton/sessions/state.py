"""`State`: session state as a node sees it, where the reference keeps it
(`google.adk.sessions.state`); `baton.context` hands it to nodes."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

from pydantic import BaseModel, JsonValue

from baton.events import to_json_value
from baton.schemas import check_state_write
from baton.sessions.store import StatePrefixes, UndeletableKeys

__all__ = ["State"]


class State(UndeletableKeys, StatePrefixes, MutableMapping[str, Any]):
    """Session state as a node sees it: committed values overlaid with this run's writes.

    Args:
        committed: the state as stored (never written to).
        delta: writes not committed yet, as the reference's `State(value, delta)` takes
            them: shown over `committed`, and this dict receives every later write.
        schema: a pydantic model each write must fit (StateSchemaError otherwise).
        writer: who writes, for error messages.
    """

    def __init__(
        self,
        committed: dict[str, JsonValue],
        delta: dict[str, JsonValue] | None = None,
        schema: type[BaseModel] | None = None,
        *,
        writer: str = "a node",
    ) -> None:
        self._committed = committed
        self._schema = schema
        self._writer = writer
        self._writes: dict[str, JsonValue] = {} if delta is None else delta
        self._pending: dict[str, JsonValue] = {} if delta is None else dict(delta)

    def __getitem__(self, key: str) -> Any:
        if key in self._writes:
            return self._writes[key]
        return self._committed[key]

    def __setitem__(self, key: str, value: Any) -> None:
        converted = to_json_value(value, what=f"state value '{key}'")
        if self._schema is not None:
            check_state_write(self._schema, key, converted, self._writer)
        self._writes[key] = converted
        self._pending[key] = converted

    def __iter__(self) -> Iterator[str]:
        yield from self._writes
        yield from (k for k in self._committed if k not in self._writes)

    def __len__(self) -> int:
        return len(self._committed.keys() | self._writes.keys())

    def __contains__(self, key: object) -> bool:
        return key in self._writes or key in self._committed

    def check_writes_against(self, schema: type[BaseModel], writer: str) -> None:
        """Check the writes from now on against `schema` instead (an agent node's own
        state_schema takes the place of its workflow's), naming `writer` in errors."""
        self._schema = schema
        self._writer = writer

    def has_delta(self) -> bool:
        """Whether this view holds writes not yet attached to an event."""
        return bool(self._pending)

    @property
    def pending(self) -> dict[str, JsonValue]:
        """Writes not yet attached to an event (the reference's `ctx.actions.state_delta`);
        read it, write through the state."""
        return self._pending

    def changes(self, writes: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """Those of `writes` the committed state does not hold already (a None write
        changes a key that is there)."""
        committed = self._committed
        return {key: value for key, value in writes.items() if committed.get(key) != value}

    def take_pending(self) -> dict[str, JsonValue]:
        """Writes not yet attached to an event; they stay visible to the node."""
        pending, self._pending = self._pending, {}
        return pending

    def to_dict(self) -> dict[str, JsonValue]:
        """A plain copy of what this view shows."""
        return {k: self[k] for k in self}
