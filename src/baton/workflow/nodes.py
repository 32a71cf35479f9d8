"""Nodes: what a workflow graph is made of.

Anything with a `name`, the node settings and an async-generator `run(ctx,
node_input)` is a node (the `Node` protocol): function nodes, join nodes,
workflows and agents all are.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Protocol, final, overload, runtime_checkable

from pydantic import JsonValue

from baton.context import Context
from baton.workflow.binding import Binder

__all__ = [
    "START",
    "BaseNode",
    "FunctionNode",
    "JoinNode",
    "Node",
    "RetryConfig",
    "StartNode",
    "node",
]


@dataclass(frozen=True)
class RetryConfig:
    """How often and how patiently a failing node run is retried in-process.

    Args:
        max_attempts: attempts in all, the first included.
        initial_delay: seconds before the second attempt.
        max_delay: the longest wait between attempts.
        backoff_factor: each wait is this many times the previous one.
        jitter: up to this fraction of the wait is added at random.
        exceptions: exception classes (or class names) worth retrying; all when None.
    """

    max_attempts: int = 5
    initial_delay: float = 1.0
    max_delay: float = 60.0
    backoff_factor: float = 2.0
    jitter: float = 0.0
    exceptions: tuple[type[BaseException] | str, ...] | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(
                f"RetryConfig.max_attempts must be at least 1, got {self.max_attempts}."
            )
        if min(self.initial_delay, self.max_delay, self.backoff_factor, self.jitter) < 0:
            raise ValueError("RetryConfig delays, backoff_factor and jitter must not be negative.")

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """True when `error` on attempt number `attempt` (1-based) deserves another try."""
        if attempt >= self.max_attempts:
            return False
        if self.exceptions is None:
            return True
        names = {c.__name__ for c in type(error).__mro__}
        return any(
            (e in names) if isinstance(e, str) else isinstance(error, e) for e in self.exceptions
        )

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt`."""
        base = min(self.max_delay, self.initial_delay * self.backoff_factor ** (attempt - 1))
        return base * (1 + random.uniform(0, self.jitter))


@runtime_checkable
class Node(Protocol):
    """What the engine needs of a node."""

    name: str
    rerun_on_resume: bool
    retry_config: RetryConfig | None
    timeout: float | None

    def run(self, ctx: Context, node_input: JsonValue) -> AsyncIterator[object]:
        """Yield events, values or RequestInputs for one run."""
        ...


class BaseNode:
    """Subclass this for a custom node: implement `_run_impl(*, ctx, node_input)`."""

    commits_each_event: ClassVar[bool] = False

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        rerun_on_resume: bool = False,
        retry_config: RetryConfig | None = None,
        timeout: float | None = None,
    ) -> None:
        if not name.isidentifier():
            raise ValueError(
                f"node name {name!r} must be a Python identifier (letters, digits, _)."
            )
        if timeout is not None and timeout <= 0:
            raise ValueError(f"node '{name}' timeout must be positive, got {timeout}.")
        self.name = name
        self.description = description
        self.rerun_on_resume = rerun_on_resume
        self.retry_config = retry_config
        self.timeout = timeout

    def run(self, ctx: Context, node_input: JsonValue) -> AsyncIterator[object]:
        return self._run_impl(ctx=ctx, node_input=node_input)

    def _run_impl(self, *, ctx: Context, node_input: JsonValue) -> AsyncIterator[object]:
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
    """

    def __init__(
        self,
        func: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        rerun_on_resume: bool | None = None,
        retry_config: RetryConfig | None = None,
        timeout: float | None = None,
        description: str = "",
    ) -> None:
        if func is None or not callable(func):
            raise TypeError(f"FunctionNode needs a function (positional or func=), got {func!r}.")
        node_name = name or getattr(func, "__name__", "")
        if node_name == "<lambda>":
            raise ValueError("a lambda has no usable name; pass FunctionNode(fn, name='...').")
        super().__init__(
            name=node_name,
            description=description or (inspect.getdoc(func) or ""),
            rerun_on_resume=_reads_resume_inputs(func)
            if rerun_on_resume is None
            else rerun_on_resume,
            retry_config=retry_config,
            timeout=timeout,
        )
        self.func = func
        self._binder = Binder(func, node_name)
        self._kind = (
            "asyncgen"
            if inspect.isasyncgenfunction(func)
            else "coroutine"
            if inspect.iscoroutinefunction(func)
            else "generator"
            if inspect.isgeneratorfunction(func)
            else "plain"
        )

    @property
    def is_plain(self) -> bool:
        """The function is a plain one (not async, not a generator): `call` runs it."""
        return self._kind == "plain"

    def call(self, ctx: Context, node_input: JsonValue) -> object:
        """Run a plain function directly: what `run` would yield, without a generator."""
        return self.func(**self._binder.bind(ctx, node_input))

    async def run(self, ctx: Context, node_input: JsonValue) -> AsyncIterator[object]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator is an AsyncIterator
        kwargs = self._binder.bind(ctx, node_input)
        func, kind = self.func, self._kind
        if kind == "asyncgen":
            async for item in func(**kwargs):
                yield item
        elif kind == "coroutine":
            yield await func(**kwargs)
        elif kind == "generator":
            for item in func(**kwargs):
                yield item
        else:
            yield func(**kwargs)


@final
class JoinNode(BaseNode):
    """Waits until every predecessor has produced output, then outputs `{name: output}`."""

    def __init__(self, *, name: str, description: str = "") -> None:
        super().__init__(name=name, description=description)

    async def run(self, ctx: Context, node_input: JsonValue) -> AsyncIterator[object]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator is an AsyncIterator
        yield node_input


@overload
def node(func: Callable[..., Any], /) -> FunctionNode: ...
@overload
def node(
    func: None = None,
    /,
    *,
    name: str | None = None,
    rerun_on_resume: bool | None = None,
    retry_config: RetryConfig | None = None,
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], FunctionNode]: ...
def node(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    rerun_on_resume: bool | None = None,
    retry_config: RetryConfig | None = None,
    timeout: float | None = None,
) -> FunctionNode | Callable[[Callable[..., Any]], FunctionNode]:
    """Make a function a node: `@node`, `@node(name=..., rerun_on_resume=True)` or `node(fn)`."""

    def wrap(f: Callable[..., Any]) -> FunctionNode:
        target: Callable[..., Any] = getattr(f, "func", f)
        return FunctionNode(
            target,
            name=name,
            rerun_on_resume=rerun_on_resume,
            retry_config=retry_config,
            timeout=timeout,
        )

    return wrap(func) if func is not None else wrap
