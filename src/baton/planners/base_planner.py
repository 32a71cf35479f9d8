"""`BasePlanner`: what an `LlmAgent`'s planner does around each model call."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from baton.agents.callbacks import CallbackContext
    from baton.models import LlmRequest
    from baton.readonly_context import ReadonlyContext
    from baton.types import Part

__all__ = ["BasePlanner"]


class BasePlanner(ABC):
    """A planner of an `LlmAgent(planner=...)`.

    Before each model call, `build_planning_instruction`'s text (when not None) is added
    to the request's system instruction, after the agent's own instruction and identity;
    after each call (and its after-model callbacks), `process_planning_response` may
    replace the response's parts. State written through its callback context lands
    with the model's turn.
    """

    @abstractmethod
    def build_planning_instruction(
        self, readonly_context: ReadonlyContext, llm_request: LlmRequest
    ) -> str | None:
        """The text to add to the request's system instruction, or None for none."""

    @abstractmethod
    def process_planning_response(
        self, callback_context: CallbackContext, response_parts: list[Part]
    ) -> list[Part] | None:
        """The parts the model's turn keeps instead of `response_parts`, or None (or an
        empty list) to keep them as they are."""
