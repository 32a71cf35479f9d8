"""The state writes of one model turn's calls, which run at once and read each other's.

Each call reads the latest value of a key whoever wrote it, as the reference's calls
share the session's state. Which call wrote each key last is kept too: when a crash
ends the turn before all its calls have, the calls that ended are recorded, and on
resume the calls run again must read what they would have read, the latest value the
ended calls wrote. Their results alone do not say it: a call that ended late may hold
a value another one built on and wrote after it (see `LATEST_WRITES_KEY`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Final, final

from pydantic import JsonValue

from baton.events import Event
from baton.sessions.store import UndeletableKeys

__all__ = ["LATEST_WRITES_KEY", "TurnWrites", "unmarked"]

LATEST_WRITES_KEY: Final = "baton_latest_writes"
"""The `custom_metadata` key under which a call's result recorded before its turn ended
names the state keys it wrote last among the calls that had ended."""


@final
class TurnWrites:
    """The latest value of each key the turn's calls wrote (`values`), and who wrote it."""

    def __init__(self) -> None:
        self.values: dict[str, JsonValue] = {}
        self._log: list[tuple[str, str]] = []  # (state key, call key), in write order

    def of_call(self, call: str) -> MutableMapping[str, JsonValue]:
        """The writes as the call `call` reads and writes them."""
        return _CallWrites(self, call)

    def write(self, call: str, key: str, value: JsonValue) -> None:
        self.values[key] = value
        self._log.append((key, call))

    def restore(self, finished: Mapping[str, Event]) -> None:
        """The writes of the calls that ended before the turn was resumed (`finished`, by
        call key), as they stood: each key's value from the call that wrote it last, as
        its result records (`mark`)."""
        for event in finished.values():  # first the keys no call names (an older record)
            self.values.update(event.actions.state_delta)
        for call, event in finished.items():
            latest = (event.custom_metadata or {}).get(LATEST_WRITES_KEY)
            for key in latest if isinstance(latest, list) else ():
                if isinstance(key, str) and key in event.actions.state_delta:
                    self.write(call, key, event.actions.state_delta[key])

    def mark(self, finished: Mapping[str, Event]) -> dict[str, Event]:
        """The results of the calls that ended, each naming the keys it wrote last among
        them (for a checkpoint: see `restore`)."""
        latest: dict[str, list[JsonValue]] = {}
        seen: set[str] = set()
        for key, call in reversed(self._log):
            if key not in seen and call in finished:
                seen.add(key)
                latest.setdefault(call, []).append(key)
        marked: dict[str, Event] = {}
        for call, event in finished.items():
            metadata = {**(event.custom_metadata or {}), LATEST_WRITES_KEY: latest.get(call, [])}
            marked[call] = event.model_copy(update={"custom_metadata": metadata})
        return marked


def unmarked(event: Event) -> Event:
    """A recorded result without its mark (see `TurnWrites.mark`)."""
    metadata = dict(event.custom_metadata or {})
    if metadata.pop(LATEST_WRITES_KEY, None) is None:
        return event
    return event.model_copy(update={"custom_metadata": metadata or None})


@final
class _CallWrites(UndeletableKeys, MutableMapping[str, JsonValue]):
    """The turn's writes as one call sees them: its writes are logged as its own."""

    def __init__(self, writes: TurnWrites, call: str) -> None:
        self._writes, self._call = writes, call

    def __getitem__(self, key: str) -> JsonValue:
        return self._writes.values[key]

    def __setitem__(self, key: str, value: JsonValue) -> None:
        self._writes.write(self._call, key, value)

    def __iter__(self) -> Iterator[str]:
        return iter(self._writes.values)

    def __len__(self) -> int:
        return len(self._writes.values)

    def __contains__(self, key: object) -> bool:
        return key in self._writes.values
