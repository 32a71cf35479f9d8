"""What `/run` and the respond route answer, and which invocation a request means.

A run that fails after its first event (a node raised, the lease was lost, the
database went away) is not answered 200 with the events so far: the reply has the
error's status (`refusals.STATUS`, else 500) and the body every refusal has,
plus the events the run committed before it failed:

    {"detail": "<message>", "error": "<Type>", "events": [...]}
"""

from __future__ import annotations

from fastapi import Response
from fastapi.responses import JSONResponse
from pydantic import JsonValue

from baton.errors import InvalidMessageError, UnknownInterruptError
from baton.events import Event
from baton.server.bodies import ErrorBody
from baton.server.refusals import status_of
from baton.server.session_import import IMPORTED_PREFIX
from baton.server.sse import RunFeed
from baton.sessions.store import SessionKey, Store
from baton.types import WireModel

__all__ = ["events_reply", "invocation_of_call", "model_reply", "run_reply", "shown"]


def shown(item: Event | Exception | None) -> bool:
    """Whether a feed item goes to the client (not the echo of its own message)."""
    return not (isinstance(item, Event) and item.author == "user")


async def run_reply(feed: RunFeed) -> Response:
    """The run's events, or, when it failed, a refusal body carrying them."""
    events: list[Event] = []
    async for item in feed.items():
        if isinstance(item, Exception):
            return _failure(item, events)
        if isinstance(item, Event) and shown(item):
            events.append(item)
    return events_reply(events)


def events_reply(events: list[Event]) -> Response:
    """The JSON list of `events`, as the route's `list[Event]` response model would send
    it, serialized once by each event's own serializer. Returning the model list instead
    would have FastAPI validate every event again, then encode it, on each /run and
    answer: a large part of the server's CPU per request."""
    body = b"[" + b",".join(event.to_json().encode() for event in events) + b"]"
    return Response(body, media_type="application/json")


def _failure(error: Exception, events: list[Event]) -> JSONResponse:
    body: dict[str, JsonValue] = ErrorBody(detail=str(error), error=type(error).__name__).to_wire()
    body["events"] = [event.to_wire() for event in events]
    return JSONResponse(body, status_code=status_of(error))


def model_reply(model: WireModel) -> Response:
    """`model` as JSON, as a route's response model would send it (camelCase, no nulls),
    serialized once instead of validated again and encoded (see `events_reply`)."""
    return Response(model.to_json().encode(), media_type="application/json")


async def invocation_of_call(store: Store, key: SessionKey, event_id: str) -> str | None:
    """The invocation of the session's event `event_id` (the call a client answers).

    None when there is no such session (the run refuses that itself, with a 404).

    Raises:
        InvalidMessageError: the session has no event with that id.
        UnknownInterruptError: the event is imported history, whose run is not here.
    """
    session = await store.get_session(key)
    if session is None:
        return None
    for event in session.events:
        if event.id == event_id and event.invocation_id.startswith(IMPORTED_PREFIX):
            raise UnknownInterruptError(
                f"event '{event_id}' is imported history: the run that asked it was not "
                "imported, so its questions cannot be answered here; send a new message to "
                "start a new run."
            )
        if event.id == event_id:
            return event.invocation_id
    raise InvalidMessageError(
        f"functionCallEventId '{event_id}' is not an event of session '{key.session_id}'; "
        "send the id of the event that carries the call you answer, or leave it out."
    )
