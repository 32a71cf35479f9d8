"""Custom orchestration nodes that drive their children through `NodeRunner`, as the
reference's architecture document (seeds 000 and 001) shows it, and a process that
resumes one of them:

    python -m tests.workflow.node_runner_app URL SESSION_ID LOG ANSWER_ID ANSWER

answers ANSWER_ID with ANSWER in the session's run of `pipeline` (on the SqlStore at
URL), appending each child execution to the file LOG, and prints the outputs it saw.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

from baton import BaseNode, Context, FunctionNode, NodeRunner, RequestInput
from baton.sessions.services import BaseSessionService
from baton.sessions.sql import SqlStore
from tests.harness import attach_harness, outputs

Log = Callable[[str], None]


class Drive(BaseNode):
    """An orchestration node whose body is `script`: yields what it returns, if anything."""

    rerun_on_resume: bool = True
    script: Callable[[Context], Awaitable[Any]]

    async def _run_impl(self, *, ctx: Context, node_input: Any) -> AsyncGenerator[Any, None]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator
        result = await self.script(ctx)
        if result is not None:
            yield result


class Drafter(BaseNode):
    """Outputs a draft and asks two questions in the same run; reruns as answers arrive."""

    rerun_on_resume: bool = True
    log: Log

    async def _run_impl(self, *, ctx: Context, node_input: Any) -> AsyncGenerator[Any, None]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator
        self.log(
            f"drafter run_id={ctx.run_id} answers={sorted(ctx.resume_inputs)} "
            f"output={ctx.output!r} open={sorted(ctx.interrupt_ids)}"
        )
        if ctx.output is None:
            yield f"draft of {node_input}"
        for iid in ("fc-1", "fc-2"):
            if iid not in ctx.resume_inputs and iid not in ctx.interrupt_ids:
                yield RequestInput(interrupt_id=iid, message=f"{iid}?")


class Editor(BaseNode):
    """The seed's example in the orchestration node it implies: the child's run id,
    output and open questions are kept in state, and handed back on resume."""

    rerun_on_resume: bool = True
    child: Drafter

    async def _run_impl(self, *, ctx: Context, node_input: Any) -> AsyncGenerator[Any, None]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator
        kept = ctx.state.get("drafter_run")
        if kept is None:
            runner = NodeRunner(node=self.child, parent_ctx=ctx)
            child_ctx = await runner.run(node_input="the brief")
        else:
            answered = {i: ctx.resume_inputs[i] for i in kept["open"] if i in ctx.resume_inputs}
            runner = NodeRunner(
                node=self.child,
                parent_ctx=ctx,
                run_id=kept["run_id"],  # reuse
                prior_output=kept["output"],
                prior_interrupt_ids=set(kept["open"]) - set(answered),  # still unresolved
            )
            child_ctx = await runner.run(node_input="the brief", resume_inputs=answered)
        ctx.state["drafter_run"] = {
            "run_id": child_ctx.run_id,
            "output": child_ctx.output,
            "open": sorted(child_ctx.interrupt_ids),
        }
        if child_ctx.interrupt_ids:
            return  # the child's questions are this run's too: it waits for them
        yield {"draft": child_ctx.output, "answers": child_ctx.resume_inputs}


def editor(log: Log) -> Editor:
    return Editor(name="editor", child=Drafter(name="drafter", log=log))


class Pipeline(BaseNode):
    """Child A outputs, child B asks; on resume A's recorded output is handed back as
    prior_output and B gets its answer."""

    rerun_on_resume: bool = True
    first: BaseNode
    second: BaseNode

    async def _run_impl(self, *, ctx: Context, node_input: Any) -> AsyncGenerator[Any, None]:  # pyright: ignore[reportIncompatibleMethodOverride] -- an async generator
        a = await NodeRunner(
            node=self.first, parent_ctx=ctx, prior_output=ctx.state.get("a_output")
        ).run(node_input="x")
        ctx.state["a_output"] = a.output
        b = await NodeRunner(node=self.second, parent_ctx=ctx).run(
            node_input="y",
            resume_inputs={i: v for i, v in ctx.resume_inputs.items() if i == "fc-b"},
        )
        if not b.interrupt_ids:
            yield {"a": a.output, "b": b.output, "b_run": b.node_path}


def pipeline(log: Log) -> Pipeline:
    def step_a(node_input: str) -> str:
        log(f"a({node_input})")
        return f"A({node_input})"

    def ask_b(node_input: str) -> RequestInput:
        log(f"b({node_input})")
        return RequestInput(interrupt_id="fc-b", message="approve?")

    return Pipeline(
        name="pipeline",
        first=FunctionNode(step_a, name="step_a"),
        second=FunctionNode(ask_b, name="ask_b"),
    )


def file_log(path: Path) -> Log:
    def log(line: str) -> None:
        with path.open("a") as file:
            file.write(line + "\n")

    return log


async def _resume(url: str, session_id: str, log: Path, iid: str, answer: str) -> None:
    store = SqlStore(url)
    try:
        h = attach_harness(
            pipeline(file_log(log)), BaseSessionService(store), session_id, resumable=True
        )
        print(json.dumps(outputs(await h.answer((iid, answer)))))
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(_resume(sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4], sys.argv[5]))
