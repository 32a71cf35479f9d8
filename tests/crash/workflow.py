"""The workflow the crash tests kill: fan-out + join, a nested workflow, one HITL pause.

    START -> prepare -> (fan_a, fan_b, fan_c) -> gather (JoinNode)
          -> inner [START -> shape -> check] -> ask (RequestInput) -> book

Every leaf appends "<node> <idempotency key>" to the counts file (flushed and
fsynced before it does anything else), so a test can count executions across
processes that were SIGKILLed. The node named in `Probe.block` writes the
marker file and blocks forever on its first execution, so a test can kill the
process inside it; the one named in `Probe.fail` raises NodeTrouble on every one.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from baton import Context, JoinNode, RequestInput, Workflow

__all__ = [
    "APP_NAME",
    "FAILURE",
    "INTERRUPT_ID",
    "USER_ID",
    "NodeTrouble",
    "Probe",
    "build_workflow",
    "read_counts",
]

APP_NAME = "crash"
USER_ID = "u"
INTERRUPT_ID = "approve"


class Approval(BaseModel):
    approved: bool
    note: str


@dataclass(frozen=True)
class Probe:
    """Where nodes record their executions, and which one (if any) blocks."""

    counts: Path
    marker: Path
    block: str | None = None
    fail: str | None = None  # this node raises FAILURE on every execution

    async def enter(self, ctx: Context) -> None:
        with self.counts.open("a") as file:
            file.write(f"{ctx.node_name} {ctx.idempotency_key}\n")
            file.flush()
            os.fsync(file.fileno())
        if ctx.node_name == self.fail:
            raise NodeTrouble(FAILURE)
        if ctx.node_name == self.block and not self.marker.exists():
            # Whole or absent (written aside, then renamed): the test kills this process
            # as soon as the marker exists, and reads it.
            written = self.marker.with_name(f"{self.marker.name}.part")
            written.write_text(ctx.idempotency_key)
            written.rename(self.marker)
            await asyncio.Event().wait()  # SIGKILLed here by the test


class NodeTrouble(ValueError):
    """What the node named by `Probe.fail` raises: a subclass, so that the class names a
    failure is handed on with after a restart are checked too."""


FAILURE = "the check found trouble"


def read_counts(counts: Path) -> dict[str, list[str]]:
    """Idempotency keys seen by each node, one per execution, in order."""
    seen: dict[str, list[str]] = {}
    if counts.exists():
        for line in counts.read_text().splitlines():
            name, key = line.split(" ", 1)
            seen.setdefault(name, []).append(key)
    return seen


def build_workflow(probe: Probe) -> Workflow:
    """The workflow under test, its nodes reporting to `probe`."""

    async def prepare(ctx: Context, node_input: str) -> str:
        await probe.enter(ctx)
        return f"prepared {node_input}"

    async def fan_a(ctx: Context, node_input: str) -> str:
        await probe.enter(ctx)
        return f"a({node_input})"

    async def fan_b(ctx: Context, node_input: str) -> str:
        await probe.enter(ctx)
        return f"b({node_input})"

    async def fan_c(ctx: Context, node_input: str) -> str:
        await probe.enter(ctx)
        return f"c({node_input})"

    async def shape(ctx: Context, node_input: dict[str, Any]) -> list[str]:
        await probe.enter(ctx)
        return [node_input[k] for k in sorted(node_input)]

    async def check(ctx: Context, node_input: list[str]) -> str:
        await probe.enter(ctx)
        return " + ".join(node_input)

    async def ask(ctx: Context, node_input: str):
        await probe.enter(ctx)
        yield RequestInput(interrupt_id=INTERRUPT_ID, message=node_input, response_schema=Approval)

    async def book(ctx: Context, node_input: dict[str, Any]) -> dict[str, Any]:
        await probe.enter(ctx)
        return {"booked": node_input["approved"], "note": node_input["note"]}

    inner = Workflow(name="inner", edges=[("START", shape, check)])
    gather = JoinNode(name="gather")
    return Workflow(
        name="trip",
        edges=[("START", prepare, (fan_a, fan_b, fan_c), gather, inner, ask, book)],
    )
