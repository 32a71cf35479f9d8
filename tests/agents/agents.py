"""Small agents for tests: they count their runs and can fail once."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncGenerator, Callable
from typing import Any, TypeVar

from pydantic import InstanceOf
from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from baton import Event, EventActions, InvocationContext
from baton.agents import BaseAgent
from baton.agents.context import as_agent_context
from baton.models import LlmRequest, ScriptedModel
from baton.sessions.sql import schema
from baton.sessions.sql.backends import open_dialect
from baton.types import Content, FunctionCall, Part


class Boom(RuntimeError):
    """The failure tests inject."""


class Runs:
    """Counts runs by name, and fails chosen names on chosen runs."""

    def __init__(self, *, fail: dict[str, set[int]] | None = None) -> None:
        self.count: Counter[str] = Counter()
        self.fail = fail or {}

    def bump(self, name: str) -> int:
        self.count[name] += 1
        run = self.count[name]
        if run in self.fail.get(name, set()):
            raise Boom(f"{name} fails on run {run}")
        return run


class Step(BaseAgent):
    """Says "<name> done" with its run number in state; may escalate."""

    runs: InstanceOf[Runs]
    escalate: bool = False

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        run = self.runs.bump(self.name)
        yield Event(
            author=self.name,
            content=Content(role="model", parts=[Part(text=f"{self.name} done")]),
            actions=EventActions(state_delta={self.name: run}, escalate=self.escalate or None),
        )


class Waiter(BaseAgent):
    """Waits until the agents in `wait_for` ended (siblings in a ParallelAgent), then says done."""

    runs: InstanceOf[Runs]
    wait_for: list[str]

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        ended = as_agent_context(ctx).ended_agents
        for _ in range(100):
            if set(self.wait_for) <= ended:
                break
            # Each committed event lets the siblings' queued events commit too.
            yield Event(author=self.name)
        self.runs.bump(self.name)
        yield Event(
            author=self.name, content=Content(role="model", parts=[Part(text=f"{self.name} done")])
        )


def texts(events: list[Event]) -> list[tuple[str, str]]:
    """(author, text) of the events with text."""
    return [(e.author, e.content.text) for e in events if e.content and e.content.text]


def counting_model(name: str, runs: Runs, reply: str | None = None) -> ScriptedModel:
    """A model that answers `reply` (default "<name> says <n>") and counts its calls as `name`."""

    def respond(request: LlmRequest) -> str:
        del request
        run = runs.bump(name)
        return reply if reply is not None else f"{name} says {run}"

    return ScriptedModel(model=name, responder=respond)


class Models:
    """Agents' models that count their calls: some reply "<name> done", one asks a
    long-running call first and keeps its requests."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.asker_requests: list[LlmRequest] = []

    def reply(self, name: str) -> ScriptedModel:
        def respond(request: LlmRequest) -> str | list[FunctionCall]:
            self.calls[name] += 1
            return f"{name} done"

        return ScriptedModel(responder=respond)

    def asks(self, name: str, call: FunctionCall) -> ScriptedModel:
        """Makes `call` until the request holds a function response, then says done."""

        def respond(request: LlmRequest) -> str | list[FunctionCall]:
            self.calls[name] += 1
            self.asker_requests.append(request)
            if any(c.function_responses for c in request.contents):
                return f"{name} done"
            return [call]

        return ScriptedModel(responder=respond)


T = TypeVar("T")


def rewrite_events(connection: Connection, change: Callable[[dict[str, Any]], bool]) -> int:
    """Hand every stored event's JSON to `change`, which alters it in place and says
    whether it did; write the altered ones back. How many were altered."""
    events = schema.events
    altered = 0
    for seq, stored in connection.execute(select(events.c.seq, events.c.event)).all():
        data: dict[str, Any] = dict(stored)
        if change(data):
            connection.execute(update(events).where(events.c.seq == seq).values(event=data))
            altered += 1
    return altered


async def rewrite_stored(url: str, rewrite: Callable[[Connection], T]) -> T:
    """Run `rewrite` in one writing transaction on the database at `url`: how upgrade
    tests make today's rows into what an older baton stored."""
    executor = open_dialect(url).open_executor()
    try:
        return await executor.transact(rewrite, write=True)
    finally:
        await executor.close()
