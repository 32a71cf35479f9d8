"""The conversation a model sees: the session's events, as one agent's contents.

The agent's own turns and tool results stay as they are; the user's messages
come as user turns; other agents' replies come as context text; function calls
and responses that are not the agent's own are left out, as are events of
other parallel branches. A function call answered twice (a long-running tool's
interim status, then the person's answer) keeps its last response only, under
the name of the call it answers (whatever name the client sent).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import JsonValue

from baton.events import REQUEST_CONFIRMATION_FUNCTION, Event
from baton.types import Content, Part

__all__ = ["conversation", "input_text", "is_visible"]


def is_visible(event: Event, branch: str | None) -> bool:
    """Whether an agent on `branch` sees `event` (its own branch, an ancestor's, or shared)."""
    if branch is None or event.branch is None:
        return True
    return branch == event.branch or branch.startswith(f"{event.branch}.")


def input_text(node_input: JsonValue) -> str | None:
    """A node input as the text of a user turn (None for no input)."""
    if node_input is None:
        return None
    return node_input if isinstance(node_input, str) else json.dumps(node_input)


def conversation(
    events: Sequence[Event],
    *,
    agent: str,
    branch: str | None,
    node_input: tuple[int, str] | None = None,
) -> list[Content]:
    """The contents for agent `agent`'s next model call.

    Args:
        events: the events to show, oldest first.
        agent: the agent's name.
        branch: the agent's branch.
        node_input: (position in `events`, text) of the node's input, shown as a user turn.

    Returns:
        The contents, oldest first.
    """
    visible = [e for e in events if is_visible(e, branch) and not e.partial]
    shown = {e.id for e in visible}
    own_calls = {
        c.id: c.name
        for e in visible
        if e.author == agent
        for c in e.function_calls
        if c.id and c.name != REQUEST_CONFIRMATION_FUNCTION
    }
    last_response = _last_responses(visible, set(own_calls))
    contents: list[Content] = []
    for index, event in enumerate(events):
        if node_input is not None and index == node_input[0]:
            contents.append(Content(role="user", parts=[Part(text=node_input[1])]))
        if event.id not in shown or event.content is None:
            continue
        content = _content_of(event, agent, own_calls, last_response)
        if content is not None:
            contents.append(content)
    if node_input is not None and node_input[0] >= len(events):
        contents.append(Content(role="user", parts=[Part(text=node_input[1])]))
    return contents


def _last_responses(events: Sequence[Event], own_calls: set[str]) -> dict[str, str]:
    """For each of the agent's calls, the id of the event holding its last response."""
    last: dict[str, str] = {}
    for event in events:
        for response in event.content.function_responses if event.content else []:
            if response.id in own_calls:
                last[response.id] = event.id
    return last


def _content_of(
    event: Event, agent: str, own_calls: dict[str, str | None], last_response: dict[str, str]
) -> Content | None:
    assert event.content is not None  # checked by the caller
    parts = [
        _named_as_called(p, own_calls)
        for p in event.content.parts or []
        if _shows(p, event, agent=agent, last_response=last_response)
    ]
    if not parts:
        return None
    if event.author == agent:
        return Content(role=event.content.role or "model", parts=parts)
    if event.author == "user" or all(p.function_response for p in parts):
        return Content(role="user", parts=parts)
    text = "".join(p.text or "" for p in parts)
    return Content(role="user", parts=[Part(text=f"For context: [{event.author}] said: {text}")])


def _named_as_called(part: Part, own_calls: dict[str, str | None]) -> Part:
    """The part, its function response renamed to the call's name when they differ."""
    response = part.function_response
    if response is None or own_calls.get(response.id or "", response.name) == response.name:
        return part
    renamed = response.model_copy(update={"name": own_calls[response.id or ""]})
    return part.model_copy(update={"function_response": renamed})


def _shows(part: Part, event: Event, *, agent: str, last_response: dict[str, str]) -> bool:
    """Whether a part is in the agent's view: its own calls, their last responses, texts."""
    if part.thought:
        return False
    if part.function_call is not None:
        # A confirmation request is between the agent and a person, not the model.
        return event.author == agent and part.function_call.name != REQUEST_CONFIRMATION_FUNCTION
    if part.function_response is not None:
        return last_response.get(part.function_response.id or "") == event.id
    return bool(part.text)
