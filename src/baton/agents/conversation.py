"""The conversation a model sees: the session's events, as one agent's contents.

The agent's own turns and tool results stay as they are; the user's messages
come as user turns; other agents' turns (their replies, calls and the calls'
results, and a person's answers to their calls) come as quoted context (see
`baton.agents.quotation`); left out are confirmation requests between another
agent and a person, events of other parallel branches, and those of sub-agents
the agent called as tools (see `baton.agents.delegation`: the calls' results
stand for them). Each of the agent's calls is followed at once by its last
response (a turn's responses merged into one user turn), under the name of the
call it answers (whatever name the client sent): a long-running call answered
several times (its tool's interim status, progress updates, the final result)
shows only the newest, and the agent's text replies to the superseded ones are
left out, as the reference does. Model providers require a call's response right
after the call.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence

from pydantic import JsonValue

from baton.agents.quotation import quoted_turn
from baton.events import Event
from baton.tools.confirmation import call_keys, is_person_request, request_ids
from baton.types import Content, FunctionCall, FunctionResponse, Part

__all__ = ["conversation", "input_text", "is_visible", "match_responses"]


def is_visible(event: Event, branch: str | None) -> bool:
    """Whether an agent on `branch` sees `event` (its own branch, an ancestor's, or shared)."""
    if branch is None or event.branch is None:
        return True
    return branch == event.branch or branch.startswith(f"{event.branch}.")


def _is_below_a_call(event: Event, branch: str | None, call_ids: set[str]) -> bool:
    """Whether `event` is on a delegated call's branch below `branch` (one of `call_ids`):
    a sub-agent's work for its caller, whose model sees only the call's result."""
    if not event.branch or event.branch == branch:
        return False
    if branch and not event.branch.startswith(f"{branch}."):
        return False
    below = event.branch[len(branch) + 1 :] if branch else event.branch
    return any(segment.rpartition("@")[2] in call_ids for segment in below.split("."))


def input_text(node_input: JsonValue) -> str | None:
    """A node input as the text of a user turn (None for no input): JSON with its
    characters as they are, as the reference sends it."""
    if node_input is None:
        return None
    return node_input if isinstance(node_input, str) else json.dumps(node_input, ensure_ascii=False)


def conversation(
    events: Sequence[Event],
    *,
    agent: str,
    branch: str | None,
    node_input: tuple[int, str] | None = None,
    include_thoughts: bool = False,
) -> list[Content]:
    """The contents for agent `agent`'s next model call.

    Args:
        events: the events to show, oldest first.
        agent: the agent's name.
        branch: the agent's branch.
        node_input: (position in `events`, text) of the node's input, shown as a user turn.
        include_thoughts: show other agents' thoughts in their quoted turns.

    Returns:
        The contents, oldest first.
    """
    call_ids = {c.id for e in events for c in e.function_calls if c.id}
    visible = [
        e
        for e in events
        if is_visible(e, branch) and not e.partial and not _is_below_a_call(e, branch, call_ids)
    ]
    own_calls = {
        c.id
        for e in visible
        if e.author == agent
        for c in e.function_calls
        if c.id and not is_person_request(c.name)
    }
    answers = _answers(visible, own_calls)
    requests = {
        c.id
        for e in visible
        if e.author == agent
        for c in e.function_calls
        if c.id and is_person_request(c.name)
    }
    unanswered: dict[str, list[tuple[int, int, Part]]] = {r: [] for r in requests}
    confirmations = unanswered | _answers(visible, requests)
    results = {
        r.id
        for e in visible
        if e.author == agent and e.content
        for r in e.content.function_responses
        if r.id
    }
    shown = {e.id for e in visible} - _superseded_replies(visible, agent, answers)
    quoted = _quoted_events(visible, agent)
    contents: list[Content] = []
    for index, event in enumerate(events):
        if node_input is not None and index == node_input[0]:
            contents.append(Content(role="user", parts=[Part(text=node_input[1])]))
        if event.id not in shown or event.content is None:
            continue
        if event.id in quoted:
            content = quoted_turn(event, include_thoughts=include_thoughts)
        else:
            content = _content_of(event, agent)
        if content is not None:
            contents.append(content)
        if event.author == agent:
            contents.extend(_responses_to(event, answers, results, confirmations))
    if node_input is not None and node_input[0] >= len(events):
        contents.append(Content(role="user", parts=[Part(text=node_input[1])]))
    return contents


def _quoted_events(events: Sequence[Event], agent: str) -> set[str]:
    """Ids of the events shown quoted: other agents', and a person's answers to their calls
    (with the person as their author), except confirmation requests and their answers."""
    others = {
        c.id for e in events if e.author not in (agent, "user") for c in e.function_calls if c.id
    }
    return {
        e.id
        for e in events
        if e.author != agent
        and (e.author != "user" or any(r.id in others for r in _responses(e)))
        and not _is_confirmation(e)
    }


def _responses(event: Event) -> list[FunctionResponse]:
    return event.content.function_responses if event.content else []


def _is_confirmation(event: Event) -> bool:
    """Whether `event` asks a person to confirm a call (or for a credential), or answers
    such a request."""
    names = [c.name for c in event.function_calls] + [r.name for r in _responses(event)]
    return any(is_person_request(name) for name in names)


def _answers(
    events: Sequence[Event], own_calls: set[str]
) -> dict[str, list[tuple[int, int, Part]]]:
    """For each of the agent's calls, its responses: (position in `events`, position in
    the event's parts, part)."""
    found: dict[str, list[tuple[int, int, Part]]] = {}
    for index, event in enumerate(events):
        for at, part in enumerate((event.content.parts or []) if event.content else []):
            response = part.function_response
            if response is not None and response.id in own_calls:
                found.setdefault(response.id, []).append((index, at, part))
    return found


def _superseded_replies(
    events: Sequence[Event], agent: str, answers: dict[str, list[tuple[int, int, Part]]]
) -> set[str]:
    """Ids of the agent's text replies between a call's first and last response: they
    answered an interim status or a progress update the model now sees replaced."""
    hidden: set[str] = set()
    for responses in answers.values():
        first, last = responses[0][0], responses[-1][0]
        hidden.update(
            e.id
            for e in events[first + 1 : last]
            if e.author == agent and e.content and not e.function_calls
            if not e.content.function_responses
        )
    return hidden


def _responses_to(
    event: Event,
    answers: dict[str, list[tuple[int, int, Part]]],
    results: set[str],
    confirmations: dict[str, list[tuple[int, int, Part]]],
) -> list[Content]:
    """The last response to each of the event's calls, as one user turn (none yet: []).

    In the reference's order, which merges the events holding the calls' last responses,
    oldest first: the turn's results (`results`: the calls the agent's tools answered,
    a long-running tool with its interim result) in the turn's order, then the calls
    only the client answered (long-running tools that returned nothing), in the order
    their responses came; a newer response takes the place of an older one of its call.
    Calls that share an id (a model may give two calls of a turn one id) each show their
    own last response (see `match_responses`, given the person's answers to the requests
    to confirm them, `confirmations`: by request id, none yet: []), wherever it was
    recorded.
    """
    calls = [c for c in event.function_calls if c.id in answers and not is_person_request(c.name)]
    ids = dict.fromkeys(c.id or "" for c in calls)
    asked = [r for key in call_keys(calls) for r in request_ids(key, confirmations)]
    found = sorted(
        [*(a for i in ids for a in answers[i]), *(a for r in asked for a in confirmations[r])],
        key=lambda a: (a[0], a[1]),
    )
    responses = [(i, p.function_response) for i, _, p in found if p.function_response]
    matched = match_responses(calls, responses, asked=asked)
    placed: list[tuple[tuple[int, int], Part]] = []
    for place, (call, response) in enumerate(zip(calls, matched, strict=True)):
        if response is None:
            continue
        index, at, part = found[response]
        where = (-1, place) if call.id in results else (index, at)
        placed.append((where, _named_as_called(part, call.name)))
    parts = [part for _, part in sorted(placed, key=lambda p: p[0])]
    return [Content(role="user", parts=parts)] if parts else []


def match_responses(
    calls: Sequence[FunctionCall],
    responses: Sequence[tuple[int, FunctionResponse]],
    *,
    asked: Collection[str] = (),
) -> list[int | None]:
    """For each of a turn's calls, the position in `responses` of its newest response, or
    None.

    A response goes to the call with its id, and among calls sharing an id (a model may
    give two calls of a turn one id), to one of its name (any of them when none has it:
    a client may answer a long-running call under another name). A call asked to be
    confirmed takes only a response that came after the person's answer to its own
    request (the requests of calls sharing an id have ids of their own, see
    `call_keys`), so each call gets its own result whichever request was answered
    first. Among several calls that may take a response, it goes to the one answered
    last, then to the last in the turn, as a turn's results are recorded in the turn's
    order.

    Args:
        calls: the turn's calls.
        responses: (position of its event, response), oldest first, of the responses to
            the calls and of the person's answers to their confirmation requests.
        asked: the ids of the confirmation requests made for the calls.
    """
    answered = {r.id: where for where, r in reversed(responses) if r.id in asked}
    # A call not asked takes a response from the start; one asked, once every request
    # about it was answered.
    since = [
        max((answered.get(r, math.inf) for r in request_ids(key, asked)), default=-1)
        for key in call_keys(calls)
    ]
    found: list[int | None] = [None] * len(calls)
    for at in range(len(responses) - 1, -1, -1):
        where, response = responses[at]
        same_id = [i for i, c in enumerate(calls) if c.id == response.id]
        named = [i for i in same_id if calls[i].name == response.name] or same_id
        free = [i for i in named if found[i] is None]
        ready = [i for i in free if since[i] < where] or free
        if ready:
            found[max(ready, key=lambda i: (since[i], i))] = at
    return found


def _content_of(event: Event, agent: str) -> Content | None:
    assert event.content is not None  # checked by the caller
    parts = [p for p in event.content.parts or [] if _shows(p, event, agent=agent)]
    if not parts:
        return None
    if event.author == agent:
        return Content(role=event.content.role or "model", parts=parts)
    return Content(role="user", parts=parts)


def _named_as_called(part: Part, name: str | None) -> Part:
    """The part, its function response renamed to the name of the call it answers when
    they differ."""
    response = part.function_response
    if response is None or name is None or response.name == name:
        return part
    renamed = response.model_copy(update={"name": name})
    return part.model_copy(update={"function_response": renamed})


def _shows(part: Part, event: Event, *, agent: str) -> bool:
    """Whether a part is in the agent's view where it stands: its own calls, texts and
    media (responses are placed after their calls)."""
    if part.thought or part.function_response is not None:
        return False
    if part.function_call is not None:
        # A confirmation or credential request is between the agent and a person, not the
        # model.
        return event.author == agent and not is_person_request(part.function_call.name)
    return bool(part.text) or part.inline_data is not None or part.file_data is not None
