"""`PlanReActPlanner`: the model is told to plan, act and reason in tagged sections, and
its reply is split into thoughts (the plan, the reasoning) and the answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing_extensions import override

from baton.planners.base_planner import BasePlanner
from baton.types import Part

if TYPE_CHECKING:
    from baton.agents.callbacks import CallbackContext
    from baton.models import LlmRequest
    from baton.readonly_context import ReadonlyContext

__all__ = [
    "ACTION_TAG",
    "FINAL_ANSWER_TAG",
    "PLANNING_TAG",
    "REASONING_TAG",
    "REPLANNING_TAG",
    "PlanReActPlanner",
]

PLANNING_TAG = "/*PLANNING*/"
REPLANNING_TAG = "/*REPLANNING*/"
REASONING_TAG = "/*REASONING*/"
ACTION_TAG = "/*ACTION*/"
FINAL_ANSWER_TAG = "/*FINAL_ANSWER*/"

_THOUGHT_TAGS = (PLANNING_TAG, REASONING_TAG, ACTION_TAG, REPLANNING_TAG)

_INSTRUCTION = f"""\
Work in three stages, and prefer what the available tools can find out to what you \
remember.

First, plan: write under {PLANNING_TAG} a numbered list of steps that, once done, \
answer the request in full. Each step names the tools it uses; use no tool you do not \
have.

Then act: call the tools the plan names. Write under {ACTION_TAG} what each call is \
for, and under {REASONING_TAG}, between calls, what the results so far show and what \
the next step is. When a step fails or the results change what is needed, write a \
corrected plan under {REPLANNING_TAG} and follow it instead.

Last, answer: write under {FINAL_ANSWER_TAG} one answer, precise and in the form the \
request asks for. If the tools and what you know cannot answer it, say there why, and \
what more you need.

Call only the tools described to you, with only the parameters they declare. Use what \
is already in the conversation before calling a tool again, and ask the user when the \
request is unclear."""


class PlanReActPlanner(BasePlanner):
    """Asks the model to plan before it acts (no built-in thinking needed).

    In its reply, text before the last `/*FINAL_ANSWER*/` and text parts starting with a
    planning, replanning, reasoning or action tag become thoughts (without their tags);
    text after the last `/*FINAL_ANSWER*/` is the answer. Function calls are kept up to
    the first group of them; a call without a name is dropped.
    """

    @override
    def build_planning_instruction(
        self, readonly_context: ReadonlyContext, llm_request: LlmRequest
    ) -> str:
        return _INSTRUCTION

    @override
    def process_planning_response(
        self, callback_context: CallbackContext, response_parts: list[Part]
    ) -> list[Part] | None:
        if not response_parts:
            return None
        kept: list[Part] = []
        parts = iter(response_parts)
        for part in parts:
            call = part.function_call
            if call is None:
                kept += _split(part)
            elif call.name:
                kept.append(part)
                # The first group of calls is the action; what follows it is dropped.
                for more in parts:
                    if more.function_call is None:
                        break
                    kept.append(more)
                break
        return kept


def _split(part: Part) -> list[Part]:
    """A text part as thought and answer: what precedes the last final-answer tag is a
    thought, what follows it the answer; a part opening with a planning tag is a thought."""
    text = part.text or ""
    if FINAL_ANSWER_TAG in text:
        at = text.rindex(FINAL_ANSWER_TAG)
        reasoning = _untagged(text[:at])
        answer = text[at + len(FINAL_ANSWER_TAG) :]
        split: list[Part] = []
        if reasoning:
            split.append(Part(text=reasoning, thought=True))
        if answer:
            split.append(Part(text=answer))
        return split
    if text.startswith(_THOUGHT_TAGS):
        return [part.model_copy(update={"text": _untagged(text), "thought": True})]
    return [part]


def _untagged(text: str) -> str:
    for tag in _THOUGHT_TAGS:
        text = text.replace(tag, "")
    return text
