"""CallState: the session state as an agent called as a tool (`AgentTool`) sees it.

The reference runs such an agent in a session of its own, made from a copy of its
caller's state without the keys starting with `_adk`, and copies the agent's writes,
but `temp:` ones, back to its caller: the agent reads none of its caller's `temp:` keys
(they live in the caller's invocation) nor its `_adk` ones, and its `temp:` writes end
with the call. baton runs the agent in its caller's node run (so its events commit as
they come); this view gives it the same sight. Its other writes go to the caller's
state as they are made, committed with the agent's events.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, final

from pydantic import JsonValue

from baton.context import State
from baton.events import to_json_value

__all__ = ["CallState"]

_HIDDEN_PREFIXES = ("temp:", "_adk")


@final
class CallState(State):
    """The state an agent called as a tool reads and writes, over its caller's.

    Args:
        caller: the state of the caller (the run's, or an enclosing call's view).
        written: keys the call wrote before (it resumes): its `_adk` ones show.
    """

    def __init__(self, caller: State, *, written: Iterable[str] = ()) -> None:
        super().__init__({})
        self._caller = caller
        self._temp: dict[str, JsonValue] = {}  # the call's own `temp:` keys
        self._written = set(written)  # keys the call wrote (its `_adk` ones show)

    def _sees(self, key: str) -> bool:
        """Whether the caller's value of `key` shows through."""
        return not key.startswith(_HIDDEN_PREFIXES) or key in self._written

    def __getitem__(self, key: str) -> Any:
        if key in self._temp:
            return self._temp[key]
        if not self._sees(key):
            raise KeyError(key)
        return self._caller[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if key.startswith("temp:"):
            self._temp[key] = to_json_value(value, what=f"state value '{key}'")
            return
        self._caller[key] = value
        self._written.add(key)

    def __iter__(self) -> Iterator[str]:
        yield from self._temp
        yield from (k for k in self._caller if k not in self._temp and self._sees(k))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        return key in self._temp or (self._sees(key) and key in self._caller)

    def record_writes(self, delta: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """Note `delta` (an event's of the call, made by its tools and callbacks) as the
        call's writes, which it reads back; returned without its `temp:` keys, which this
        view keeps: they end with the call."""
        self._written.update(delta)
        kept = {k: v for k, v in delta.items() if k.startswith("temp:")}
        if not kept:
            return delta
        self._temp.update(kept)
        return {k: v for k, v in delta.items() if k not in kept}

    def take_pending(self) -> dict[str, JsonValue]:
        """The caller's writes not yet on an event: the call's are among them (but its
        `temp:` ones, which stay in this view)."""
        return self._caller.take_pending()
