"""Names reference code uses: `Agent`, `InMemoryRunner(plugins=..., plugin_close_timeout=...)`,
`Runner(plugin_close_timeout=...)` and `async with Runner(...)`."""

from __future__ import annotations

import asyncio

import pytest

from baton import Agent, InMemoryRunner, LlmAgent, Runner, Workflow, types
from baton.agents import Agent as AgentsAgent
from baton.context import InvocationContext
from baton.plugins import BasePlugin
from baton.sessions.services import InMemorySessionService


class Noting(BasePlugin):
    def __init__(self, name: str, log: list[str], *, hangs: bool = False) -> None:
        super().__init__(name)
        self.log = log
        self.hangs = hangs

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> None:
        self.log.append(f"{self.name} run")

    async def close(self) -> None:
        self.log.append(f"{self.name} close")
        if self.hangs:
            await asyncio.Event().wait()


def _echo(node_input: str) -> str:
    return node_input


def test_agent_is_llm_agent() -> None:
    assert Agent is LlmAgent
    assert AgentsAgent is LlmAgent


async def test_in_memory_runner_takes_plugins_and_closes_them_within_the_timeout() -> None:
    log: list[str] = []
    plugins = [Noting("slow", log, hangs=True), Noting("quick", log)]
    runner = InMemoryRunner(
        node=Workflow(name="wf", edges=[("START", _echo)]),
        plugins=plugins,
        plugin_close_timeout=0.01,
    )
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="hi")])
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        pass
    with pytest.raises(RuntimeError, match="Failed to close plugins: 'slow': TimeoutError"):
        await runner.close()
    assert log == ["slow run", "quick run", "slow close", "quick close"]


async def test_async_with_runner_closes_it() -> None:
    log: list[str] = []
    service = InMemorySessionService()
    async with Runner(
        agent=Workflow(name="wf", edges=[("START", _echo)]),
        session_service=service,
        plugins=[Noting("p", log)],
        plugin_close_timeout=1,
    ) as runner:
        assert runner.app_name == "wf"
    assert log == ["p close"]


def test_a_plugin_close_timeout_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="plugin_close_timeout must be a positive .* got 0"):
        InMemoryRunner(node=Workflow(name="wf", edges=[("START", _echo)]), plugin_close_timeout=0)
