"""`BuiltInPlanner`: the model's own thinking, set through a `ThinkingConfig`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing_extensions import override

from baton.planners.base_planner import BasePlanner

if TYPE_CHECKING:
    from baton.agents.callbacks import CallbackContext
    from baton.models import LlmRequest
    from baton.readonly_context import ReadonlyContext
    from baton.types import Part, ThinkingConfig

__all__ = ["BuiltInPlanner"]


class BuiltInPlanner(BasePlanner):
    """Asks the model to think, with `thinking_config`, which replaces the agent's
    `generate_content_config.thinking_config` in every request (over chat completions,
    its `thinking_level` is sent as `reasoning_effort`). Adds no instruction and leaves
    the response as it is."""

    thinking_config: ThinkingConfig

    def __init__(self, *, thinking_config: ThinkingConfig) -> None:
        self.thinking_config = thinking_config

    def apply_thinking_config(self, llm_request: LlmRequest) -> None:
        """Puts this planner's thinking config in the request's config."""
        llm_request.config.thinking_config = self.thinking_config

    @override
    def build_planning_instruction(
        self, readonly_context: ReadonlyContext, llm_request: LlmRequest
    ) -> str | None:
        return None

    @override
    def process_planning_response(
        self, callback_context: CallbackContext, response_parts: list[Part]
    ) -> list[Part] | None:
        return None
