"""A custom agent with checkpoints: the StoryFlowAgent of the reference's resume guide.

Four steps (write, critic/reviser loop, grammar and tone check, regenerate on a
negative tone), each checkpointed with `_create_agent_state_event`. Kill the run
in the middle and continue it by its invocation id: it resumes at the step after
the last checkpoint, and the steps before it do not run again.

    baton run examples/story_agent "a cat who learns to sail"
    BATON_MODEL=openai/gpt-4o-mini baton run examples/story_agent "a lighthouse keeper"

Without BATON_MODEL the agents answer from a script, so the example runs offline.
"""

import logging
import os
import sys
from collections.abc import AsyncGenerator, Callable
from enum import Enum

from pydantic import ConfigDict
from typing_extensions import override

from baton import (
    App,
    BaseAgent,
    BaseAgentState,
    Event,
    InvocationContext,
    LlmAgent,
    LoopAgent,
    ResumabilityConfig,
    SequentialAgent,
)
from baton.models import BaseLlm, LlmRequest, ScriptedModel

logger = logging.getLogger(__name__)


class WorkflowStep(int, Enum):
    INITIAL_STORY_GENERATION = 1
    CRITIC_REVISER_LOOP = 2
    POST_PROCESSING = 3
    CONDITIONAL_REGENERATION = 4


# Extend BaseAgentState
class StoryFlowAgentState(BaseAgentState):
    step = WorkflowStep


class StoryFlowAgent(BaseAgent):
    """Generates a story, has it criticised and revised, checks it, and regenerates it
    when its tone came out negative."""

    story_generator: LlmAgent
    critic: LlmAgent
    reviser: LlmAgent
    grammar_check: LlmAgent
    tone_check: LlmAgent
    loop_agent: LoopAgent
    sequential_agent: SequentialAgent

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def __init__(
        self,
        name: str,
        story_generator: LlmAgent,
        critic: LlmAgent,
        reviser: LlmAgent,
        grammar_check: LlmAgent,
        tone_check: LlmAgent,
    ) -> None:
        loop_agent = LoopAgent(
            name="CriticReviserLoop", sub_agents=[critic, reviser], max_iterations=2
        )
        sequential_agent = SequentialAgent(
            name="PostProcessing", sub_agents=[grammar_check, tone_check]
        )
        super().__init__(
            name=name,
            story_generator=story_generator,  # pyright: ignore[reportCallIssue] -- a subclass field
            critic=critic,  # pyright: ignore[reportCallIssue] -- a subclass field
            reviser=reviser,  # pyright: ignore[reportCallIssue] -- a subclass field
            grammar_check=grammar_check,  # pyright: ignore[reportCallIssue] -- a subclass field
            tone_check=tone_check,  # pyright: ignore[reportCallIssue] -- a subclass field
            loop_agent=loop_agent,  # pyright: ignore[reportCallIssue] -- a subclass field
            sequential_agent=sequential_agent,  # pyright: ignore[reportCallIssue] -- a subclass field
            sub_agents=[story_generator, loop_agent, sequential_agent],
        )

    @override
    async def _run_async_impl(  # noqa: C901 -- the guide's four steps, kept as written
        self, ctx: InvocationContext
    ) -> AsyncGenerator[Event, None]:
        """
        Implements the custom orchestration logic for the story workflow.
        Uses the instance attributes assigned by Pydantic (e.g., self.story_generator).
        """
        agent_state = self._load_agent_state(ctx, WorkflowStep)

        if agent_state is None:
            # Record the start of the agent
            agent_state = StoryFlowAgentState(step=WorkflowStep.INITIAL_STORY_GENERATION)  # pyright: ignore[reportCallIssue] -- `step = WorkflowStep` declares the field
            yield self._create_agent_state_event(ctx, agent_state)

        # `step = WorkflowStep` is a field at run time; type checkers see the class attribute.
        next_step: WorkflowStep = agent_state.step  # pyright: ignore[reportAttributeAccessIssue, reportAssignmentType, reportUnknownMemberType]
        logger.info(f"[{self.name}] Starting story generation workflow.")

        # Step 1. Initial Story Generation
        if next_step <= WorkflowStep.INITIAL_STORY_GENERATION:
            logger.info(f"[{self.name}] Running StoryGenerator...")
            async for event in self.story_generator.run_async(ctx):
                yield event

            # Check if story was generated before proceeding
            if "current_story" not in ctx.session.state or not ctx.session.state["current_story"]:
                return  # Stop processing if initial story failed

        agent_state = StoryFlowAgentState(step=WorkflowStep.CRITIC_REVISER_LOOP)  # pyright: ignore[reportCallIssue] -- see above
        yield self._create_agent_state_event(ctx, agent_state)

        # Step 2. Critic-Reviser Loop
        if next_step <= WorkflowStep.CRITIC_REVISER_LOOP:
            logger.info(f"[{self.name}] Running CriticReviserLoop...")
            async for event in self.loop_agent.run_async(ctx):
                logger.info(
                    f"[{self.name}] Event from CriticReviserLoop: "
                    f"{event.model_dump_json(indent=2, exclude_none=True)}"
                )
                yield event

        agent_state = StoryFlowAgentState(step=WorkflowStep.POST_PROCESSING)  # pyright: ignore[reportCallIssue] -- see above
        yield self._create_agent_state_event(ctx, agent_state)

        # Step 3. Sequential Post-Processing (Grammar and Tone Check)
        if next_step <= WorkflowStep.POST_PROCESSING:
            logger.info(f"[{self.name}] Running PostProcessing...")
            async for event in self.sequential_agent.run_async(ctx):
                logger.info(
                    f"[{self.name}] Event from PostProcessing: "
                    f"{event.model_dump_json(indent=2, exclude_none=True)}"
                )
                yield event

        agent_state = StoryFlowAgentState(step=WorkflowStep.CONDITIONAL_REGENERATION)  # pyright: ignore[reportCallIssue] -- see above
        yield self._create_agent_state_event(ctx, agent_state)

        # Step 4. Tone-Based Conditional Logic
        if next_step <= WorkflowStep.CONDITIONAL_REGENERATION:
            tone_check_result = ctx.session.state.get("tone_check_result")
            if tone_check_result == "negative":
                logger.info(f"[{self.name}] Tone is negative. Regenerating story...")
                async for event in self.story_generator.run_async(ctx):
                    logger.info(
                        f"[{self.name}] Event from StoryGenerator (Regen): "
                        f"{event.model_dump_json(indent=2, exclude_none=True)}"
                    )
                    yield event
            else:
                logger.info(f"[{self.name}] Tone is not negative. Keeping current story.")

        logger.info(f"[{self.name}] Workflow finished.")
        yield self._create_agent_state_event(ctx, end_of_agent=True)


SCRIPT = {
    "StoryGenerator": "Once upon a time, a small cat found a boat and set out to sea.",
    "Critic": "Give the cat a reason to sail, and end on a hopeful note.",
    "Reviser": "A small cat, curious about the lighthouse, sailed out and found a new home.",
    "GrammarCheck": "Grammar is correct.",
    "ToneCheck": "positive",
}


def make_model(agent: str) -> BaseLlm | str:
    """BATON_MODEL (e.g. "openai/gpt-4o-mini") when set, else a scripted stand-in."""
    configured = os.environ.get("BATON_MODEL")
    if configured:
        return configured

    def respond(request: LlmRequest) -> str:
        del request
        return SCRIPT[agent]

    return ScriptedModel(model=f"scripted-{agent}", responder=respond)


def build_story_agent(
    make: Callable[[str], BaseLlm | str] = make_model,
) -> StoryFlowAgent:
    """The StoryFlowAgent with its five LLM sub-agents; `make(name)` gives each its model."""
    return StoryFlowAgent(
        name="StoryFlowAgent",
        story_generator=LlmAgent(
            name="StoryGenerator",
            model=make("StoryGenerator"),
            instruction="You are a story writer. Write a short story (around 100 words) "
            "about the topic the user gives.",
            output_key="current_story",
        ),
        critic=LlmAgent(
            name="Critic",
            model=make("Critic"),
            instruction="You are a story critic. Review this story: {current_story}. "
            "Give 1-2 sentences of constructive criticism.",
            output_key="criticism",
        ),
        reviser=LlmAgent(
            name="Reviser",
            model=make("Reviser"),
            instruction="You are a story reviser. Revise the story {current_story} using the "
            "criticism {criticism}. Output only the revised story.",
            output_key="current_story",
        ),
        grammar_check=LlmAgent(
            name="GrammarCheck",
            model=make("GrammarCheck"),
            instruction="You are a grammar checker. List corrections for {current_story}, "
            "or say 'Grammar is correct.'",
            output_key="grammar_suggestions",
        ),
        tone_check=LlmAgent(
            name="ToneCheck",
            model=make("ToneCheck"),
            instruction="Analyze the tone of {current_story}. Output only one word: "
            "'positive', 'negative' or 'neutral'.",
            output_key="tone_check_result",
        ),
    )


if not os.environ.get("BATON_MODEL"):
    print(
        "story_agent: BATON_MODEL is not set; the agents answer from a script. "
        "Set BATON_MODEL=openai/<model> (and OPENAI_API_KEY / OPENAI_BASE_URL) for a real model.",
        file=sys.stderr,
    )

root_agent = build_story_agent()

app = App(
    name="story_agent",
    root_agent=root_agent,
    resumability_config=ResumabilityConfig(is_resumable=True),
)
