"""Every exception a baton user may catch.

Classes differ by what the caller must do next. Each also subclasses the built-in
exception people already catch (`LookupError`, `ValueError`, `RuntimeError`), and
the server maps each class to one HTTP status (see `http_status`).
"""

from __future__ import annotations

__all__ = [
    "AlreadyAnsweredError",
    "AppNotFoundError",
    "BatonError",
    "ExtraNotInstalledError",
    "GraphValidationError",
    "InvalidMessageError",
    "InvalidResponseError",
    "InvocationBusyError",
    "InvocationFinishedError",
    "InvocationNotFoundError",
    "InvocationWaitingError",
    "MissingParameterError",
    "NodeFailedError",
    "NodeTimeoutError",
    "OutputAlreadySetError",
    "SessionExistsError",
    "SessionNotFoundError",
    "StaleVersionError",
    "UnknownInterruptError",
    "UnknownModelError",
    "WorkflowChangedError",
    "http_status",
]


class BatonError(Exception):
    """Base class of every baton error."""

    status_code: int = 500


class SessionNotFoundError(BatonError, LookupError):
    """The session does not exist (or belongs to another user)."""

    status_code = 404


class SessionExistsError(BatonError, ValueError):
    """A session with that id already exists."""

    status_code = 409


class AppNotFoundError(BatonError, LookupError):
    """No app of that name is served."""

    status_code = 404


class InvocationNotFoundError(BatonError, LookupError):
    """The invocation id names no invocation of this session."""

    status_code = 404


class UnknownInterruptError(BatonError, LookupError):
    """A response answers no open interrupt."""

    status_code = 404


class AlreadyAnsweredError(BatonError, ValueError):
    """The interrupt was answered before; a second answer is refused."""

    status_code = 409


class InvocationFinishedError(BatonError, ValueError):
    """The invocation already completed; there is nothing to resume."""

    status_code = 409


class InvocationWaitingError(BatonError, ValueError):
    """The invocation waits for answers; continuing it without them has nothing to run."""

    status_code = 409


class InvocationBusyError(BatonError, RuntimeError):
    """Another resumer holds the invocation's lease right now."""

    status_code = 409


class StaleVersionError(BatonError, RuntimeError):
    """A step was committed against a checkpoint version that is no longer current."""

    status_code = 409


class InvalidResponseError(BatonError, ValueError):
    """A response does not match its interrupt's response_schema."""

    status_code = 422


class InvalidMessageError(BatonError, ValueError):
    """A new message is malformed (e.g. mixes text and function responses)."""

    status_code = 422


class WorkflowChangedError(BatonError, RuntimeError):
    """The workflow's structure changed since the invocation started."""

    status_code = 409


class GraphValidationError(BatonError, ValueError):
    """A workflow graph is invalid; the message lists every problem."""

    status_code = 422

    def __init__(self, workflow: str, problems: list[str]) -> None:
        self.workflow = workflow
        self.problems = problems
        listed = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"workflow '{workflow}' is invalid ({len(problems)} problem"
            f"{'s' if len(problems) != 1 else ''}):\n{listed}"
        )


class MissingParameterError(BatonError, ValueError):
    """A node parameter has no value in state nor in the node input."""

    status_code = 422


class OutputAlreadySetError(BatonError, ValueError):
    """A node produced a second output in one run."""

    status_code = 500


class NodeTimeoutError(BatonError, TimeoutError):
    """A node run exceeded its timeout."""

    status_code = 504

    def __init__(self, node_name: str, timeout: float) -> None:
        self.node_name = node_name
        self.timeout = timeout
        super().__init__(f"node '{node_name}' timed out after {timeout:g} seconds.")


class NodeFailedError(BatonError, RuntimeError):
    """A node raised; the invocation can be retried with its invocation id."""

    status_code = 500


class UnknownModelError(BatonError, ValueError):
    """A model string matches no registered prefix nor model class."""

    status_code = 422


class ExtraNotInstalledError(BatonError, ImportError):
    """An optional dependency group is needed and missing."""

    status_code = 500

    def __init__(self, extra: str, module: str, feature: str) -> None:
        self.extra = extra
        super().__init__(
            f"{feature} needs the '{module}' package; install it with "
            f"`pip install 'baton[{extra}]'`."
        )


def http_status(error: BaseException) -> int:
    """The HTTP status the server answers for an error (500 for anything unknown)."""
    return error.status_code if isinstance(error, BatonError) else 500
