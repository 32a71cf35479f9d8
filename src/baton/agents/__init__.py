"""Agents: custom, sequential, loop, parallel and LLM agents that checkpoint and resume."""

from baton.agents.base_agent import BaseAgent
from baton.agents.callbacks import CallbackContext
from baton.agents.context import AgentContext
from baton.agents.instructions import MissingArtifactError, MissingStateKeyError
from baton.agents.llm_agent import Agent, LlmAgent, LlmAgentState, ModelCallError
from baton.agents.loop_agent import LoopAgent
from baton.agents.parallel_agent import ParallelAgent
from baton.agents.sequential_agent import SequentialAgent
from baton.agents.state import (
    BaseAgentState,
    LoopAgentState,
    ParallelAgentState,
    SequentialAgentState,
)
from baton.context import Context, InvocationContext
from baton.run_config import RunConfig, StreamingMode

__all__ = [
    "Agent",
    "AgentContext",
    "BaseAgent",
    "BaseAgentState",
    "CallbackContext",
    "Context",
    "InvocationContext",
    "LlmAgent",
    "LlmAgentState",
    "LoopAgent",
    "LoopAgentState",
    "MissingArtifactError",
    "MissingStateKeyError",
    "ModelCallError",
    "ParallelAgent",
    "ParallelAgentState",
    "RunConfig",
    "SequentialAgent",
    "SequentialAgentState",
    "StreamingMode",
]
