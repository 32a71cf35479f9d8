"""NodeRunner: one child run of a custom orchestration node, as the reference's executor.

A node that orchestrates others (the reference's Workflow is one) runs each child with
`await NodeRunner(node=child, parent_ctx=ctx, run_id=...).run(node_input=...)` and
reads the child's Context: its output, route and the interrupts it waits on. The child
is a checkpointed run of the calling node, kept under the key `<name>@<run_id>` (see
`baton.workflow.dynamic`): its steps commit like any node's, so a child that completed
returns its recorded result without running again (also in a new process), a waiting
child resumes with its answers, and its questions are the caller's too (the caller
waits until they are answered, then runs again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast, final

from baton.context import ChildRuns, Context, NamedOutcome, NamedRun
from baton.errors import InvalidIdError
from baton.workflow.execution import NodeRunFailedError, open_interrupt
from baton.workflow.nodes import Node

__all__ = ["NodeRunner"]


@final
class NodeRunner:
    """Runs one node as a child run of the node run that owns `parent_ctx`.

    Args:
        node: the child: a node, an agent or a workflow (wrap a function in
            `FunctionNode`).
        parent_ctx: the calling node's Context, as the engine handed it to the node.
        run_id: names the run (default "1"): the same run_id resumes the same run, a
            new one dispatches a fresh run. Letters, digits, `-`, `_`, `.`.
        use_as_output: the child's output event stands for the caller's too.
        prior_output: the output the run recorded (a resumed run's `child_ctx.output`),
            carried forward; for a new run, the output it starts with.
        prior_interrupt_ids: ids the run still waits for, carried forward.
        use_sub_branch: the child's events go on a branch of their own.
        override_branch: the branch the child's events carry.

    Raises:
        TypeError: `node` is not a node, or `parent_ctx` is not a Context.
        RuntimeError: `parent_ctx` was not made by the engine for a node run.
        InvalidIdError: `run_id` is empty or holds other characters.
        ValueError: both use_sub_branch and override_branch were given.
    """

    def __init__(
        self,
        *,
        node: Node,
        parent_ctx: Context,
        run_id: str | int | None = None,
        use_as_output: bool = False,
        prior_output: Any = None,
        prior_interrupt_ids: Iterable[str] | None = None,
        use_sub_branch: bool = False,
        override_branch: str | None = None,
    ) -> None:
        self._node = _checked_node(node)
        self._parent, self._children = _checked_parent(parent_ctx)
        self._run_id = _checked_run_id(self._node.name, run_id)
        if use_sub_branch and override_branch is not None:
            raise ValueError(
                f"NodeRunner for '{self._node.name}' was given use_sub_branch=True and "
                f"override_branch={override_branch!r}; the child's branch is one or the "
                "other: pass only one of them."
            )
        self._use_as_output = use_as_output
        self._prior_output = prior_output
        self._prior_interrupt_ids = _checked_ids("prior_interrupt_ids", prior_interrupt_ids)
        self._use_sub_branch = use_sub_branch
        self._override_branch = override_branch

    @property
    def run_id(self) -> str:
        """The run id of the child run."""
        return self._run_id

    async def run(
        self, node_input: Any = None, *, resume_inputs: Mapping[str, Any] | None = None
    ) -> Context:
        """Bring the child run forward and return its Context.

        A new run executes; a run that completed before returns its recorded result
        without executing; a waiting run whose questions got answers (`resume_inputs`,
        as the caller's `ctx.resume_inputs` holds them) executes again if the node has
        `rerun_on_resume`, otherwise completes with the answers (the answer, or the
        answers by id) once all are there, and keeps waiting while some are missing.

        Args:
            node_input: the child's input (JSON, or a pydantic model).
            resume_inputs: answers to the run's questions, by interrupt id.

        Returns:
            The child's Context: `output`, `route`, `interrupt_ids` (the questions it
            still waits for; the caller waits for them too), `resume_inputs`, `run_id`,
            `node_path`, and `error` / `error_node_path` when it failed (its error event
            is stored; running the same run_id again retries it).

        Raises:
            UnknownInterruptError: `resume_inputs` or `prior_interrupt_ids` names a
                question the run did not ask, or one that has no answer yet.
            AlreadyAnsweredError: an answer differs from the one the run was given.
            OutputAlreadySetError: `prior_output` differs from the output it recorded.
            WorkflowChangedError: the run_id was run before with another input.
            ValueError: the run_id is a `ctx.run_node` call's; a second use_as_output.
            TypeError: the input or prior_output is not JSON; resume_inputs is not a
                mapping of ids.
        """
        request = NamedRun(
            node_input=node_input,
            resume_inputs=_checked_answers(resume_inputs),
            prior_output=self._prior_output,
            prior_interrupt_ids=self._prior_interrupt_ids,
            use_as_output=self._use_as_output,
            use_sub_branch=self._use_sub_branch,
            override_branch=self._override_branch,
            caller=self._parent,
        )
        try:
            outcome = await self._children.run_named(self._node, self._run_id, request)
        except NodeRunFailedError as failure:
            return self._failed(failure)
        return self._context(outcome)

    def _context(self, outcome: NamedOutcome) -> Context:
        parent = self._parent
        invocation = parent.invocation_context
        ctx = Context(
            invocation,
            node_path=outcome.path,
            run_id=self._run_id,
            node_name=self._node.name,
            resume_inputs=outcome.answers,
            open_interrupts={
                iid: open_interrupt(invocation, outcome.path, iid) for iid in outcome.interrupts
            },
            output=outcome.output,
            branch=outcome.branch,
        )
        ctx.node = self._node
        ctx.pin_parent_ctx(parent)
        routes = outcome.routes
        ctx.route = None if not routes else routes[0] if len(routes) == 1 else list(routes)
        return ctx

    def _failed(self, failure: NodeRunFailedError) -> Context:
        path = f"{self._parent.node_path}/{self._node.name}@{self._run_id}"
        ctx = Context(
            self._parent.invocation_context,
            node_path=path,
            run_id=self._run_id,
            node_name=self._node.name,
        )
        ctx.node = self._node
        ctx.pin_parent_ctx(self._parent)
        ctx.error = failure.error
        ctx.error_node_path = failure.path
        return ctx


def _checked_node(node: object) -> Node:
    if isinstance(node, Node):
        return node
    hint = " (wrap a function in FunctionNode(fn))" if callable(node) else ""
    raise TypeError(
        f"NodeRunner needs a node, an agent or a workflow as node=, got {node!r} "
        f"({type(node).__name__}){hint}."
    )


def _checked_parent(parent_ctx: object) -> tuple[Context, ChildRuns]:
    if not isinstance(parent_ctx, Context):
        raise TypeError(
            f"NodeRunner needs the calling node's Context as parent_ctx=, got "
            f"{type(parent_ctx).__name__}."
        )
    children = parent_ctx.child_runs
    if children is None:
        raise RuntimeError(
            f"NodeRunner runs children of a node run; the context of '{parent_ctx.node_name}' "
            "was not made by the workflow engine: pass the ctx your node's _run_impl was given."
        )
    return parent_ctx, children


_RUN_ID_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def _checked_run_id(name: str, run_id: object) -> str:
    if run_id is None:
        return "1"
    if isinstance(run_id, int) and not isinstance(run_id, bool) and run_id > 0:
        return str(run_id)
    if isinstance(run_id, str) and run_id and set(run_id) <= _RUN_ID_CHARACTERS:
        return run_id
    raise InvalidIdError(
        f"run_id {run_id!r} of NodeRunner for '{name}' is not a run id: give letters, "
        "digits, '-', '_' or '.' (e.g. '1', or 'review-2'); it is part of the child's "
        "node path."
    )


def _checked_ids(what: str, ids: object) -> frozenset[str]:
    """`ids` as a set of interrupt ids (callers' code may pass anything)."""
    if ids is None:
        return frozenset()
    if isinstance(ids, str) or not isinstance(ids, Iterable):
        raise TypeError(f"{what} must be a set of interrupt ids (strings), got {ids!r}.")
    checked = frozenset(cast(Iterable[object], ids))
    if not all(isinstance(iid, str) for iid in checked):
        raise TypeError(f"{what} must be a set of interrupt ids (strings), got {ids!r}.")
    return cast(frozenset[str], checked)


def _checked_answers(resume_inputs: object) -> dict[str, Any]:
    """`resume_inputs` as answers by interrupt id (callers' code may pass anything)."""
    if resume_inputs is None:
        return {}
    answers = (
        dict(cast(Mapping[object, Any], resume_inputs))
        if isinstance(resume_inputs, Mapping)
        else None
    )
    if answers is None or not all(isinstance(iid, str) for iid in answers):
        raise TypeError(
            f"resume_inputs must map interrupt ids (strings) to answers, got {resume_inputs!r}."
        )
    return cast(dict[str, Any], answers)
