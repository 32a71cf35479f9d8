"""Request and response bodies of the HTTP API (camelCase out; either case accepted in)."""

from __future__ import annotations

from pydantic import BaseModel, Field, JsonValue

from baton.events import Event
from baton.types import Content, WireModel

__all__ = [
    "AppSummary",
    "AppsDetail",
    "CreateSessionRequest",
    "ErrorBody",
    "ForkRequest",
    "RespondRequest",
    "RewindRequest",
    "RunAgentRequest",
    "StateUpdate",
    "VersionInfo",
]


class RunAgentRequest(WireModel):
    """`POST /run` and `/run_sse`: start a run, answer its interrupts, or continue it.
    Without `app_name`, the server's default app (see `create_app`) runs."""

    app_name: str | None = None
    user_id: str
    session_id: str
    new_message: Content | None = None
    streaming: bool = False
    state_delta: dict[str, JsonValue] | None = None
    invocation_id: str | None = None
    function_call_event_id: str | None = None
    custom_metadata: dict[str, JsonValue] | None = None


class CreateSessionRequest(WireModel):
    """`POST .../sessions`: an optional id, initial state and initial events; `options`
    (the reference's: keyword arguments for its session service's create_session) are
    refused unless empty, as baton's session services take none."""

    session_id: str | None = Field(default=None, min_length=1)
    state: dict[str, JsonValue] | None = None
    events: list[Event] | None = None
    options: dict[str, JsonValue] | None = None


class RespondRequest(WireModel):
    """`POST .../interrupts/{id}/respond`: the answer, any JSON value the schema accepts."""

    response: JsonValue = None
    invocation_id: str | None = None
    state_delta: dict[str, JsonValue] | None = None
    # The pending item's `occurrence`: the answer then answers only that asking.
    occurrence: str | None = None
    # Who answers, when the key does not say (no keys, or an operator's key): an assigned
    # question accepts only its assignee. A user's key answers as that user.
    answered_by: str | None = None
    # A progress update to a long-running tool's call: the call stays open for more.
    will_continue: bool = False


class StateUpdate(WireModel):
    """`PATCH .../sessions/{id}`: state changes made outside any run."""

    state_delta: dict[str, JsonValue]


class ErrorBody(WireModel):
    """What every refused request returns: what happened and what to do."""

    detail: str
    error: str = "HTTPException"


class VersionInfo(BaseModel):
    """`GET /version`, in the reference's snake_case (its web UI reads `language_version`)."""

    version: str
    language: str = "python"
    language_version: str


class AppSummary(WireModel):
    """One app in `GET /list-apps?detailed=true`."""

    name: str
    root_agent_name: str
    description: str = ""
    language: str = "python"
    is_computer_use: bool = False  # the reference's field; baton has no computer-use agents
    # The reference's field, null in its list as here: `GET /apps/{app}/app-info` has them.
    agents: dict[str, JsonValue] | None = None


class AppsDetail(WireModel):
    """`GET /list-apps?detailed=true`."""

    apps: list[AppSummary]


class RewindRequest(WireModel):
    """`POST .../sessions/{id}/rewind`: the invocation to go back before (the name
    `Runner.rewind_async` takes)."""

    rewind_before_invocation_id: str


class ForkRequest(WireModel):
    """`POST .../sessions/{id}/fork`: the checkpoint to fork at (`GET .../checkpoints`
    lists them) and, optionally, the new session's id."""

    checkpoint_id: str
    new_session_id: str | None = None
