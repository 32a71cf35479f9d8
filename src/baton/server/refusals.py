"""How the server refuses a request: always JSON `{"detail": ..., "error": ...}`.

A baton error gets the status of `STATUS` and its own message. FastAPI's own
refusals get the same shape: an HTTP error (bad key, unknown route) names its
status in `error`, and a request that fails validation keeps FastAPI's list of
problems in `detail` (as the reference server sends it) and adds `message`, one
sentence a person can act on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from http import HTTPStatus
from typing import Final

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import JsonValue
from starlette.exceptions import HTTPException

from baton.agents import MissingArtifactError, MissingStateKeyError
from baton.errors import (
    AlreadyAnsweredError,
    AppInfoUnavailableError,
    AppNameRequiredError,
    AppNotFoundError,
    ArtifactNotFoundError,
    BatonError,
    CheckpointNotFoundError,
    CheckpointUnavailableError,
    GraphValidationError,
    InputExpiredError,
    InvalidArtifactError,
    InvalidCursorError,
    InvalidIdError,
    InvalidLimitError,
    InvalidMessageError,
    InvalidResponseError,
    InvocationBusyError,
    InvocationFinishedError,
    InvocationNotFoundError,
    InvocationRewoundError,
    InvocationWaitingError,
    MissingParameterError,
    NodeSchemaError,
    NodeTimeoutError,
    NotAssigneeError,
    RunConfigError,
    SessionExistsError,
    SessionNotFoundError,
    SessionOptionsError,
    StaleSessionError,
    StaleVersionError,
    StateSchemaError,
    StoreUnavailableError,
    UnknownInterruptError,
    UnknownModelError,
    WorkflowChangedError,
)
from baton.server.bodies import ErrorBody
from baton.server.catalog import DatabaseUnavailableError, ShuttingDownError

__all__ = [
    "ERROR_RESPONSES",
    "RETRY_AFTER_SECONDS",
    "STATUS",
    "install_refusals",
    "refusal",
    "status_of",
]

# The one place HTTP statuses of baton errors are decided; any other is a 500.
STATUS: Final[dict[type[BatonError], int]] = {
    AppNotFoundError: 404,
    AppNameRequiredError: 400,
    AppInfoUnavailableError: 400,
    SessionOptionsError: 400,
    ArtifactNotFoundError: 404,
    InvalidArtifactError: 400,
    SessionNotFoundError: 404,
    InvocationNotFoundError: 404,
    UnknownInterruptError: 404,
    NotAssigneeError: 403,
    SessionExistsError: 409,
    AlreadyAnsweredError: 409,
    InvocationFinishedError: 409,
    InvocationBusyError: 409,
    InvocationWaitingError: 409,
    InvocationRewoundError: 409,
    CheckpointNotFoundError: 404,
    CheckpointUnavailableError: 409,
    StaleVersionError: 409,
    StaleSessionError: 409,  # the session changed between reading and appending: retry
    WorkflowChangedError: 409,
    InvalidResponseError: 422,
    InvalidIdError: 422,
    InvalidCursorError: 400,
    InvalidLimitError: 422,
    InvalidMessageError: 422,
    GraphValidationError: 422,
    MissingParameterError: 422,
    MissingStateKeyError: 422,
    MissingArtifactError: 422,
    StateSchemaError: 422,
    NodeSchemaError: 422,
    UnknownModelError: 422,
    RunConfigError: 422,
    DatabaseUnavailableError: 503,
    StoreUnavailableError: 503,
    ShuttingDownError: 503,
    InputExpiredError: 409,
    NodeTimeoutError: 504,
}

ERROR_RESPONSES: Final[dict[int | str, dict[str, object]]] = {
    404: {"model": ErrorBody, "description": "Unknown app, session, invocation or interrupt"},
    409: {"model": ErrorBody, "description": "Busy, already answered, finished or changed"},
    422: {"description": "The answer fails its response_schema, or a malformed request"},
}


def status_of(error: BaseException) -> int:
    """The HTTP status for an error: its class's (or nearest base's) in `STATUS`, else 500."""
    for cls in type(error).__mro__:
        if cls in STATUS:
            return STATUS[cls]  # pyright: ignore[reportArgumentType] -- cls is a BatonError subclass here
    return 500


def install_refusals(app: FastAPI) -> None:
    """Make every refusal of `app` answer in the one JSON shape."""
    for kind, handler in _HANDLERS.items():
        app.add_exception_handler(kind, handler)


async def refusal(request: Request, error: Exception) -> Response | None:
    """The reply `install_refusals`' handlers give `error`, found as Starlette finds a
    handler (the nearest class in its MRO); None when none handles it."""
    for kind in type(error).__mro__:
        handler = _HANDLERS.get(kind)
        if handler is not None:
            return await handler(request, error)
    return None


RETRY_AFTER_SECONDS: Final = 2
"""What a 503 asks the client to wait (`Retry-After`) before trying again."""


async def _baton_refusal(_: Request, error: BatonError) -> JSONResponse:
    body = ErrorBody(detail=str(error), error=type(error).__name__)
    status = status_of(error)
    # A 503 is temporary (the database is away, or this process is shutting down).
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 503 else None
    return JSONResponse(body.to_wire(), status_code=status, headers=headers)


async def _http_refusal(request: Request, error: HTTPException) -> JSONResponse:
    status = HTTPStatus(error.status_code)
    detail = str(error.detail)
    if detail == status.phrase and status in (HTTPStatus.NOT_FOUND, HTTPStatus.METHOD_NOT_ALLOWED):
        detail = (
            f"{request.method} {request.url.path}: {status.phrase.lower()}; "
            "the routes and their methods are listed at /docs."
        )
    body = ErrorBody(detail=detail, error=status.phrase.replace(" ", ""))
    return JSONResponse(body.to_wire(), status_code=status, headers=error.headers)


async def _invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
    # FastAPI's problems may hold exception objects in `ctx`; its encoder makes them text.
    problems: list[dict[str, JsonValue]] = jsonable_encoder(error.errors())
    body: dict[str, JsonValue] = {
        "detail": list[JsonValue](problems),
        "error": "RequestValidationError",
        "message": describe_problems(problems),
    }
    return JSONResponse(body, status_code=422)


_Handler = Callable[[Request, Exception], Awaitable[Response]]

# starlette types handlers loosely (Exception), so each one names the rule.
_HANDLERS: Final[dict[type[Exception], _Handler]] = {
    BatonError: _baton_refusal,  # pyright: ignore[reportAssignmentType] -- see above
    HTTPException: _http_refusal,  # pyright: ignore[reportAssignmentType] -- see above
    RequestValidationError: _invalid_request,  # pyright: ignore[reportAssignmentType] -- see above
}


def describe_problems(problems: Sequence[Mapping[str, JsonValue]]) -> str:
    """FastAPI's validation problems as one sentence that says how to fix the request."""
    parts: list[str] = []
    for problem in problems:
        kind, where, text = _fields(problem)
        if kind == "json_invalid":
            return f"the body is not valid JSON ({text} at {where}); send one JSON object."
        if kind in ("model_attributes_type", "missing") and where == "body":
            return (
                "the body must be a JSON object, sent with `Content-Type: application/json`; "
                "the request schemas are at /docs."
            )
        parts.append(f"{where}: {text}")
    listed = "; ".join(parts) or "the request does not match its schema"
    return f"{listed}. Correct the request and send it again (schemas at /docs)."


def _fields(problem: Mapping[str, JsonValue]) -> tuple[str, str, str]:
    """A problem's type, where it is (`body.userId`, or a character offset) and its text."""
    location = problem.get("loc")
    steps = [str(step) for step in location] if isinstance(location, list) else []
    kind = str(problem.get("type", ""))
    text = str(problem.get("msg", ""))
    if kind == "json_invalid":
        context = problem.get("ctx")
        cause = context.get("error") if isinstance(context, dict) else None
        where = f"character {steps[-1]}" if len(steps) > 1 else "the start"
        return kind, where, str(cause or text)
    return kind, ".".join(steps), text
