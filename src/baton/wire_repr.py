"""The reference's `repr()` of its message types, for baton's wire types.

google.genai prints a message as an indented tree of the fields that are set (None
left out, fields and dict keys in name order, long bytes, lists and dicts cut short),
and `str()` shows a message's own fields with that tree for each value. Code that puts
a `Content` into a prompt or a log line sees the same text with baton.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, cast

from pydantic import BaseModel

_STEP: Final = 2  # spaces per nesting level
_MAX_BYTES: Final = 100  # longer bytes are cut, ending in "..."
_MAX_ITEMS: Final = 5  # a longer list shows its first items; a longer dict, its length
_MAX_DEPTH: Final = 6  # nesting below this is summarized


class ReferenceRepr:
    """Mixin: `repr()` (and so `str()` of what holds it) as the reference prints it.

    Only the printing changes: building, validating and serializing are pydantic's,
    so a message built per event costs what it did.
    """

    reference_fields: ClassVar[tuple[str, ...]] = ()
    """The reference's fields of the type in its order, where baton has fewer or orders
    them otherwise; `str()` lists them as the reference does, a field baton lacks as None
    (baton's object never holds one). Empty: the type's own fields."""

    def __repr__(self) -> str:
        return tree_repr(self)

    def __repr_args__(self) -> Iterable[tuple[str | None, Any]]:
        """The fields `str()` (pydantic's) lists, with their values."""
        model = cast(BaseModel, self)
        if not self.reference_fields:
            return BaseModel.__repr_args__(model)
        values = model.__dict__  # a field's value (absent while validation fails)
        return [(name, values.get(name)) for name in self.reference_fields]

    if not TYPE_CHECKING:  # type checkers keep refusing a misspelled attribute

        def __getattr__(self, name: str) -> Any:
            # Only reached when `name` is not an attribute: a field the reference's type
            # has and baton's never holds reads None, as the reference's reads when unset.
            if name in type(self).reference_fields:
                return None
            return super().__getattr__(name)


def tree_repr(value: object, *, indent: int = 0, depth: int = _MAX_DEPTH) -> str:
    """`value` printed as the reference prints its messages, its first line at `indent`."""
    if depth < 0:
        return "<... Max depth ...>"
    if isinstance(value, BaseModel):
        return _model_repr(value, indent, depth)
    if isinstance(value, str):
        return _text_repr(value)
    if isinstance(value, bytes):
        return _bytes_repr(value)
    if isinstance(value, Mapping):
        return _mapping_repr(value, indent, depth)  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(value, list | tuple | set):
        return _collection_repr(value, indent, depth)  # pyright: ignore[reportUnknownArgumentType]
    return repr(value).replace("\n", "\n" + " " * (indent + _STEP))


def _model_repr(model: BaseModel, indent: int, depth: int) -> str:
    fields = type(model).model_fields
    pad = " " * (indent + _STEP)
    lines = [
        f"{pad}{name}={tree_repr(value, indent=indent + _STEP, depth=depth - 1)}"
        for name in sorted(fields)
        if fields[name].repr and (value := getattr(model, name, None)) is not None
    ]
    name = type(model).__name__
    if not lines:
        return f"{name}()"
    return f"{name}(\n" + ",\n".join(lines) + "\n" + " " * indent + ")"


def _text_repr(text: str) -> str:
    if "\n" in text:
        return '"""' + text.replace('"""', '\\"\\"\\"') + '"""'
    return repr(text)


def _bytes_repr(data: bytes) -> str:
    if len(data) > _MAX_BYTES:
        return repr(data[: _MAX_BYTES - 3])[:-1] + "...'"
    return repr(data)


def _count(items: int) -> str:
    return f"{items} item{'s' if items != 1 else ''}"


def _mapping_repr(mapping: Mapping[object, object], indent: int, depth: int) -> str:
    if not mapping:
        return "{}"
    if depth <= 0:
        return f"{{<... {_count(len(mapping))} at Max depth ...>}}"
    if len(mapping) > _MAX_ITEMS:
        return f"<dict len={len(mapping)}>"
    try:
        keys = sorted(mapping, key=str)
    except TypeError:
        keys = list(mapping)
    pad = " " * (indent + _STEP)
    lines = [
        f"{pad}{tree_repr(key, indent=indent + _STEP, depth=depth - 1)}: "
        f"{tree_repr(mapping[key], indent=indent + _STEP, depth=depth - 1)}"
        for key in keys
    ]
    return "{\n" + ",\n".join(lines) + "\n" + " " * indent + "}"


def _collection_repr(
    items: list[object] | tuple[object, ...] | set[object], indent: int, depth: int
) -> str:
    opening, closing = (
        ("(", ")")
        if isinstance(items, tuple)
        else ("[", "]")
        if isinstance(items, list)
        else ("{", "}")
        if items
        else ("set(", ")")
    )
    values = list(items)
    if not values:
        return opening + closing
    if depth <= 0:
        return f"{opening}<... {_count(len(values))} at Max depth ...>{closing}"
    pad = " " * (indent + _STEP)
    lines = [
        pad + tree_repr(value, indent=indent + _STEP, depth=depth - 1)
        for value in values[:_MAX_ITEMS]
    ]
    if len(values) > _MAX_ITEMS:
        lines.append(f"{pad}<... {len(values) - _MAX_ITEMS} more items ...>")
    return f"{opening}\n" + ",\n".join(lines) + ",\n" + " " * indent + closing
