"""Every exception a baton user may catch.

Classes differ by what the caller must do next. Each also subclasses the built-in
exception people already catch (`LookupError`, `ValueError`, `RuntimeError`), and
the server maps each class to one HTTP status (`baton.server.refusals.STATUS`).
"""

from __future__ import annotations

__all__ = [
    "AlreadyAnsweredError",
    "AlreadyExistsError",
    "AppInfoUnavailableError",
    "AppNameRequiredError",
    "AppNotFoundError",
    "ArtifactNotFoundError",
    "BatonError",
    "CheckpointNotFoundError",
    "CheckpointUnavailableError",
    "EngineOptionsError",
    "ExtraNotInstalledError",
    "GraphValidationError",
    "InputExpiredError",
    "InputTimeoutError",
    "InputValidationError",
    "InvalidArtifactError",
    "InvalidCursorError",
    "InvalidIdError",
    "InvalidLimitError",
    "InvalidMessageError",
    "InvalidResponseError",
    "InvocationBusyError",
    "InvocationFinishedError",
    "InvocationNotFoundError",
    "InvocationRewoundError",
    "InvocationWaitingError",
    "LeaseLostError",
    "LlmCallsLimitExceededError",
    "MissingParameterError",
    "NoCredentialServiceError",
    "NodeActionError",
    "NodeFailedError",
    "NodeSchemaError",
    "NodeTimeoutError",
    "NotAssigneeError",
    "NotFoundError",
    "OutputAlreadySetError",
    "RunConfigError",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionOptionsError",
    "StaleSessionError",
    "StaleVersionError",
    "StateDeleteError",
    "StateSchemaError",
    "StoreUnavailableError",
    "UnknownInterruptError",
    "UnknownModelError",
    "WorkflowChangedError",
    "WorkflowConfigurationError",
    "error_class_names",
]


class BatonError(Exception):
    """Base class of every baton error."""


class SessionNotFoundError(BatonError, LookupError, ValueError):
    """The session does not exist (or belongs to another user).

    A ValueError too, as the reference's: code written for it catches `ValueError`."""


class StaleSessionError(BatonError, ValueError):
    """`append_event` was given a `Session` read before the session last changed (the
    reference's name; a ValueError, as there): read it again and append to that."""


class AlreadyExistsError(BatonError):
    """Something to be created exists already (the reference's name for it)."""


class NotFoundError(BatonError):
    """Something named does not exist (the reference's name for it)."""


class InputValidationError(BatonError, ValueError):
    """An input is refused as it is (the reference's name for it); nothing was changed."""


class SessionExistsError(AlreadyExistsError, ValueError):
    """A session with that id already exists."""


class AppNotFoundError(BatonError, LookupError):
    """No app of that name is served."""


class AppNameRequiredError(BatonError, ValueError):
    """A run request names no app, and the server has no default app to run."""


class AppInfoUnavailableError(BatonError, ValueError):
    """`GET /apps/{app}/app-info` of an app whose root is not an LlmAgent."""


class EngineOptionsError(BatonError, ValueError):
    """`DatabaseSessionService(db_url, **options)` was given a SQLAlchemy engine option
    baton cannot honour: one it sets itself, or one it does not know."""


class SessionOptionsError(BatonError, ValueError):
    """A new session's `options` ask its session service for something it does not take."""


class ArtifactNotFoundError(BatonError, LookupError):
    """No artifact (or no such version of it) by that name in that scope."""


class InvalidArtifactError(InputValidationError):
    """An artifact's name, content or scope is refused; nothing was saved."""


class InvocationNotFoundError(NotFoundError, LookupError, ValueError):
    """The invocation id names no invocation of this session.

    A ValueError too, as the reference's: code written for it catches `ValueError`."""


class InvocationRewoundError(BatonError, ValueError):
    """The invocation was rewound (`Runner.rewind_async`): it cannot be answered,
    continued or rewound again; start a new run instead."""


class CheckpointNotFoundError(BatonError, LookupError):
    """The session has no checkpoint of that id (`Runner.checkpoints` lists them)."""


class CheckpointUnavailableError(BatonError, ValueError):
    """A fork cannot start at that checkpoint: a run was executing there, so its state at
    that point is not kept."""


class UnknownInterruptError(BatonError, LookupError, ValueError):
    """A response answers no open interrupt (a ValueError too, as the reference raises)."""


class AlreadyAnsweredError(BatonError, ValueError):
    """The interrupt was answered before; a second answer is refused."""


class NotAssigneeError(BatonError, PermissionError):
    """The question is assigned to another person; only an answer as them is accepted."""


class InvocationFinishedError(BatonError, ValueError):
    """The invocation already completed; there is nothing to resume."""


class InvocationWaitingError(BatonError, ValueError):
    """The invocation waits for answers; continuing it without them has nothing to run."""


class InvocationBusyError(BatonError, RuntimeError):
    """Another resumer holds the invocation's lease right now."""


class LeaseLostError(InvocationBusyError):
    """This runner's lease on the invocation was taken over (it stalled or lost the
    database past its time to live): it commits nothing more; the new holder goes on."""


class StaleVersionError(BatonError, RuntimeError):
    """A step was committed against a checkpoint version that is no longer current.

    `actual` is the invocation's version at the time (0 when it does not exist).
    """

    def __init__(self, message: str, *, actual: int = 0) -> None:
        super().__init__(message)
        self.actual = actual


class StoreUnavailableError(BatonError, ConnectionError):
    """The database cannot be reached right now; nothing was changed. Retry later."""


class InputExpiredError(BatonError, ValueError):
    """The question's deadline passed: it was answered by its timeout, or the run failed."""


class InputTimeoutError(BatonError, TimeoutError):
    """Nobody answered a RequestInput before its deadline and it had no `on_timeout`."""


class InvalidResponseError(BatonError, ValueError):
    """A response does not match its interrupt's response_schema."""


class InvalidIdError(BatonError, ValueError):
    """An id (user, session, invocation, interrupt) is too long or holds control characters."""


class InvalidCursorError(BatonError, ValueError):
    """A page cursor is not one this listing gave (garbled, or from another listing)."""


class InvalidLimitError(BatonError, ValueError):
    """A page size is not between 1 and the largest page a listing returns."""


class InvalidMessageError(BatonError, ValueError):
    """A new message is malformed (e.g. mixes text and function responses)."""


class WorkflowChangedError(BatonError, RuntimeError):
    """The workflow's structure changed since the invocation started."""


class GraphValidationError(BatonError, ValueError):
    """A workflow graph is invalid; the message lists every problem."""

    def __init__(self, workflow: str, problems: list[str]) -> None:
        self.workflow = workflow
        self.problems = problems
        listed = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"workflow '{workflow}' is invalid ({len(problems)} problem"
            f"{'s' if len(problems) != 1 else ''}):\n{listed}"
        )


class WorkflowConfigurationError(BatonError, ValueError):
    """A workflow's configuration turned out wrong while it ran (e.g. two terminal outputs)."""


class MissingParameterError(BatonError, ValueError):
    """A node parameter has no value in state nor in the node input."""


class OutputAlreadySetError(BatonError, ValueError):
    """A node produced a second output in one run."""


class NodeTimeoutError(BatonError, TimeoutError):
    """A node run exceeded its timeout."""

    def __init__(self, node_name: str, timeout: float) -> None:
        self.node_name = node_name
        self.timeout = timeout
        super().__init__(f"node '{node_name}' timed out after {timeout:g} seconds.")


class NodeFailedError(BatonError, RuntimeError):
    """A node raised; the invocation can be retried with its invocation id.

    Raised in place of the node's own exception where that no longer exists: a process
    recorded the node's failure and stopped before handing it on to the node's workflow
    (or caller), and the process that continued the run hands on what the checkpoint
    kept. `str()` is the node's exception's message, `error_type` its class's name and
    `error_classes` the names of every class it was an instance of (what a RetryConfig
    matches); `node_path` is the run that failed.
    """

    def __init__(
        self,
        message: str,
        *,
        error_type: str = "",
        error_classes: tuple[str, ...] = (),
        node_path: str = "",
    ) -> None:
        super().__init__(message)
        self.error_type = error_type or type(self).__name__
        self.error_classes = error_classes
        self.node_path = node_path


class LlmCallsLimitExceededError(BatonError, RuntimeError):
    """A call of `run_async` asked for more model calls than `RunConfig.max_llm_calls`
    allows (the reference's name); the node that asked fails."""


class RunConfigError(BatonError, ValueError):
    """A `RunConfig` asks for what baton does not do (`StreamingMode.BIDI`, live mode)."""


class UnknownModelError(BatonError, ValueError):
    """A model string matches no registered prefix nor model class."""


class ExtraNotInstalledError(BatonError, ImportError):
    """An optional dependency group is needed and missing."""

    def __init__(self, extra: str, module: str, feature: str) -> None:
        self.extra = extra
        super().__init__(
            f"{feature} needs the '{module}' package; install it with "
            f"`pip install 'baton[{extra}]'`."
        )


class NoCredentialServiceError(BatonError, ValueError):
    """`save_credential` / `load_credential` were called and the Runner has no
    credential service, or `get_credential` (which baton resolves nothing for)."""


class NodeActionError(BatonError, ValueError):
    """A node run set an action of `ctx.actions` that only an agent or a tool takes
    (`escalate`, `transfer_to_agent`, `skip_summarization`, ...), or recorded an artifact
    version by hand: the message says what a node does instead. A `ValueError`, as the
    reference raises for a node's `transfer_to_agent`."""


class StateDeleteError(BatonError, AttributeError, TypeError):
    """A state key was deleted (`del state[k]`, `pop`, `popitem`, `clear`): state keys are
    set, never deleted. An `AttributeError`, as the reference's `State`, which has no way
    to delete, raises (the key there or not); a `TypeError` too, as baton raised before."""


class StateSchemaError(BatonError, TypeError):
    """A state write does not fit the workflow's `state_schema` (the reference's name)."""


class NodeSchemaError(BatonError, ValueError):
    """A node's input or output does not fit its `input_schema` / `output_schema`."""


def error_class_names(error: BaseException) -> tuple[str, ...]:
    """The names of the classes `error` is an instance of, its own first, as a
    RetryConfig matches them; for a failure handed on from its record (NodeFailedError
    with `error_classes`), the recorded ones."""
    if isinstance(error, NodeFailedError) and error.error_classes:
        return error.error_classes
    return tuple(c.__name__ for c in type(error).__mro__ if c is not object)
