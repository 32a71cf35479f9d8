"""UiWidget: a rich component (an MCP App iframe, ...) a client shows beside an event.

A tool, a callback or a node asks for one with `ctx.render_ui_widget(UiWidget(...))`;
it travels in the event's `actions.render_ui_widgets` (`renderUiWidgets` on the wire),
is stored with the event on every backend and is served back as it was given.
"""

from __future__ import annotations

from typing import final

from pydantic import Field, JsonValue, ValidationInfo, field_validator

from baton.types import StrictWireModel

__all__ = ["UiWidget", "add_ui_widget"]


@final
class UiWidget(StrictWireModel):
    """What a client needs to render one widget beside an event.

    Args:
        id: the widget's id, unique among the widgets of one event (a tool's widget
            usually takes the function call's id).
        provider: which renderer shows it; `"mcp"` is an MCP App iframe, whose payload
            holds `resource_uri` (`ui://...`), `tool` and `tool_args`.
        payload: the renderer's data (JSON).

    Raises:
        pydantic.ValidationError: an empty id or provider, a payload that is not a JSON
            object, or a field UiWidget does not have.
    """

    id: str
    provider: str
    payload: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])

    @field_validator("id", "provider")
    @classmethod
    def _not_empty(cls, value: str, info: ValidationInfo) -> str:
        if not value.strip():
            raise ValueError(
                f"a UiWidget's {info.field_name} is empty; give it a name a client can tell apart "
                "(a tool's widget usually takes the function call's id, provider 'mcp')."
            )
        return value


def add_ui_widget(widgets: list[UiWidget], widget: object, *, where: str) -> None:
    """Append `widget` to the widgets an event will carry, as `render_ui_widget` does.

    Args:
        widgets: the widgets already rendered for that event.
        widget: what the caller passed.
        where: the context that rendered it, for the errors.

    Raises:
        TypeError: `widget` is not a UiWidget.
        ValueError: a widget with the same id was already rendered for that event.
    """
    if not isinstance(widget, UiWidget):
        raise TypeError(
            f"render_ui_widget takes a UiWidget, not {type(widget).__name__} ({widget!r:.80}), "
            f"in {where}; build one: UiWidget(id=..., provider=..., payload={{...}})."
        )
    taken = [w.id for w in widgets]
    if widget.id in taken:
        listed = ", ".join(repr(i) for i in taken)
        raise ValueError(
            f"UI widget '{widget.id}' was already rendered by {where} (rendered: {listed}); "
            "give each widget its own id."
        )
    widgets.append(widget)
