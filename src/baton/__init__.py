"""baton: durable, resumable agent workflows with human-in-the-loop."""

from baton import types
from baton.agents import (
    Agent,
    BaseAgent,
    BaseAgentState,
    LlmAgent,
    LoopAgent,
    ParallelAgent,
    SequentialAgent,
)
from baton.artifacts import (
    BaseArtifactService,
    DatabaseArtifactService,
    InMemoryArtifactService,
    SqliteArtifactService,
)
from baton.compaction import BaseEventsSummarizer, EventsCompactionConfig, LlmEventSummarizer
from baton.context import Context, InvocationContext
from baton.events import Event, EventActions, RequestInput
from baton.run_config import RunConfig, StreamingMode, ToolThreadPoolConfig
from baton.runner import App, InMemoryRunner, ResumabilityConfig, Runner
from baton.sessions.services import (
    DatabaseSessionService,
    InMemorySessionService,
    SqliteSessionService,
)
from baton.tools import FunctionTool, LongRunningFunctionTool
from baton.ui_widget import UiWidget
from baton.workflow import (
    DEFAULT_ROUTE,
    START,
    BaseNode,
    Edge,
    FunctionNode,
    JoinNode,
    Node,
    NodeRunner,
    NodeTimeoutError,
    RetryConfig,
    Workflow,
    node,
)

__all__ = [
    "DEFAULT_ROUTE",
    "START",
    "Agent",
    "App",
    "BaseAgent",
    "BaseAgentState",
    "BaseArtifactService",
    "BaseEventsSummarizer",
    "BaseNode",
    "Context",
    "DatabaseArtifactService",
    "DatabaseSessionService",
    "Edge",
    "Event",
    "EventActions",
    "EventsCompactionConfig",
    "FunctionNode",
    "FunctionTool",
    "InMemoryArtifactService",
    "InMemoryRunner",
    "InMemorySessionService",
    "InvocationContext",
    "JoinNode",
    "LlmAgent",
    "LlmEventSummarizer",
    "LongRunningFunctionTool",
    "LoopAgent",
    "Node",
    "NodeRunner",
    "NodeTimeoutError",
    "ParallelAgent",
    "RequestInput",
    "ResumabilityConfig",
    "RetryConfig",
    "RunConfig",
    "Runner",
    "SequentialAgent",
    "SqliteArtifactService",
    "SqliteSessionService",
    "StreamingMode",
    "ToolThreadPoolConfig",
    "UiWidget",
    "Workflow",
    "node",
    "types",
]
