"""The `node` decorator and the `Node` base class, and the parallel worker either makes
with `parallel_worker=True`.

A parallel worker runs the node it wraps once per item of its input list, each run a
dynamic child (`ctx.run_node`) on a branch of its own, `max_parallel_workers` at a
time, and outputs their outputs in input order, as the reference's does. Being
dynamic children, finished items are not run again when the worker resumes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal, TypedDict, Unpack, final, overload

from pydantic import Field, JsonValue, PrivateAttr, model_validator

from baton.auth.auth_tool import AuthConfig
from baton.context import Context
from baton.errors import WorkflowConfigurationError
from baton.schemas import SchemaType
from baton.types import Content
from baton.workflow import nodes
from baton.workflow.binding import NodeInput
from baton.workflow.confirming import Confirmation
from baton.workflow.nodes import BaseNode, FunctionNode, RetryConfig

__all__ = ["Node", "NodeOptions", "ParallelWorker", "node"]


@final
class ParallelWorker(BaseNode):
    """Runs `node` once per item of its input (a single value counts as one item) and
    outputs the list of their outputs.

    Args:
        node: the node (or agent) each item runs through; the worker takes its name.
        max_parallel_workers: how many items run at once (None: all).
    """

    max_parallel_workers: int | None = None
    _node: nodes.Node = PrivateAttr()

    def __init__(
        self,
        *,
        node: nodes.Node,
        max_parallel_workers: int | None = None,
    ) -> None:
        most = max_parallel_workers
        # A float or bool would pass `< 1` and leave asyncio.Semaphore no bound at all.
        if most is not None and (type(most) is not int or most < 1):
            raise WorkflowConfigurationError(
                f"node '{node.name}' max_parallel_workers must be a whole number of at "
                f"least 1 (or None for all items at once), got {most!r}."
            )
        super().__init__(
            name=node.name,
            rerun_on_resume=True,  # its items are dynamic children, resumed by a rerun
        )
        self.max_parallel_workers = max_parallel_workers
        self._node = node

    @property
    def item_node(self) -> nodes.Node:
        """The node each item runs through (its options are in the fingerprint)."""
        return self._node

    async def _run_impl(self, *, ctx: Context, node_input: NodeInput) -> AsyncIterator[object]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator is an AsyncIterator
        items = _items(node_input)
        slots = asyncio.Semaphore(self.max_parallel_workers or max(len(items), 1))

        async def run_item(item: JsonValue) -> JsonValue:
            # The semaphore lets items in in input order, so each resume issues the same
            # calls in the same order.
            async with slots:
                return await ctx.run_node(self._node, item, use_sub_branch=True)

        yield list(await asyncio.gather(*(run_item(item) for item in items)))


def _items(node_input: NodeInput) -> list[JsonValue]:
    """The worker's items: its input list, or the input as the only item (a user's
    message read as JSON, or as its text)."""
    value: JsonValue
    if isinstance(node_input, Content):
        try:
            value = json.loads(node_input.text)
        except ValueError:
            value = node_input.text
    else:
        value = node_input
    return list(value) if isinstance(value, list) else [value]


class Node(BaseNode):
    """Subclass this for a node with the reference's flags: implement
    `run_node_impl(self, *, ctx, node_input)` (an async generator, as `_run_impl`).

    Args:
        parallel_worker: run `run_node_impl` once per item of the input list, as
            `@node(parallel_worker=True)` does, and output the list of their outputs.
        max_parallel_workers: with `parallel_worker`, how many items run at once.

    Raises:
        pydantic.ValidationError: `max_parallel_workers` without `parallel_worker=True`,
            or below 1.
    """

    # Frozen, as the reference's: the worker is built from them at construction.
    parallel_worker: bool = Field(default=False, frozen=True)
    max_parallel_workers: int | None = Field(default=None, frozen=True)
    _worker: ParallelWorker | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _checked_workers(self) -> Node:
        most = self.max_parallel_workers
        if most is not None and not self.parallel_worker:
            raise ValueError(
                f"node '{self.name}' max_parallel_workers={most} needs parallel_worker=True: "
                "pass both, or neither."
            )
        return self

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        if self.parallel_worker:
            each = self.model_copy(update={"parallel_worker": False, "max_parallel_workers": None})
            self._worker = ParallelWorker(node=each, max_parallel_workers=self.max_parallel_workers)
            self.rerun_on_resume = True  # its items are dynamic children, resumed by a rerun

    async def run_node_impl(self, *, ctx: Context, node_input: NodeInput) -> AsyncIterator[object]:
        """Yield this node's events and values for one run (or one item's). Override it."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement run_node_impl(ctx=, node_input=)."
        )
        yield  # pragma: no cover - makes this an async generator

    async def _run_impl(self, *, ctx: Context, node_input: NodeInput) -> AsyncIterator[object]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator is an AsyncIterator
        worker = self._worker
        items = (
            worker.run(ctx, node_input)
            if worker is not None
            else self.run_node_impl(ctx=ctx, node_input=node_input)
        )
        async for item in items:
            yield item


class NodeOptions(TypedDict, total=False):
    """The settings `node(...)` takes: those of `FunctionNode`, and the worker's."""

    name: str | None
    rerun_on_resume: bool | None
    retry_config: RetryConfig | None
    timeout: float | None
    version: str | int | None
    input_schema: SchemaType | None
    output_schema: SchemaType | None
    parallel_worker: bool
    max_parallel_workers: int | None
    require_confirmation: Confirmation | None
    parameter_binding: Literal["state", "node_input"]
    # Ask the user for a credential before each run (see `baton.workflow.authorizing`).
    auth_config: AuthConfig | None


def _or_false(require: Confirmation | None) -> Confirmation:
    """None (the reference's "not set") is False."""
    return False if require is None else require


def _check_options(options: dict[str, object]) -> None:
    """Refuse an option `node()` does not know, which would otherwise change nothing."""
    unknown = sorted(options.keys() - NodeOptions.__annotations__.keys())
    if unknown:
        raise TypeError(
            f"node() got unknown option(s) {', '.join(map(repr, unknown))}; it takes "
            f"{', '.join(sorted(NodeOptions.__annotations__))}."
        )


@overload
def node(func: Callable[..., Any], /) -> FunctionNode: ...
@overload
def node(
    func: Callable[..., Any], /, **options: Unpack[NodeOptions]
) -> FunctionNode | ParallelWorker: ...
@overload
def node(
    func: None = None, /, **options: Unpack[NodeOptions]
) -> Callable[[Callable[..., Any]], FunctionNode | ParallelWorker]: ...
def node(
    func: Callable[..., Any] | None = None, /, **options: Unpack[NodeOptions]
) -> FunctionNode | ParallelWorker | Callable[[Callable[..., Any]], FunctionNode | ParallelWorker]:
    """Make a function a node: `@node`, `@node(name=..., version=2)` or `node(fn)`.

    With `parallel_worker=True` the node runs once per item of its input list, at most
    `max_parallel_workers` at a time, and outputs the list of their outputs.

    With `require_confirmation` each run asks a person first, and runs only when
    confirmed (see `baton.workflow.confirming`); with `parameter_binding="node_input"` the
    function's parameters are read from its input object by name.

    Raises:
        TypeError: an option `node()` does not take (a misspelling, say), named.
        WorkflowConfigurationError: `max_parallel_workers` without `parallel_worker=True`,
            or not a whole number of at least 1 (a ValueError, as the reference's).
        TypeError: an `auth_config` that is not an AuthConfig.
    """
    _check_options(dict(options))
    parallel = options.get("parallel_worker", False)
    most = options.get("max_parallel_workers")
    if most is not None and not parallel:
        raise WorkflowConfigurationError(
            f"max_parallel_workers={most} needs parallel_worker=True: pass both, or neither."
        )
    retry_config, timeout = options.get("retry_config"), options.get("timeout")

    def wrap(f: Callable[..., Any]) -> FunctionNode | ParallelWorker:
        # A worker's retry_config and timeout are its items' (as in the reference): an
        # item that fails is retried by itself, each item's run is timed on its own.
        built = FunctionNode(
            getattr(f, "func", f),
            name=options.get("name"),
            rerun_on_resume=options.get("rerun_on_resume"),
            retry_config=retry_config,
            timeout=timeout,
            version=options.get("version"),
            input_schema=options.get("input_schema"),
            output_schema=options.get("output_schema"),
            require_confirmation=_or_false(options.get("require_confirmation")),
            parameter_binding=options.get("parameter_binding", "state"),
            auth_config=options.get("auth_config"),
        )
        if not parallel:
            return built
        return ParallelWorker(node=built, max_parallel_workers=most)

    return wrap(func) if func is not None else wrap
