"""Nodes: what a workflow graph is made of.

Anything with a `name`, the node settings and an async-generator `run(ctx,
node_input)` is a node (the `Node` protocol): function nodes, join nodes,
workflows and agents all are.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from functools import cached_property, partial
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Final,
    Literal,
    Protocol,
    Self,
    cast,
    final,
    runtime_checkable,
)

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SkipValidation,
    field_validator,
    model_validator,
)

from baton.auth.auth_tool import AuthConfig
from baton.context import Context
from baton.errors import error_class_names
from baton.schemas import SchemaType
from baton.threads import SyncSteps, run_sync
from baton.workflow.authorizing import check_auth_config, credential_gate
from baton.workflow.binding import JSON_TYPES, Binder, NodeInput
from baton.workflow.confirming import Confirmation, check_confirmation, confirmation_gate

__all__ = [
    "START",
    "BaseNode",
    "FunctionNode",
    "JoinNode",
    "Node",
    "NodeInput",
    "RetryConfig",
    "StartNode",
    "check_version",
]


class RetryConfig(BaseModel):
    """How often and how patiently a failing node run is retried in-process.

    A field left out (or None) keeps None, as in the reference, and its default applies
    when the node is retried: `RetryConfig().model_dump()` is all None.

    Args:
        max_attempts: attempts in all, the first included (0 or 1: no retries; 5).
        initial_delay: seconds before the second attempt (1.0).
        max_delay: the longest wait between attempts (60.0).
        backoff_factor: each wait is this many times the previous one (2.0).
        jitter: each wait moves at random by up to this fraction of it, either way, and
            stays within max_delay (1.0, as in the reference; 0.0 for exact waits).
        exceptions: exception classes or class names worth retrying, a subclass
            matching its base; all when None. Kept as a list of class names.

    Raises:
        pydantic.ValidationError: a negative number, an unknown field, or an
            `exceptions` item that is neither an exception class nor a class name.
    """

    # Assignments are checked (and classes named) as the constructor checks its arguments.
    # defer_build: see WireModel.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True)

    max_attempts: int | None = Field(default=None, ge=0)
    initial_delay: float | None = Field(default=None, ge=0)
    max_delay: float | None = Field(default=None, ge=0)
    backoff_factor: float | None = Field(default=None, ge=0)
    jitter: float | None = Field(default=None, ge=0)
    # Classes are accepted and kept by name, as the reference keeps them.
    exceptions: list[str] | None = None

    if TYPE_CHECKING:  # pragma: no cover - the signature type checkers see: classes too

        def __init__(
            self,
            *,
            max_attempts: int | None = None,
            initial_delay: float | None = None,
            max_delay: float | None = None,
            backoff_factor: float | None = None,
            jitter: float | None = None,
            exceptions: Sequence[str | type[BaseException]] | None = None,
        ) -> None: ...

    @field_validator("exceptions", mode="before")
    @classmethod
    def _exception_names(cls, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value if value is None else [value]
        names: list[str] = []
        for item in cast(Iterable[object], value):
            if isinstance(item, str):
                names.append(item)
            elif isinstance(item, type) and issubclass(item, BaseException):
                names.append(item.__name__)
            else:
                raise ValueError(
                    f"RetryConfig.exceptions holds exception classes or class names, got "
                    f"{item!r}; write e.g. exceptions=[ConnectionError, 'TimeoutError']."
                )
        return names

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """True when `error` on attempt number `attempt` (1-based) deserves another try."""
        if attempt >= _given_or(self.max_attempts, 5):
            return False
        if self.exceptions is None:
            return True
        names = error_class_names(error)
        return any(e in names for e in self.exceptions)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt`."""
        longest, jitter = _given_or(self.max_delay, 60.0), _given_or(self.jitter, 1.0)
        wait = _given_or(self.initial_delay, 1.0) * _given_or(self.backoff_factor, 2.0) ** (
            attempt - 1
        )
        if jitter > 0:
            # Capped before the jitter so that the longest draw reaches max_delay, and
            # draws do not pile up on max_delay itself (as the reference does).
            wait = min(wait, longest / (1 + jitter))
            wait = max(0.0, wait + random.uniform(-jitter * wait, jitter * wait))
        return min(wait, longest)


def _given_or(value: float | None, default: float) -> float:
    return default if value is None else value


@runtime_checkable
class Node(Protocol):
    """What the engine needs of a node."""

    name: str
    rerun_on_resume: bool
    retry_config: RetryConfig | None
    timeout: float | None

    def run(self, ctx: Context, node_input: NodeInput) -> AsyncIterator[object]:
        """Yield events, values or RequestInputs for one run."""
        ...


def check_version(name: str, version: object) -> None:
    """Refuse a node `version` that is not a non-empty string or an int.

    Raises:
        ValueError: naming the node and the value.
    """
    if version is None or (isinstance(version, int) and not isinstance(version, bool)):
        return
    if not isinstance(version, str) or not version.strip():
        raise ValueError(
            f"node '{name}' version must be a non-empty string or an int (e.g. 2 or "
            f"'2024-06-01'), got {version!r}."
        )


class BaseNode(BaseModel):
    """Subclass this for a custom node: declare fields, implement `_run_impl(*, ctx, node_input)`.

    A pydantic model, as in the reference: a subclass declares its settings as fields
    and is built with keyword arguments (`Scale(name="scale", factor=3)`); unknown
    keywords and values of the wrong type are refused. Nodes compare by identity.

    Args:
        name: the node's name (a Python identifier, unique in its workflow).
        description: what the node does.
        rerun_on_resume: run `_run_impl` again with `ctx.resume_inputs` when its
            interrupts are answered (True), or take the answer as the output (False).
        wait_for_output: a run that ends without output or route triggers nothing.
        retry_config: in-process retries on failure.
        timeout: seconds one run may take.
        input_schema, output_schema: a pydantic class, a type or a JSON schema dict:
            the node's input is checked before it runs and its output before it is
            stored (see `baton.schemas`).
    """

    # defer_build: see WireModel.
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)

    commits_each_event: ClassVar[bool] = False
    # Declared here (read with getattr, as agents have them too): a missing attribute of a
    # pydantic model is looked up through a raised exception, on every step.
    authors_own_events: ClassVar[bool] = False
    schedules_only: ClassVar[bool] = False
    signs_own_failure: ClassVar[bool] = False

    name: str
    description: str = ""
    rerun_on_resume: bool = False
    wait_for_output: bool = False
    retry_config: RetryConfig | None = None
    timeout: float | None = None
    version: SkipValidation[str | int | None] = None
    """Goes into the workflow's fingerprint: change it when a node's code changes in a
    way runs already started must not resume into (they then raise WorkflowChangedError)."""
    input_schema: SkipValidation[SchemaType | None] = None
    output_schema: SkipValidation[SchemaType | None] = None

    @property
    def schemas(self) -> tuple[SchemaType | None, SchemaType | None] | None:
        """(input_schema, output_schema) when either is set (see `baton.schemas`)."""
        if self.input_schema is None and self.output_schema is None:
            return None
        return self.input_schema, self.output_schema

    @field_validator("name")
    @classmethod
    def _identifier(cls, name: str) -> str:
        if not name.isidentifier():
            raise ValueError(
                f"node name {name!r} must be a Python identifier (letters, digits, _)."
            )
        return name

    @model_validator(mode="after")
    def _checked_settings(self) -> BaseNode:
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"node '{self.name}' timeout must be positive, got {self.timeout}.")
        check_version(self.name, self.version)
        return self

    # Nodes are things, not values: two nodes with equal settings are still two nodes.
    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def run(self, ctx: Context, node_input: NodeInput) -> AsyncIterator[object]:
        return self._run_impl(ctx=ctx, node_input=node_input)

    def _run_impl(self, *, ctx: Context, node_input: NodeInput) -> AsyncIterator[object]:
        raise NotImplementedError(
            f"{type(self).__name__} must implement _run_impl(ctx=, node_input=)."
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


@final
class StartNode(BaseNode):
    """The graph's entry; never executed. `"START"` names it too."""

    def __init__(self) -> None:
        super().__init__(name="__START__")


START: Final = StartNode()


_BINDS: Final = frozenset({"func", "name", "parameter_binding"})
"""`FunctionNode` settings its `Binder` is made from."""
_DERIVED: Final = frozenset({"rerun_on_resume", "description"})
"""`FunctionNode` settings taken from its function when the caller leaves them out."""


def _taken_from(func: Callable[..., Any], setting: str) -> Any:
    """A `FunctionNode` setting in `_DERIVED`, as its function gives it when the caller
    leaves it out: whether it reads `ctx.resume_inputs`, and its docstring."""
    if setting == "rerun_on_resume":
        return _reads_resume_inputs(func)
    return inspect.getdoc(func) or ""


_FROM_FUNC: Final = ("_calling", "takes_ctx", "returns_once")
"""`FunctionNode`'s cached properties read from its function (see `FunctionNode._forget`)."""


def _reads_resume_inputs(func: Callable[..., object]) -> bool:
    code = getattr(func, "__code__", None)
    return code is not None and "resume_inputs" in code.co_names


@final
class FunctionNode(BaseNode):
    """A node around a function: sync or async, returning or yielding.

    Args:
        func: the function (positional or `func=`).
        name: the node's name (the function's name by default).
        rerun_on_resume: re-execute the function with `ctx.resume_inputs` when its
            interrupts are answered (True), or take the answer as the output (False).
            By default True exactly when the function reads `ctx.resume_inputs`, so a
            function written to handle answers gets them.
        retry_config: in-process retries on failure.
        timeout: seconds one run may take.
        version: the code's version, part of the workflow's fingerprint: change it when
            the function changes so that runs started with the old code are refused on
            resume (WorkflowChangedError) instead of continuing with the new one.
        input_schema, output_schema: check the input before a run and the output before
            it is stored (see `baton.schemas`).
        require_confirmation: ask a person to approve each run before the function runs
            (True), or only the runs a predicate of the run's arguments picks (see
            `baton.workflow.confirming`). Needs `rerun_on_resume` (the default with it).
        parameter_binding: "state" (the default) binds parameters by name from session
            state (see `baton.workflow.binding`); "node_input" from the input object.
        auth_config: a credential the user must give before the function runs (see
            `baton.workflow.authorizing`). Needs `rerun_on_resume` (the default with it).

    Raises:
        TypeError: no function, or a `require_confirmation` that is neither a bool nor
            a callable.
        ValueError: a lambda without a name, `require_confirmation` or `auth_config` with
            `rerun_on_resume=False`, or an unknown `parameter_binding`.
    """

    func: Callable[..., Any]
    require_confirmation: SkipValidation[Confirmation] = False
    parameter_binding: Literal["state", "node_input"] = "state"
    auth_config: SkipValidation[AuthConfig | None] = None
    _binder: Binder = PrivateAttr()
    # The settings taken from the function because the caller left them out: a function
    # given later (`func = ...`, `model_copy(update={"func": ...})`) sets them again.
    _from_func: frozenset[str] = PrivateAttr(default=frozenset())

    def __init__(
        self,
        func: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        rerun_on_resume: bool | None = None,
        retry_config: RetryConfig | None = None,
        timeout: float | None = None,
        description: str = "",
        version: str | int | None = None,
        input_schema: SchemaType | None = None,
        output_schema: SchemaType | None = None,
        require_confirmation: Confirmation = False,
        parameter_binding: Literal["state", "node_input"] = "state",
        auth_config: AuthConfig | None = None,
    ) -> None:
        if func is None or not callable(func):
            raise TypeError(f"FunctionNode needs a function (positional or func=), got {func!r}.")
        node_name = name or getattr(func, "__name__", "")
        if node_name == "<lambda>":
            raise ValueError("a lambda has no usable name; pass FunctionNode(fn, name='...').")
        check_confirmation(node_name, require_confirmation)
        check_auth_config(node_name, auth_config, rerun_on_resume)
        if auth_config is not None:
            rerun_on_resume = True
        if require_confirmation is not False:
            if rerun_on_resume is False:
                raise ValueError(
                    f"node '{node_name}' require_confirmation needs rerun_on_resume=True (the "
                    "node runs again once confirmed); leave rerun_on_resume out or set it True."
                )
            rerun_on_resume = True
        # pydantic's own __init__ validates every field of this class, its own included.
        BaseModel.__init__(
            self,
            name=node_name,
            description=description or _taken_from(func, "description"),
            rerun_on_resume=_taken_from(func, "rerun_on_resume")
            if rerun_on_resume is None
            else rerun_on_resume,
            retry_config=retry_config,
            timeout=timeout,
            version=version,
            input_schema=input_schema,
            output_schema=output_schema,
            require_confirmation=require_confirmation,
            parameter_binding=parameter_binding,
            auth_config=auth_config,
            func=func,
        )
        self._binder = Binder(func, node_name, from_input=parameter_binding == "node_input")
        self._from_func = frozenset(
            name
            for name, given in (("rerun_on_resume", rerun_on_resume), ("description", description))
            if given is None or given == ""
        )

    @cached_property
    def _calling(self) -> tuple[Binder, str, Callable[..., Any]]:
        """(binder, kind, func), read on every run of the node.

        Speed: a cached property lives in the instance's __dict__, where a read costs
        about 1/30 of a pydantic private attribute's (~1.3 us each, three per step); the
        function comes with it, one read of a pydantic field (~500 instructions) fewer.
        """
        func = self.func
        kind = (
            "asyncgen"
            if inspect.isasyncgenfunction(func)
            else "coroutine"
            if inspect.iscoroutinefunction(func)
            else "generator"
            if inspect.isgeneratorfunction(func)
            else "plain"
        )
        return self._binder, kind, func

    @cached_property
    def is_bare_call(self) -> bool:
        """A run is one `call` and nothing more: the function returns once (see
        `returns_once`), and the node has no timeout and no schemas to check.

        Speed: one read on every run instead of the schemas (a property), the timeout and
        the kind of function. Cached, and forgotten when a setting changes (`__setattr__`,
        `model_copy`)."""
        return self.returns_once and self.timeout is None and self.schemas is None

    @cached_property
    def quick_call(self) -> Callable[[Context, NodeInput], Awaitable[object]] | None:
        """`call`, for a node whose run is that call and nothing more (`is_bare_call`);
        None for any other node.

        Speed: made once per node, not per run. A run reads this one attribute instead of
        `is_bare_call`, `call`, `_calling` and `require_confirmation` (each read of a
        pydantic model's attribute costs ~600 instructions) and, without confirmation,
        calls the function without `call`'s and `_started`'s frames. Cached, and
        forgotten when a setting changes, as `is_bare_call` is."""
        if not self.is_bare_call:
            return None
        if self.is_gated:
            return self.call
        binder, kind, func = self._calling
        bind = binder.bind
        if kind == "coroutine" and binder.passes_json_input:

            def started(ctx: Context, node_input: NodeInput) -> Awaitable[object]:
                # What `bind` passes a JSON input, without its call and its dict (and
                # `_convert`'s call): most nodes, the input their predecessor's output;
                # 3.3k of 188k instructions a run (callgrind, bench/engine_profile.py).
                if type(node_input) in JSON_TYPES:
                    return func(node_input=node_input)
                return func(**bind(ctx, node_input))

        elif kind == "coroutine":

            def started(ctx: Context, node_input: NodeInput) -> Awaitable[object]:
                return func(**bind(ctx, node_input))

        else:

            def started(ctx: Context, node_input: NodeInput) -> Awaitable[object]:
                return run_sync(partial(func, **bind(ctx, node_input)))

        return started

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in _DERIVED:  # set by the caller: a function given later leaves it be
            super().__setattr__("_from_func", self._from_func - {name})
        elif name == "func":
            self._derive(self._from_func)
        self._forget(rebind=name in _BINDS)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copied = super().model_copy(update=update, deep=deep)
        if update is not None:
            from_func = copied._from_func - update.keys()
            BaseModel.__setattr__(copied, "_from_func", from_func)
            if "func" in update:
                copied._derive(from_func)
        copied._forget(rebind=update is not None and not _BINDS.isdisjoint(update))
        return copied

    def _derive(self, names: frozenset[str]) -> None:
        """Set `names` again from the function, as `__init__` does when they are left out."""
        for name in names:
            BaseModel.__setattr__(self, name, _taken_from(self.func, name))

    def _forget(self, *, rebind: bool) -> None:
        """Drop what is cached from the settings, made again when next read; `rebind`:
        the function, or how it is bound, changed, so its `Binder` is made again too."""
        cached = self.__dict__
        cached.pop("is_bare_call", None)
        cached.pop("quick_call", None)
        cached.pop("is_gated", None)
        if rebind:
            for name in _FROM_FUNC:
                cached.pop(name, None)
            self._binder = Binder(
                self.func, self.name, from_input=self.parameter_binding == "node_input"
            )

    @cached_property
    def takes_ctx(self) -> bool:
        """Whether the function gets the run's `Context` (and so may run nodes of its own).

        Cached, as `_calling` is: read on every run of the node (see `execution._child_runs`).
        """
        return self._calling[0].takes_ctx

    @cached_property
    def returns_once(self) -> bool:
        """The function returns one value (a plain or an `async def` function, not a
        generator): `call` runs it.

        Speed: `call` gives what `run` would yield, without an async generator to create,
        register with the loop, drive and close on every run. Cached, as `_calling` is
        (read on every run: a property of a pydantic model costs ~10 reads of a field)."""
        return self._calling[1] in _RETURNS_ONCE

    def call(self, ctx: Context, node_input: NodeInput) -> Awaitable[object]:
        """Run a function that returns once (see `returns_once`): an `async def` one on the
        loop, a plain one in a worker thread (`baton.threads`), so one that blocks never
        holds the event loop. Await the result for the function's.

        Speed: a function that needs no confirmation is awaited as it is (`async def`) or
        through the thread hand-off's coroutine (plain), without a coroutine of this
        method's around it (every run of such a node).
        """
        binder, kind, func = self._calling
        kwargs = binder.bind(ctx, node_input)
        if not self.is_gated:
            return _started(kind, func, kwargs)
        return self._call_gated(ctx, node_input, kwargs, kind, func)

    async def _call_gated(
        self,
        ctx: Context,
        node_input: NodeInput,
        kwargs: dict[str, Any],
        kind: str,
        func: Callable[..., Any],
    ) -> object:
        """`call` for a function that may need confirmation or a credential."""
        instead = await self._gate(ctx, node_input, kwargs)
        if instead is not None:
            return instead
        return await _started(kind, func, kwargs)

    @cached_property
    def is_gated(self) -> bool:
        """Whether a run may ask before the function runs (a confirmation, a credential).

        Speed: one read of the instance's __dict__ per run instead of two pydantic fields.
        Cached, and forgotten when a setting changes, as `is_bare_call` is."""
        return self.require_confirmation is not False or self.auth_config is not None

    async def _gate(
        self, ctx: Context, node_input: NodeInput, kwargs: dict[str, Any]
    ) -> object | None:
        """What the run yields instead of calling the function (a question, a rejection),
        or None when it may run: confirmed first, then given its credential, as the
        reference asks."""
        if self.require_confirmation is not False:
            instead = await confirmation_gate(
                self.name, self.require_confirmation, ctx, node_input, kwargs
            )
            if instead is not None:
                return instead
        if self.auth_config is not None:
            return await credential_gate(self.auth_config, ctx)
        return None

    async def run(self, ctx: Context, node_input: NodeInput) -> AsyncIterator[object]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator is an AsyncIterator
        binder, kind, func = self._calling
        kwargs = binder.bind(ctx, node_input)
        if self.is_gated:
            instead = await self._gate(ctx, node_input, kwargs)
            if instead is not None:
                yield instead
                return
        if kind == "asyncgen":
            async for item in func(**kwargs):
                yield item
        elif kind == "coroutine":
            yield await func(**kwargs)
        elif kind == "generator":
            steps = SyncSteps(func(**kwargs))
            try:
                while True:
                    more, item = await steps.next()
                    if not more:
                        break
                    yield item
            finally:
                await steps.close()
        else:
            yield await run_sync(partial(func, **kwargs))


_RETURNS_ONCE: Final = frozenset({"plain", "coroutine"})


def _started(kind: str, func: Callable[..., Any], kwargs: dict[str, Any]) -> Awaitable[object]:
    """A call of a function that returns once (`kind` "coroutine" or "plain") under way:
    an `async def` one on the loop, a plain one in a worker thread."""
    return func(**kwargs) if kind == "coroutine" else run_sync(partial(func, **kwargs))


@final
class JoinNode(BaseNode):
    """Waits until every predecessor has produced output, then outputs `{name: output}`."""

    def __init__(self, *, name: str, description: str = "") -> None:
        super().__init__(name=name, description=description)

    async def run(self, ctx: Context, node_input: NodeInput) -> AsyncIterator[object]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator is an AsyncIterator
        yield node_input
