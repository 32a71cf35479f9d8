"""The reference's custom-agent resume helpers on the agent's ctx: `set_agent_state`
and `reset_sub_agent_states`."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from pydantic import JsonValue

from baton import (
    App,
    BaseAgent,
    BaseAgentState,
    Event,
    InMemoryRunner,
    InvocationContext,
    ResumabilityConfig,
    types,
)
from baton.sessions import InMemorySessionService


class Step(BaseAgentState):
    step: int = 0


class Inner(BaseAgent):
    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        yield Event(author=self.name, content=types.ModelContent("inner"))


seen: list[tuple[str, JsonValue, bool | None]] = []


def _note(ctx: InvocationContext, label: str, name: str) -> None:
    seen.append((label, ctx.agent_states.get(name), ctx.end_of_agents.get(name)))


class Outer(BaseAgent):
    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        async for event in self.sub_agents[0].run_async(ctx):
            yield event
        ctx.reset_sub_agent_states(self.name)
        _note(ctx, "reset", "inner")
        ctx.set_agent_state(self.name, agent_state=Step(step=2))
        _note(ctx, "set", self.name)
        loaded = self._load_agent_state(ctx, Step)
        seen.append(("loaded", loaded.step if loaded else None, None))
        ctx.set_agent_state(self.name, end_of_agent=True)
        _note(ctx, "ended", self.name)
        ctx.set_agent_state(self.name)
        _note(ctx, "cleared", self.name)
        ctx.set_agent_state("inner", agent_state=Step(step=5))
        ctx.reset_sub_agent_states("nobody")  # not in the tree: nothing changes
        _note(ctx, "unknown", "inner")
        yield Event(author=self.name, content=types.ModelContent("outer"))


async def test_a_custom_agent_sets_and_resets_checkpoints_as_in_the_reference() -> None:
    root = Outer(name="outer", sub_agents=[Inner(name="inner")])
    app = App(name="x", root_agent=root, resumability_config=ResumabilityConfig(is_resumable=True))
    events = await InMemoryRunner(app=app).run_debug("hi", quiet=True)

    assert [e.content.text for e in events if e.content] == ["inner", "outer"]
    # What the reference's ctx holds at each step (it has False where baton has no
    # ended mark: both read as not ended).
    assert seen == [
        ("reset", None, None),
        ("set", {"step": 2}, None),
        ("loaded", 2, None),
        ("ended", None, True),
        ("cleared", None, None),
        ("unknown", {"step": 5}, None),
    ]


async def test_a_context_built_by_hand_keeps_them_as_the_reference_s_does() -> None:
    inner = Inner(name="inner", sub_agents=[Inner(name="deep")])
    root = Outer(name="root", sub_agents=[inner])
    service = InMemorySessionService()
    session = await service.create_session(app_name="x", user_id="u")
    ctx = InvocationContext(
        invocation_id="i",
        agent=root,
        session=session,
        session_service=service,
        resumability_config=ResumabilityConfig(is_resumable=True),
    )
    ctx.set_agent_state("inner", agent_state=Step(step=1))
    ctx.set_agent_state("deep", end_of_agent=True)
    ctx.set_agent_state("root", agent_state=Step(step=3))
    assert ctx.agent_states == {"inner": {"step": 1}, "root": {"step": 3}}
    assert ctx.end_of_agents == {"inner": False, "deep": True, "root": False}

    ctx.reset_sub_agent_states("root")
    assert (ctx.agent_states, ctx.end_of_agents) == ({"root": {"step": 3}}, {"root": False})
