"""A harness that drives a Runner the way a client would: start, answer, continue.

Test folders that use it import `make_harness` in their conftest.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field

import pytest
from pydantic import JsonValue

from baton import App, ResumabilityConfig, Runner, types
from baton.events import REQUEST_INPUT_FUNCTION, Event
from baton.history import acting_node
from baton.sessions.services import BaseSessionService, InMemorySessionService
from baton.sessions.store import Invocation, SessionKey
from baton.types import InvocationId, SessionId
from baton.workflow.nodes import Node


class Counter:
    """How often each node ran, by name."""

    def __init__(self) -> None:
        self.runs: dict[str, int] = {}

    def bump(self, name: str) -> None:
        self.runs[name] = self.runs.get(name, 0) + 1


@dataclass
class Harness:
    runner: Runner
    service: BaseSessionService
    session_id: str
    user_id: str = "u"
    seen: list[Event] = field(default_factory=list[Event])

    @property
    def key(self) -> SessionKey:
        return SessionKey(self.runner.app_name, self.user_id, SessionId(self.session_id))

    async def collect(self, **kwargs: object) -> list[Event]:
        call: dict[str, object] = {"user_id": self.user_id, "session_id": self.session_id, **kwargs}
        events = [
            e
            async for e in self.runner.run_async(
                **call,  # pyright: ignore[reportArgumentType] -- forwarded as given by the test
            )
        ]
        self.seen.extend(events)
        return events

    async def start(self, text: str | None = "go") -> list[Event]:
        message = (
            None if text is None else types.Content(role="user", parts=[types.Part(text=text)])
        )
        return await self.collect(new_message=message)

    async def start_until(
        self, enough: Callable[[list[Event]], bool], text: str = "go"
    ) -> list[Event]:
        """Start a run and close its stream, as a client that stops reading does, once
        `enough` says so of the events read so far (or at the stream's end)."""
        message = types.Content(role="user", parts=[types.Part(text=text)])
        events: list[Event] = []
        async with aclosing(
            self.runner.run_async(
                user_id=self.user_id, session_id=self.session_id, new_message=message
            )
        ) as stream:
            async for event in stream:
                events.append(event)
                if enough(events):
                    break
        self.seen.extend(events)
        return events

    async def answer(
        self,
        *answers: tuple[str, JsonValue],
        name: str = REQUEST_INPUT_FUNCTION,
        invocation_id: str | None = None,
        wrap: bool = True,
    ) -> list[Event]:
        parts = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=iid,
                    name=name,
                    response={"result": value} if wrap or not isinstance(value, dict) else value,
                )
            )
            for iid, value in answers
        ]
        return await self.collect(
            new_message=types.Content(role="user", parts=parts), invocation_id=invocation_id
        )

    async def invocation(self) -> Invocation:
        invocations = await self.service.store.list_invocations(self.key)
        assert invocations, "no invocation was started"
        return invocations[-1]

    async def load(self, invocation_id: InvocationId) -> Invocation | None:
        return await self.service.store.load_invocation(self.key, invocation_id)


def asked(events: list[Event]) -> list[str]:
    """Interrupt ids asked in these events, in order."""
    return [
        c.id
        for e in events
        for c in e.function_calls
        if c.id and e.long_running_tool_ids and c.id in e.long_running_tool_ids
    ]


def outputs(events: list[Event]) -> list[tuple[str, JsonValue]]:
    """(node, output) of every event that carries a node run's output, in order.

    The node is named as people read it (`acting_node`: a function node's events are
    signed with its workflow's name); an agent's reply marked as its output counts.
    """
    found: list[tuple[str, JsonValue]] = []
    for e in events:
        if e.output is not None:
            found.append((acting_node(e), e.output))
        elif e.node_info and e.node_info.message_as_output and e.content:
            found.append((acting_node(e), e.content.text))
    return found


MakeHarness = Callable[..., Awaitable[Harness]]


async def build_harness(
    root: Node,
    service: BaseSessionService,
    *,
    resumable: bool,
    state: dict[str, JsonValue] | None = None,
) -> Harness:
    """A Runner for `root` as app 'app' and a fresh session of user 'u'."""
    session = await service.create_session(app_name="app", user_id="u", state=state)
    return attach_harness(root, service, session.id, resumable=resumable)


def attach_harness(
    root: Node, service: BaseSessionService, session_id: str, *, resumable: bool
) -> Harness:
    """A new Runner for `root` as app 'app' on an existing session (a restarted process)."""
    config = ResumabilityConfig(is_resumable=resumable)
    runner = Runner(
        app=App(name="app", root_agent=root, resumability_config=config),
        session_service=service,
    )
    return Harness(runner, service, session_id)


@pytest.fixture(params=[True, False], ids=["resumable", "replay"])
def make_harness(request: pytest.FixtureRequest) -> MakeHarness:
    """In memory; every test using it runs in both modes: resumable, and replay from START."""
    default_mode: bool = request.param

    async def make(
        root: Node,
        *,
        resumable: bool | None = None,
        service: BaseSessionService | None = None,
        state: dict[str, JsonValue] | None = None,
    ) -> Harness:
        return await build_harness(
            root,
            service or InMemorySessionService(),
            resumable=default_mode if resumable is None else resumable,
            state=state,
        )

    return make


async def start_or_resume(runner: Runner, key: SessionKey, *, resuming: bool, text: str) -> None:
    """One crash-test process's run: start the session's invocation with `text`, or
    resume its latest invocation (closing the runner either way)."""
    invocation = None
    if resuming:
        invocation = (await runner.store.list_invocations(key))[-1].id
    message = None if resuming else types.Content(role="user", parts=[types.Part(text=text)])
    try:
        async with asyncio.timeout(30):
            async for _ in runner.run_async(
                user_id=key.user_id,
                session_id=key.session_id,
                invocation_id=invocation,
                new_message=message,
            ):
                pass
    finally:
        await runner.close()
